// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for the Arm SPE path (issue 31). An input that starts like a
// perf.data ("PERFILE2") is a whole file: written to a memfd, opened with
// PerfDataReader::open, then AuxTraceSession::open (AUXTRACE_INFO -> the SPE
// session: sideband, records, images), its records, segments, notes and the
// packet listing. Any other input is a raw SPE byte stream: the record decoder,
// the perf-style packet listing, and the AUXTRACE_INFO decoder over its words.
// Errors are fine; crashes, leaks, out-of-bounds reads, UB and broken counts
// (gap bytes beyond the bytes decoded, records the stats do not count) are not.
// Built with clang and ASan/UBSan by tests/fuzz/spe_fuzz.cmake.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "auxtrace/SpeAuxTrace.h"
#include "images/ElfSymbols.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "spe/SpeDecoder.h"
#include "spe/SpePacket.h"
#include "spe/SpeRecordCsv.h"

namespace {

auxscope::AuxTraceOptions fuzzOptions() {
    auxscope::AuxTraceOptions o;
    o.images.buildIdCache = "/nonexistent/auxscope-fuzz-buildid-cache";
    o.images.runningKernel = false;
    // The code files' symbols are read once per process, not per input (see
    // images/ElfSymbols.h: ElfSymbolCache; only what the files say is kept).
    o.images.symbolCache = std::make_shared<auxscope::ElfSymbolCache>(8);
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

void checkStats(const auxscope::spe::SpeDecodeStats& s, size_t records) {
    uint64_t gaps = 0;
    for (const auto& [reason, n] : s.gaps)
        gaps += n;
    if (gaps != s.gapBytes || s.records != records) std::abort();
}

int rawStream(const uint8_t* data, size_t size) {
    using namespace auxscope::spe;
    std::vector<SpeRecord> recs;
    SpeDecodeStats stats;
    std::vector<uint64_t> ends;
    decodeSpeRun({data, size}, 0, recs, stats, &ends, 0);
    checkStats(stats, recs.size());
    if (stats.bytes != size || stats.gapBytes > size || ends.size() != recs.size()) std::abort();
    for (size_t i = 1; i < ends.size(); ++i)
        if (ends[i] <= ends[i - 1] || ends[i] > size) std::abort();
    std::string csv;
    uint64_t touched = 0;
    for (const SpeRecord& r : recs) {
        appendSpeCsvRow(r, csv);
        touched += dataSourceName(r.dataSource, 0x410fd0c0).size() + eventNames(r.events).size();
    }
    NullBuf buf;
    std::ostream out(&buf);
    std::map<std::string, uint64_t> counts;
    auxscope::speDumpBuffer({data, size}, out, counts);
    std::vector<uint64_t> words(size / 8);
    if (!words.empty()) std::memcpy(words.data(), data, words.size() * 8);
    auto info = auxscope::decodeArmSpeInfo(words);
    if (info.ok() && auxscope::decodeArmSpeInfo(auxscope::encodeArmSpeInfo(*info)).ok() == false)
        std::abort();
    return touched + csv.size() + buf.bytes == 1 ? 1 : 0;
}

int perfData(const uint8_t* data, size_t size) {
    static const auxscope::AuxTraceOptions options = fuzzOptions();
    const int fd = ::memfd_create("auxscope-spe-fuzz.data", MFD_CLOEXEC);
    if (fd < 0) std::abort();
    if (!writeAll(fd, data, size)) std::abort();
    auto reader = auxscope::PerfDataReader::open("/proc/self/fd/" + std::to_string(fd));
    ::close(fd);
    if (!reader.ok()) {
        if (reader.error().message.empty()) std::abort();
        return 0;
    }
    const auxscope::PerfDataReader& file = *reader;
    if (auxscope::auxTraceKind(file) != auxscope::AuxTraceKind::ArmSpe) return 0;
    auto session = auxscope::AuxTraceSession::open(file, options);
    if (!session.ok()) {
        if (session.error().message.empty()) std::abort();
        return 0;
    }
    const auto& s = static_cast<auxscope::SpeAuxTraceSession&>(**session);
    const auxscope::spe::SpeRecords& recs = s.records();
    checkStats(recs.stats, recs.records.size());
    uint64_t touched = 0;
    for (const auto& seg : s.segments())
        touched += seg.bytes + seg.startTime;
    for (const auto& line : s.traceNotes())
        touched += line.size();
    for (const auto& line : s.lossLines(std::nullopt))
        touched += line.size();
    std::string csv;
    for (const auto& r : recs.records) {
        auxscope::spe::appendSpeCsvRow(r, csv);
        touched += auxscope::spe::dataSourceName(r.dataSource, recs.midrOf(r.cpu)).size();
    }
    NullBuf outBuf, errBuf;
    std::ostream out(&outBuf), err(&errBuf);
    (void)(**session).listPackets(std::nullopt, out, err);
    return touched + csv.size() + outBuf.bytes == 1 ? 1 : 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size >= 8 && std::memcmp(data, "PERFILE2", 8) == 0) return perfData(data, size);
    return rawStream(data, size);
}
