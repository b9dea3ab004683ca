// SPDX-License-Identifier: GPL-3.0-or-later
#include "perfdata/AuxStreams.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>

#include "perfdata/PerfDataFormat.h"

namespace auxscope {

uint64_t PerfClockConv::toPerfTime(uint64_t tsc) const {
    // shift >= 64 is refused where a file's numbers are read (PerfDataReader's
    // TIME_CONV, PtTraceSource's AUXTRACE_INFO); never shift by it here either.
    if (!valid || shift >= 64) return tsc;
    if (shortCounter) tsc = cycles + ((tsc - cycles) & mask);
    // Split so the multiplication cannot overflow 64 bits (perf's tsc_to_perf_time).
    uint64_t quot = tsc >> shift;
    uint64_t rem = tsc & ((uint64_t(1) << shift) - 1);
    return zero + quot * mult + ((rem * mult) >> shift);
}

uint64_t PerfClockConv::toTsc(uint64_t perfTime) const {
    if (!valid || mult == 0 || shift >= 64) return perfTime;
    uint64_t t = perfTime - zero;
    uint64_t quot = t / mult;
    uint64_t rem = t % mult;
    return (quot << shift) + (rem << shift) / mult;
}

std::span<const uint8_t> AuxStreamBytes::view(uint64_t begin, uint64_t end,
                                              std::vector<uint8_t>& scratch) const {
    end = std::min(end, size_);
    if (begin >= end) return {};
    // The last piece starting at or before `begin`.
    auto it = std::upper_bound(pieces_.begin(), pieces_.end(), begin,
                               [](uint64_t off, const Piece& p) { return off < p.begin; });
    if (it == pieces_.begin()) return {};
    --it;
    if (end <= it->begin + it->bytes.size()) return it->bytes.subspan(begin - it->begin, end - begin);
    scratch.resize(end - begin);
    uint64_t at = begin;
    for (; it != pieces_.end() && at < end; ++it) {
        uint64_t from = at - it->begin;
        uint64_t n = std::min<uint64_t>(it->bytes.size() - from, end - at);
        std::memcpy(scratch.data() + (at - begin), it->bytes.data() + from, n);
        at += n;
    }
    return {scratch.data(), scratch.size()};
}

const uint8_t* AuxStreamBytes::data() const {
    if (pieces_.size() == 1) return pieces_[0].bytes.data();
    std::call_once(shared_->once, [&] {
        std::vector<uint8_t> whole(size_);
        for (const Piece& p : pieces_)
            std::memcpy(whole.data() + p.begin, p.bytes.data(), p.bytes.size());
        shared_->whole = std::move(whole);
    });
    return shared_->whole.data();
}

void AuxStreamBytes::append(std::span<const uint8_t> bytes) {
    if (bytes.empty()) return;
    pieces_.push_back({size_, bytes});
    size_ += bytes.size();
}

void AuxStreamBytes::appendOwned(std::vector<uint8_t> bytes) {
    shared_->owned.push_back(std::move(bytes));
    append(shared_->owned.back());
}

void AuxStreamBytes::dropBack(uint64_t n) {
    while (n && !pieces_.empty()) {
        Piece& last = pieces_.back();
        uint64_t k = std::min<uint64_t>(n, last.bytes.size());
        last.bytes = last.bytes.first(last.bytes.size() - k);
        size_ -= k, n -= k;
        if (last.bytes.empty()) pieces_.pop_back();
    }
}

namespace {
std::string hex(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%" PRIx64, v);
    return b;
}
}  // namespace

static void splitAtAuxLosses(AuxStream& trace, const std::string& syncName,
                             const std::vector<std::pair<uint64_t, uint64_t>>& placed,
                             std::vector<const PerfAuxRecord*> losses) {
    std::stable_sort(losses.begin(), losses.end(), [](const PerfAuxRecord* a, const PerfAuxRecord* b) {
        return a->auxOffset + a->auxSize < b->auxOffset + b->auxSize;
    });
    for (const PerfAuxRecord* a : losses) {
        const uint64_t at = a->auxOffset + a->auxSize;
        std::string flag, what;
        if (a->flags & perfdata::kAuxFlagTruncated) {
            ++trace.auxLoss.truncated;
            flag = "TRUNCATED", what = "AUX area full: the kernel stopped tracing at AUX offset " + hex(at);
        }
        if (a->flags & perfdata::kAuxFlagPartial) {
            ++trace.auxLoss.partial;
            if (what.empty()) what = "partial AUX data before AUX offset " + hex(at);
            flag += flag.empty() ? "PARTIAL" : "|PARTIAL";
        }
        if (a->flags & perfdata::kAuxFlagCollision) {
            ++trace.auxLoss.collision;
            if (what.empty()) what = "AUX data collided before AUX offset " + hex(at);
            flag += flag.empty() ? "COLLISION" : "|COLLISION";
        }
        const std::string cause = what + " (" + flag + ", time " + std::to_string(a->time) +
                                  "), trace resumes at the next " + syncName;
        // The stream offset of AUX offset `at`: inside a piece (not at the very end of the data).
        auto piece = std::upper_bound(
            placed.begin(), placed.end(), at,
            [](uint64_t off, const std::pair<uint64_t, uint64_t>& p) { return off < p.first; });
        if (piece == placed.begin()) continue;
        --piece;
        const uint64_t next = piece + 1 == placed.end() ? trace.bytes.size() : (piece + 1)->second;
        const uint64_t pos = piece->second + (at - piece->first);
        if (pos >= next || pos >= trace.bytes.size()) continue;  // past the data: nothing follows
        auto run = std::upper_bound(trace.runs.begin(), trace.runs.end(), pos,
                                    [](uint64_t off, const AuxRun& r) { return off < r.begin; });
        if (run == trace.runs.begin()) continue;
        --run;
        // Nothing after it in this run, or nothing before it in the trace: no cut.
        if (pos >= run->end || (pos == run->begin && run == trace.runs.begin())) continue;
        ++trace.auxLoss.splits;
        if (pos == run->begin) {
            // A run already starts here (AUX data missing too): both causes.
            run->lostCause = run->lostCause.empty() ? cause : run->lostCause + "; " + cause;
            continue;
        }
        AuxRun after;
        after.begin = pos;
        after.end = run->end;
        after.auxOffset = at;
        after.lostCause = cause;
        run->end = pos;
        trace.runs.insert(run + 1, after);
    }
}

namespace {

// The reader's account of the AUX area this CPU's trace comes from.
const PerfAuxArea* areaOf(const PerfDataSummary& s, int64_t cpu, int32_t tid) {
    for (const PerfAuxArea& a : s.auxAreas)
        if (cpu >= 0 ? a.cpu == cpu : (a.cpu < 0 && a.tid == tid)) return &a;
    return nullptr;
}

// "4096 AUX bytes missing from the file at AUX offset 0x1000-0x2000" or
// "12288 AUX bytes missing from the file in 3 gaps between AUX offset 0x1000 and 0x5000".
std::string missingText(const std::vector<const PerfAuxGap*>& gaps, uint64_t& bytes) {
    bytes = 0;
    for (const PerfAuxGap* g : gaps)
        bytes += g->size;
    const uint64_t begin = gaps.front()->auxOffset, end = gaps.back()->auxOffset + gaps.back()->size;
    if (gaps.size() == 1)
        return std::to_string(bytes) + " AUX bytes missing from the file at AUX offset " + hex(begin) + "-" +
               hex(end);
    return std::to_string(bytes) + " AUX bytes missing from the file in " + std::to_string(gaps.size()) +
           " gaps between AUX offset " + hex(begin) + " and " + hex(end);
}

void joinCause(std::string& cause, const std::string& more) {
    cause = cause.empty() ? more : cause + "; " + more;
}

}  // namespace

std::vector<AuxStream> collectAuxStreams(const PerfDataReader& file, const std::string& syncName,
                                         std::vector<std::string>& notes) {
    std::vector<AuxStream> streams;
    // Gather each CPU's buffers; compressed files hold their payloads inside
    // COMPRESSED records, so those come from a walk instead of the file bytes.
    // File bytes for plain AUXTRACE records; an owned copy for compressed ones.
    struct Piece {
        uint64_t auxOffset, size, available;
        std::span<const uint8_t> bytes;
        std::vector<uint8_t> owned;
        int32_t tid;
    };
    std::map<int64_t, std::vector<Piece>> byCpu;
    bool anyCompressed = false;
    for (const PerfAuxtraceBuffer& b : file.summary().auxtrace) {
        if (b.compressed) {
            anyCompressed = true;
            continue;
        }
        auto bytes = file.fileBytes(b.dataOffset, b.available);
        byCpu[b.cpu].push_back({b.auxOffset, b.size, bytes.size(), bytes, {}, int32_t(b.tid)});
    }
    if (anyCompressed) {
        auto walked = file.forEachRecord([&](const PerfRecord& rec) {
            if (!rec.compressed || rec.header.type != perfdata::kRecordAuxtrace) return true;
            perfdata::AuxtraceRecord head{};
            if (rec.bytes.size() >= 8 + sizeof head) std::memcpy(&head, rec.bytes.data() + 8, sizeof head);
            byCpu[rec.cpu].push_back({head.offset,
                                      rec.payloadSize,
                                      rec.payload.size(),
                                      {},
                                      {rec.payload.begin(), rec.payload.end()},
                                      int32_t(head.tid)});
            return true;
        });
        if (!walked) notes.push_back(walked.error().message);
    }
    // PERF_RECORD_AUX records with a loss flag, per CPU: the trace breaks at the end of their data.
    constexpr uint64_t kLossFlags =
        perfdata::kAuxFlagTruncated | perfdata::kAuxFlagPartial | perfdata::kAuxFlagCollision;
    std::map<int64_t, std::vector<const PerfAuxRecord*>> lossesByCpu;
    for (const PerfAuxRecord& a : file.summary().aux)
        if (a.flags & kLossFlags) lossesByCpu[a.cpu].push_back(&a);
    for (auto& [cpu, pieces] : byCpu) {
        std::stable_sort(pieces.begin(), pieces.end(),
                         [](const Piece& a, const Piece& b) { return a.auxOffset < b.auxOffset; });
        AuxStream trace;
        trace.cpu = int(cpu);
        trace.buffers = pieces.size();
        uint64_t expected = 0;
        bool cutShort = false;
        std::vector<std::pair<uint64_t, uint64_t>> placed;  // AUX offset -> stream offset, per piece
        std::vector<size_t> runOfPiece;                     // the run a piece starts, or SIZE_MAX
        std::vector<uint64_t> gapBefore;                    // per run: the AUX offsets between buffers
        for (size_t i = 0; i < pieces.size(); ++i) {
            const Piece& p = pieces[i];
            if (i == 0) trace.tid = p.tid;
            // perf pads each AUXTRACE payload to 8 bytes and counts the padding
            // in its size while the next buffer starts at the unpadded end: an
            // overlap of up to 7 bytes is that padding, dropped here.
            bool contiguous = i > 0 && !cutShort && p.auxOffset <= expected && expected - p.auxOffset < 8;
            if (contiguous) trace.bytes.dropBack(expected - p.auxOffset);
            if (!contiguous) {
                AuxRun run;
                run.begin = run.end = trace.bytes.size();
                run.auxOffset = p.auxOffset;
                uint64_t between = 0;
                if (i > 0) {
                    if (cutShort) {
                        run.lostCause = "AUX buffer cut short by the end of the file";
                    } else if (p.auxOffset > expected) {
                        // Named from the AUX records below; these words stay when none announces them.
                        between = p.auxOffset - expected;
                        run.lostBefore = between;
                        run.lostCause = "AUX offsets " + hex(expected) + "-" + hex(p.auxOffset) +
                                        " missing from the file (" + std::to_string(between) +
                                        " bytes; no AUX record announces them)";
                    } else {
                        run.lostCause = "AUX buffers overlap at " + hex(p.auxOffset);
                    }
                }
                runOfPiece.resize(i + 1, SIZE_MAX);
                runOfPiece[i] = trace.runs.size();
                gapBefore.push_back(between);
                trace.runs.push_back(run);
            }
            if (!trace.places.empty())
                trace.places.back().end = std::min(trace.places.back().end, trace.bytes.size());
            placed.push_back({p.auxOffset, trace.bytes.size()});
            trace.places.push_back({trace.bytes.size(), trace.bytes.size(), p.auxOffset});
            if (!p.owned.empty())
                trace.bytes.appendOwned(std::move(p.owned));
            else
                trace.bytes.append(p.bytes);
            trace.runs.back().end = trace.bytes.size();
            trace.places.back().end = trace.bytes.size();
            expected = p.auxOffset + p.size;
            cutShort = p.available < p.size;
        }
        runOfPiece.resize(pieces.size(), SIZE_MAX);
        // AUX data the AUX records announce and the file lacks (the reader's
        // accounting): each range is told at the run after it, or after the last run.
        if (const PerfAuxArea* area = areaOf(file.summary(), cpu, trace.tid); area && !trace.runs.empty()) {
            trace.auxLoss.missingBytes = area->missingBytes;
            trace.auxLoss.missingGaps = area->gaps.size();
            std::map<size_t, std::vector<const PerfAuxGap*>> before;  // run -> gaps
            std::vector<const PerfAuxGap*> after;
            for (const PerfAuxGap& g : area->gaps) {
                // The first buffer at or past the gap's end.
                auto next = std::lower_bound(pieces.begin(), pieces.end(), g.auxOffset + g.size,
                                             [](const Piece& p, uint64_t off) { return p.auxOffset < off; });
                if (next == pieces.end()) {
                    after.push_back(&g);
                    continue;
                }
                const size_t run = runOfPiece[size_t(next - pieces.begin())];
                if (run != SIZE_MAX) before[run].push_back(&g);
            }
            for (auto& [r, gaps] : before) {
                AuxRun& run = trace.runs[r];
                uint64_t bytes = 0;
                std::string text = missingText(gaps, bytes);
                text += r == 0 ? " before the first AUXTRACE buffer, trace starts at the next " + syncName
                               : ", trace resumes at the next " + syncName;
                if (r > 0 && gapBefore[r] > 0) {
                    run.lostCause = text;  // replaces the offsets-only words
                } else {
                    joinCause(run.lostCause, text);
                }
                run.lostBefore = std::max(run.lostBefore, bytes);
            }
            if (!after.empty()) {
                AuxRun& last = trace.runs.back();
                uint64_t bytes = 0;
                last.lostAfterCause =
                    missingText(after, bytes) + " after the last AUXTRACE buffer, the trace ends here";
                last.lostAfter = bytes;
            }
        }
        // A per-thread ring (cpu -1) takes the flags of every CPU when it is the only ring.
        std::vector<const PerfAuxRecord*> losses = lossesByCpu[cpu];
        if (cpu < 0 && byCpu.size() == 1)
            for (auto& [c, l] : lossesByCpu)
                if (c >= 0) losses.insert(losses.end(), l.begin(), l.end());
        splitAtAuxLosses(trace, syncName, placed, losses);
        streams.push_back(std::move(trace));
    }
    // What the file misses, per AUX area: with no AUXTRACE data at all the decode has nothing to show it at.
    for (const PerfAuxArea& a : file.summary().auxAreas) {
        if (!a.missingBytes) continue;
        const bool none = a.presentBytes == 0;
        notes.push_back(
            perfAuxAreaName(a) + ": " + std::to_string(a.missingBytes) + " of " +
            std::to_string(a.announcedBytes) + " announced AUX bytes are missing from the file in " +
            std::to_string(a.gaps.size()) + (a.gaps.size() == 1 ? " gap" : " gaps") +
            (none ? " (no AUXTRACE data: nothing of it decodes)" : " (lost-AUX gaps in the decode)"));
    }
    if (streams.empty()) notes.push_back("the file holds no AUXTRACE data");
    return streams;
}

}  // namespace auxscope
