// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Statistics of a time range of decoded spans: what the "selection" panes and
// `auxscope report` show. Over the per-thread SpanStores of a decode
// (DecodedSpans::threads), for [begin, end) and optionally some threads only:
//   - a top-down call tree: every distinct stack (path of functions from the
//     outermost frame a decode knows) with its calls, total and self time, total
//     and self instructions; it is also the flame graph (aggregated stacks);
//   - per function (derived from the tree): calls, total and self time, total
//     and self instructions; topFunctions() sorts them;
//   - bottom-up: for each function, the stacks of callers it was reached from;
//   - per thread: time covered by frames, instructions, calls, spans;
//   - gaps in the range (lost AUX, overflow, missing image, ...) summed per reason.
//
// How spans are counted (times in perf-clock ns; the range is half-open):
//   - Time: a span's [start, end) is clipped to the range. Total time is a
//     frame's clipped duration; self time is that minus the clipped durations of
//     the spans one level below it (callees and the gaps drawn below it, such as
//     untraced time in a syscall).
//   - Instructions: a span records how many instructions its frame executed
//     itself, not when each ran. A span wholly inside the range counts them all;
//     a span cut by an end of the range counts floor(n * (t - start) / duration)
//     evaluated at its clipped end minus the same at its clipped start, i.e. its
//     instructions spread evenly over its time. Adjacent ranges therefore split a
//     span's instructions exactly (they add up to the span's count), and ranges
//     that end where decode segments end (spans are cut at sync points) are exact.
//     A zero-length span counts when its start lies in the range.
//   - Callers: spans come in pre-order (FlowToSpans), so the caller of a span is
//     the latest span before it one level up (depth - 1) that no span at that
//     level or further out has followed since; a span marked outermost (the
//     outermost frame at the start of a decode segment, after lost trace, or
//     reached by returning past the outermost known frame) has none, and no
//     span before it is open any more. Times play no part, so frames that open
//     and close within one tick of the clock still get their own callers.
//   - Calls: a span is a call when it starts in the range, has a caller and
//     was not found running (Span::foundRunning: the outermost frames above, a
//     frame resumed in another function after untraced code such as a signal
//     handler): the trace does not show those being entered.
//   - Recursion: a function's total time and total instructions count each stack
//     once: frames of a function nested inside a frame of the same function add
//     nothing to its totals (as hotspot and perf report do); self values and calls
//     count every frame.
//   - Depth: spans carry the depth the decoder gave them; a frame with no
//     caller is a root of the tree (under node 0).
//
// Speed: the aggregation reads each span once (SpanStore::forEach) and keeps a
// stack of open frames; the costs of a piece are summed per tree node apart
// from the tree (a line of memory per span). On several threads the work is cut
// into pieces of about a million spans, aggregated into one tree per piece
// side by side, and the trees are merged by pairs side by side; on one thread
// each thread's spans are one piece. A piece starts from the frames open where
// it starts: each piece finds those it leaves open reading back from its end
// (to a depth-0 or outermost frame), in parallel, and one short pass chains
// them; the frames open at the range's start come from the spans since the
// last depth-0 or outermost frame before it, which also give the spans before
// the range that reach into it. So a range costs its own spans wherever it
// lies in the trace, and almost nothing runs on one thread (RangePhases).
// Progress and cancellation are checked between batches of spans, so a GUI
// runs it on a worker thread:
//
//     std::atomic<bool> cancel{false};             // set from the GUI thread
//     RangeQuery q;
//     q.begin = a; q.end = b; q.tids = {tid};       // or none: every thread
//     q.threads = 0;                                // all cores
//     q.cancel = &cancel;
//     q.progress = [&](uint64_t done, uint64_t total) { emit progressChanged(done, total); };
//     auto stats = computeRangeStats(decoded.threads, q);  // on the worker
//     if (!stats) ...stats.error().message ("cancelled" when cancel was set)
//     stats->topFunctions(RangeSort::SelfTime, 50); stats->tree; stats->bottomUp();
//
// Everything here is plain data: the result can be copied to the GUI thread,
// and the functions refer to FunctionTable ids of the session that decoded them.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "Result.h"
#include "spans/SpanStore.h"

namespace auxscope {

struct RangePhases;

struct RangeQuery {
    uint64_t begin = 0, end = UINT64_MAX;  // [begin, end), perf time ns
    std::vector<int32_t> tids;             // only these threads; empty: every thread
    unsigned threads = 1;                  // aggregation threads; 0: every core
    bool perThreadTrees = false;           // also keep each thread's own call tree (ThreadRangeStats::tree)
    // Called now and then with spans aggregated so far of all to aggregate, from
    // whichever aggregation thread finished a batch (calls are serialised).
    std::function<void(uint64_t done, uint64_t total)> progress;
    // Read between batches (about 64 K spans); when it turns true the aggregation
    // stops and computeRangeStats returns the error "cancelled".
    const std::atomic<bool>* cancel = nullptr;
    // Runs the pieces (SpanStore.h's ParallelRun, e.g. a decoder's worker pool);
    // unset: `threads` std::threads are started for the call.
    ParallelRun parallel;
    // Spans per piece (0: on one thread each thread's spans, on N about a million
    // or 1/4N of them all, whichever is more); small values cut a few thousand
    // spans into many pieces (tests).
    size_t pieceSpans = 0;
    // When set, filled with the wall time of each phase (benchmarks).
    RangePhases* phases = nullptr;
};

// Where computeRangeStats spends its wall time (ms). The phases run one after
// the other; those marked serial run on the calling thread alone.
struct RangePhases {
    double prepare = 0;    // serial: cutting the range into pieces, the frames open at its start
    double summarize = 0;  // parallel: the frames each piece leaves open, from its own spans
    double link = 0;       // serial: each piece's open frames at its start, from those
    double aggregate = 0;  // parallel: a call tree per piece
    double merge = 0;      // parallel: the trees merged by pairs, but for the last merge
    double mergeLast = 0;  // serial: the last merge
    double finish = 0;     // serial: gaps, totals and functions from the merged tree
    size_t pieces = 0;
    double serial() const { return prepare + link + mergeLast + finish; }
    double total() const { return prepare + summarize + link + aggregate + merge + mergeLast + finish; }
};

// What a set of frames (a tree node, a function) adds up to in the range.
// Decoded spans fill calls, time and instructions; a sampled profile
// (samples/SampleProfile.h) fills samples and period, and time where its
// event counts time (cpu-clock, task-clock, off-CPU time).
struct RangeCost {
    uint64_t calls = 0;
    uint64_t totalTime = 0, selfTime = 0;  // ns
    uint64_t totalInsns = 0, selfInsns = 0;
    // Samples whose stack holds the frame (total) or ends in it (self), and
    // the sum of their periods (the event's count: ns, cycles, events).
    uint64_t totalSamples = 0, selfSamples = 0;
    uint64_t totalPeriod = 0, selfPeriod = 0;
    RangeCost& operator+=(const RangeCost& o);
    bool operator==(const RangeCost&) const = default;
};

// A call tree: node 0 is the root (no function, no cost of its own; its total
// is the sum of its children's), every other node one stack of functions.
// Nodes come parent before child.
struct CallTree {
    static constexpr uint32_t kNone = UINT32_MAX;
    struct Node {
        uint32_t function = 0;  // FunctionTable id (unused for node 0)
        uint32_t parent = kNone;
        uint32_t firstChild = kNone, nextSibling = kNone;
        RangeCost cost;
    };
    std::vector<Node> nodes{Node{}};

    // The child of `parent` for `function`, made (with no cost) when missing.
    uint32_t child(uint32_t parent, uint32_t function);
    // The children of `node`, in the order they were made.
    std::vector<uint32_t> children(uint32_t node) const;
    // The functions from the outermost frame to `node`.
    std::vector<uint32_t> stack(uint32_t node) const;
    size_t size() const { return nodes.size(); }
    // Adds `other`'s costs into this tree, stack by stack.
    void merge(const CallTree& other);

private:
    // (parent, function) -> child: open addressing, a power of two in size.
    std::vector<uint64_t> keys_;
    std::vector<uint32_t> values_;
    std::vector<uint32_t> lastChild_{kNone};  // per node: the child made last, to link the next one
    void grow();
};

// One function's totals over the range.
struct FunctionStats {
    uint32_t function = 0;
    RangeCost cost;
};

// One aggregated stack (a flame graph box at the top of a stack): the functions
// from the outermost frame inwards, and the time and instructions of the
// innermost one itself (its self cost there).
struct FlameStack {
    std::vector<uint32_t> stack;
    uint64_t selfTime = 0, selfInsns = 0, calls = 0;
    uint64_t selfSamples = 0, selfPeriod = 0;
};

struct GapTotal {
    uint64_t count = 0;  // gap spans overlapping the range
    uint64_t time = 0;   // ns inside the range
};

struct ThreadRangeStats {
    uint64_t spans = 0;         // spans (frames and gaps) overlapping the range
    uint64_t frameTime = 0;     // ns covered by outermost frames (the tree's root children)
    uint64_t instructions = 0;  // executed in the range (clipped as above)
    uint64_t calls = 0;
    std::map<GapReason, GapTotal> gaps;
    CallTree tree;  // only with RangeQuery::perThreadTrees
    // A sampled profile's: samples and their periods in the range; time the
    // thread ran (on CPU) and was switched out (off CPU) in the range, from the
    // switch timeline, their sum the thread's wall-clock time there.
    uint64_t samples = 0, period = 0;
    uint64_t onCpuTime = 0, offCpuTime = 0;
};

enum class RangeSort {
    SelfTime,
    TotalTime,
    Calls,
    SelfInsns,
    TotalInsns,
    SelfSamples,
    TotalSamples,
    SelfPeriod,
    TotalPeriod
};

// What a RangeStats counts: decoded spans, or the samples of one event of a
// sampled profile, or the time threads spent switched out (off-CPU).
struct RangeSource {
    enum Kind { Spans, Samples, OffCpu } kind = Spans;
    std::string event;          // Samples: the event's name ("cpu-clock"); OffCpu: "off-CPU time"
    bool periodIsTime = false;  // the period counts ns (cpu-clock, task-clock, off-CPU): time is filled
    std::string periodUnit;     // "ns", "cycles", "events"
};

struct RangeStats {
    uint64_t begin = 0, end = 0;
    RangeSource source;
    uint64_t spans = 0;  // spans overlapping the range, all threads
    CallTree tree;       // top-down, all threads chosen merged
    // Per function id that occurs in the range (function ascending).
    std::vector<FunctionStats> functions;
    std::map<int32_t, ThreadRangeStats> threads;
    std::map<GapReason, GapTotal> gaps;

    // Functions by the given cost, largest first (ties: calls, then id), at most `limit`.
    std::vector<FunctionStats> topFunctions(RangeSort by, size_t limit = SIZE_MAX) const;
    // The function's totals (zero cost when it does not occur).
    FunctionStats function(uint32_t id) const;
    // Bottom-up: the root's children are the functions; below each, the callers
    // it was reached from, then their callers. A node's cost is that of the
    // function at the top of the tree (its root child) when reached through the
    // stack the path names: calls, self time and instructions of those frames,
    // total time and instructions of the outermost of them.
    CallTree bottomUp() const;
    // Every stack with a self cost (time, instructions, samples) or calls: the flame graph's input.
    std::vector<FlameStack> flameStacks() const;
    // Instructions executed in the range (the sum of self instructions).
    uint64_t instructions() const { return tree.nodes[0].cost.totalInsns; }
    // The same range for one thread only, from its ThreadRangeStats (its tree
    // needs RangeQuery::perThreadTrees; without it the result has no tree): what
    // computeRangeStats with tids = {tid} gives, without aggregating again.
    RangeStats ofThread(int32_t tid) const;
};

// Aggregates the spans of `threads` (a decode's per-thread stores) over `query`.
// Errors: "cancelled" when query.cancel was set.
Expected<RangeStats> computeRangeStats(const std::map<int32_t, SpanStore>& threads, const RangeQuery& query);
// The same over stores kept elsewhere (a timeline's threads): (tid, store) pairs,
// tids ascending and distinct; the stores are read in place.
using ThreadStores = std::vector<std::pair<int32_t, const SpanStore*>>;
Expected<RangeStats> computeRangeStats(const ThreadStores& threads, const RangeQuery& query);

// Function totals and the root's cost from a tree (what computeRangeStats fills
// in after merging): self, calls per function summed over its nodes, totals
// over the nodes that are the outermost of their function on their stack.
std::vector<FunctionStats> functionStatsOf(const CallTree& tree);

// Sets every node's totalInsns (and node 0's totals) from the self
// instructions below it; totalTime of node 0 from its children.
void finishTree(CallTree& tree);

}  // namespace auxscope
