// SPDX-License-Identifier: GPL-3.0-or-later
#include "auxtrace/PtAuxTrace.h"

#include <cstdio>
#include <cstring>

#include "pt/PtConfig.h"
#include "pt/PtPacketDump.h"

namespace auxscope {

namespace {

// "cpu N: AUX records with TRUNCATED 2, ..." when the kernel flagged lost trace.
std::string auxLossLine(const PtCpuTrace& cpu) {
    const PtAuxLoss& l = cpu.auxLoss;
    if (!l.truncated && !l.partial && !l.collision) return {};
    std::string s = "cpu " + std::to_string(cpu.cpu) + ": AUX records with";
    if (l.truncated) s += " TRUNCATED " + std::to_string(l.truncated);
    if (l.partial) s += " PARTIAL " + std::to_string(l.partial);
    if (l.collision) s += " COLLISION " + std::to_string(l.collision);
    return s + " (trace lost there; " + std::to_string(l.splits) + " runs cut)\n";
}

}  // namespace

Expected<std::unique_ptr<AuxTraceSession>> PtAuxTraceSession::open(const PerfDataReader& file,
                                                                   const AuxTraceOptions& options,
                                                                   std::unique_ptr<AuxTraceSession>* carry) {
    PtSessionOptions pt;
    pt.images = options.images;
    pt.segmentBytes = options.segmentBytes;
    pt.cacheBytes = options.cacheBytes;
    pt.flowWalker = options.ptFlowWalker;
    pt.isolation = options.isolation;
    pt.limits = options.limits;
    // A session of the same kind hands its loaded images on (its own object goes with them).
    auto* same = carry ? dynamic_cast<PtAuxTraceSession*>(carry->get()) : nullptr;
    auto session = PtSession::open(file, pt, same ? &same->pt_ : nullptr);
    if (session && (*session)->carried()) carry->reset();
    if (!session) return session.error();
    return std::unique_ptr<AuxTraceSession>(new PtAuxTraceSession(std::move(*session)));
}

std::vector<std::string> PtAuxTraceSession::traceNotes() const {
    std::vector<std::string> notes = pt_->trace().notes();
    if (std::string limit = pt_->lastDecodeLimit().note(); !limit.empty()) notes.push_back(std::move(limit));
    return notes;
}

std::vector<std::string> PtAuxTraceSession::imageNotes() const {
    std::vector<std::string> notes = pt_->images().notes();
    const auto& more = pt_->ptImages().notes();
    notes.insert(notes.end(), more.begin(), more.end());
    return notes;
}

std::vector<std::string> PtAuxTraceSession::lossLines(std::optional<int> cpu) const {
    std::vector<std::string> lines;
    for (const PtCpuTrace& t : pt_->trace().cpus())
        if (!cpu || t.cpu == *cpu)
            if (std::string line = auxLossLine(t); !line.empty()) lines.push_back(std::move(line));
    return lines;
}

std::vector<AuxTraceSession::Segment> PtAuxTraceSession::segments() const {
    std::vector<Segment> out;
    out.reserve(pt_->segments().size());
    for (const PtSession::Segment& s : pt_->segments())
        out.push_back({s.cpu, s.startTime, s.endTime, s.end - s.begin});
    return out;
}

DecodedSpans PtAuxTraceSession::decodeSpans(const DecodeWindow& window, unsigned threads) {
    return pt_->decodeSpans(window, threads);
}

DecodeStats PtAuxTraceSession::forEachBlock(const DecodeWindow& window,
                                            const std::function<void(const FlowBlock&)>& visit,
                                            unsigned threads, std::vector<Gap>* failures) {
    return pt_->forEachBlock(window, visit, threads, failures);
}

int PtAuxTraceSession::listPackets(std::optional<int> cpu, std::ostream& out, std::ostream& err) {
    int status = 0;
    char line[512];
    const uint64_t cap = pt_->limits().traceBytes;  // 0: no cap
    uint64_t listed = 0;
    bool capped = false;
    for (const PtCpuTrace& t : pt_->trace().cpus()) {
        if (cpu && t.cpu != *cpu) continue;
        if (capped || (cap && listed >= cap)) {
            capped = true;
            break;
        }
        const PsbIndex& index = pt_->psbIndex(t.cpu);
        std::snprintf(line, sizeof line, "cpu %d: %zu bytes in %zu AUXTRACE buffers, %zu runs, %zu PSBs\n",
                      t.cpu, t.bytes.size(), t.buffers, t.runs.size(), index.psbCount());
        out << line;
        if (std::string loss = auxLossLine(t); !loss.empty()) out << loss;
        // libipt's packet decoder runs in worker processes (spans/IsolatedDecode.h:
        // streamIsolated), a run an item: a run libipt crashes or hangs on ends
        // that run's listing with a line to `err`, and the next run goes on.
        PtPacketCounts total;
        // The runs listed and where each listing ends: with a cap on trace
        // bytes, the runs up to the cap, the last one cut there.
        std::vector<size_t> runs, ends(t.runs.size());
        for (size_t i = 0; i < t.runs.size(); ++i) {
            const PtRun& run = t.runs[i];
            if (cap && listed >= cap) {
                capped = true;
                break;
            }
            size_t end = run.end;
            if (cap && end - run.begin > cap - listed) end = run.begin + size_t(cap - listed), capped = true;
            listed += end - run.begin;
            runs.push_back(i);
            ends[i] = end;
        }
        streamIsolated(
            runs, 1, pt_->isolation(), "libipt",
            [&](size_t i, IsolatedOutput& to) {
                const PtRun& run = t.runs[i];
                IsolatedOutputStream text(to, kListingText);
                if (!run.lostCause.empty()) text << "[lost AUX: " << run.lostCause << "]\n";
                PtConfig config = makePtConfig(pt_->trace().configOptions(), t.bytes.data() + run.begin,
                                               t.bytes.data() + ends[i]);
                auto dumped = dumpPtPackets(config, PtPacketDumpOptions{}, text);
                text.flush();
                if (!dumped) {
                    const std::string m = "auxscope decode: " + dumped.error().message + "\n";
                    to.append(kListingError, m.data(), m.size());
                    return;
                }
                to.append(kListingCounts, dumped->counts.byType.data(), sizeof dumped->counts.byType);
            },
            listingConsumer([&](std::string_view text) { out << text; },
                            [&](std::string_view line) {
                                err << line;
                                status = 1;
                            },
                            [&](const uint8_t* data, size_t n) {
                                if (n != sizeof total.byType) return;
                                PtPacketCounts c;
                                std::memcpy(c.byType.data(), data, n);
                                for (size_t k = 0; k < PtPacketCounts::kTypes; ++k)
                                    total.byType[k] += c.byType[k];
                            }),
            [&](size_t i, const DecoderFailure& f) {
                err << "auxscope decode: " << failedPieceText(t.cpu, t.runs[i].begin, f.detail)
                    << ": the packets of this run end there\n";
                status = 1;
            });
        out << "cpu " << t.cpu << " packets:";
        for (size_t k = 0; k < PtPacketCounts::kTypes; ++k)
            if (total.byType[k]) out << " " << ptPacketTypeName(pt_packet_type(k)) << " " << total.byType[k];
        out << "\n";
    }
    if (capped)
        out << "[listing stopped at the cap of " << cap << " trace bytes (AuxTraceOptions::limits): "
            << "the rest is not listed]\n";
    return status;
}

}  // namespace auxscope
