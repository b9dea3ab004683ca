// SPDX-License-Identifier: GPL-3.0-or-later
#include "etm/EtmSession.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <set>
#include <unordered_map>

#include "etm/EtmMemory.h"
#include "spans/FlowToSpans.h"

namespace auxscope::etm {

namespace {

std::string hex(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%" PRIx64, v);
    return b;
}

BranchClass branchClassOf(EtmBranch b) {
    switch (b) {
        case EtmBranch::Call:
            return BranchClass::Call;
        case EtmBranch::Return:
            return BranchClass::Return;
        case EtmBranch::ExceptionReturn:
            return BranchClass::FarReturn;
        case EtmBranch::Jump:
            return BranchClass::Jump;
        case EtmBranch::None:
            break;
    }
    return BranchClass::Other;
}

// OpenCSD reads the traced code from the recording's images (ELF files by
// MMAP2, kernel images), of the process running on the ring now.
class ResolverMemory final : public EtmMemory {
public:
    explicit ResolverMemory(const ImageResolver& images) : images_(images) {}
    size_t read(uint64_t address, uint8_t, uint8_t, std::span<uint8_t> out) override {
        return images_.readSome(pid, address, out.data(), out.size());
    }
    std::span<const uint8_t> view(uint64_t address, uint8_t, uint8_t) override {
        return images_.bytesAt(pid, address);
    }
    int32_t pid = -1;

private:
    const ImageResolver& images_;
};

}  // namespace

EtmSession::~EtmSession() = default;

Expected<std::unique_ptr<EtmSession>> EtmSession::open(const PerfDataReader& file, EtmSessionOptions options,
                                                       std::unique_ptr<EtmSession>* carry) {
    auto trace = EtmTraceSource::fromPerfData(file);
    if (!trace) return trace.error();
    auto sideband = Sideband::load(file);
    if (!sideband) return sideband.error();
    std::unique_ptr<EtmSession> s(new EtmSession);
    s->trace_ = std::make_unique<EtmTraceSource>(std::move(*trace));
    s->sideband_ = std::make_unique<Sideband>(std::move(*sideband));
    s->trace_->setStartTime(s->sideband_->model().firstTime());
    s->decode_ = std::make_unique<SegmentedDecode>(options.cacheBytes, options.isolation, "OpenCSD");
    s->decode_->setLimits(options.limits);
    if (carry && *carry && (*carry)->images_) {
        s->functions_ = std::move((*carry)->functions_);
        s->images_ = std::move((*carry)->images_);
        carry->reset();
        s->filesLoaded_ = s->images_->update(*s->sideband_).filesLoaded;
        s->carried_ = true;
    } else {
        s->functions_ = std::make_unique<FunctionTable>();
        s->images_ = std::make_unique<ImageResolver>(*s->sideband_, *s->functions_, options.images);
        s->images_->prepare();
        s->filesLoaded_ = s->images_->files().size();
    }
    const auto& cpus = s->trace_->cpus();
    // The sync points of every ring, a ring per worker.
    s->syncs_.resize(cpus.size());
    s->decode_->parallelFor(cpus.size(), 0, [&](size_t ring) {
        if (!cpus[ring].sources.empty()) s->syncs_[ring] = EtmSyncIndex::build(cpus[ring]);
    });
    for (size_t ring = 0; ring < cpus.size(); ++ring) {
        const EtmCpuTrace& cpu = cpus[ring];
        if (cpu.sources.empty()) continue;
        const AuxStream& stream = cpu.stream;
        // A frame-formatted ring several trace IDs share (a shared ETF/ETR sink)
        // is decoded per trace ID: each ID's segments start at its own clean sync
        // points, and a decoder that knows only that ID takes the bytes (the
        // deformatter drops the other IDs'). So a shared buffer is cut, its IDs
        // decode in parallel, and each ID's flow is its CPU's.
        // IDs without a sync point anywhere never decode: they get no segments.
        std::set<uint8_t> seen, ids;
        if (cpu.input == EtmInput::Formatted)
            for (const EtmBufferSyncs& b : s->syncs_[ring].buffers) {
                seen.insert(b.ids.begin(), b.ids.end());
                for (const auto& [id, points] : b.byId)
                    if (!points.empty() && cpu.sourceOfTraceId(id)) ids.insert(id);
            }
        std::vector<int> traceIds;
        if (seen.size() > 1 && !ids.empty())
            traceIds.assign(ids.begin(), ids.end());
        else
            traceIds.push_back(-1);
        for (const int traceId : traceIds) {
            uint64_t traceEnd = 0;
            for (size_t r = 0; r < stream.runs.size(); ++r) {
                const AuxRun& run = stream.runs[r];
                if (run.begin >= run.end) continue;
                // The sync points of the run: its start, every buffer start (the decoder
                // resets there) and every A-sync a buffer may be cut at inside it.
                struct Start {
                    uint64_t offset;
                    bool reset;
                };
                std::vector<Start> starts{{run.begin, true}};
                for (const EtmBufferSyncs& b : s->syncs_[ring].buffers) {
                    if (b.begin > run.begin && b.begin < run.end) starts.push_back({b.begin, true});
                    // ETMv3's and PTM's decoders hand out a range only when a later packet
                    // ends it, possibly the A-sync a cut starts at: the segment before the cut
                    // would drop it and the one after never sees it (TC2's PTM lost 3 ranges a
                    // copy). Only ETMv4 and ETE buffers are cut inside.
                    // Decoding every ID (-1), the ring's buffers hold one ID each: its points.
                    auto points = traceId >= 0 ? b.byId.find(uint8_t(traceId)) : b.byId.begin();
                    if (points == b.byId.end()) continue;
                    const EtmSourceConfig* source = cpu.sourceOfTraceId(points->first);
                    if (!source ||
                        (source->protocol != EtmProtocol::EtmV4 && source->protocol != EtmProtocol::Ete))
                        continue;
                    for (const EtmSyncPoint& p : points->second)
                        if (p.clean && p.offset > b.begin && p.offset > run.begin && p.offset < run.end)
                            starts.push_back({p.offset, false});
                }
                std::stable_sort(starts.begin(), starts.end(),
                                 [](const Start& a, const Start& b) { return a.offset < b.offset; });
                const size_t first = s->segments_.size();
                for (size_t i = 0; i < starts.size();) {
                    size_t j = i + 1;
                    while (j < starts.size() && starts[j].offset - starts[i].offset < options.segmentBytes)
                        ++j;
                    Segment seg;
                    seg.cpu =
                        traceId >= 0 && stream.cpu >= 0 ? cpu.cpuOfTraceId(uint8_t(traceId)) : stream.cpu;
                    seg.traceId = traceId;
                    seg.countBytes = traceId == traceIds.front();
                    seg.ring = ring;
                    seg.run = r;
                    seg.begin = starts[i].offset;
                    seg.end = j < starts.size() ? starts[j].offset : run.end;
                    for (size_t k = i + 1; k < j; ++k)
                        if (starts[k].reset) seg.resets.push_back(starts[k].offset);
                    if (j < starts.size() && !starts[j].reset) {
                        // Cut inside a buffer: it goes on to the next reset (or the run's end).
                        size_t k = j + 1;
                        while (k < starts.size() && !starts[k].reset)
                            ++k;
                        seg.feedEnd = k < starts.size() ? starts[k].offset : run.end;
                    }
                    seg.startTime = cpu.timeAt(seg.begin);
                    seg.endTime = std::max(seg.startTime, cpu.timeAt(seg.end - 1));
                    seg.firstOfRun = i == 0;
                    s->segments_.push_back(std::move(seg));
                    i = j;
                }
                Segment& head = s->segments_[first];
                if (!run.lostCause.empty() && traceEnd && traceEnd < head.startTime) head.lossFrom = traceEnd;
                traceEnd = std::max(traceEnd, s->segments_.back().endTime);
            }
        }
    }
    for (const EtmLostRing& lost : s->trace_->lostRings()) {
        Segment seg;
        seg.cpu = lost.cpu;
        seg.tid = lost.tid;
        seg.startTime = std::min(lost.firstTime, s->sideband_->model().firstTime());
        if (!seg.startTime) seg.startTime = lost.firstTime;
        seg.endTime = std::max(seg.startTime, lost.lastTime);
        seg.lostOnly = lost.cause;
        s->segments_.push_back(std::move(seg));
    }
    return s;
}

SegmentSpans EtmSession::decodeSegment(const Segment& seg, const std::function<void(const FlowBlock&)>* visit,
                                       const std::function<void(const EtmRange&)>* ranges) const {
    SegmentSpans result;
    DecodeStats& stats = result.stats;
    stats.segments = 1;
    // A shared ring's bytes are fed once per trace ID: counted with the first ID's segments.
    stats.traceBytes = seg.countBytes ? seg.end - seg.begin : 0;
    if (!seg.lostOnly.empty()) {
        // Nothing to decode: the thread(s) that ran share one lost-AUX gap.
        FlowToSpans flow;
        RunningThread r = seg.cpu >= 0 ? sideband_->runningAt(seg.cpu, seg.startTime) : RunningThread{};
        if (r.tid < 0) r.tid = seg.tid;
        flow.switchThread(seg.startTime, r.tid);
        ++stats.gaps[GapReason::LostAux];
        flow.gap(seg.startTime, GapReason::LostAux, seg.lostOnly, 0, seg.cpu);
        if (seg.cpu >= 0)
            for (uint64_t t = sideband_->nextSwitchAfter(seg.cpu, seg.startTime);
                 t <= seg.endTime && t != UINT64_MAX; t = sideband_->nextSwitchAfter(seg.cpu, t)) {
                flow.switchThread(t, sideband_->runningAt(seg.cpu, t).tid);
                flow.gap(t, GapReason::LostAux, seg.lostOnly, 0, seg.cpu);
            }
        flow.finish(seg.endTime);
        std::map<int32_t, FlowToSpans::ThreadSpans> spans = flow.take();
        storeSpans(spans, result.threads);
        return result;
    }
    const EtmCpuTrace& trace = trace_->cpus()[seg.ring];
    const AuxStream& stream = trace.stream;
    const AuxRun& run = stream.runs[seg.run];
    const bool stamped = trace_->timestamps();
    const PerfClockConv& conv = trace_->time();
    FlowToSpans flow;

    ResolverMemory files(*images_);
    EtmMemoryCache memory(files);
    // Function of a range's start address: a direct-mapped cache in front of the
    // resolver (a hash map here cost ~8% of the decode), emptied when the process changes.
    struct FunctionSlot {
        uint64_t address = UINT64_MAX;
        uint32_t function = 0;
    };
    constexpr size_t kFunctionSlots = 4096;
    std::vector<FunctionSlot> functionCache(kFunctionSlots);
    auto functionAt = [&](uint64_t address, int32_t pid) {
        FunctionSlot& slot = functionCache[(address >> 2 ^ address >> 14) & (kFunctionSlots - 1)];
        if (slot.address != address) slot = {address, images_->functionAt(pid, address)};
        return slot.function;
    };

    auto running = [&](uint64_t t) {
        RunningThread r = sideband_->runningAt(seg.cpu, t);
        if (r.tid < 0 && stream.tid > 0) r = {sideband_->pidOf(stream.tid), stream.tid};
        return r;
    };
    RunningThread current{-2, -2};
    auto setThread = [&](uint64_t t, RunningThread r) {
        if (r.tid == current.tid && r.pid == current.pid) return;
        flow.switchThread(t, r.tid);
        if (r.pid != current.pid) {
            files.pid = r.pid;
            memory.invalidate();
            std::fill(functionCache.begin(), functionCache.end(), FunctionSlot{});
        }
        current = r;
    };
    const bool lossGap = seg.lossFrom && seg.lossFrom < seg.startTime;
    uint64_t lastTime = lossGap ? seg.lossFrom : seg.startTime;
    setThread(lastTime, running(lastTime));
    bool contextIds = false;  // the trace names its threads: the switch timeline is not needed
    uint64_t nextSwitch = seg.cpu >= 0 ? sideband_->nextSwitchAfter(seg.cpu, lastTime) : UINT64_MAX;
    auto advance = [&](uint64_t t) {
        while (!contextIds && t >= nextSwitch && nextSwitch != UINT64_MAX) {
            setThread(nextSwitch, running(nextSwitch));
            nextSwitch = sideband_->nextSwitchAfter(seg.cpu, nextSwitch);
        }
    };
    bool haveStamp = false;
    // Elements of one packet (an atom packet's ranges) share its index: its time is looked up once.
    uint64_t timedIndex = UINT64_MAX;
    EtmCpuTrace::TimeCursor timeCursor(trace);
    auto timeOf = [&](uint64_t index) {
        if ((!stamped || !haveStamp) && index != timedIndex) {
            lastTime = std::max(lastTime, timeCursor.at(index));
            timedIndex = index;
        }
        return lastTime;
    };
    auto addGap = [&](uint64_t t, GapReason reason, std::string detail, uint64_t offset) {
        ++stats.gaps[reason];
        flow.gap(t, reason, std::move(detail), offset, seg.cpu);
    };

    if (seg.firstOfRun && !run.lostCause.empty())
        addGap(lastTime, GapReason::LostAux, run.lostCause, run.begin);
    if (lossGap) {
        advance(seg.startTime);
        lastTime = seg.startTime;
    }

    bool sawRange = false;
    bool broken = true;  // since the last range: the flow does not continue from it
    uint64_t blocks = 0, instructions = 0;
    // A segment cut at a sync point inside a buffer: what comes of the bytes from
    // there on is the next segment's.
    const uint64_t limit = seg.feedEnd > seg.end ? seg.end : UINT64_MAX;
    bool pastLimit = false;
    auto onElement = [&](const EtmElement& e) {
        if (e.index >= limit) {
            pastLimit = true;
            return;
        }
        if (e.kind != EtmElementKind::InstrRange && e.kind != EtmElementKind::Timestamp &&
            e.kind != EtmElementKind::CycleCount && e.kind != EtmElementKind::PeContext &&
            e.kind != EtmElementKind::Other && e.kind != EtmElementKind::Event)
            broken = true;
        switch (e.kind) {
            case EtmElementKind::InstrRange: {
                const uint64_t t = timeOf(e.index);
                if (t >= nextSwitch) advance(t);
                const uint32_t function = functionAt(e.start, current.pid);
                const EtmBranch branch = etmBranch(e);
                const BranchClass last = branchClassOf(branch);
                flow.instructions(t, function, e.instructions, last);
                sawRange = true;
                ++blocks;
                instructions += e.instructions;
                if (visit)
                    (*visit)({t, seg.cpu, current.tid, e.start, e.lastAddr, e.instructions, last, function});
                if (ranges)
                    (*ranges)({seg.cpu, e.traceId, e.start, e.lastAddr, e.instructions, e.isa, branch, t,
                               current.tid, !broken});
                broken = false;
                break;
            }
            case EtmElementKind::Exception:
                flow.interrupt(timeOf(e.index));
                break;
            case EtmElementKind::TraceOn:
                if (!sawRange) break;
                if (e.traceOnReason() == EtmTraceOnReason::Overflow)
                    addGap(timeOf(e.index), GapReason::Overflow, "trace overflow (trace on after overflow)",
                           e.index);
                else
                    addGap(timeOf(e.index), GapReason::Untraced, "trace off (filtered) until trace on",
                           e.index);
                break;
            case EtmElementKind::NoSync:
                switch (e.unsyncReason()) {
                    case EtmUnsyncReason::Overflow:
                        addGap(timeOf(e.index), GapReason::Overflow, "trace overflow: decoder lost sync",
                               e.index);
                        break;
                    case EtmUnsyncReason::BadPacket:
                    case EtmUnsyncReason::Discard:
                        if (sawRange)
                            addGap(timeOf(e.index), GapReason::DecodeError,
                                   std::string("no sync: ") + etmUnsyncReasonName(e.unsyncReason()) +
                                       " at offset " + hex(e.index),
                                   e.index);
                        break;
                    default:
                        break;  // decoder start, reset at a buffer, end of trace: nothing lost
                }
                break;
            case EtmElementKind::AddrNacc: {
                const uint64_t t = timeOf(e.index);
                if (const std::string* file = images_->missingFileAt(current.pid, e.start)) {
                    ++stats.missingImages[*file];
                    const std::string hint = images_->missingHintAt(current.pid, e.start);
                    addGap(t, GapReason::MissingImage,
                           "missing image " + *file + (hint.empty() ? "" : " (" + hint + ")"), e.index);
                } else {
                    ++stats.missingImages["(no mapping)"];
                    addGap(t, GapReason::MissingImage, "missing image (no mapping at " + hex(e.start) + ")",
                           e.index);
                }
                break;
            }
            case EtmElementKind::AddrUnknown:
                if (sawRange)
                    addGap(timeOf(e.index), GapReason::DecodeError,
                           "address unknown at offset " + hex(e.index) + " (waiting for an address packet)",
                           e.index);
                break;
            case EtmElementKind::PeContext:
                if (e.contextIdValid && e.contextId > 0) {
                    contextIds = true;
                    const int32_t tid = int32_t(e.contextId);
                    setThread(timeOf(e.index), {sideband_->pidOf(tid), tid});
                }
                break;
            case EtmElementKind::Timestamp:
                if (stamped && e.timestamp) {
                    haveStamp = true;
                    lastTime = std::max(lastTime, conv.toPerfTime(e.timestamp));
                }
                break;
            default:
                break;
        }
    };
    auto onError = [&](uint64_t index, uint8_t id, std::string_view message) {
        if (index >= limit) {
            pastLimit = true;
            return;
        }
        ++stats.decodeErrors;
        addGap(timeOf(index), GapReason::DecodeError,
               "decode error: trace ID " + hex(id) + ": " + std::string(message) + " at offset " + hex(index),
               index);
    };

    // The handlers called directly (a std::function per element cost ~2% of the decode).
    class Sink final : public EtmElementSink {
    public:
        Sink(decltype(onElement)& e, decltype(onError)& r) : onElement_(e), onError_(r) {}
        void element(const EtmElement& e) override { onElement_(e); }
        void decodeError(uint64_t index, uint8_t id, std::string_view m) override { onError_(index, id, m); }

    private:
        decltype(onElement)& onElement_;
        decltype(onError)& onError_;
    } sink(onElement, onError);

    EtmDecoderOptions options;
    options.input = trace.input;
    options.resetOn4xFsync = trace.input == EtmInput::Formatted;
    std::vector<EtmSourceConfig> one;
    if (seg.traceId >= 0)
        if (const EtmSourceConfig* c = trace.sourceOfTraceId(uint8_t(seg.traceId))) one.push_back(*c);
    auto decoder = EtmDecoder::create(seg.traceId >= 0 ? one : trace.sources, options, &memory, &sink);
    if (!decoder) {
        addGap(lastTime, GapReason::DecodeError,
               "OpenCSD refused the trace configuration: " + decoder.error().message, seg.begin);
    } else {
        EtmDecoder& d = **decoder;
        std::vector<uint8_t> scratch;
        std::vector<uint64_t> starts{seg.begin};
        starts.insert(starts.end(), seg.resets.begin(), seg.resets.end());
        for (size_t k = 0; k < starts.size(); ++k) {
            const uint64_t from = starts[k], to = k + 1 < starts.size() ? starts[k + 1] : seg.end;
            if (k > 0) {
                broken = true;
                (void)d.finish();
                (void)d.reset(from);
            } else {
                (void)d.reset(from);
            }
            std::span<const uint8_t> bytes = stream.bytes.view(from, to, scratch);
            if (auto fed = d.feed(from, bytes); !fed) {
                ++stats.decodeErrors;
                addGap(timeOf(from), GapReason::DecodeError, "decode error: " + fed.error().message, from);
            }
        }
        // Past a cut: on until OpenCSD has handed out what it held of the packets before it.
        constexpr uint64_t kLookahead = 256;
        for (uint64_t from = seg.end; from < seg.feedEnd && !pastLimit; from += kLookahead) {
            const uint64_t to = std::min(seg.feedEnd, from + kLookahead);
            if (!d.feed(from, stream.bytes.view(from, to, scratch))) break;
        }
        (void)d.finish();
    }
    stats.blocks += blocks;
    stats.instructions += instructions;
    const uint64_t end = std::max(lastTime, seg.endTime);
    advance(end);
    if (&seg == &segments_.back() || seg.ring != (&seg + 1)->ring || seg.traceId != (&seg + 1)->traceId ||
        !(&seg + 1)->lostOnly.empty()) {
        if (!run.lostAfterCause.empty()) addGap(end, GapReason::LostAux, run.lostAfterCause, run.end);
    }
    flow.finish(end);
    std::map<int32_t, FlowToSpans::ThreadSpans> spans = flow.take();
    storeSpans(spans, result.threads);
    return result;
}

SegmentSpans EtmSession::failedSegment(size_t index, GapReason reason, const std::string& detail) const {
    // OpenCSD died on it: the whole segment is a gap for the threads that ran.
    const Segment& seg = segments_[index];
    const int32_t tid = seg.tid >= 0 ? seg.tid : trace_->cpus()[seg.ring].stream.tid;
    return segmentGap(*sideband_, seg.cpu, tid, seg.startTime, seg.endTime, reason, detail, seg.begin,
                      seg.countBytes ? seg.end - seg.begin : 0);
}

DecodedSpans EtmSession::decodeSpans(const DecodeWindow& window, unsigned threads) {
    return decode_->decode(
        SegmentedDecode::select(segments_, window), window, threads,
        [&](size_t i) { return decodeSegment(segments_[i], nullptr, nullptr); },
        [&](size_t i, GapReason reason, const std::string& detail) {
            return failedSegment(i, reason, detail);
        });
}

DecodeStats EtmSession::forEachBlock(const DecodeWindow& window,
                                     const std::function<void(const FlowBlock&)>& visit, unsigned threads,
                                     std::vector<Gap>* failures) {
    return decode_->forEachRecord<FlowBlock>(
        SegmentedDecode::select(segments_, window), threads,
        [&](size_t i, const std::function<void(const FlowBlock&)>& to) {
            const std::function<void(const FlowBlock&)> sink = SegmentedDecode::windowFilter(window, to);
            return decodeSegment(segments_[i], &sink, nullptr).stats;
        },
        [&](size_t i, GapReason reason, const std::string& detail) {
            return failedSegment(i, reason, detail);
        },
        visit, failures);
}

DecodeStats EtmSession::forEachRange(std::optional<int> cpu,
                                     const std::function<void(const EtmRange&)>& visit, unsigned threads,
                                     std::vector<Gap>* failures) {
    std::vector<size_t> chosen;
    for (size_t i = 0; i < segments_.size(); ++i)
        if ((!cpu || segments_[i].cpu == *cpu) && segments_[i].lostOnly.empty()) chosen.push_back(i);
    return decode_->forEachRecord<EtmRange>(
        chosen, threads,
        [&](size_t i, const std::function<void(const EtmRange&)>& to) {
            return decodeSegment(segments_[i], nullptr, &to).stats;
        },
        [&](size_t i, GapReason reason, const std::string& detail) {
            return failedSegment(i, reason, detail);
        },
        visit, failures);
}

int EtmSession::listPackets(std::optional<int> cpu, std::ostream& out, std::ostream& err) const {
    // OpenCSD's packet printers run in worker processes (spans/IsolatedDecode.h:
    // streamIsolated), one AUX buffer an item: a buffer OpenCSD crashes or hangs
    // on ends that buffer's listing with a line to `err`, and the next goes on.
    class Printer final : public EtmPacketSink {
    public:
        void packet(uint8_t traceId, uint64_t index, std::string_view text) override {
            // "Idx:%llu; ID:%x;\t%s\n"
            char head[64];
            const int n =
                std::snprintf(head, sizeof head, "Idx:%" PRIu64 "; ID:%x;\t", index, unsigned(traceId));
            line.assign(head, size_t(n));
            line.append(text);
            line.push_back('\n');
            to->append(kListingText, line.data(), line.size());
            ++counts[traceId];
        }
        IsolatedOutput* to = nullptr;
        std::map<uint8_t, uint64_t> counts;  // of the current buffer
        std::string line;
    };
    int status = 0;
    for (const EtmCpuTrace& t : trace_->cpus()) {
        const AuxStream& s = t.stream;
        if (cpu && s.cpu != *cpu) continue;
        out << "cpu " << s.cpu << ": " << s.bytes.size() << " bytes in " << s.buffers << " AUXTRACE buffers, "
            << s.runs.size() << " runs, " << (t.input == EtmInput::Raw ? "raw" : "frame formatted") << "\n";
        for (const EtmSourceConfig& c : t.sources)
            out << "# " << c.describe() << "\n";
        Printer printer;
        EtmDecoderOptions options;
        options.input = t.input;
        options.packetsOnly = true;
        options.resetOn4xFsync = t.input == EtmInput::Formatted;
        // Configuration only (no trace yet): the workers take it over.
        auto decoder = EtmDecoder::create(t.sources, options, nullptr, nullptr, &printer);
        if (!decoder) {
            err << "auxscope decode: cpu " << s.cpu << ": " << decoder.error().message << "\n";
            status = 1;
            continue;
        }
        std::vector<size_t> places(s.places.size());
        for (size_t i = 0; i < places.size(); ++i)
            places[i] = i;
        std::map<uint8_t, uint64_t> counts;
        std::vector<uint8_t> scratch;
        streamIsolated(
            places, 1, decode_->isolation(), "OpenCSD",
            [&](size_t i, IsolatedOutput& to) {
                const AuxBufferPlace& p = s.places[i];
                printer.to = &to;
                printer.counts.clear();
                (void)(*decoder)->reset(p.begin);
                if (auto fed = (*decoder)->feed(p.begin, s.bytes.view(p.begin, p.end, scratch)); !fed) {
                    const std::string m =
                        "auxscope decode: cpu " + std::to_string(s.cpu) + ": " + fed.error().message + "\n";
                    to.append(kListingError, m.data(), m.size());
                }
                (void)(*decoder)->finish();
                for (const auto& [id, n] : printer.counts) {
                    uint8_t record[9] = {id};
                    std::memcpy(record + 1, &n, sizeof n);
                    to.append(kListingCounts, record, sizeof record);
                }
            },
            listingConsumer([&](std::string_view text) { out << text; },
                            [&](std::string_view line) {
                                err << line;
                                status = 1;
                            },
                            [&](const uint8_t* data, size_t n) {
                                for (size_t at = 0; at + 9 <= n; at += 9) {
                                    uint64_t count = 0;
                                    std::memcpy(&count, data + at + 1, sizeof count);
                                    counts[data[at]] += count;
                                }
                            }),
            [&](size_t i, const DecoderFailure& f) {
                err << "auxscope decode: " << failedPieceText(s.cpu, s.places[i].begin, f.detail)
                    << ": the packets of this AUX buffer end there\n";
                status = 1;
            });
        out << "cpu " << s.cpu << " packets:";
        for (const auto& [id, n] : counts)
            out << " trace ID " << hex(id) << " " << n;
        out << "\n";
    }
    return status;
}

}  // namespace auxscope::etm
