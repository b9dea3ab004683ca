// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// For the sampled-stacks tests (tests/decode/samples_tests.cmake): perf records
// the test programs (tests/samples/stacks_prog) with --call-graph dwarf, once per
// build and shared by the test processes ctest starts (a lock file guards the
// recording), and the recordings are read back as auxscope reads them:
// PerfDataReader, Sideband, ImageResolver, each sample's registers and stack
// copy. perf script's own unwinding of the same samples is the oracle.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"
#include "samples/DwarfUnwinder.h"
#include "sideband/Sideband.h"
#include "spans/FunctionTable.h"

namespace auxscope::test_support {

// Runs `command` with sh -c; its stdout (stderr too when `mergeErrors`).
std::string runShell(const std::string& command, int* status = nullptr, bool mergeErrors = false);
std::string shellQuote(const std::string& s);

// "" when `perf record -e cpu-clock` works here, else why not (for GTEST_SKIP).
std::string perfRecordUnavailable();

// The directory recordings are kept in: $AUXSCOPE_SAMPLES_DIR, else a
// directory under /tmp. Made when missing.
std::string capturesDir();

// `perf record -e cpu-clock -F FREQ --call-graph dwarf -o DIR/NAME.data -- PROGRAM ARGS`,
// made once: an existing recording of the same command, newer than PROGRAM,
// is used again. Returns
// the file, or "" with `error` set.
std::string recordOnce(const std::string& name, const std::string& program, const std::string& args,
                       const std::string& perfOptions, std::string& error);

struct StackSample {
    int32_t pid = -1, tid = -1;
    uint64_t time = 0;
    uint64_t abi = 0, mask = 0;
    std::vector<uint8_t> regs, stack;
    std::vector<uint64_t> callchain;  // PERF_SAMPLE_CALLCHAIN as recorded (markers kept)
};

struct StackCapture {
    std::string path;
    std::optional<PerfDataReader> reader;
    std::optional<Sideband> sideband;
    FunctionTable functions;
    std::unique_ptr<ImageResolver> images;
    uint16_t machine = 0;
    std::vector<StackSample> samples;  // every sample with a user stack copy, in file order

    static std::unique_ptr<StackCapture> load(const std::string& path, std::string& error,
                                              ImageOptions options = {});
    UserStackCopy copyOf(const StackSample& s) const { return UserStackCopy{s.abi, s.mask, s.regs, s.stack}; }
    // The function name at `address` in `pid` ("" when unknown).
    std::string functionName(int32_t pid, uint64_t address) const;
    // Whether `address` lies in a signal trampoline (glibc's __restore_rt): code
    // whose CFI (an FDE of a CIE with the "S" augmentation) marks a signal frame.
    // Read with libdw from the file's .eh_frame, not through DwarfUnwinder.
    bool isSignalTrampoline(int32_t pid, uint64_t address) const;
    // An address as perf script prints a user frame: relative to its mapping
    // (address - start + pgoff), as is when no mapping holds it.
    uint64_t perfAddress(int32_t pid, uint64_t address) const;
};

// perf script's user frames of every sample it unwinds (`perf script -F tid,time,ip
// --ns --no-inline`), by (tid, time in ns): kernel frames dropped, user frames
// as perf prints them (see StackCapture::perfAddress). Two samples of one thread
// can carry the same time (perf script prints both): each key holds one chain
// per sample printed with it, in perf's order.
using PerfCallchains = std::map<std::pair<int32_t, uint64_t>, std::vector<std::vector<uint64_t>>>;
PerfCallchains perfScriptUserFrames(const std::string& path, std::string& error);

// perf script's frames with their inlined functions (`perf script -F tid,time,ip,sym
// --ns --inline`), by (tid, time in ns): user frames only, each with the
// functions perf lists as inlined at its address, innermost first. Where two
// samples of one thread carry the same time the key is left out (ambiguous).
struct PerfInlineFrame {
    uint64_t address = 0;  // as perf prints it (StackCapture::perfAddress)
    std::vector<std::string> inlined;
};
using PerfInlineFrames = std::map<std::pair<int32_t, uint64_t>, std::vector<PerfInlineFrame>>;
PerfInlineFrames perfScriptInlineFrames(const std::string& path, std::string& error);

}  // namespace auxscope::test_support
