// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for the Intel PT path from a perf.data (issue 17): the input
// is a whole perf.data image, written to a memfd and opened with
// PerfDataReader::open (the path `auxscope` takes for a file), then
// AuxTraceSession::open (AUXTRACE_INFO -> PtSession: the PMU's private block,
// the PSB index of every AUXTRACE buffer, sideband, images), its notes, and the
// decode of the whole recording to spans on one thread, and (one input in four,
// see below) the packet listing of `auxscope decode --format packets`. Errors
// are fine; crashes, leaks, out-of-bounds reads and UB are not. Built with
// clang and ASan/UBSan by tests/fuzz/hardening_fuzz.cmake.
//
// Code images come from the recorded paths (a seed made by auxscope-ptsynth
// maps its generated ELF in the run's temp dir) and an empty build-id cache,
// never from /proc/kcore.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include "auxtrace/AuxTraceDecode.h"
#include "images/ElfSymbols.h"
#include "perfdata/PerfDataReader.h"

namespace {

constexpr uint64_t kTraceBytes = 4 << 10;

auxscope::AuxTraceOptions fuzzOptions() {
    auxscope::AuxTraceOptions o;
    if (const char* symfs = std::getenv("AUXSCOPE_FUZZ_SYMFS")) o.images.symfs = symfs;
    o.images.buildIdCache = "/nonexistent/auxscope-fuzz-buildid-cache";
    o.images.runningKernel = false;
    // The code files' symbols are read once per process, not per input (see
    // images/ElfSymbols.h: ElfSymbolCache; only what the files say is kept).
    o.images.symbolCache = std::make_shared<auxscope::ElfSymbolCache>(8);
    o.segmentBytes = 4 << 10;  // several PSB segments from a small buffer
    o.cacheBytes = 64 << 20;
    // An input decodes and lists a few KB of its trace, not all of it
    // (spans/DecodeLimits.h: the decode stops at the first segment past a cap
    // and says so in its notes): what an input costs stays bounded whatever
    // its size, while the segments' set-up, the sideband and the images run
    // every time.
    o.limits.traceBytes = kTraceBytes;
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

// Discards what it is given (the packet listing's text is formatted, not kept).
struct NullBuf : std::streambuf {
    uint64_t bytes = 0;
    int overflow(int c) override {
        ++bytes;
        return c;
    }
    std::streamsize xsputn(const char*, std::streamsize n) override {
        bytes += uint64_t(n);
        return n;
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auxscope::AuxTraceOptions options = fuzzOptions();
    const int fd = ::memfd_create("auxscope-pt-fuzz.data", MFD_CLOEXEC);
    if (fd < 0) std::abort();
    if (!writeAll(fd, data, size)) std::abort();
    auto reader = auxscope::PerfDataReader::open("/proc/self/fd/" + std::to_string(fd));
    ::close(fd);
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
    for (const auto& seg : s.segments()) {
        if (seg.endTime < seg.startTime && seg.endTime != 0) touched += 1;  // read every field
        touched += seg.bytes;
    }
    for (const auto& line : s.traceNotes())
        touched += line.size();
    for (const auto& line : s.imageNotes())
        touched += line.size();
    for (const auto& line : s.lossLines(std::nullopt))
        touched += line.size();
    const auxscope::TimeExtent extent = auxscope::recordingExtent(s);
    touched += extent.begin;
    auxscope::DecodedSpans spans = s.decodeSpans(auxscope::DecodeWindow{}, 1);
    touched += spans.threads.size() + spans.stats.instructions + spans.stats.blocks;
    // The caps' report counts what the call returned, and a stop is told.
    const auxscope::DecodeLimitReport limit = s.lastDecodeLimit();
    if (limit.traceBytes != spans.stats.traceBytes || limit.instructions != spans.stats.instructions)
        std::abort();
    if (limit.stopped && limit.note().empty()) std::abort();
    for (const auto& [tid, store] : spans.threads)
        for (size_t i = 0; i < store.size(); ++i)
            touched += store.at(i).instructions;
    // The packet listing of the first CPU's buffers only: it formats every
    // packet, so a whole multi-CPU file would dominate the run. And only for
    // one input in four (those whose size is a multiple of 4; mutations reach
    // both kinds): listing the Skylake seed's first buffer (12 KB) was half of
    // what an input cost, the decode of all of it a sixth.
    if (!s.segments().empty() && size % 4 == 0) {
        NullBuf outBuf, errBuf;
        std::ostream out(&outBuf), err(&errBuf);
        (void)s.listPackets(s.segments().front().cpu, out, err);
        touched += outBuf.bytes + errBuf.bytes;
    }
    return touched == 1 ? 1 : 0;
}
