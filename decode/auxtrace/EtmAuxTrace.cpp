// SPDX-License-Identifier: GPL-3.0-or-later
#include "auxtrace/EtmAuxTrace.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "export/LineBuffer.h"

namespace auxscope {

Expected<std::unique_ptr<AuxTraceSession>> EtmAuxTraceSession::open(const PerfDataReader& file,
                                                                    const AuxTraceOptions& options,
                                                                    std::unique_ptr<AuxTraceSession>* carry) {
    etm::EtmSessionOptions etm;
    etm.images = options.images;
    etm.segmentBytes = options.segmentBytes;
    etm.cacheBytes = options.cacheBytes;
    etm.isolation = options.isolation;
    etm.limits = options.limits;
    // A session of the same kind hands its loaded images on (its own object goes with them).
    auto* same = carry ? dynamic_cast<EtmAuxTraceSession*>(carry->get()) : nullptr;
    auto session = etm::EtmSession::open(file, etm, same ? &same->etm_ : nullptr);
    if (session && (*session)->carried()) carry->reset();
    if (!session) return session.error();
    return std::unique_ptr<AuxTraceSession>(new EtmAuxTraceSession(std::move(*session)));
}

std::vector<std::string> EtmAuxTraceSession::traceNotes() const {
    std::vector<std::string> notes = etm_->trace().notes();
    if (std::string limit = etm_->lastDecodeLimit().note(); !limit.empty()) notes.push_back(std::move(limit));
    return notes;
}

std::vector<std::string> EtmAuxTraceSession::imageNotes() const {
    return etm_->images().notes();
}

std::vector<std::string> EtmAuxTraceSession::lossLines(std::optional<int> cpu) const {
    std::vector<std::string> lines;
    for (const etm::EtmCpuTrace& t : etm_->trace().cpus()) {
        const AuxStream& s = t.stream;
        if (cpu && s.cpu != *cpu) continue;
        const AuxLoss& l = s.auxLoss;
        if (!l.truncated && !l.partial && !l.collision && !l.missingBytes) continue;
        std::string line = "cpu " + std::to_string(s.cpu) + ": AUX records with";
        if (l.truncated) line += " TRUNCATED " + std::to_string(l.truncated);
        if (l.partial) line += " PARTIAL " + std::to_string(l.partial);
        if (l.collision) line += " COLLISION " + std::to_string(l.collision);
        if (l.missingBytes)
            line += " and " + std::to_string(l.missingBytes) + " AUX bytes missing from the file in " +
                    std::to_string(l.missingGaps) + " gaps";
        lines.push_back(line + " (trace lost there; " + std::to_string(l.splits) + " runs cut)\n");
    }
    for (const etm::EtmLostRing& lost : etm_->trace().lostRings())
        if (!cpu || lost.cpu == *cpu)
            lines.push_back("cpu " + std::to_string(lost.cpu) + ": " + lost.cause + "\n");
    return lines;
}

std::vector<AuxTraceSession::Segment> EtmAuxTraceSession::segments() const {
    std::vector<Segment> out;
    out.reserve(etm_->segments().size());
    for (const etm::EtmSession::Segment& s : etm_->segments())
        out.push_back({s.cpu, s.startTime, s.endTime, s.end - s.begin});
    return out;
}

DecodedSpans EtmAuxTraceSession::decodeSpans(const DecodeWindow& window, unsigned threads) {
    return etm_->decodeSpans(window, threads);
}

DecodeStats EtmAuxTraceSession::forEachBlock(const DecodeWindow& window,
                                             const std::function<void(const FlowBlock&)>& visit,
                                             unsigned threads, std::vector<Gap>* failures) {
    return etm_->forEachBlock(window, visit, threads, failures);
}

int EtmAuxTraceSession::listPackets(std::optional<int> cpu, std::ostream& out, std::ostream& err) {
    return etm_->listPackets(cpu, out, err);
}

int EtmAuxTraceSession::listRanges(std::optional<int> cpu, std::ostream& out, std::ostream& err) {
    out << "# cpu trace-ID first-address last-address instructions ISA\n";
    // "%d 0x%x 0x%" PRIx64 " 0x%" PRIx64 " %u %s\n", through one large buffer.
    LineBuffer text(out);
    uint64_t ranges = 0;
    std::vector<Gap> failures;
    const DecodeStats stats = etm_->forEachRange(
        cpu,
        [&](const etm::EtmRange& r) {
            text.dec(int32_t(r.cpu));
            text.put(" 0x");
            text.hex(uint64_t(unsigned(r.traceId)));
            text.put(" 0x");
            text.hex(uint64_t(r.start));
            text.put(" 0x");
            text.hex(uint64_t(r.last));
            text.put(' ');
            text.dec(uint32_t(r.instructions));
            text.put(' ');
            text.put(etm::etmIsaName(r.isa));
            text.endLine();
            ++ranges;
        },
        1, &failures);
    if (!text.flush()) {
        err << "writing the ranges failed after " << ranges << " lines: " << std::strerror(errno) << "\n";
        return 1;
    }
    err << "ranges " << ranges << ", instructions " << stats.instructions << ", decode errors "
        << stats.decodeErrors;
    for (const auto& [reason, n] : stats.gaps)
        err << ", " << gapReasonName(reason) << " gaps " << n;
    err << "\n";
    for (const auto& [file, n] : stats.missingImages)
        err << "missing image " << file << ": " << n << " gaps\n";
    // A segment OpenCSD crashed or hung on (its worker process): its ranges end there.
    for (const Gap& g : failures)
        err << "auxscope decode: " << failedPieceText(g.cpu, g.traceOffset, g.detail)
            << ": the ranges of this segment end there\n";
    return failures.empty() ? 0 : 1;
}

}  // namespace auxscope
