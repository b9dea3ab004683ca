// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Call stacks on samples: `auxscope record -g` / `--call-graph fp|dwarf[,SIZE]|lbr`,
// set up on the sampling events' attrs as perf record sets them (perf's
// evsel__config_callchain, tools/perf/util/evsel.c; read, not copied):
//   fp     PERF_SAMPLE_CALLCHAIN: the kernel walks the frame pointers, kernel and
//          user part in one callchain with PERF_CONTEXT_* markers.
//   dwarf  CALLCHAIN + REGS_USER + STACK_USER: the user registers perf samples on
//          this architecture and SIZE bytes of the user stack (default 8192), for
//          unwinding later; exclude_callchain_user = 1, so the callchain keeps only
//          the kernel part.
//   lbr    CALLCHAIN + BRANCH_STACK with branch_sample_type USER | CALL_STACK |
//          NO_CYCLES | NO_FLAGS | HW_INDEX: Intel's Last Branch Records kept as a
//          call stack (Haswell and later), for hardware events only.
// perf leaves attr.sample_max_stack at 0 (the kernel then uses
// kernel.perf_event_max_stack, 127 by default), and so does auxscope. The
// tracking (dummy) event and an AUX-area event get no call stacks: they take no
// samples. Nothing here unwinds: the capture only records (the drain thread
// copies what the kernel wrote).
#include <linux/perf_event.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "Result.h"

namespace auxscope {

struct EventDesc;
class PmuRegistry;

enum class CallGraphMode { None, FramePointer, Dwarf, Lbr };

// perf's default user stack copy for --call-graph dwarf.
constexpr uint32_t kDefaultDwarfStackBytes = 8192;
// The largest copy the kernel takes: below 64 KiB (a sample's size is a u16) and a
// multiple of 8 (perf_copy_attr refuses others): round_down(USHRT_MAX, 8).
constexpr uint32_t kMaxDwarfStackBytes = 65528;

struct CallGraphOptions {
    CallGraphMode mode = CallGraphMode::None;
    // dwarf: bytes of user stack the kernel copies per sample (a multiple of 8, 8..65528).
    uint32_t dwarfStackBytes = kDefaultDwarfStackBytes;

    bool enabled() const { return mode != CallGraphMode::None; }
    bool operator==(const CallGraphOptions&) const = default;
};

// perf's --call-graph argument: "fp", "dwarf", "dwarf,SIZE" (decimal, or 0x hex),
// "lbr". Errors name `option` as the person wrote it ("--call-graph", "call-graph").
// Unlike perf, which rounds a SIZE up to a multiple of 8, a SIZE the kernel would
// not take as given is refused, so the file holds the size that was asked for.
Expected<CallGraphOptions> parseCallGraph(std::string_view text, std::string_view option = "--call-graph");
// What parseCallGraph reads back: "fp", "dwarf,8192", "lbr"; "none" when off.
std::string formatCallGraph(const CallGraphOptions& options);
// The mode's name as perf spells it: "none", "fp", "dwarf", "lbr".
const char* callGraphModeName(CallGraphMode mode);
// For summaries: "fp (frame pointers, kernel and user)", "dwarf (8192 bytes of user
// stack and user registers 0xff0fff per sample, kernel part as a callchain)", "lbr (...)".
std::string describeCallGraph(const CallGraphOptions& options);

// The user registers perf samples for --call-graph dwarf on `arch` (uname -m
// spelling: "x86_64", "i386"/"i686", "aarch64", "armv7l"/"arm", "riscv64"), from
// perf's PERF_REGS_MASK (tools/perf/arch/ARCH/include/perf_regs.h) over the
// kernel's register numbering (arch/ARCH/include/uapi/asm/perf_regs.h); 0 for an
// architecture auxscope does not know.
uint64_t dwarfUserRegsMaskFor(std::string_view arch);
// The architecture this build runs on, uname -m style ("x86_64", "aarch64", ...).
const char* hostArch();
// The mask for this machine: dwarfUserRegsMaskFor(hostArch()), plus on arm64 the
// SVE vector granule (VG, bit 46) where the CPU has SVE and the kernel accepts it,
// as perf's arch__user_reg_mask probes it.
uint64_t dwarfUserRegsMask();

// Sets the call-graph sample bits and fields on a sampling event's attr (the
// dwarf register mask from dwarfUserRegsMask()). Fails for dwarf on an
// architecture without a known register set.
Expected<void> applyCallGraph(const CallGraphOptions& options, perf_event_attr& attr);
// As above with an explicit register mask (tests, other architectures' files).
void applyCallGraph(const CallGraphOptions& options, perf_event_attr& attr, uint64_t dwarfRegsMask);

// Whether an event takes samples that can carry a call stack: not the dummy
// event, not an AUX-area trace event.
bool takesCallGraph(const EventDesc& event);

// Refuses, before anything is opened, a call-graph choice these events cannot
// have, naming what is missing: dwarf on an unknown architecture; lbr on a
// software event or tracepoint, on an event that excludes user space, without
// a core PMU (a VM without a virtual PMU), on a CPU that is not Intel's (AMD's
// branch sampling has no call-stack mode), or on an Intel PMU without LBR
// (caps/branches absent). `cpuVendor` as /proc/cpuinfo's vendor_id.
Expected<void> checkCallGraphEvents(const CallGraphOptions& options, const std::vector<EventDesc>& events,
                                    const PmuRegistry& pmus, std::string_view cpuVendor);
// /proc/cpuinfo's vendor_id ("GenuineIntel", "AuthenticAMD"); empty where there is none (not x86).
std::string thisCpuVendor();

}  // namespace auxscope
