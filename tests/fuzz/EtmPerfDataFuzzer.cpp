// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for the CoreSight path from a perf.data (issue 12): the input
// is a whole perf.data image, written to a memfd and opened with
// PerfDataReader::open (the path `auxscope` takes for a file: mmap, header,
// features, records), then AuxTraceSession::open (AUXTRACE_INFO -> EtmSession,
// sideband, images) and decodeSpans of the whole recording on one thread.
// Errors are fine; crashes, leaks, out-of-bounds reads and UB are not. Built with
// clang and AddressSanitizer/UBSan by tests/fuzz/etm_perfdata_fuzz.cmake.
//
// Code images come only from AUXSCOPE_FUZZ_SYMFS (the simpleperf test files'
// symfs, set by run_etm_perfdata_fuzzer.sh) and an empty build-id cache, never
// from /proc/kcore, so a run does not depend on the machine's files.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "auxtrace/AuxTraceDecode.h"
#include "images/ElfSymbols.h"
#include "perfdata/PerfDataReader.h"

namespace {

auxscope::AuxTraceOptions fuzzOptions() {
    auxscope::AuxTraceOptions o;
    if (const char* symfs = std::getenv("AUXSCOPE_FUZZ_SYMFS")) o.images.symfs = symfs;
    o.images.buildIdCache = "/nonexistent/auxscope-fuzz-buildid-cache";
    o.images.runningKernel = false;
    // The code files' symbols are read once per process, not per input (see
    // images/ElfSymbols.h: ElfSymbolCache; only what the files say is kept).
    o.images.symbolCache = std::make_shared<auxscope::ElfSymbolCache>(8);
    o.segmentBytes = 64 << 10;  // several segments from a small buffer
    o.cacheBytes = 64 << 20;
    // An input decodes a few KB of its trace, not all of it
    // (spans/DecodeLimits.h: the decode stops at the first segment past a cap
    // and says so in its notes).
    o.limits.traceBytes = 4 << 10;
    o.limits.instructions = 20000;
    o.limits.spans = 2000;
    // In this process: the fuzzer must see what the decoders do (a worker process
    // per input would hide crashes as gaps and cost a fork per input).
    o.isolation.enabled = false;
    return o;
}

bool writeAll(int fd, const uint8_t* data, size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n <= 0) return false;
        data += n;
        size -= size_t(n);
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auxscope::AuxTraceOptions options = fuzzOptions();
    const int fd = ::memfd_create("auxscope-fuzz.data", MFD_CLOEXEC);
    if (fd < 0) std::abort();
    if (!writeAll(fd, data, size)) std::abort();
    auto reader = auxscope::PerfDataReader::open("/proc/self/fd/" + std::to_string(fd));
    ::close(fd);  // the reader has mapped (or copied) what it needs
    if (!reader.ok()) {
        if (reader.error().message.empty()) std::abort();
        return 0;
    }
    const auxscope::PerfDataReader& file = *reader;
    (void)auxscope::auxTraceKind(file);
    (void)auxscope::hasDecodableAuxTrace(file);
    (void)auxscope::auxTraceBytes(file);
    auto session = auxscope::AuxTraceSession::open(file, options);
    if (!session.ok()) {
        if (session.error().message.empty()) std::abort();
        return 0;
    }
    auxscope::AuxTraceSession& s = **session;
    uint64_t touched = 0;
    for (const auto& seg : s.segments())
        touched += seg.bytes;
    for (const auto& line : s.traceNotes())
        touched += line.size();
    for (const auto& line : s.imageNotes())
        touched += line.size();
    for (const auto& line : s.lossLines(std::nullopt))
        touched += line.size();
    auxscope::DecodedSpans spans = s.decodeSpans(auxscope::DecodeWindow{}, 1);
    touched += spans.threads.size() + spans.stats.instructions + spans.stats.blocks;
    // The caps' report counts what the call returned, and a stop is told.
    const auxscope::DecodeLimitReport limit = s.lastDecodeLimit();
    if (limit.traceBytes != spans.stats.traceBytes || limit.instructions != spans.stats.instructions)
        std::abort();
    if (limit.stopped && limit.note().empty()) std::abort();
    return touched == 1 ? 1 : 0;
}
