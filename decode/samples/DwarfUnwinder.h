// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// DWARF unwinding of the user stacks `perf record --call-graph dwarf` copies
// (PERF_SAMPLE_REGS_USER + PERF_SAMPLE_STACK_USER): the frames perf's
// unwind-libdw.c gets from elfutils' libdwfl, from the same call frame
// information (.eh_frame, .debug_frame of the file or its separate debug file,
// and here also the MiniDebugInfo in .gnu_debugdata), read the same way:
//   - registers: the sample's, mapped from the perf_regs layout to DWARF
//     numbers (UserRegisters.h); registers the sample lacks are unknown;
//   - memory: the stack copy for [sp, sp + size), else the bytes of the mapped
//     files (ImageResolver), else the read fails;
//   - frames: the sampled PC, then each caller's return address minus one, but
//     for a frame interrupted by a signal (libdwfl's "activation" frames), leaf
//     first, at most `maxFrames`.
//
// Two engines give the same frames (the tests compare them on every sample of
// real captures, on bad input and in a fuzzer), but where the only CFI is in
// .gnu_debugdata, which libdwfl's unwinder does not read, and where a
// process's files overlap once taken whole (libdwfl finds a frame's module by
// its file's whole extent, the CFI rows by the mapping itself: two programs
// in one process image, as a sideband that missed an exec gives):
//   - Engine::Libdwfl: libdwfl itself, dwfl_attach_state + dwfl_getthread_frames,
//     with one Dwfl per process (every mapped file reported once, at its load
//     bias) kept per Worker instead of perf's Dwfl per sample;
//   - Engine::CfiRows (the default): the same steps from CFI rows libdw computed
//     once per file and address range (ElfCfi, UnwindStep), so a frame costs a
//     hash lookup and a few reads instead of libdw interpreting the FDE again.
//
// Where the unwinding stops is returned as an UnwindStop, never printed: the
// caller counts them (unwindStopName() names them).
//
// Thread-safe: construct once, then one Worker per thread (its caches: files,
// CFI rows, per-process module tables and Dwfls); unwind() may run on many
// threads at once, each with its own Worker. The ImageResolver must outlive it;
// a Worker keeps what the resolver said when it first saw each process, so
// after ImageResolver::update() (a live capture's next tick) make new Workers.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace auxscope {

class ImageResolver;

// What one --call-graph dwarf sample recorded.
struct UserStackCopy {
    uint64_t abi = 0;                // PERF_SAMPLE_REGS_ABI_32 / _64 (NONE: no user registers)
    uint64_t regsMask = 0;           // attr.sample_regs_user
    std::span<const uint8_t> regs;   // one u64 per bit of regsMask, lowest bit first (ParsedRecord::regsUser)
    std::span<const uint8_t> stack;  // the copied bytes from the user SP upwards (ParsedRecord::stackUser)
};

enum class UnwindStop : uint8_t {
    Complete,  // the outermost frame: the CFI says the return address is undefined (_start, clone3), or it is
               // 0
    StackCopyEnd,  // a caller's frame lies beyond the bytes the kernel copied (a deep stack, a small copy
                   // size)
    NoUnwindInfo,  // code without CFI (JIT, anonymous memory, hand-written assembly) and no frame pointer
                   // chain
    MissingImage,  // the last frame's file was not found (its frame is still listed)
    WrongImage,    // the file found for the last frame is another build than the recorded (build-id differs)
    NoRegisters,   // no user registers (ABI NONE, a kernel thread), or no PC or SP among them
    Loop,          // a frame repeated an earlier one (same PC and SP): the stack data is bad
    MaxFrames,  // maxFrames frames listed: the unwinding stopped there (the stack may have ended there too)
    Error,      // the CFI could not be applied (a register or word it needs is unknown, a bad rule)
};
constexpr size_t kUnwindStopCount = size_t(UnwindStop::Error) + 1;
// "complete", "stack copy end", "no unwind info", "missing image", "wrong image",
// "no registers", "loop", "max frames", "error".
const char* unwindStopName(UnwindStop stop);

// The ELF machine (EM_*) of a recording's HEADER_ARCH ("x86_64", "aarch64" or
// "arm64", "i386"/"i686"/"x86"); 0 when none DwarfUnwinder supports.
uint16_t elfMachineOfArch(std::string_view arch);

class DwarfUnwinder {
public:
    enum class Engine : uint8_t { CfiRows, Libdwfl };
    struct Options {
        Engine engine = Engine::CfiRows;
    };

    // `machine`: the recording's architecture (EM_X86_64, EM_AARCH64, EM_386;
    // elfMachineOfArch of HEADER_ARCH); `images`: prepared, it says which file
    // is mapped where in each process.
    DwarfUnwinder(const ImageResolver& images, uint16_t machine);
    DwarfUnwinder(const ImageResolver& images, uint16_t machine, Options options);
    ~DwarfUnwinder();
    DwarfUnwinder(const DwarfUnwinder&) = delete;
    DwarfUnwinder& operator=(const DwarfUnwinder&) = delete;

    class Worker;
    // One per thread that unwinds.
    std::unique_ptr<Worker> worker() const;

    // Appends the user frames of one sample of process `pid` to `frames`, leaf
    // first, as perf reports them: the sampled PC, then each caller's return
    // address minus one (none for a frame a signal interrupted).
    UnwindStop unwind(Worker& w, int32_t pid, const UserStackCopy& copy, std::vector<uint64_t>& frames,
                      size_t maxFrames = 127) const;

    uint16_t machine() const { return machine_; }
    const Options& options() const { return options_; }

private:
    const ImageResolver& images_;
    uint16_t machine_;
    Options options_;
};

class DwarfUnwinder::Worker {
public:
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    struct Stats {
        uint64_t samples = 0, frames = 0;
        uint64_t files = 0;              // files opened for their CFI (CfiRows) or reported (Libdwfl)
        uint64_t processes = 0;          // module tables (and Dwfls) made
        uint64_t rowLookups = 0;         // CfiRows: frames that looked up a CFI row
        uint64_t rowsComputed = 0;       // ... of which libdw computed
        uint64_t framePointerSteps = 0;  // CfiRows: steps without CFI (the frame-pointer walk)
    };
    Stats stats() const;

    struct Impl;

private:
    friend class DwarfUnwinder;
    explicit Worker(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> d_;
};

}  // namespace auxscope
