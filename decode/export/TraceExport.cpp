// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/TraceExport.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <thread>
#include <unordered_map>

#include "export/FoldedStacks.h"
#include "export/LineBuffer.h"
#include "export/PerfettoFields.h"
#include "export/PerfettoPacketStream.h"
#include "export/PerfettoSampleWriter.h"
#include "export/ProtoWriter.h"
#include "samples/SampleProfile.h"
#include "spe/SpeRecord.h"
#include "spe/SpeRecordCsv.h"

namespace auxscope {
namespace {

constexpr uint64_t kSpaceProcess = 1ull << 40, kSpaceThread = 2ull << 40, kSpaceCpu = 3ull << 40,
                   kSpaceCounter = 4ull << 40, kSpaceThreadRun = 5ull << 40, kSpaceSpansNoThread = 6ull << 40,
                   kSpaceThreadOffCpu = 7ull << 40, kSpaceThreadSpe = 8ull << 40;
// SPE samples of no known thread.
constexpr uint64_t kSpeNoThreadTrack = kSpaceThreadSpe | 0xffffffffull;

void annotate(ProtoWriter& ev, const char* name, int64_t value, bool pointer = false) {
    ProtoWriter a;
    a.str(pf::kAnnName, name);
    if (pointer)
        a.u64(pf::kAnnPointer, uint64_t(value));
    else
        a.i64(pf::kAnnInt, value);
    ev.msg(pf::kDebugAnnotation, a);
}

void annotate(ProtoWriter& ev, const char* name, std::string_view value) {
    ProtoWriter a;
    a.str(pf::kAnnName, name);
    a.str(pf::kAnnString, value);
    ev.msg(pf::kDebugAnnotation, a);
}

struct Event {
    uint64_t ts;
    int rank;  // at equal time: slice ends, then counters/instants, then slice begins
    uint32_t kind;
    size_t index;
};

enum Kind : uint32_t {
    CpuBegin,
    CpuEnd,
    ThreadBegin,
    ThreadEnd,
    Sample,
    Loss,
    LossCounter,
    Counter,
    StackSample,  // a sample of the profile (ExportOptions::samples), with its stack
    OffCpuBegin,
    OffCpuEnd,
    SpeSample,  // an Arm SPE record (ExportOptions::spe)
};

// Span slices name their arguments by interned iid: a decode has millions of them.
enum AnnotationIid : uint64_t { kAnnInstructions = 1, kAnnDepth, kAnnDetail, kAnnTraceOffset, kAnnCpu };
constexpr const char* kAnnotationNames[] = {"", "instructions", "depth", "detail", "trace offset", "cpu"};
// Event-name iids: a function's is its FunctionTable id + 1, a gap reason's is above every function's.
constexpr uint64_t kGapNameIidBase = 1ull << 33;

// Walks one thread's spans (in the store's order: by start, then depth) and
// yields slice begins and ends that nest on one track with non-decreasing
// times, without copying the store. Spans that a decode could not nest exactly
// (equal-time siblings, frames cut at a segment boundary) are clipped to their
// enclosing slice rather than dropped: each span gives exactly one slice.
class SpanCursor {
public:
    SpanCursor(const SpanStore& store, uint64_t track) : store_(&store), track_(track) { advance(); }
    bool done() const { return done_; }
    uint64_t ts() const { return ts_; }
    bool isEnd() const { return end_; }
    const Span& span() const { return span_; }
    uint64_t track() const { return track_; }
    const SpanStore& store() const { return *store_; }

    void advance() {
        if (!peeked_ && next_ < store_->size()) {
            peek_ = store_->at(next_);
            peeked_ = true;
        }
        if (peeked_) {
            // Close what the next span cannot sit inside: what ended before it
            // starts, and anything at its depth or deeper.
            if (!open_.empty() && (open_.back().end <= peek_.start || open_.back().depth >= peek_.depth)) {
                end_ = true;
                ts_ = std::min(open_.back().end, peek_.start);
                open_.pop_back();
                return;
            }
            span_ = peek_;
            if (!open_.empty()) span_.end = std::min(span_.end, open_.back().end);
            span_.end = std::max(span_.end, span_.start);
            open_.push_back({span_.end, span_.depth});
            end_ = false;
            ts_ = span_.start;
            ++next_;
            peeked_ = false;
            return;
        }
        if (!open_.empty()) {
            end_ = true;
            ts_ = open_.back().end;
            open_.pop_back();
            return;
        }
        done_ = true;
    }

private:
    struct Open {
        uint64_t end;
        int32_t depth;
    };
    const SpanStore* store_;
    uint64_t track_;
    size_t next_ = 0;
    std::vector<Open> open_;
    Span peek_, span_;
    bool peeked_ = false, done_ = false, end_ = false;
    uint64_t ts_ = 0;
};

void annotateIid(ProtoWriter& ev, uint64_t nameIid, int64_t value, bool pointer = false) {
    ProtoWriter a;
    a.u64(pf::kAnnNameIid, nameIid);
    if (pointer)
        a.u64(pf::kAnnPointer, uint64_t(value));
    else
        a.i64(pf::kAnnInt, value);
    ev.msg(pf::kDebugAnnotation, a);
}

void annotateIid(ProtoWriter& ev, uint64_t nameIid, const std::string& value) {
    ProtoWriter a;
    a.u64(pf::kAnnNameIid, nameIid);
    a.str(pf::kAnnString, value);
    ev.msg(pf::kDebugAnnotation, a);
}

}  // namespace

uint64_t ExportSpans::spanCount() const {
    uint64_t n = 0;
    if (threads)
        for (const auto& [tid, store] : *threads)
            n += store.size();
    return n;
}

std::string perfettoGapName(GapReason reason) {
    return std::string("[gap: ") + gapReasonName(reason) + "]";
}
uint64_t perfettoThreadRunTrack(int32_t tid) {
    return kSpaceThreadRun | uint32_t(tid);
}
uint64_t perfettoThreadOffCpuTrack(int32_t tid) {
    return kSpaceThreadOffCpu | uint32_t(tid);
}

uint64_t perfettoThreadSpeTrack(int32_t tid) {
    return kSpaceThreadSpe | uint32_t(tid);
}

std::string speOperationName(const spe::SpeRecord& r) {
    std::string what;
    if (r.isSve) what = "SVE ";
    if (r.isAtomic) what += "atomic ";
    if (r.isLoad && r.isStore)
        what += "load-store";
    else if (r.isLoad)
        what += "load";
    else if (r.isStore)
        what += "store";
    else if (r.isBranch)
        what += r.isConditional ? "conditional branch" : "branch";
    else if (r.opClass == spe::OpClass::LoadStore)
        what += "load/store";
    else if (r.opClass == spe::OpClass::None)
        what += "operation";
    else
        what += "other";
    return what;
}

namespace {

// The SPE records to export: in a range [begin, end) those whose time is in it
// (records without a timestamp only when everything is exported), each with
// the time it is shown at: its own, or for a record without a timestamp that
// of the record before it on its CPU (the records are in that order).
struct SpeRows {
    std::vector<size_t> index;
    std::vector<uint64_t> time;
};
SpeRows speRows(const ExportSpe* spe, uint64_t begin, uint64_t end) {
    SpeRows rows;
    if (!spe || !spe->records) return rows;
    const bool all = begin == 0 && end == UINT64_MAX;
    std::unordered_map<int, uint64_t> lastOnCpu;
    const auto& r = *spe->records;
    for (size_t i = 0; i < r.size(); ++i) {
        uint64_t t = r[i].time;
        if (r[i].timestamp || t) {
            lastOnCpu[r[i].cpu] = t;
        } else {
            if (!all) continue;
            auto it = lastOnCpu.find(r[i].cpu);
            t = it != lastOnCpu.end() ? it->second : 0;
        }
        if (!all && (t < begin || t >= end)) continue;
        rows.index.push_back(i);
        rows.time.push_back(t);
    }
    return rows;
}

}  // namespace

uint64_t perfettoProcessTrack(int32_t pid) {
    return kSpaceProcess | uint32_t(pid);
}
uint64_t perfettoThreadTrack(int32_t tid) {
    return kSpaceThread | uint32_t(tid);
}
uint64_t perfettoCpuTrack(int cpu) {
    return kSpaceCpu | uint32_t(cpu);
}

namespace {

// What an export of [begin, end) writes: the model's events and the spans in
// it, clipped (ExportOptions::begin/end).
struct RangeCut {
    std::vector<RunSlice> slices;
    std::vector<SampleEvent> samples;
    std::vector<LossEvent> losses;
    std::vector<CounterSeries> counters;
    std::map<int32_t, SpanStore> threads;
    ExportSpans spans;
};

std::unique_ptr<RangeCut> cutRange(const TraceModel& model, const ExportOptions& options) {
    if (options.begin == 0 && options.end == UINT64_MAX) return nullptr;
    const uint64_t a = options.begin, b = options.end;
    auto cut = std::make_unique<RangeCut>();
    for (RunSlice s : model.runSlices()) {
        if (s.end <= a || s.start >= b) continue;
        s.start = std::max(s.start, a), s.end = std::min(s.end, b);
        cut->slices.push_back(s);
    }
    for (const SampleEvent& s : model.samples())
        if (s.time >= a && s.time < b) cut->samples.push_back(s);
    for (const LossEvent& l : model.losses())
        if (l.time >= a && l.time < b) cut->losses.push_back(l);
    for (const CounterSeries& c : model.counters()) {
        CounterSeries copy = c;
        copy.points.clear();
        for (const auto& p : c.points)
            if (p.time >= a && p.time < b) copy.points.push_back(p);
        cut->counters.push_back(std::move(copy));
    }
    if (options.spans && options.spans->threads) {
        cut->spans = *options.spans;
        for (const auto& entry : *options.spans->threads) {
            // Not a structured binding: clang (the fuzz builds) cannot capture one in the lambda below.
            const int32_t tid = entry.first;
            const auto& store = entry.second;
            std::vector<Span> kept;
            std::vector<Gap> gaps;
            const size_t hi = b == UINT64_MAX ? store.size() : store.lowerBound(b);
            store.forEach(0, hi, [&](size_t, const Span& s) {
                const bool in = s.end > a || (s.start == s.end && s.start >= a);
                if (!in || s.start >= b) return;
                Span c = s;
                c.start = std::max(c.start, a);
                c.end = std::clamp(c.end, c.start, b);
                if (c.isGap()) {
                    gaps.push_back(store.gaps()[size_t(c.gap)]);
                    c.gap = int32_t(gaps.size() - 1);
                }
                kept.push_back(c);
            });
            if (kept.empty()) continue;
            std::stable_sort(kept.begin(), kept.end(),
                             [](const Span& x, const Span& y) { return x.start < y.start; });
            cut->threads[tid].append(kept, gaps);
        }
        cut->spans.threads = &cut->threads;
    }
    return cut;
}

// What an export of [begin, end) writes of a sampled profile: its samples in
// the range (by index: they are by time) and its off-CPU stretches that overlap
// it, clipped to it and, per thread, to the stretch before (so that a thread's
// stretches nest on one track whatever the switch timeline said).
struct ProfileCut {
    size_t firstSample = 0, endSample = 0;
    struct Stretch {
        uint64_t start, end;
        size_t index;  // into SampleProfile::offCpu()
    };
    std::vector<Stretch> offCpu;  // by start
};

ProfileCut cutProfile(const SampleProfile& profile, const ExportOptions& options) {
    ProfileCut cut;
    const uint64_t a = options.begin, b = options.end;
    cut.firstSample = profile.lowerBound(a);
    cut.endSample = b == UINT64_MAX ? profile.size() : profile.lowerBound(b);
    std::unordered_map<int32_t, uint64_t> lastEnd;
    const auto& stretches = profile.offCpu();
    for (size_t i = 0; i < stretches.size() && stretches[i].start < b; ++i) {
        const SampleProfile::OffCpu& o = stretches[i];
        uint64_t& last = lastEnd[o.tid];
        const uint64_t start = std::max({o.start, a, last}), end = std::min(o.end, b);
        if (end <= start) continue;
        cut.offCpu.push_back({start, end, i});
        last = end;
    }
    return cut;
}

}  // namespace

Expected<void> exportPerfetto(const TraceModel& model, const std::string& path,
                              const ExportOptions& rangeOptions) {
    PerfettoPacketStream stream(path);
    if (!stream.opened()) return makeError(path + ": cannot create: " + std::strerror(errno));
    const std::unique_ptr<RangeCut> cut = cutRange(model, rangeOptions);
    ExportOptions options = rangeOptions;
    if (cut && options.spans) options.spans = &cut->spans;
    const auto& slices = cut ? cut->slices : model.runSlices();
    const auto& samples = cut ? cut->samples : model.samples();
    const auto& losses = cut ? cut->losses : model.losses();
    const auto& counters = cut ? cut->counters : model.counters();
    auto pidOf = [&](int32_t tid, int32_t fallback) {
        auto it = model.processOf().find(tid);
        return it != model.processOf().end() ? it->second : (fallback > 0 ? fallback : tid);
    };
    // A sampled profile's samples (with their stacks) replace the model's bare ones.
    const SampleProfile* profile = options.samples;
    const ProfileCut profileCut = profile ? cutProfile(*profile, options) : ProfileCut{};
    const bool bareSamples = options.includeSamples && !profile;
    const bool stackSamples = options.includeSamples && profile;

    // Descriptors first: every track an event refers to is defined before it.
    std::set<int32_t> tids, pids;
    for (auto& s : slices)
        tids.insert(s.tid);
    if (bareSamples)
        for (auto& s : samples)
            if (s.tid > 0) tids.insert(s.tid);
    // Threads with samples or off-CPU time of the profile: named by their descriptors.
    if (stackSamples)
        for (size_t i = profileCut.firstSample; i < profileCut.endSample; ++i)
            if (profile->tid(i) > 0) tids.insert(profile->tid(i));
    std::set<int32_t> offCpuTids;
    for (const ProfileCut::Stretch& s : profileCut.offCpu)
        if (profile->offCpu()[s.index].tid > 0) offCpuTids.insert(profile->offCpu()[s.index].tid);
    tids.insert(offCpuTids.begin(), offCpuTids.end());
    // Threads with decoded spans: their own track carries the call stack.
    const ExportSpans* spans =
        options.spans && options.spans->threads && options.spans->functions ? options.spans : nullptr;
    std::set<int32_t> spanTids;
    if (spans)
        for (const auto& [tid, store] : *spans->threads)
            if (!store.empty()) spanTids.insert(tid);
    auto spanPidOf = [&](int32_t tid) {
        if (model.processOf().count(tid)) return pidOf(tid, -1);
        int32_t pid = spans && spans->pidOf ? spans->pidOf(tid) : -1;
        return pid > 0 ? pid : tid;
    };
    for (int32_t tid : spanTids)
        if (tid > 0) tids.insert(tid);
    // Threads with SPE samples: an "SPE" track under each.
    const SpeRows spe = speRows(options.spe, options.begin, options.end);
    std::set<int32_t> speTids;
    bool speNoThread = false;
    for (size_t i : spe.index) {
        const int32_t tid = (*options.spe->records)[i].tid;
        if (tid > 0)
            speTids.insert(tid);
        else
            speNoThread = true;
    }
    tids.insert(speTids.begin(), speTids.end());
    auto spePidOf = [&](int32_t tid) {
        for (size_t i : spe.index)
            if ((*options.spe->records)[i].tid == tid && (*options.spe->records)[i].pid > 0)
                return (*options.spe->records)[i].pid;
        return tid;
    };
    for (int32_t tid : tids)
        pids.insert(spanTids.count(tid)                                   ? spanPidOf(tid)
                    : speTids.count(tid) && !model.processOf().count(tid) ? spePidOf(tid)
                                                                          : pidOf(tid, -1));
    ProtoWriter packet, desc, sub;
    auto emitDescriptor = [&]() {
        packet.clear();
        packet.msg(pf::kTrackDescriptor, desc);
        stream.write(packet);
    };
    for (int32_t pid : pids) {
        desc.clear(), sub.clear();
        desc.u64(pf::kUuid, perfettoProcessTrack(pid));
        sub.i64(pf::kPid, pid);
        sub.str(pf::kProcessName, model.processName(pid));
        desc.msg(pf::kProcess, sub);
        emitDescriptor();
    }
    for (int32_t tid : tids) {
        desc.clear(), sub.clear();
        desc.u64(pf::kUuid, perfettoThreadTrack(tid));
        sub.i64(pf::kPid, spanTids.count(tid)                                   ? spanPidOf(tid)
                          : speTids.count(tid) && !model.processOf().count(tid) ? spePidOf(tid)
                                                                                : pidOf(tid, -1));
        sub.i64(pf::kTid, tid);
        sub.str(pf::kThreadName, model.threadName(tid));
        desc.msg(pf::kThread, sub);
        emitDescriptor();
    }
    auto threadRunTrack = [&](int32_t tid) {
        return spanTids.count(tid) ? perfettoThreadRunTrack(tid) : perfettoThreadTrack(tid);
    };
    for (int32_t tid : spanTids) {
        desc.clear();
        if (tid > 0) {
            desc.u64(pf::kUuid, perfettoThreadRunTrack(tid));
            desc.u64(pf::kParentUuid, perfettoThreadTrack(tid));
            desc.str(pf::kName, "on CPU");
        } else {
            // Spans the decoder could not give a thread (no sideband before them).
            desc.u64(pf::kUuid, kSpaceSpansNoThread | uint32_t(tid));
            desc.str(pf::kName, "call stack, thread unknown (tid " + std::to_string(tid) + ")");
        }
        emitDescriptor();
    }
    for (int32_t tid : offCpuTids) {
        desc.clear();
        desc.u64(pf::kUuid, perfettoThreadOffCpuTrack(tid));
        desc.u64(pf::kParentUuid, perfettoThreadTrack(tid));
        desc.str(pf::kName, "off CPU");
        emitDescriptor();
    }
    for (int32_t tid : speTids) {
        desc.clear();
        desc.u64(pf::kUuid, perfettoThreadSpeTrack(tid));
        desc.u64(pf::kParentUuid, perfettoThreadTrack(tid));
        desc.str(pf::kName, "SPE");
        emitDescriptor();
    }
    if (speNoThread) {
        desc.clear();
        desc.u64(pf::kUuid, kSpeNoThreadTrack);
        desc.str(pf::kName, "SPE, thread unknown");
        emitDescriptor();
    }
    const auto cpus = model.cpus();
    for (int cpu : cpus) {
        desc.clear();
        desc.u64(pf::kUuid, perfettoCpuTrack(cpu));
        desc.str(pf::kName, "CPU " + std::to_string(cpu));
        emitDescriptor();
    }
    // Idle-task samples from a file that records no CPU still need a track.
    if (bareSamples && std::any_of(samples.begin(), samples.end(),
                                   [](const SampleEvent& s) { return s.tid <= 0 && s.cpu < 0; })) {
        desc.clear();
        desc.u64(pf::kUuid, perfettoCpuTrack(-1));
        desc.str(pf::kName, "no CPU recorded");
        emitDescriptor();
    }
    // Counter tracks: lost records and lost samples per CPU, then the model's series.
    auto counterTrack = [](size_t n) { return kSpaceCounter | n; };
    std::vector<std::string> counterNames;
    for (int cpu : cpus)
        for (const char* what : {"lost records", "lost samples"})
            counterNames.push_back("CPU " + std::to_string(cpu) + " " + what);
    for (auto& c : counters)
        counterNames.push_back("CPU " + std::to_string(c.cpu) + " " + c.name);
    for (size_t i = 0; i < counterNames.size(); ++i) {
        desc.clear(), sub.clear();
        desc.u64(pf::kUuid, counterTrack(i));
        desc.str(pf::kName, counterNames[i]);
        if (i < 2 * cpus.size()) sub.u64(pf::kUnit, pf::kUnitCount);
        desc.msg(pf::kCounter, sub);
        emitDescriptor();
    }
    auto cpuIndex = [&](int cpu) { return size_t(std::find(cpus.begin(), cpus.end(), cpu) - cpus.begin()); };

    // A thread's run on one CPU may appear to start before its run on another
    // ended when the CPUs' clocks differ slightly; start the later one where the
    // earlier ended, so each thread track stays well nested.
    std::vector<uint64_t> threadStart(slices.size());
    {
        std::unordered_map<int32_t, uint64_t> lastEnd;
        for (size_t i = 0; i < slices.size(); ++i) {  // slices are sorted by start
            uint64_t& end = lastEnd[slices[i].tid];
            threadStart[i] = std::max(slices[i].start, end);
            end = std::max(end, slices[i].end);
        }
    }

    // Events, in time order.
    std::vector<Event> events;
    events.reserve(slices.size() * 4 + samples.size() + losses.size() * 2);
    for (size_t i = 0; i < slices.size(); ++i) {
        // A zero-length run cannot be nested unambiguously among slices that end
        // and begin at the same instant; it carries no duration, so it is left out
        // here (the CSV export keeps it).
        if (slices[i].end > slices[i].start) {
            events.push_back({slices[i].start, 2, CpuBegin, i});
            events.push_back({slices[i].end, 0, CpuEnd, i});
        }
        if (slices[i].end > threadStart[i]) {
            events.push_back({threadStart[i], 2, ThreadBegin, i});
            events.push_back({slices[i].end, 0, ThreadEnd, i});
        }
    }
    if (bareSamples)
        for (size_t i = 0; i < samples.size(); ++i)
            events.push_back({samples[i].time, 1, Sample, i});
    if (stackSamples)
        for (size_t i = profileCut.firstSample; i < profileCut.endSample; ++i)
            events.push_back({profile->time(i), 1, StackSample, i});
    for (size_t i = 0; i < profileCut.offCpu.size(); ++i) {
        if (profile->offCpu()[profileCut.offCpu[i].index].tid <= 0) continue;
        events.push_back({profileCut.offCpu[i].start, 2, OffCpuBegin, i});
        events.push_back({profileCut.offCpu[i].end, 0, OffCpuEnd, i});
    }
    for (size_t i = 0; i < losses.size(); ++i) {
        events.push_back({losses[i].time, 1, Loss, i});
        events.push_back({losses[i].time, 1, LossCounter, i});
    }
    for (size_t k = 0; k < spe.index.size(); ++k)
        events.push_back({spe.time[k], 1, SpeSample, spe.index[k]});
    std::vector<std::pair<size_t, size_t>> counterPoints;  // (series, point)
    for (size_t s = 0; s < counters.size(); ++s)
        for (size_t p = 0; p < counters[s].points.size(); ++p) {
            events.push_back({counters[s].points[p].time, 1, Counter, counterPoints.size()});
            counterPoints.push_back({s, p});
        }
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
        return a.ts < b.ts || (a.ts == b.ts && a.rank < b.rank);
    });

    // Lost counters are cumulative per CPU and kind.
    std::vector<uint64_t> lostSoFar(2 * cpus.size(), 0);
    ProtoWriter ev;
    std::optional<PerfettoSampleWriter> sampleWriter;
    if (stackSamples) sampleWriter.emplace(*profile, stream);
    // Off-CPU slices carry their stack as an interned string (iid: its node + 1).
    std::optional<FoldedStacks> folded;
    if (profile) folded.emplace(*profile);
    std::vector<bool> stackInterned;
    ProtoWriter offCpuInterned, offCpuEntry;
    auto emitModelEvent = [&](const Event& e) {
        if (e.kind == StackSample) {
            sampleWriter->write(e.index);
            return;
        }
        packet.clear(), ev.clear();
        packet.u64(pf::kTimestamp, e.ts);
        bool interned = false;
        switch (e.kind) {
            case CpuBegin:
            case ThreadBegin: {
                const RunSlice& s = slices[e.index];
                ev.u64(pf::kType, pf::kSliceBegin);
                if (e.kind == CpuBegin) {
                    ev.u64(pf::kTrackUuid, perfettoCpuTrack(s.cpu));
                    ev.str(pf::kEventName, model.threadName(s.tid));
                    annotate(ev, "pid", pidOf(s.tid, s.pid));
                    annotate(ev, "tid", s.tid);
                } else {
                    ev.u64(pf::kTrackUuid, threadRunTrack(s.tid));
                    ev.str(pf::kEventName, "running on CPU " + std::to_string(s.cpu));
                    annotate(ev, "cpu", s.cpu);
                }
                ev.str(pf::kCategories, "sched");
                break;
            }
            case CpuEnd:
            case ThreadEnd: {
                const RunSlice& s = slices[e.index];
                ev.u64(pf::kType, pf::kSliceEnd);
                ev.u64(pf::kTrackUuid, e.kind == CpuEnd ? perfettoCpuTrack(s.cpu) : threadRunTrack(s.tid));
                break;
            }
            case Sample: {
                const SampleEvent& s = samples[e.index];
                ev.u64(pf::kType, pf::kInstant);
                // Samples of the idle task (tid 0) have no thread track: they go on
                // their CPU's track.
                const bool idle = s.tid <= 0;
                ev.u64(pf::kTrackUuid, idle ? perfettoCpuTrack(s.cpu) : perfettoThreadTrack(s.tid));
                ev.str(pf::kEventName, idle ? "sample (idle)" : "sample");
                ev.str(pf::kCategories, "sample");
                annotate(ev, "ip", int64_t(s.ip), true);
                annotate(ev, "cpu", s.cpu);
                break;
            }
            case Loss: {
                const LossEvent& l = losses[e.index];
                ev.u64(pf::kType, pf::kInstant);
                ev.u64(pf::kTrackUuid, perfettoCpuTrack(l.cpu));
                ev.str(pf::kEventName, (l.kind == LossEvent::Records ? "LOST records: " : "LOST samples: ") +
                                           std::to_string(l.count));
                ev.str(pf::kCategories, "loss");
                annotate(ev, "count", int64_t(l.count));
                break;
            }
            case LossCounter: {
                const LossEvent& l = losses[e.index];
                size_t n = 2 * cpuIndex(l.cpu) + (l.kind == LossEvent::Samples ? 1 : 0);
                lostSoFar[n] += l.count;
                ev.u64(pf::kType, pf::kCounterEvent);
                ev.u64(pf::kTrackUuid, counterTrack(n));
                ev.i64(pf::kCounterValue, int64_t(lostSoFar[n]));
                break;
            }
            case Counter: {
                auto [s, p] = counterPoints[e.index];
                ev.u64(pf::kType, pf::kCounterEvent);
                ev.u64(pf::kTrackUuid, counterTrack(2 * cpus.size() + s));
                ev.dbl(pf::kDoubleCounterValue, counters[s].points[p].value);
                break;
            }
            case OffCpuBegin: {
                const SampleProfile::OffCpu& o = profile->offCpu()[profileCut.offCpu[e.index].index];
                ev.u64(pf::kType, pf::kSliceBegin);
                ev.u64(pf::kTrackUuid, perfettoThreadOffCpuTrack(o.tid));
                ev.str(pf::kEventName, "off-CPU");
                ev.str(pf::kCategories, "sched");
                annotate(ev, "blocked in", folded->leafName(o.node));
                if (o.node >= stackInterned.size()) stackInterned.resize(profile->tree().size(), false);
                offCpuInterned.clear();
                if (!stackInterned[o.node]) {
                    stackInterned[o.node] = true;
                    offCpuEntry.clear();
                    offCpuEntry.u64(pf::kInternedIid, uint64_t(o.node) + 1);
                    offCpuEntry.str(pf::kInternedName, folded->of(o.node));
                    offCpuInterned.msg(pf::kInternedAnnotationStrings, offCpuEntry);
                    packet.msg(pf::kInternedData, offCpuInterned);
                }
                ProtoWriter a;
                a.str(pf::kAnnName, "stack");
                a.u64(pf::kAnnStringIid, uint64_t(o.node) + 1);
                ev.msg(pf::kDebugAnnotation, a);
                annotate(ev, "last cpu", o.cpu);
                interned = true;
                break;
            }
            case OffCpuEnd: {
                const SampleProfile::OffCpu& o = profile->offCpu()[profileCut.offCpu[e.index].index];
                ev.u64(pf::kType, pf::kSliceEnd);
                ev.u64(pf::kTrackUuid, perfettoThreadOffCpuTrack(o.tid));
                break;
            }
            case SpeSample: {
                const ExportSpe& names = *options.spe;
                const spe::SpeRecord& r = (*names.records)[e.index];
                ev.u64(pf::kType, pf::kInstant);
                ev.u64(pf::kTrackUuid, r.tid > 0 ? perfettoThreadSpeTrack(r.tid) : kSpeNoThreadTrack);
                ev.str(pf::kEventName, speOperationName(r));
                ev.str(pf::kCategories, "spe");
                auto named = [&](const char* name, const auto& fn) {
                    if (!fn) return;
                    std::string v = fn(r);
                    if (!v.empty()) annotate(ev, name, v);
                };
                if (r.hasPc) annotate(ev, "pc", int64_t(r.pc), true);
                named("function", names.function);
                if (r.hasDataVa) annotate(ev, "data address", int64_t(r.dataVa), true);
                named("data symbol", names.dataSymbol);
                if (r.hasDataPa) annotate(ev, "physical address", int64_t(r.dataPa), true);
                if (r.hasTotalLatency) annotate(ev, "total latency", r.totalLatency);
                if (r.hasIssueLatency) annotate(ev, "issue latency", r.issueLatency);
                if (r.hasTranslationLatency) annotate(ev, "translation latency", r.translationLatency);
                if (r.hasDataSource) named("source", names.source);
                if (r.hasEvents) named("events", names.events);
                if (r.hasBranchTarget) annotate(ev, "branch target", int64_t(r.branchTarget), true);
                annotate(ev, "cpu", r.cpu);
                if (r.tid <= 0) annotate(ev, "tid", r.tid);
                break;
            }
            case StackSample:
                break;
        }
        packet.msg(pf::kTrackEvent, ev);
        stream.write(packet, interned);
    };

    // Span slices, thread by thread, merged into the time order of the rest:
    // a cursor per thread, so memory stays flat however many spans there are.
    std::vector<SpanCursor> cursors;
    if (spans)
        for (const auto& [tid, store] : *spans->threads)
            if (!store.empty())
                cursors.emplace_back(
                    store, tid > 0 ? perfettoThreadTrack(tid) : kSpaceSpansNoThread | uint32_t(tid));
    std::vector<bool> functionInterned, gapInterned(8, false);
    bool annotationsInterned = false;
    ProtoWriter interned, entry;
    auto internName = [&](uint32_t field, uint64_t iid, const std::string& name) {
        entry.clear();
        entry.u64(pf::kInternedIid, iid);
        entry.str(pf::kInternedName, name);
        interned.msg(field, entry);
    };
    auto emitSpanEvent = [&](const SpanCursor& c) {
        packet.clear(), ev.clear(), interned.clear();
        packet.u64(pf::kTimestamp, c.ts());
        if (c.isEnd()) {
            ev.u64(pf::kType, pf::kSliceEnd);
            ev.u64(pf::kTrackUuid, c.track());
            packet.msg(pf::kTrackEvent, ev);
            stream.write(packet);
            return;
        }
        if (!annotationsInterned) {
            for (uint64_t iid = kAnnInstructions; iid <= kAnnCpu; ++iid)
                internName(pf::kInternedAnnotationNames, iid, kAnnotationNames[iid]);
            annotationsInterned = true;
        }
        const Span& s = c.span();
        ev.u64(pf::kType, pf::kSliceBegin);
        ev.u64(pf::kTrackUuid, c.track());
        if (s.isGap()) {
            const Gap& gap = c.store().gaps()[size_t(s.gap)];
            const size_t reason = size_t(gap.reason);
            if (reason >= gapInterned.size()) gapInterned.resize(reason + 1, false);
            if (!gapInterned[reason]) {
                internName(pf::kInternedEventNames, kGapNameIidBase + reason, perfettoGapName(gap.reason));
                gapInterned[reason] = true;
            }
            ev.u64(pf::kNameIid, kGapNameIidBase + reason);
            annotateIid(ev, kAnnDetail, gap.detail);
            annotateIid(ev, kAnnTraceOffset, int64_t(gap.traceOffset), true);
            annotateIid(ev, kAnnCpu, gap.cpu);
        } else {
            if (s.function >= functionInterned.size()) functionInterned.resize(s.function + 1, false);
            if (!functionInterned[s.function]) {
                const std::string name = s.function < spans->functions->size()
                                             ? (*spans->functions)[s.function].name
                                             : "[unknown]";
                internName(pf::kInternedEventNames, uint64_t(s.function) + 1, name);
                functionInterned[s.function] = true;
            }
            ev.u64(pf::kNameIid, uint64_t(s.function) + 1);
            annotateIid(ev, kAnnInstructions, int64_t(s.instructions));
        }
        annotateIid(ev, kAnnDepth, s.depth);
        packet.msg(pf::kTrackEvent, ev);
        if (!interned.bytes().empty()) packet.msg(pf::kInternedData, interned);
        stream.write(packet, true);
    };
    // At equal times: slice ends first, then instants and counters, then begins.
    auto cursorKey = [](const SpanCursor& c) { return std::pair<uint64_t, int>(c.ts(), c.isEnd() ? 0 : 2); };
    auto later = [&](size_t a, size_t b) { return cursorKey(cursors[a]) > cursorKey(cursors[b]); };
    std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heads(later);
    for (size_t i = 0; i < cursors.size(); ++i)
        if (!cursors[i].done()) heads.push(i);
    size_t nextModel = 0;
    // Progress: model events and span events (a begin and an end per span).
    const uint64_t totalEvents = events.size() + 2 * (spans ? spans->spanCount() : 0);
    uint64_t written = 0;
    while (nextModel < events.size() || !heads.empty()) {
        if (options.progress && (++written & 0xffff) == 0 && !options.progress(written, totalEvents)) {
            (void)stream.close();
            std::remove(path.c_str());
            return makeError(path + ": export cancelled");
        }
        const bool modelFirst =
            heads.empty() || (nextModel < events.size() &&
                              std::pair<uint64_t, int>(events[nextModel].ts, events[nextModel].rank) <=
                                  cursorKey(cursors[heads.top()]));
        if (modelFirst) {
            emitModelEvent(events[nextModel++]);
            continue;
        }
        size_t i = heads.top();
        heads.pop();
        emitSpanEvent(cursors[i]);
        cursors[i].advance();
        if (!cursors[i].done()) heads.push(i);
    }
    return stream.close();
}

namespace {

std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s)
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

}  // namespace

Expected<void> exportCsv(const TraceModel& model, const std::string& path,
                         const ExportOptions& rangeOptions) {
    const std::unique_ptr<RangeCut> cut = cutRange(model, rangeOptions);
    ExportOptions options = rangeOptions;
    if (cut && options.spans) options.spans = &cut->spans;
    std::ofstream out(path, std::ios::trunc);
    if (!out) return makeError(path + ": cannot create: " + std::strerror(errno));
    // With a sampled profile every row has a tenth column, the sample's stack
    // (empty on rows of other kinds).
    const SampleProfile* profile = options.samples;
    const char* eol = profile ? ",\n" : "\n";
    out << "kind,cpu,time_ns,end_ns,pid,tid,name,value,detail" << (profile ? ",stack\n" : "\n");
    auto pidOf = [&](int32_t tid, int32_t fallback) {
        auto it = model.processOf().find(tid);
        return it != model.processOf().end() ? it->second : fallback;
    };
    for (auto& s : cut ? cut->slices : model.runSlices())
        out << "run," << s.cpu << ',' << s.start << ',' << s.end << ',' << pidOf(s.tid, s.pid) << ',' << s.tid
            << ',' << csvField(model.threadName(s.tid)) << ",," << eol;
    if (options.includeSamples && !profile)
        for (auto& s : cut ? cut->samples : model.samples()) {
            char ip[32];
            std::snprintf(ip, sizeof ip, "0x%llx", (unsigned long long)s.ip);
            out << "sample," << s.cpu << ',' << s.time << ",," << s.pid << ',' << s.tid << ','
                << csvField(s.tid > 0 ? model.threadName(s.tid) : std::string()) << ',' << s.event << ','
                << ip << '\n';
        }
    // The profile's samples: value = the event (attr index), detail = the
    // sampled address, stack = the functions folded, outermost first. Off-CPU
    // stretches: cpu = where the thread ran last, detail = the function it
    // blocked in, stack = the stack it blocked in.
    if (profile) {
        const ProfileCut pc = cutProfile(*profile, options);
        FoldedStacks folded(*profile);
        if (options.includeSamples)
            for (size_t i = pc.firstSample; i < pc.endSample; ++i) {
                char ip[32];
                std::snprintf(ip, sizeof ip, "0x%llx", (unsigned long long)profile->ip(i));
                const int32_t tid = profile->tid(i);
                out << "sample," << profile->cpu(i) << ',' << profile->time(i) << ",," << profile->pid(i)
                    << ',' << tid << ',' << csvField(tid > 0 ? model.threadName(tid) : std::string()) << ','
                    << profile->events()[size_t(profile->event(i))].attr << ',' << ip << ','
                    << csvField(std::string(folded.of(profile->node(i)))) << '\n';
            }
        for (const ProfileCut::Stretch& s : pc.offCpu) {
            const SampleProfile::OffCpu& o = profile->offCpu()[s.index];
            out << "off-cpu," << o.cpu << ',' << s.start << ',' << s.end << ',' << o.pid << ',' << o.tid
                << ',' << csvField(model.threadName(o.tid)) << ",," << csvField(folded.leafName(o.node))
                << ',' << csvField(std::string(folded.of(o.node))) << '\n';
        }
    }
    // SPE records: name = the operation, value = total latency (cycles), detail = the function.
    const SpeRows spe = speRows(options.spe, options.begin, options.end);
    for (size_t k = 0; k < spe.index.size(); ++k) {
        const spe::SpeRecord& r = (*options.spe->records)[spe.index[k]];
        out << "spe," << r.cpu << ',' << spe.time[k] << ",," << r.pid << ',' << r.tid << ','
            << csvField(speOperationName(r)) << ',';
        if (r.hasTotalLatency) out << r.totalLatency;
        out << ',' << csvField(options.spe->function ? options.spe->function(r) : std::string()) << eol;
    }
    for (auto& l : cut ? cut->losses : model.losses())
        out << "lost," << l.cpu << ',' << l.time << ",,,,," << l.count << ','
            << (l.kind == LossEvent::Records ? "records" : "samples") << eol;
    for (auto& c : cut ? cut->counters : model.counters())
        for (auto& p : c.points)
            out << "counter," << c.cpu << ',' << p.time << ",,,," << csvField(c.name) << ',' << p.value << ','
                << csvField(c.unit) << eol;
    // Decoded spans, thread by thread in start order. span: name = function,
    // value = instructions, detail = depth. gap: cpu = the trace's CPU, name =
    // reason, value = trace offset, detail = cause.
    const ExportSpans* spans = options.spans;
    if (spans && spans->threads && spans->functions) {
        // One formatting pass into large buffers, chunks of a thread's spans
        // formatted on `threads` threads and written in order (millions of rows).
        out.flush();
        std::vector<std::string> quoted(spans->functions->size());  // function names, quoted once
        for (size_t f = 0; f < quoted.size(); ++f)
            quoted[f] = csvField((*spans->functions)[uint32_t(f)].name);
        constexpr size_t kChunkSpans = size_t(1) << 16;
        struct Chunk {
            const SpanStore* store;
            size_t from, to;
            std::string pidTid;  // "pid,tid,"
            uint64_t before;     // rows written before this chunk
        };
        std::vector<Chunk> chunks;
        uint64_t rows = 0;
        for (const auto& [tid, store] : *spans->threads) {
            int32_t pid = pidOf(tid, -1);
            if (pid < 0 && spans->pidOf) pid = spans->pidOf(tid);
            const std::string pidTid = std::to_string(pid) + ',' + std::to_string(tid) + ',';
            for (size_t from = 0; from < store.size(); from += kChunkSpans) {
                const size_t to = std::min(store.size(), from + kChunkSpans);
                chunks.push_back({&store, from, to, pidTid, rows});
                rows += to - from;
            }
        }
        const uint64_t total = spans->spanCount();
        bool cancelled = false;
        const unsigned threads =
            options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
        const bool wrote = writeChunksInOrder(
            chunks.size(), threads,
            [&](size_t i, LineBuffer& text) {
                const Chunk& c = chunks[i];
                const std::vector<Gap>& gaps = c.store->gaps();
                text.reserve((c.to - c.from) * 64);
                c.store->forEach(c.from, c.to, [&](size_t, const Span& s) {
                    if (s.isGap()) {
                        const Gap& g = gaps[size_t(s.gap)];
                        text.put("gap,");
                        text.dec(int32_t(g.cpu));
                        text.put(',');
                        text.dec(s.start);
                        text.put(',');
                        text.dec(s.end);
                        text.put(',');
                        text.put(c.pidTid);
                        text.put(gapReasonName(g.reason));
                        text.put(',');
                        text.dec(g.traceOffset);
                        text.put(',');
                        text.put(csvField(g.detail));
                        text.put(eol);
                        return;
                    }
                    text.put("span,,");
                    text.dec(s.start);
                    text.put(',');
                    text.dec(s.end);
                    text.put(',');
                    text.put(c.pidTid);
                    text.put(s.function < quoted.size() ? std::string_view(quoted[s.function])
                                                        : std::string_view("[unknown]"));
                    text.put(',');
                    text.dec(s.instructions);
                    text.put(',');
                    text.dec(s.depth);
                    text.put(eol);
                });
            },
            out,
            // Progress after each chunk (every 64 Ki rows), on this thread.
            [&](size_t i) {
                const Chunk& c = chunks[i];
                if (options.progress && !options.progress(c.before + (c.to - c.from), total))
                    cancelled = true;
                return !cancelled;
            });
        if (cancelled) {
            out.close();
            std::remove(path.c_str());
            return makeError(path + ": export cancelled");
        }
        (void)wrote;  // a failed write is out's state, checked below
    }
    out.close();
    if (!out) return makeError(path + ": write failed: " + std::strerror(errno));
    return {};
}

}  // namespace auxscope

namespace auxscope {

Expected<void> exportSpeCsv(const ExportSpe& spe, const std::string& path, uint64_t begin, uint64_t end) {
    std::ofstream out(path, std::ios::trunc);
    if (!out) return makeError(path + ": cannot create: " + std::strerror(errno));
    out << spe::speCsvHeader() << ",operation,function,dataSymbol,sourceName,eventNames\n";
    const SpeRows rows = speRows(&spe, begin, end);
    auto name = [&](const auto& fn, const spe::SpeRecord& r) { return fn ? csvField(fn(r)) : std::string(); };
    std::string line;
    for (size_t i : rows.index) {
        const spe::SpeRecord& r = (*spe.records)[i];
        line.clear();
        spe::appendSpeCsvRow(r, line);  // every field, as `auxscope decode --format records` prints them
        line.pop_back();                // its newline
        line += ',';
        line += csvField(speOperationName(r));
        line += ',';
        line += name(spe.function, r);
        line += ',';
        line += name(spe.dataSymbol, r);
        line += ',';
        if (r.hasDataSource) line += name(spe.source, r);
        line += ',';
        if (r.hasEvents) line += name(spe.events, r);
        line += '\n';
        out << line;
    }
    out.close();
    if (!out) return makeError(path + ": write failed: " + std::strerror(errno));
    return {};
}

}  // namespace auxscope
