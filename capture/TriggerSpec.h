// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Snapshot triggers: what makes a flight-recorder capture take a snapshot on its
// own (besides the GUI button, SIGUSR2 and `snapshot` on the control FIFO).
//
//   func                     a function of the target's binary is entered (uprobe)
//   func@BINARY              ... of BINARY (a path, or a name found on PATH)
//   BINARY:0xOFFSET          the instruction at that file offset is reached
//   func>5ms, func@BIN>5ms   a call slower than the threshold (uprobe + uretprobe,
//                            matched per thread and nesting level; fires at the return)
//   syscall:NAME>10ms        a system call slower than the threshold
//                            (syscalls:sys_enter_NAME / sys_exit_NAME, per thread)
//   SYS:A->B>2ms             tracepoint A followed by tracepoint B (B's system
//                            defaults to A's) on the same thread slower than the
//                            threshold; sched:sched_wakeup->sched_switch pairs the
//                            woken thread (wakeup's pid) with the switch to it (next_pid)
//   usdt:PROVIDER:NAME[@BINARY]  the program reaches its USDT probe (<sys/sdt.h>'s
//                            DTRACE_PROBE / STAP_PROBE), at every site of that name
//   marker, marker@BINARY    the program's USDT probe auxscope:trigger, or where it
//                            has none, a call of its auxscope_trigger() function
//
// Thresholds: a number with ns, us, ms or s (1 us to 1 hour). Parsing is pure
// (parseTriggerSpec); resolveTrigger then looks the function up in the ELF's
// symbols (plain or demangled C++ names) and the tracepoints in tracefs, so a
// bad trigger is refused before the capture starts.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "AuxPause.h"
#include "Result.h"

namespace auxscope {

enum class TriggerKind {
    FunctionEntry,   // func, func@bin, bin:0xoff, marker
    FunctionSlow,    // func>T
    SyscallSlow,     // syscall:name>T
    TracepointPair,  // sys:a->b>T
};

struct TriggerSpec {
    std::string text;  // as given
    TriggerKind kind = TriggerKind::FunctionEntry;
    std::string function;            // FunctionEntry/FunctionSlow (empty with an offset)
    std::string binary;              // as given; empty: the target's binary
    std::optional<uint64_t> offset;  // BINARY:0xOFFSET
    bool marker = false;
    std::string usdtProvider, usdtName;                              // usdt:PROVIDER:NAME (FunctionEntry)
    uint64_t thresholdNs = 0;                                        // Slow kinds and pairs
    std::string syscall;                                             // SyscallSlow
    std::string firstSystem, firstEvent, secondSystem, secondEvent;  // TracepointPair
};

constexpr const char* kTriggerMarkerFunction = "auxscope_trigger";
constexpr const char* kTriggerMarkerProvider = "auxscope";  // the marker's USDT probe:
constexpr const char* kTriggerMarkerProbe = "trigger";      // auxscope:trigger
constexpr uint64_t kTriggerMinThresholdNs = 1'000;
constexpr uint64_t kTriggerMaxThresholdNs = 3600ull * 1'000'000'000;

// Pure: no file is opened. Errors name the spec and what is wrong with it.
Expected<TriggerSpec> parseTriggerSpec(std::string_view text);
// "5ms", "250us", "2s", "1500ns": nanoseconds, range-checked.
Expected<uint64_t> parseTriggerDuration(std::string_view text, std::string_view what);
std::string formatTriggerDuration(uint64_t ns);

// What to open for one trigger.
struct ResolvedTrigger {
    TriggerSpec spec;
    std::string name;  // short, for summaries: "handle>5ms", "syscall:read>10ms"
    // Uprobes: the canonical path and the file offset; retprobe wanted too (FunctionSlow).
    std::string path;
    uint64_t offset = 0;
    std::string symbol;  // the symbol it resolved to (mangled), when named
    // A USDT probe: "provider:name"; its other sites (a probe written at several
    // places, each a uprobe of its own); its semaphore's file offset (0: none),
    // the uprobe PMU's ref_ctr_offset.
    std::string usdt;
    std::vector<uint64_t> moreOffsets;
    uint64_t refCtrOffset = 0;
    // Tracepoints (SyscallSlow, TracepointPair): their ids; the pair's key fields
    // (empty: the sample's thread).
    uint64_t firstTracepoint = 0, secondTracepoint = 0;
    std::string firstKeyField, secondKeyField;
    // Byte offsets of the key fields in the tracepoint's raw data (from its format file).
    int firstKeyOffset = -1, secondKeyOffset = -1;
    int firstKeySize = 0, secondKeySize = 0;
    // The second event's field naming a thread that was running until then
    // (sched_switch's prev_pid): a first event still waiting for that thread is
    // void (a wakeup of a thread that was running: it never waited).
    std::string secondClearField;
    int secondClearOffset = -1, secondClearSize = 0;
};

struct TriggerResolveOptions {
    // The target's binary for triggers that name none: the launched command's
    // argv[0] or /proc/PID/exe. Empty (system-wide): such a trigger is refused.
    std::string defaultBinary;
    // Resolving for another user (the capture helper runs as root for the GUI's
    // user): a binary that user may not read is refused before its symbols are read.
    std::optional<uid_t> readableBy;
};

// Whether `user` may read `path` by its mode bits (owner, the user's groups,
// others); root may read anything. The error names the file, the user and why.
Expected<void> userMayReadFile(const std::string& path, uid_t user);

Expected<ResolvedTrigger> resolveTrigger(const TriggerSpec& spec, const TriggerResolveOptions& opts);

// A command's argv[0] as execvp finds it (PATH when it has no slash), canonical.
Expected<std::string> findExecutable(const std::string& name);

// Every function symbol of a binary with its demangled name, for pickers and messages.
struct TriggerFunction {
    std::string name;       // as in the symbol table
    std::string demangled;  // == name for C
    uint64_t fileOffset = 0, size = 0;
};
Expected<std::vector<TriggerFunction>> listTriggerFunctions(const std::string& path);

// The knobs around the triggers (--trigger-post, --trigger-max, --trigger-gap,
// and which threads count).
struct TriggerSettings {
    std::vector<TriggerSpec> specs;
    uint64_t postNs = 0;      // keep tracing this long after a firing before the snapshot
    uint64_t max = 0;         // snapshots at most (0: no limit)
    uint64_t gapNs = 0;       // minimum time between two snapshots' firings
    std::vector<pid_t> tids;  // only these threads fire (empty: every thread)
    // Pause: a function trigger's entry resumes the AUX trace and its return
    // pauses it (the AUX event opened with CaptureOptions::auxStartPaused).
    TriggerMode mode = TriggerMode::Snapshot;
};

}  // namespace auxscope
