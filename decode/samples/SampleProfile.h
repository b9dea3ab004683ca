// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A sampled profile: every sample of a perf.data with its call stack resolved
// to functions, and the time each thread spent switched out (off-CPU) with the
// stack it blocked in, as costs that computeSampleRangeStats() aggregates into
// the same RangeStats (call tree, top functions, bottom-up, flame graph, per
// thread) that decoded spans give. Built once per file; immutable afterwards
// and safe to read from any thread.
//
// Where a sample's stack comes from, as perf report reads it:
//   - PERF_SAMPLE_CALLCHAIN (perf record -g, and the kernel part of
//     --call-graph dwarf): samples/Callchain.h;
//   - the user stack copy (REGS_USER + STACK_USER, --call-graph dwarf), unwound
//     with elfutils (samples/DwarfUnwinder.h) and appended after the kernel part;
//   - neither: the sample's IP alone (a plain cpu-clock capture still answers
//     "which functions": a stack of one frame).
// Each distinct raw stack (addresses, per process) is symbolized once: its
// frames become FunctionTable ids (images/ImageResolver), with the functions
// inlined at each address as frames of their own when debug information says
// so, and the path becomes a node of one tree of function stacks (tree()).
//
// Off-CPU time: a thread is off CPU between two of its run slices (the switch
// timeline: switch records or sched:sched_switch). The stack it blocked in is
// that of its switch-out sample (a sched:sched_switch or context-switches
// sample with a callchain, `perf record -e sched:sched_switch -g`) in that
// slice; without one the time goes to the frame "[off-CPU: no stack]".
//
// Loading reads the file's records once more (PerfDataReader::forEachRecord).
// Nothing is dropped silently: stacks that could not be read whole are counted
// by reason in stackNotes().
//
// Samples that are not PERF_RECORD_SAMPLE records: an AUX trace that samples
// operations (Arm SPE) gives events of its own, synthesized the way perf's
// arm_spe synthesizes l1d-miss, tlb-miss, ... samples: SyntheticSamples in the
// options (auxtrace/SpeSamples.h makes them from SPE records). They join the
// profile as events after the file's (SampledEvent::attr -1), each sample a
// stack of its one address, and the same range statistics aggregate them.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "Result.h"
#include "images/ImageResolver.h"
#include "samples/Callchain.h"
#include "spans/FunctionTable.h"
#include "spans/RangeStats.h"

namespace auxscope {

class PerfDataReader;
class Sideband;

// Samples from outside the file's PERF_RECORD_SAMPLE records, each of one of `events`.
struct SyntheticEvent {
    std::string name;  // "arm_spe: loads"
    std::string periodUnit = "events";
    bool periodIsTime = false;
};
struct SyntheticSample {
    uint64_t time = 0;  // perf time, ns
    int32_t pid = -1, tid = -1;
    int cpu = -1;
    uint64_t ip = 0;
    FrameContext context = FrameContext::User;
    uint32_t event = 0;  // index into SyntheticSamples::events
    uint64_t period = 1;
};
struct SyntheticSamples {
    std::vector<SyntheticEvent> events;
    std::vector<SyntheticSample> samples;
};

struct SampleProfileOptions {
    ImageOptions images;
    size_t maxStack = kDefaultMaxStack;  // addresses per stack (perf report's --max-stack)
    // Functions inlined at an address (DWARF) as frames of their own, as
    // hotspot and perf report --inline show them; false: the symbol's function
    // only (perf report --no-inline).
    bool inlineFrames = true;
    unsigned threads = 0;  // unwinding and symbolizing threads; 0: every core
    // Now and then, with bytes of the data section read; false cancels (load
    // fails with "cancelled").
    std::function<bool(uint64_t done, uint64_t total)> progress;
    // Samples to add to the file's (an SPE trace's operations); null: none.
    std::shared_ptr<const SyntheticSamples> synthetic;
};

// One sampling event of the file.
struct SampledEvent {
    int index = -1;  // its place in SampleProfile::events() (what SampleQuery::event names)
    int attr = -1;   // index into the file's attrs; -1: a synthetic event (SyntheticSamples)
    std::string name;
    bool periodIsTime = false;  // cpu-clock / task-clock: the period counts ns
    std::string periodUnit;     // "ns", "events", "cycles", ...
    bool switchEvent = false;   // sampled at a switch-out (sched:sched_switch, context-switches)
    uint64_t samples = 0, period = 0;
    uint64_t withCallchain = 0;  // samples that carried PERF_SAMPLE_CALLCHAIN entries
    uint64_t withUserStack = 0;  // samples that carried a user stack copy to unwind
};

// Why stacks are partial, per reason (a count and what it means).
struct StackNote {
    std::string reason;
    uint64_t samples = 0;
};

class SampleProfile {
public:
    // `sideband` must be the file's (Sideband::load); the profile keeps it.
    static Expected<std::shared_ptr<const SampleProfile>> load(const PerfDataReader& file,
                                                               std::shared_ptr<const Sideband> sideband,
                                                               const SampleProfileOptions& options = {});
    ~SampleProfile();
    SampleProfile(const SampleProfile&) = delete;
    SampleProfile& operator=(const SampleProfile&) = delete;

    const std::vector<SampledEvent>& events() const { return events_; }
    // The first synthetic event's index in events() (events().size() when there is none).
    size_t firstSyntheticEvent() const { return firstSynthetic_; }
    // The index in events() of the event named `name`; -1 when none is.
    int eventIndex(const std::string& name) const;
    const FunctionTable& functions() const { return *functions_; }
    std::shared_ptr<const FunctionTable> sharedFunctions() const { return functions_; }
    const ImageResolver& images() const { return *images_; }
    const Sideband& sideband() const { return *sideband_; }

    // The samples, by time.
    size_t size() const { return time_.size(); }
    uint64_t time(size_t i) const { return time_[i]; }
    int32_t tid(size_t i) const { return tid_[i]; }
    // The sample's thread as a dense index (0 .. threadCount()), and back to its tid.
    uint32_t threadIndex(size_t i) const { return thread_[i]; }
    size_t threadCount() const { return threadTids_.size(); }
    int32_t threadTid(uint32_t index) const { return threadTids_[index]; }
    int32_t pid(size_t i) const { return pid_[i]; }
    int cpu(size_t i) const { return cpu_[i]; }
    int event(size_t i) const { return event_[i]; }  // index into events()
    uint64_t period(size_t i) const { return period_[i]; }
    uint64_t ip(size_t i) const;  // the sampled address (the stack's leaf)
    // Its stack's node in tree(): the functions from the outermost frame in.
    uint32_t node(size_t i) const { return rawNode_[raw_[i]]; }
    // First sample at or after `t`.
    size_t lowerBound(uint64_t t) const;

    // One frame of a sample's stack, leaf first.
    struct Frame {
        uint64_t address = 0;
        uint32_t function = FunctionTable::kUnknown;
        FrameContext context = FrameContext::User;
        bool inlined = false;  // a function inlined at `address` (then the next frame has the same address)
    };
    std::vector<Frame> stack(size_t i) const;

    // Every stack as a path of functions (costs unused): node 0 is the root.
    const CallTree& tree() const { return tree_; }

    // Time a thread spent switched out, with the stack it blocked in.
    struct OffCpu {
        uint64_t start = 0, end = 0;
        int32_t pid = -1, tid = -1;
        int cpu = -1;       // where it ran last
        uint32_t node = 0;  // in tree()
    };
    const std::vector<OffCpu>& offCpu() const { return offCpu_; }  // by start
    bool hasOffCpuStacks() const { return offCpuStacks_ > 0; }

    const std::vector<StackNote>& stackNotes() const { return notes_; }
    uint64_t firstTime() const { return time_.empty() ? 0 : time_.front(); }
    uint64_t lastTime() const { return time_.empty() ? 0 : time_.back(); }

    struct Builder;

private:
    SampleProfile();
    std::shared_ptr<const Sideband> sideband_;
    std::shared_ptr<FunctionTable> functions_;
    std::unique_ptr<ImageResolver> images_;
    std::vector<SampledEvent> events_;
    size_t firstSynthetic_ = 0;
    // Per sample, by time.
    std::vector<uint64_t> time_, period_;
    std::vector<int32_t> tid_, pid_;
    std::vector<uint32_t> thread_;  // dense thread index (threadTids_)
    std::vector<int32_t> threadTids_;
    std::vector<int16_t> cpu_, event_;
    std::vector<uint32_t> raw_;            // its raw stack
    std::vector<uint64_t> ipInFileOrder_;  // while loading: the sampled addresses
    // Raw stacks: frames (leaf first) of stack k in [rawBegin_[k], rawBegin_[k + 1]).
    std::vector<RawFrame> rawFrames_;
    std::vector<uint32_t> rawBegin_;
    std::vector<int32_t> rawPid_;
    std::vector<uint32_t> rawNode_;  // its node in tree_
    CallTree tree_;
    std::vector<OffCpu> offCpu_;
    uint64_t offCpuStacks_ = 0;
    std::vector<StackNote> notes_;
};

// What computeSampleRangeStats aggregates.
struct SampleQuery {
    uint64_t begin = 0, end = UINT64_MAX;  // [begin, end), perf time ns
    std::vector<int32_t> tids;             // only these threads; empty: every thread
    int event = 0;                         // index into SampleProfile::events(), or kOffCpu
    static constexpr int kOffCpu = -1;
    bool perThreadTrees = false;  // also each thread's own tree (ThreadRangeStats::tree)
    const std::atomic<bool>* cancel = nullptr;
};

// The range's statistics over the profile: per stack node the samples ending
// there (self) and passing through (total), with their periods (and time when
// the event counts time); off-CPU: the switched-out time clipped to the range,
// one sample per stretch. Per thread: its samples and periods, and its on-CPU
// and off-CPU time in the range. Errors: "cancelled".
Expected<RangeStats> computeSampleRangeStats(const SampleProfile& profile, const SampleQuery& query);

}  // namespace auxscope
