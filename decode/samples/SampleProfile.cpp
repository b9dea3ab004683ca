// SPDX-License-Identifier: GPL-3.0-or-later
#include "samples/SampleProfile.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <thread>
#include <unordered_map>

#include "images/InlineFrames.h"
#include "perfdata/PerfDataReader.h"
#include "samples/DwarfUnwinder.h"
#include "sideband/Sideband.h"

namespace auxscope {
namespace {

FrameContext contextOfMisc(uint16_t misc) {
    switch (misc & PERF_RECORD_MISC_CPUMODE_MASK) {
        case PERF_RECORD_MISC_KERNEL:
            return FrameContext::Kernel;
        case PERF_RECORD_MISC_HYPERVISOR:
            return FrameContext::Hypervisor;
        case PERF_RECORD_MISC_GUEST_KERNEL:
            return FrameContext::GuestKernel;
        case PERF_RECORD_MISC_GUEST_USER:
            return FrameContext::GuestUser;
        default:
            return FrameContext::User;
    }
}

SampledEvent describeEvent(const PerfAttr& a, int index, const TraceModel& model) {
    SampledEvent e;
    e.index = index;
    e.attr = index;
    e.name = !a.name.empty()
                 ? a.name
                 : "type " + std::to_string(a.attr.type) + " config " + std::to_string(a.attr.config);
    e.periodUnit = "events";
    if (a.attr.type == PERF_TYPE_SOFTWARE) {
        if (a.attr.config == PERF_COUNT_SW_CPU_CLOCK || a.attr.config == PERF_COUNT_SW_TASK_CLOCK) {
            e.periodIsTime = true;
            e.periodUnit = "ns";
        }
        e.switchEvent = a.attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES;
    } else if (a.attr.type == PERF_TYPE_HARDWARE) {
        if (a.attr.config == PERF_COUNT_HW_CPU_CYCLES || a.attr.config == PERF_COUNT_HW_REF_CPU_CYCLES)
            e.periodUnit = "cycles";
        else if (a.attr.config == PERF_COUNT_HW_INSTRUCTIONS)
            e.periodUnit = "instructions";
    }
    e.switchEvent = e.switchEvent || model.isSchedSwitchEvent(index);
    return e;
}

// 64-bit mixing of a stack's words (interning raw stacks by content).
inline uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

}  // namespace

// Reads the samples, interns their raw stacks, symbolizes each distinct one
// into the function tree, then sorts the samples by time and builds the
// off-CPU stretches.
struct SampleProfile::Builder {
    SampleProfile& p;
    const PerfDataReader& file;
    const SampleProfileOptions& options;
    std::unordered_map<uint64_t, uint32_t> byHash;  // stack hash -> first raw stack with it
    std::vector<uint32_t> sameHash;                 // per raw stack: the next one with its hash
    std::map<std::string, uint64_t> noteCounts;
    std::vector<RawFrame> frames;  // the sample being read

    // --call-graph dwarf: user stack copies unwound in batches on worker
    // threads as the records are read (the reading thread waits for each batch).
    struct UnwindJob {
        uint32_t sample;  // index in file order
        int32_t pid;
        std::vector<RawFrame> head;  // the callchain's frames (its kernel part), leaf first
        UserStackCopy copy;          // views into the file, or into `owned` for a compressed record
        std::vector<uint8_t> owned;
        std::vector<uint64_t> user;  // unwound
        UnwindStop stop = UnwindStop::Complete;
    };
    std::unique_ptr<DwarfUnwinder> unwinder;
    std::string noUnwinder;  // why there is none where stacks were copied
    std::vector<std::unique_ptr<DwarfUnwinder::Worker>> workers;
    std::vector<UnwindJob> jobs;
    size_t jobBytes = 0;
    static constexpr size_t kBatchJobs = 8192;
    static constexpr size_t kBatchBytes = size_t(256) << 20;

    unsigned threadCount() const {
        return options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    }

    // Unwinds the pending jobs on every worker, then interns their stacks in
    // file order (raw stack ids do not depend on the threads).
    void flushUnwinding() {
        if (jobs.empty()) return;
        const unsigned n = std::min<unsigned>(threadCount(), unsigned(jobs.size()));
        while (workers.size() < n)
            workers.push_back(unwinder->worker());
        std::atomic<size_t> next{0};
        auto work = [&](DwarfUnwinder::Worker& w) {
            for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < jobs.size();) {
                UnwindJob& j = jobs[i];
                j.stop = unwinder->unwind(w, j.pid, j.copy, j.user, options.maxStack);
            }
        };
        std::vector<std::thread> threads;
        for (unsigned t = 1; t < n; ++t)
            threads.emplace_back(work, std::ref(*workers[t]));
        work(*workers[0]);
        for (std::thread& t : threads)
            t.join();
        for (UnwindJob& j : jobs) {
            frames = std::move(j.head);
            for (uint64_t a : j.user)
                frames.push_back({a, FrameContext::User});
            noteUnwindStop(j.stop);
            if (frames.empty()) frames.push_back({p.ipInFileOrder_[j.sample], FrameContext::User});
            p.raw_[j.sample] = intern(j.pid, frames);
        }
        jobs.clear();
        jobBytes = 0;
    }

    void noteUnwindStop(UnwindStop stop) {
        switch (stop) {
            case UnwindStop::Complete:
                return;
            case UnwindStop::StackCopyEnd:
                return note(
                    "user stacks unwound to the end of their stack copy, not to the outermost frame "
                    "(deep stacks: record with a larger --call-graph dwarf,SIZE)");
            case UnwindStop::MaxFrames:
                return note("user stacks cut at " + std::to_string(options.maxStack) + " frames");
            default:
                return note(std::string("user stacks whose unwinding stopped early: ") +
                            unwindStopName(stop));
        }
    }

    void note(const std::string& reason) { ++noteCounts[reason]; }

    uint32_t intern(int32_t pid, std::span<const RawFrame> stack) {
        uint64_t h = mix(0, uint64_t(uint32_t(pid)));
        for (const RawFrame& f : stack)
            h = mix(h, f.address ^ (uint64_t(f.context) << 60));
        auto [it, fresh] = byHash.try_emplace(h, uint32_t(p.rawPid_.size()));
        if (!fresh) {
            for (uint32_t k = it->second; k != UINT32_MAX; k = sameHash[k]) {
                const auto begin = p.rawFrames_.begin() + p.rawBegin_[k];
                const auto end = p.rawFrames_.begin() + p.rawBegin_[k + 1];
                if (p.rawPid_[k] == pid && std::equal(begin, end, stack.begin(), stack.end())) return k;
            }
        }
        const uint32_t k = uint32_t(p.rawPid_.size());
        p.rawPid_.push_back(pid);
        p.rawFrames_.insert(p.rawFrames_.end(), stack.begin(), stack.end());
        p.rawBegin_.push_back(uint32_t(p.rawFrames_.size()));
        sameHash.push_back(UINT32_MAX);
        if (!fresh) {
            // Chain it behind the first of its hash.
            sameHash[k] = sameHash[it->second];
            sameHash[it->second] = k;
        }
        return k;
    }

    Expected<void> readSamples() {
        const Sideband& sb = *p.sideband_;
        std::vector<uint64_t> fixedPeriod;
        for (size_t i = 0; i < file.attrs().size(); ++i) {
            const perf_event_attr& a = file.attrs()[i].attr;
            p.events_.push_back(describeEvent(file.attrs()[i], int(i), sb.model()));
            fixedPeriod.push_back(a.freq ? 1 : std::max<uint64_t>(a.sample_period, 1));
        }
        uint64_t samples = 0;
        if (auto it = file.summary().recordsByType.find(PERF_RECORD_SAMPLE);
            it != file.summary().recordsByType.end())
            samples = it->second;
        p.time_.reserve(samples);
        p.period_.reserve(samples);
        p.tid_.reserve(samples);
        p.pid_.reserve(samples);
        p.cpu_.reserve(samples);
        p.event_.reserve(samples);
        p.raw_.reserve(samples);
        p.rawBegin_.push_back(0);
        const uint64_t total = file.dataSize();
        uint64_t seen = 0;
        bool cancelled = false;
        auto walked = file.forEachRecord([&](const PerfRecord& r) {
            if ((++seen & 0xfff) == 0 && options.progress &&
                !options.progress(r.fileOffset - file.dataOffset(), total)) {
                cancelled = true;
                return false;
            }
            if (r.header.type != PERF_RECORD_SAMPLE) return true;
            const ParsedRecord& s = r.parsed;
            if (!s.event || s.event->descIndex < 0 || size_t(s.event->descIndex) >= p.events_.size()) {
                note("samples of no known event (left out)");
                return true;
            }
            if (r.parseError)
                note("samples cut short (" + *r.parseError + "): the stack read so far is kept");
            SampledEvent& ev = p.events_[size_t(s.event->descIndex)];
            // Without PERIOD in the sample every sample stands for attr.sample_period events, as perf reads
            // it.
            const uint64_t period = (s.event->sampleType & PERF_SAMPLE_PERIOD)
                                        ? s.period
                                        : fixedPeriod[size_t(s.event->descIndex)];
            ++ev.samples;
            ev.period += period;
            frames.clear();
            if ((s.event->branchSampleType & PERF_SAMPLE_BRANCH_CALL_STACK) && !s.branches.empty() &&
                appendLbrCallStack(s.callchain, s.branches, frames, options.maxStack)) {
                ++ev.withCallchain;
            } else if (!s.callchain.empty()) {
                ++ev.withCallchain;
                switch (appendCallchain(s.callchain, frames, options.maxStack)) {
                    case CallchainStatus::Ok:
                        break;
                    case CallchainStatus::Truncated:
                        note("callchains longer than " + std::to_string(options.maxStack) +
                             " frames (the outermost left out, as perf report --max-stack does)");
                        break;
                    case CallchainStatus::InvalidContext:
                        note("callchains with an unknown context marker (only the sampled address kept)");
                        break;
                }
            }
            const int32_t pid = s.pid >= 0 ? s.pid : sb.pidOf(s.tid);
            p.time_.push_back(s.time);
            p.period_.push_back(period);
            p.tid_.push_back(s.tid);
            p.pid_.push_back(pid);
            p.cpu_.push_back(int16_t(s.cpu != UINT32_MAX ? int(s.cpu) : int(r.cpu)));
            p.event_.push_back(int16_t(s.event->descIndex));
            p.ipInFileOrder_.push_back(s.ip);
            if (!s.stackUser.empty() && s.regsUserAbi != PERF_SAMPLE_REGS_ABI_NONE && !s.regsUser.empty()) {
                ++ev.withUserStack;
                if (unwinder) {
                    // Its stack: the callchain's (kernel) frames, then the unwound user frames.
                    UnwindJob j{uint32_t(p.raw_.size()), pid, std::move(frames), {}, {}, {},
                                UnwindStop::Complete};
                    frames = {};
                    j.copy = {s.regsUserAbi, s.event->sampleRegsUser, s.regsUser, s.stackUser};
                    if (r.compressed) {
                        // The record lives in a buffer the next record reuses: keep a copy.
                        j.owned.assign(s.regsUser.begin(), s.regsUser.end());
                        j.owned.insert(j.owned.end(), s.stackUser.begin(), s.stackUser.end());
                        j.copy.regs = std::span<const uint8_t>(j.owned).first(s.regsUser.size());
                        j.copy.stack = std::span<const uint8_t>(j.owned).subspan(s.regsUser.size());
                        jobBytes += j.owned.size();
                    }
                    p.raw_.push_back(UINT32_MAX);  // set when its batch is unwound
                    jobs.push_back(std::move(j));
                    if (jobs.size() >= kBatchJobs || jobBytes >= kBatchBytes) flushUnwinding();
                    return true;
                }
                note("user stack copies not unwound (" + noUnwinder +
                     "): their stacks are the kernel callchain and the sampled address");
            }
            if (frames.empty()) frames.push_back({s.ip, contextOfMisc(r.header.misc)});
            p.raw_.push_back(intern(pid, frames));
            return true;
        });
        if (cancelled) return makeError("cancelled");
        flushUnwinding();
        if (!walked) note("records after damage at " + walked.error().message + " (not read)");
        return {};
    }

    // Samples from outside the records (an SPE trace's operations): events of
    // their own after the file's, each sample a stack of its one address.
    void addSynthetic() {
        p.firstSynthetic_ = p.events_.size();
        if (!options.synthetic) return;
        const SyntheticSamples& syn = *options.synthetic;
        for (const SyntheticEvent& e : syn.events) {
            SampledEvent ev;
            ev.index = int(p.events_.size());
            ev.name = e.name;
            ev.periodUnit = e.periodUnit;
            ev.periodIsTime = e.periodIsTime;
            p.events_.push_back(std::move(ev));
        }
        const size_t n = p.time_.size() + syn.samples.size();
        p.time_.reserve(n);
        p.period_.reserve(n);
        p.tid_.reserve(n);
        p.pid_.reserve(n);
        p.cpu_.reserve(n);
        p.event_.reserve(n);
        p.raw_.reserve(n);
        for (const SyntheticSample& s : syn.samples) {
            if (s.event >= syn.events.size()) {
                note("synthetic samples of no known event (left out)");
                continue;
            }
            SampledEvent& ev = p.events_[p.firstSynthetic_ + s.event];
            ++ev.samples;
            ev.period += s.period;
            const int32_t pid = s.pid >= 0 ? s.pid : p.sideband_->pidOf(s.tid);
            p.time_.push_back(s.time);
            p.period_.push_back(s.period);
            p.tid_.push_back(s.tid);
            p.pid_.push_back(pid);
            p.cpu_.push_back(int16_t(s.cpu));
            p.event_.push_back(int16_t(ev.index));
            p.ipInFileOrder_.push_back(s.ip);
            const RawFrame frame{s.ip, s.context};
            p.raw_.push_back(intern(pid, std::span<const RawFrame>(&frame, 1)));
        }
    }

    // The unwinder, where some event copies user stacks and the recording's
    // architecture is one it knows.
    void prepareUnwinder() {
        bool copies = false;
        for (const PerfAttr& a : file.attrs())
            copies |=
                (a.attr.sample_type & PERF_SAMPLE_REGS_USER) && (a.attr.sample_type & PERF_SAMPLE_STACK_USER);
        if (!copies) return;
        const std::string arch = file.features().arch.value_or("");
        const uint16_t machine = elfMachineOfArch(arch);
        if (!machine) {
            noUnwinder = "the recording's architecture '" + arch + "' is not one the DWARF unwinder knows";
            return;
        }
        unwinder = std::make_unique<DwarfUnwinder>(*p.images_, machine);
    }

    // Each raw stack's functions, outermost first, into the tree: per frame
    // the symbol's function, then (user code with DWARF) the functions inlined
    // there, each a frame of its own.
    void symbolize() {
        // Per distinct (pid, address): its functions, outermost first,
        // chains[first, first + count); open addressing (a node-based map's
        // cache misses were a third of this loop on deep stacks).
        struct Slot {
            uint64_t address = 0;
            int32_t pid = 0;
            uint32_t first = UINT32_MAX, count = 0;  // first == UINT32_MAX: empty
        };
        std::vector<Slot> slots(size_t(1) << 16);
        size_t used = 0;
        auto slotOf = [&](int32_t pid, uint64_t address) -> Slot& {
            if ((used + 1) * 2 > slots.size()) {
                std::vector<Slot> bigger(slots.size() * 2);
                const size_t mask = bigger.size() - 1;
                for (const Slot& s : slots) {
                    if (s.first == UINT32_MAX) continue;
                    size_t at = mix(s.address, uint64_t(uint32_t(s.pid))) & mask;
                    while (bigger[at].first != UINT32_MAX)
                        at = (at + 1) & mask;
                    bigger[at] = s;
                }
                slots = std::move(bigger);
            }
            const size_t mask = slots.size() - 1;
            size_t at = mix(address, uint64_t(uint32_t(pid))) & mask;
            while (slots[at].first != UINT32_MAX) {
                if (slots[at].address == address && slots[at].pid == pid) return slots[at];
                at = (at + 1) & mask;
            }
            ++used;
            slots[at].address = address;
            slots[at].pid = pid;
            slots[at].first = 0;
            slots[at].count = UINT32_MAX;  // fresh: the caller fills it
            return slots[at];
        };
        std::vector<uint32_t> chains;
        std::map<std::pair<std::string, std::string>, uint32_t> inlinedIds;  // (name, file) -> id
        std::unique_ptr<InlineFrames> inlines;
        std::unique_ptr<InlineFrames::Worker> inlineWorker;
        if (options.inlineFrames) {
            inlines = std::make_unique<InlineFrames>(*p.images_);
            inlineWorker = inlines->worker();
        }
        const size_t stacks = p.rawPid_.size();
        p.rawNode_.assign(stacks, 0);
        for (size_t k = 0; k < stacks; ++k) {
            const int32_t pid = p.rawPid_[k];
            uint32_t node = 0;
            for (uint32_t f = p.rawBegin_[k + 1]; f-- > p.rawBegin_[k];) {
                const RawFrame& frame = p.rawFrames_[f];
                // Kernel code is the same in every process: one cache entry for all.
                const bool kernel = frame.context == FrameContext::Kernel;
                Slot* slot = &slotOf(kernel ? -1 : pid, frame.address);
                if (slot->count == UINT32_MAX) {
                    const uint32_t begin = uint32_t(chains.size());
                    const uint32_t function = p.images_->functionAt(pid, frame.address);
                    chains.push_back(function);
                    if (inlines && !kernel && function != FunctionTable::kUnknown) {
                        const std::string file = (*p.functions_)[function].file;
                        for (const InlineFrame& in : inlines->at(*inlineWorker, pid, frame.address)) {
                            auto [id, made] = inlinedIds.try_emplace({std::string(in.function), file}, 0);
                            if (made) {
                                FunctionInfo info{std::string(in.function), file, 0};
                                info.inlined = true;
                                id->second = p.functions_->add(std::move(info));
                            }
                            chains.push_back(id->second);
                        }
                    }
                    slot->first = begin;
                    slot->count = uint32_t(chains.size()) - begin;
                }
                for (uint32_t c = 0; c < slot->count; ++c)
                    node = p.tree_.child(node, chains[slot->first + c]);
            }
            p.rawNode_[k] = node;
        }
    }

    // The samples by time (files hold them by time per CPU ring, rounds apart).
    void sortByTime() {
        const size_t n = p.time_.size();
        std::vector<uint32_t> order(n);
        std::iota(order.begin(), order.end(), 0u);
        if (!std::is_sorted(p.time_.begin(), p.time_.end()))
            std::stable_sort(order.begin(), order.end(),
                             [&](uint32_t a, uint32_t b) { return p.time_[a] < p.time_[b]; });
        auto permute = [&](auto& v) {
            std::remove_reference_t<decltype(v)> out(n);
            for (size_t i = 0; i < n; ++i)
                out[i] = v[order[i]];
            v = std::move(out);
        };
        permute(p.time_);
        permute(p.period_);
        permute(p.tid_);
        permute(p.pid_);
        permute(p.cpu_);
        permute(p.event_);
        permute(p.raw_);
        p.ipInFileOrder_ = {};
        // Dense thread indices.
        std::vector<int32_t> tids = p.tid_;
        std::sort(tids.begin(), tids.end());
        tids.erase(std::unique(tids.begin(), tids.end()), tids.end());
        p.threadTids_ = tids;
        p.thread_.resize(n);
        for (size_t i = 0; i < n; ++i)
            p.thread_[i] = uint32_t(std::lower_bound(tids.begin(), tids.end(), p.tid_[i]) - tids.begin());
    }

    // Between two run slices of a thread it was off CPU: the stack is its
    // switch-out sample's in the first slice (the last one before the second).
    void buildOffCpu() {
        const Sideband& sb = *p.sideband_;
        std::map<int32_t, std::vector<const RunSlice*>> byThread;
        for (const RunSlice& s : sb.model().runSlices())
            if (s.tid > 0) byThread[s.tid].push_back(&s);
        std::map<int32_t, std::vector<size_t>> switchSamples;  // per tid, sample indices by time
        for (size_t i = 0; i < p.time_.size(); ++i)
            if (p.events_[size_t(p.event_[i])].switchEvent) switchSamples[p.tid_[i]].push_back(i);
        uint32_t noStack = CallTree::kNone;
        for (auto& [tid, slices] : byThread) {
            std::sort(slices.begin(), slices.end(),
                      [](const RunSlice* a, const RunSlice* b) { return a->start < b->start; });
            const std::vector<size_t>* samples = nullptr;
            if (auto it = switchSamples.find(tid); it != switchSamples.end()) samples = &it->second;
            for (size_t k = 1; k < slices.size(); ++k) {
                const RunSlice& a = *slices[k - 1];
                const RunSlice& b = *slices[k];
                if (b.start <= a.end) continue;
                OffCpu o{a.end, b.start, a.pid > 0 ? a.pid : sb.pidOf(tid), tid, a.cpu, 0};
                size_t at = SIZE_MAX;
                if (samples) {
                    auto it = std::upper_bound(samples->begin(), samples->end(), b.start,
                                               [&](uint64_t t, size_t i) { return t < p.time_[i]; });
                    if (it != samples->begin() && p.time_[*(it - 1)] >= a.start) at = *(it - 1);
                }
                if (at != SIZE_MAX) {
                    o.node = p.rawNode_[p.raw_[at]];
                    ++p.offCpuStacks_;
                } else {
                    if (noStack == CallTree::kNone)
                        noStack = p.tree_.child(0, p.functions_->add({"[off-CPU: no stack]", "", 0}));
                    o.node = noStack;
                }
                p.offCpu_.push_back(o);
            }
        }
        std::sort(p.offCpu_.begin(), p.offCpu_.end(),
                  [](const OffCpu& a, const OffCpu& b) { return a.start < b.start; });
    }

    void finishNotes() {
        for (const auto& [reason, n] : noteCounts)
            p.notes_.push_back({reason, n});
    }
};

SampleProfile::SampleProfile() = default;
SampleProfile::~SampleProfile() = default;

Expected<std::shared_ptr<const SampleProfile>> SampleProfile::load(const PerfDataReader& file,
                                                                   std::shared_ptr<const Sideband> sideband,
                                                                   const SampleProfileOptions& options) {
    std::shared_ptr<SampleProfile> p(new SampleProfile());
    p->sideband_ = std::move(sideband);
    p->functions_ = std::make_shared<FunctionTable>();
    p->images_ = std::make_unique<ImageResolver>(*p->sideband_, *p->functions_, options.images);
    p->images_->prepare();
    Builder b{*p, file, options};
    b.prepareUnwinder();
    if (auto r = b.readSamples(); !r) return r.error();
    b.addSynthetic();
    b.symbolize();
    b.sortByTime();
    b.buildOffCpu();
    b.finishNotes();
    return std::shared_ptr<const SampleProfile>(std::move(p));
}

uint64_t SampleProfile::ip(size_t i) const {
    const uint32_t k = raw_[i];
    return rawBegin_[k + 1] > rawBegin_[k] ? rawFrames_[rawBegin_[k]].address : 0;
}

int SampleProfile::eventIndex(const std::string& name) const {
    for (const SampledEvent& e : events_)
        if (e.name == name) return e.index;
    return -1;
}

size_t SampleProfile::lowerBound(uint64_t t) const {
    return size_t(std::lower_bound(time_.begin(), time_.end(), t) - time_.begin());
}

std::vector<SampleProfile::Frame> SampleProfile::stack(size_t i) const {
    std::vector<Frame> out;
    const uint32_t k = raw_[i];
    // The functions of the stack's node, leaf first, matched to the raw frames:
    // each raw frame is one tree level, plus one for every function inlined there.
    std::vector<uint32_t> path = tree_.stack(rawNode_[k]);  // outermost first
    size_t level = path.size();
    for (uint32_t f = rawBegin_[k]; f < rawBegin_[k + 1] && level > 0; ++f) {
        const RawFrame& raw = rawFrames_[f];
        // The frame's innermost function first, then those it is inlined into.
        while (level > 0) {
            const uint32_t fn = path[--level];
            const bool inl = (*functions_)[fn].inlined;
            out.push_back({raw.address, fn, raw.context, inl});
            if (!inl) break;
        }
    }
    return out;
}

Expected<RangeStats> computeSampleRangeStats(const SampleProfile& profile, const SampleQuery& q) {
    RangeStats out;
    out.begin = q.begin;
    out.end = q.end;
    const bool offCpu = q.event == SampleQuery::kOffCpu;
    if (offCpu) {
        out.source = {RangeSource::OffCpu, "off-CPU time", true, "ns"};
    } else {
        if (q.event < 0 || size_t(q.event) >= profile.events().size())
            return makeError("no sampled event " + std::to_string(q.event));
        const SampledEvent& ev = profile.events()[size_t(q.event)];
        out.source = {RangeSource::Samples, ev.name, ev.periodIsTime, ev.periodUnit};
    }
    const bool time = out.source.periodIsTime;
    if (q.end <= q.begin) return out;
    std::vector<int32_t> tids = q.tids;
    std::sort(tids.begin(), tids.end());
    auto wanted = [&](int32_t tid) {
        return tids.empty() || std::binary_search(tids.begin(), tids.end(), tid);
    };

    const CallTree& tree = profile.tree();
    const size_t nodes = tree.size();
    std::vector<uint64_t> samples(nodes, 0), period(nodes, 0);
    // Per thread (sample's tid) and node, for per-thread trees.
    std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> threadNode;
    auto count = [&](int32_t tid, uint32_t node, uint64_t weight) {
        ++samples[node];
        period[node] += weight;
        ThreadRangeStats& t = out.threads[tid];
        ++t.samples;
        t.period += weight;
        if (time) t.frameTime += weight;
        if (q.perThreadTrees) {
            auto& c = threadNode[(uint64_t(uint32_t(tid)) << 32) | node];
            ++c.first;
            c.second += weight;
        }
    };
    if (offCpu) {
        for (const SampleProfile::OffCpu& o : profile.offCpu()) {
            if (o.start >= q.end) break;
            if (o.end <= q.begin || !wanted(o.tid)) continue;
            count(o.tid, o.node, std::min(o.end, q.end) - std::max(o.start, q.begin));
        }
    } else {
        // Per dense thread index, not per tid in out.threads (a map look-up per
        // sample was most of the loop's time with thousands of threads).
        const size_t threadCount = profile.threadCount();
        std::vector<uint8_t> want(threadCount);
        for (uint32_t t = 0; t < threadCount; ++t)
            want[t] = wanted(profile.threadTid(t));
        std::vector<uint64_t> threadSamples(threadCount, 0), threadPeriod(threadCount, 0);
        const size_t first = profile.lowerBound(q.begin);
        // end UINT64_MAX: to the end, a sample stamped UINT64_MAX included.
        const size_t last = q.end == UINT64_MAX ? profile.size() : profile.lowerBound(q.end);
        for (size_t i = first; i < last; ++i) {
            if (profile.event(i) != q.event) continue;
            const uint32_t t = profile.threadIndex(i);
            if (!want[t]) continue;
            const uint32_t node = profile.node(i);
            const uint64_t weight = profile.period(i);
            ++samples[node];
            period[node] += weight;
            ++threadSamples[t];
            threadPeriod[t] += weight;
            if (q.perThreadTrees) {
                auto& c = threadNode[(uint64_t(uint32_t(profile.threadTid(t))) << 32) | node];
                ++c.first;
                c.second += weight;
            }
            if (((i - first) & 0xffff) == 0 && q.cancel && q.cancel->load(std::memory_order_relaxed))
                return makeError("cancelled");
        }
        for (uint32_t t = 0; t < threadCount; ++t) {
            if (!threadSamples[t]) continue;
            ThreadRangeStats& ts = out.threads[profile.threadTid(t)];
            ts.samples += threadSamples[t];
            ts.period += threadPeriod[t];
            if (time) ts.frameTime += threadPeriod[t];
        }
    }

    // A tree of the nodes with samples: self where stacks end, totals summed up
    // (nodes come parent first, so children are summed before their parent).
    auto build = [&](std::span<const uint32_t> touched, auto&& selfOf) {
        CallTree t;
        std::unordered_map<uint32_t, RangeCost> cost;  // by profile node, totals included
        for (uint32_t n : touched) {
            const auto [s, w] = selfOf(n);
            RangeCost& c = cost[n];
            c.selfSamples += s;
            c.selfPeriod += w;
            for (uint32_t k = n; k != 0; k = tree.nodes[k].parent) {
                RangeCost& up = k == n ? c : cost[k];
                up.totalSamples += s;
                up.totalPeriod += w;
            }
        }
        std::vector<uint32_t> order;
        order.reserve(cost.size());
        for (const auto& [n, c] : cost)
            order.push_back(n);
        std::sort(order.begin(), order.end());
        std::unordered_map<uint32_t, uint32_t> newOf{{0u, 0u}};
        for (uint32_t n : order) {
            const uint32_t made = t.child(newOf.at(tree.nodes[n].parent), tree.nodes[n].function);
            newOf[n] = made;
            RangeCost& c = t.nodes[made].cost;
            c = cost[n];
            if (time) c.selfTime = c.selfPeriod, c.totalTime = c.totalPeriod;
        }
        RangeCost& root = t.nodes[0].cost;
        for (uint32_t c = t.nodes[0].firstChild; c != CallTree::kNone; c = t.nodes[c].nextSibling) {
            root.totalSamples += t.nodes[c].cost.totalSamples;
            root.totalPeriod += t.nodes[c].cost.totalPeriod;
            root.totalTime += t.nodes[c].cost.totalTime;
        }
        return t;
    };
    {
        // The whole tree: dense arrays, totals by one reverse pass.
        std::vector<uint64_t> totalS = samples, totalP = period;
        for (size_t n = nodes; n-- > 1;) {
            totalS[tree.nodes[n].parent] += totalS[n];
            totalP[tree.nodes[n].parent] += totalP[n];
        }
        // The nodes with samples, linked as the profile's tree links them (its
        // (parent, function) pairs are unique already, so no look-up is needed;
        // CallTree indexes a tree built by hand when child() is first called).
        std::vector<uint32_t> newOf(nodes, CallTree::kNone);
        newOf[0] = 0;
        std::vector<uint32_t> lastChild{CallTree::kNone};
        for (size_t n = 1; n < nodes; ++n) {
            if (totalS[n] == 0) continue;
            const uint32_t parent = newOf[tree.nodes[n].parent];
            const uint32_t made = uint32_t(out.tree.nodes.size());
            CallTree::Node& node = out.tree.nodes.emplace_back();
            node.function = tree.nodes[n].function;
            node.parent = parent;
            if (lastChild[parent] == CallTree::kNone)
                out.tree.nodes[parent].firstChild = made;
            else
                out.tree.nodes[lastChild[parent]].nextSibling = made;
            lastChild[parent] = made;
            lastChild.push_back(CallTree::kNone);
            newOf[n] = made;
            RangeCost& c = out.tree.nodes[made].cost;
            c.selfSamples = samples[n];
            c.totalSamples = totalS[n];
            c.selfPeriod = period[n];
            c.totalPeriod = totalP[n];
            if (time) c.selfTime = c.selfPeriod, c.totalTime = c.totalPeriod;
        }
        RangeCost& root = out.tree.nodes[0].cost;
        root.totalSamples = totalS[0] - samples[0];
        root.totalPeriod = totalP[0] - period[0];
        if (time) root.totalTime = root.totalPeriod;
    }
    if (q.perThreadTrees) {
        std::map<int32_t, std::vector<std::pair<uint32_t, std::pair<uint64_t, uint64_t>>>> perThread;
        for (const auto& [key, c] : threadNode)
            perThread[int32_t(uint32_t(key >> 32))].push_back({uint32_t(key), c});
        for (auto& [tid, entries] : perThread) {
            std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> self(entries.begin(), entries.end());
            std::vector<uint32_t> touched;
            for (const auto& e : entries)
                touched.push_back(e.first);
            out.threads[tid].tree = build(touched, [&](uint32_t n) { return self.at(n); });
        }
    }
    // On and off CPU per thread in the range, from the switch timeline.
    for (const RunSlice& s : profile.sideband().model().runSlices()) {
        if (s.tid <= 0 || s.end <= q.begin || s.start >= q.end || !wanted(s.tid)) continue;
        out.threads[s.tid].onCpuTime += std::min(s.end, q.end) - std::max(s.start, q.begin);
    }
    for (const SampleProfile::OffCpu& o : profile.offCpu()) {
        if (o.start >= q.end) break;
        if (o.end <= q.begin || !wanted(o.tid)) continue;
        out.threads[o.tid].offCpuTime += std::min(o.end, q.end) - std::max(o.start, q.begin);
    }
    out.functions = functionStatsOf(out.tree);
    return out;
}

}  // namespace auxscope
