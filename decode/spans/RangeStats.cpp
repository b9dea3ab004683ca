// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/RangeStats.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <climits>
#include <mutex>
#include <thread>

namespace auxscope {

RangeCost& RangeCost::operator+=(const RangeCost& o) {
    calls += o.calls;
    totalTime += o.totalTime;
    selfTime += o.selfTime;
    totalInsns += o.totalInsns;
    selfInsns += o.selfInsns;
    totalSamples += o.totalSamples;
    selfSamples += o.selfSamples;
    totalPeriod += o.totalPeriod;
    selfPeriod += o.selfPeriod;
    return *this;
}

// ---------------------------------------------------------------- CallTree

namespace {
constexpr uint64_t kEmptyKey = UINT64_MAX;
inline uint64_t childKey(uint32_t parent, uint32_t function) {
    return (uint64_t(parent) << 32) | function;
}
// Fibonacci hashing: the product's top bits mix every bit of the key (the
// parent sits in the key's high half).
inline size_t slotOf(uint64_t key, size_t mask) {
    return size_t((key * 0x9e3779b97f4a7c15ULL) >> (64 - std::popcount(mask)));
}
}  // namespace

void CallTree::grow() {
    const size_t size = keys_.empty() ? 1024 : keys_.size() * 2;
    std::vector<uint64_t> keys(size, kEmptyKey);
    std::vector<uint32_t> values(size);
    const size_t mask = size - 1;
    for (size_t i = 0; i < keys_.size(); ++i) {
        if (keys_[i] == kEmptyKey) continue;
        size_t at = slotOf(keys_[i], mask);
        while (keys[at] != kEmptyKey)
            at = (at + 1) & mask;
        keys[at] = keys_[i];
        values[at] = values_[i];
    }
    keys_ = std::move(keys);
    values_ = std::move(values);
}

uint32_t CallTree::child(uint32_t parent, uint32_t function) {
    // A tree copied or built by hand has no index yet: build it from the links.
    if (keys_.empty() || (nodes.size() + 1) * 2 > keys_.size()) {
        if (keys_.empty() && nodes.size() > 1) {
            while (keys_.size() < nodes.size() * 2 + 2)
                grow();
            lastChild_.assign(nodes.size(), kNone);
            for (uint32_t n = 1; n < nodes.size(); ++n) {
                const uint64_t key = childKey(nodes[n].parent, nodes[n].function);
                size_t at = slotOf(key, keys_.size() - 1);
                while (keys_[at] != kEmptyKey)
                    at = (at + 1) & (keys_.size() - 1);
                keys_[at] = key;
                values_[at] = n;
                lastChild_[nodes[n].parent] = n;
            }
        } else {
            grow();
        }
    }
    const uint64_t key = childKey(parent, function);
    const size_t mask = keys_.size() - 1;
    size_t at = slotOf(key, mask);
    while (keys_[at] != kEmptyKey) {
        if (keys_[at] == key) return values_[at];
        at = (at + 1) & mask;
    }
    const uint32_t id = uint32_t(nodes.size());
    keys_[at] = key;
    values_[at] = id;
    Node node;
    node.function = function;
    node.parent = parent;
    nodes.push_back(node);
    if (lastChild_.size() < nodes.size()) lastChild_.resize(nodes.size(), kNone);
    if (lastChild_[parent] == kNone)
        nodes[parent].firstChild = id;
    else
        nodes[lastChild_[parent]].nextSibling = id;
    lastChild_[parent] = id;
    return id;
}

std::vector<uint32_t> CallTree::children(uint32_t node) const {
    std::vector<uint32_t> out;
    for (uint32_t c = nodes[node].firstChild; c != kNone; c = nodes[c].nextSibling)
        out.push_back(c);
    return out;
}

std::vector<uint32_t> CallTree::stack(uint32_t node) const {
    std::vector<uint32_t> out;
    for (uint32_t n = node; n != 0 && n != kNone; n = nodes[n].parent)
        out.push_back(nodes[n].function);
    std::reverse(out.begin(), out.end());
    return out;
}

void CallTree::merge(const CallTree& other) {
    // Nodes come parent before child, so each one's parent is mapped already.
    std::vector<uint32_t> map(other.nodes.size());
    map[0] = 0;
    nodes[0].cost += other.nodes[0].cost;
    for (uint32_t n = 1; n < other.nodes.size(); ++n) {
        const Node& o = other.nodes[n];
        map[n] = child(map[o.parent], o.function);
        nodes[map[n]].cost += o.cost;
    }
}

void finishTree(CallTree& tree) {
    auto& nodes = tree.nodes;
    for (auto& n : nodes)
        n.cost.totalInsns = n.cost.selfInsns;
    nodes[0].cost = {};
    for (size_t n = nodes.size(); n-- > 1;) {
        nodes[nodes[n].parent].cost.totalInsns += nodes[n].cost.totalInsns;
        if (nodes[n].parent == 0) nodes[0].cost.totalTime += nodes[n].cost.totalTime;
    }
}

namespace {

// Calls `visit(node, outermost)` for every node but the root, depth first;
// `outermost` says no node above it on its stack has its function.
template <typename Visit>
void forEachNode(const CallTree& tree, Visit&& visit) {
    uint32_t maxFunction = 0;
    for (size_t n = 1; n < tree.nodes.size(); ++n)
        maxFunction = std::max(maxFunction, tree.nodes[n].function);
    std::vector<uint32_t> onPath(size_t(maxFunction) + 1, 0);
    // Iterative: stacks can be thousands deep.
    std::vector<uint32_t> path;
    uint32_t n = tree.nodes[0].firstChild;
    while (n != CallTree::kNone) {
        const CallTree::Node& node = tree.nodes[n];
        visit(n, onPath[node.function] == 0);
        if (node.firstChild != CallTree::kNone) {
            ++onPath[node.function];
            path.push_back(n);
            n = node.firstChild;
            continue;
        }
        n = node.nextSibling;
        while (n == CallTree::kNone && !path.empty()) {
            const uint32_t up = path.back();
            path.pop_back();
            --onPath[tree.nodes[up].function];
            n = tree.nodes[up].nextSibling;
        }
    }
}

}  // namespace

std::vector<FunctionStats> functionStatsOf(const CallTree& tree) {
    std::vector<FunctionStats> byId;
    forEachNode(tree, [&](uint32_t n, bool outermost) {
        const CallTree::Node& node = tree.nodes[n];
        if (byId.size() <= node.function) byId.resize(size_t(node.function) + 1);
        FunctionStats& f = byId[node.function];
        f.function = node.function;
        f.cost.calls += node.cost.calls;
        f.cost.selfTime += node.cost.selfTime;
        f.cost.selfInsns += node.cost.selfInsns;
        f.cost.selfSamples += node.cost.selfSamples;
        f.cost.selfPeriod += node.cost.selfPeriod;
        if (outermost) {
            f.cost.totalTime += node.cost.totalTime;
            f.cost.totalInsns += node.cost.totalInsns;
            f.cost.totalSamples += node.cost.totalSamples;
            f.cost.totalPeriod += node.cost.totalPeriod;
        }
    });
    std::vector<FunctionStats> out;
    for (uint32_t id = 0; id < byId.size(); ++id)
        if (byId[id].function == id && (id != 0 || byId[0].cost != RangeCost{})) out.push_back(byId[id]);
    return out;
}

// ---------------------------------------------------------------- RangeStats

std::vector<FunctionStats> RangeStats::topFunctions(RangeSort by, size_t limit) const {
    std::vector<FunctionStats> out = functions;
    auto key = [by](const FunctionStats& f) {
        switch (by) {
            case RangeSort::SelfTime:
                return f.cost.selfTime;
            case RangeSort::TotalTime:
                return f.cost.totalTime;
            case RangeSort::Calls:
                return f.cost.calls;
            case RangeSort::SelfInsns:
                return f.cost.selfInsns;
            case RangeSort::TotalInsns:
                return f.cost.totalInsns;
            case RangeSort::SelfSamples:
                return f.cost.selfSamples;
            case RangeSort::TotalSamples:
                return f.cost.totalSamples;
            case RangeSort::SelfPeriod:
                return f.cost.selfPeriod;
            case RangeSort::TotalPeriod:
                return f.cost.totalPeriod;
        }
        return uint64_t(0);
    };
    std::stable_sort(out.begin(), out.end(), [&](const FunctionStats& a, const FunctionStats& b) {
        const uint64_t ka = key(a), kb = key(b);
        if (ka != kb) return ka > kb;
        if (a.cost.calls != b.cost.calls) return a.cost.calls > b.cost.calls;
        return a.function < b.function;
    });
    if (out.size() > limit) out.resize(limit);
    return out;
}

FunctionStats RangeStats::function(uint32_t id) const {
    auto it = std::lower_bound(functions.begin(), functions.end(), id,
                               [](const FunctionStats& f, uint32_t v) { return f.function < v; });
    if (it != functions.end() && it->function == id) return *it;
    return {id, {}};
}

CallTree RangeStats::bottomUp() const {
    CallTree out;
    forEachNode(tree, [&](uint32_t n, bool outermost) {
        const CallTree::Node& node = tree.nodes[n];
        uint32_t at = 0;
        for (uint32_t k = n; k != 0; k = tree.nodes[k].parent) {
            at = out.child(at, tree.nodes[k].function);
            RangeCost& c = out.nodes[at].cost;
            c.calls += node.cost.calls;
            c.selfTime += node.cost.selfTime;
            c.selfInsns += node.cost.selfInsns;
            c.selfSamples += node.cost.selfSamples;
            c.selfPeriod += node.cost.selfPeriod;
            if (outermost) {
                c.totalTime += node.cost.totalTime;
                c.totalInsns += node.cost.totalInsns;
                c.totalSamples += node.cost.totalSamples;
                c.totalPeriod += node.cost.totalPeriod;
            }
        }
    });
    for (uint32_t c = out.nodes[0].firstChild; c != CallTree::kNone; c = out.nodes[c].nextSibling) {
        out.nodes[0].cost.totalTime += out.nodes[c].cost.selfTime;
        out.nodes[0].cost.totalInsns += out.nodes[c].cost.selfInsns;
        out.nodes[0].cost.totalSamples += out.nodes[c].cost.selfSamples;
        out.nodes[0].cost.totalPeriod += out.nodes[c].cost.selfPeriod;
    }
    return out;
}

std::vector<FlameStack> RangeStats::flameStacks() const {
    std::vector<FlameStack> out;
    for (uint32_t n = 1; n < tree.nodes.size(); ++n) {
        const RangeCost& c = tree.nodes[n].cost;
        if (c.selfTime == 0 && c.selfInsns == 0 && c.calls == 0 && c.selfSamples == 0) continue;
        out.push_back({tree.stack(n), c.selfTime, c.selfInsns, c.calls, c.selfSamples, c.selfPeriod});
    }
    return out;
}

// ---------------------------------------------------------------- aggregation

namespace {

constexpr size_t kPieceSpans = size_t(1) << 20;
constexpr size_t kBatchSpans = size_t(1) << 16;

// A run of one thread's spans aggregated by one task: spans [replayFrom, lo)
// only rebuild the stack of open frames, spans [lo, hi) are counted.
struct Piece {
    int32_t tid = 0;
    const SpanStore* store = nullptr;
    size_t lo = 0, hi = 0;
    // Spans before lo fed first, in index order (prefixesOf): the frames open
    // at lo; for a range's first piece also every span before lo that reaches
    // into the range, counted.
    std::vector<size_t> prefix;
    bool prefixCounted = false;
};

struct PieceResult {
    CallTree tree;
    ThreadRangeStats thread;  // without its tree
    uint64_t spans = 0;
    bool done = false;
};

// The frames a run of spans leaves open, found from its own spans alone: what
// replaying it over frames already open (a stack, depths rising) leaves open is
// those of them shallower than every span before its first outermost frame
// (none after one), then its own. So the frames open where each piece starts
// come from one pass per piece, side by side, and a short chaining on one
// thread (link), rather than from one pass over every span on one thread.
struct OpenFrames {
    int32_t minDepth = INT32_MAX;  // of its spans before its first outermost frame
    bool outermost = false;        // it has an outermost frame: nothing open before it stays open
    std::vector<std::pair<size_t, int32_t>> open;  // frames left open: index, depth (depths rising)
    std::vector<size_t> reaching;                  // spans ending after the range's start (before the range)
};

// Forward, every span: for the runs before a range, which also collect the
// spans reaching into it.
OpenFrames openFramesOf(const SpanStore& store, size_t lo, size_t hi, bool reaching, uint64_t a) {
    OpenFrames out;
    store.forEach(lo, hi, [&](size_t i, const Span& s) {
        if (reaching && s.end > a) out.reaching.push_back(i);
        if (!s.isGap() && s.outermost) {
            out.open.clear();
            out.outermost = true;
        } else {
            if (!out.outermost) out.minDepth = std::min(out.minDepth, s.depth);
            while (!out.open.empty() && out.open.back().second >= s.depth)
                out.open.pop_back();
        }
        if (!s.isGap()) out.open.push_back({i, s.depth});
    });
    return out;
}

// The same backwards from the run's end, reading only until a span at depth 0
// or an outermost frame (nothing before either is open after it): a span is
// left open when it is a frame shallower than every span after it; it is one
// block of spans in a stretch of short calls, the whole run only under one
// long frame at depth 0 (main).
OpenFrames openFramesBackOf(const SpanStore& store, size_t lo, size_t hi) {
    OpenFrames out;
    struct Brief {
        int32_t depth;
        bool frame, outermost;
    };
    std::vector<Brief> block;
    int32_t limit = INT32_MAX;  // the least depth of the spans after the one read
    for (size_t to = hi; to > lo && limit > 0 && !out.outermost;) {
        const size_t from = to - std::min<size_t>(to - lo, 4096);
        block.clear();
        store.forEach(from, to, [&](size_t, const Span& s) {
            block.push_back({s.depth, !s.isGap(), s.outermost});
        });
        for (size_t k = block.size(); k-- > 0;) {
            const Brief& s = block[k];
            if (s.depth < limit) {
                if (s.frame) out.open.push_back({from + k, s.depth});
                limit = s.depth;
            }
            if (s.frame && s.outermost) {
                out.outermost = true;
                break;
            }
            if (limit <= 0) break;
        }
        to = from;
    }
    out.minDepth = limit;
    std::reverse(out.open.begin(), out.open.end());
    return out;
}

// `open` (frames open before a run) after the run summed up in `run`.
void chain(std::vector<std::pair<size_t, int32_t>>& open, const OpenFrames& run) {
    if (run.outermost) {
        open = run.open;
        return;
    }
    while (!open.empty() && open.back().second >= run.minDepth)
        open.pop_back();
    open.insert(open.end(), run.open.begin(), run.open.end());
}

// Where the frames open at `first` (the first span starting in the range) can
// be found from: the last span at depth 0 or outermost before it, read back in
// blocks. (Such a frame opens only when no frame of its stretch is open and
// every frame of an earlier stretch has ended, so no span before it is open
// after it.) Replaying from there reads only depths and ends; before, each
// piece replayed every span from there aggregating, which under one long
// outermost frame (_start, main) made a range cost in proportion to its
// position in the trace.
size_t stretchStart(const SpanStore& store, size_t first) {
    size_t from = 0;
    // Blocks from 1 K spans, doubling to 64 K: most stretches are short.
    for (size_t j = first, block = 1024; j > 0 && from == 0; block = std::min<size_t>(block * 2, 65536)) {
        const size_t lo = j > block ? j - block : 0;
        size_t found = SIZE_MAX;
        store.forEach(lo, j, [&](size_t i, const Span& s) {
            if (s.depth == 0 || s.outermost) found = i;
        });
        if (found != SIZE_MAX) from = found;
        j = lo;
    }
    return from;
}

class Aggregator {
public:
    Aggregator(const RangeQuery& q, std::atomic<uint64_t>& done, uint64_t total, std::mutex& progressLock)
        : q_(q), done_(done), total_(total), progressLock_(progressLock) {}

    // False when cancelled.
    bool run(const Piece& piece, PieceResult& out) {
        const SpanStore& store = *piece.store;
        open_.clear();
        acc_.assign(std::max<size_t>(out.tree.size(), 1024), Acc{});
        // Spans in batches: progress and cancellation between them.
        for (size_t i : piece.prefix)
            add(store.at(i), piece.prefixCounted, store, out);
        for (size_t from = piece.lo; from < piece.hi; from += kBatchSpans) {
            const size_t to = std::min(piece.hi, from + kBatchSpans);
            store.forEach(from, to, [&](size_t, const Span& s) { add(s, true, store, out); });
            report(to - from);
            if (q_.cancel && q_.cancel->load(std::memory_order_relaxed)) return false;
        }
        for (size_t n = 0; n < out.tree.size(); ++n) {
            RangeCost& c = out.tree.nodes[n].cost;
            c.calls += acc_[n].calls;
            c.totalTime += acc_[n].totalTime;
            c.selfTime += acc_[n].selfTime;
            c.selfInsns += acc_[n].selfInsns;
        }
        return true;
    }

    // One span, in pre-order; one not `counted` only rebuilds the open frames.
    [[gnu::always_inline]] void add(const Span& s, bool counted, const SpanStore& store, PieceResult& out) {
        const uint64_t a = q_.begin, b = q_.end;
        // Spans come in pre-order (FlowToSpans): the caller of a span is the
        // latest open span one level up; a span at some level closes every open
        // one at its level or deeper, an outermost frame all of them.
        if (s.outermost)
            open_.clear();
        else
            while (!open_.empty() && open_.back().depth >= s.depth)
                open_.pop_back();
        const int32_t parent =
            !open_.empty() && open_.back().depth == s.depth - 1 ? int32_t(open_.size() - 1) : -1;
        // In the range: starts inside it, or starts before it and ends after its start.
        const bool inside = s.start < b && (s.start >= a || s.end > a);
        if (s.isGap()) {
            if (!counted || !inside) return;
            const uint64_t t = clippedTime(s, a, b);
            GapTotal& g = out.thread.gaps[store.gaps()[size_t(s.gap)].reason];
            ++g.count;
            g.time += t;
            ++out.spans;
            ++out.thread.spans;
            if (parent >= 0) acc_[nodeOf(size_t(parent), out.tree)].selfTime -= t;
            return;
        }
        open_.push_back({s.depth, s.function, parent, CallTree::kNone});
        if (!counted || !inside) return;
        const uint64_t t = clippedTime(s, a, b);
        const uint64_t n = clippedInsns(s, a, b);
        // Its node: below its caller's (made when the caller was counted), else
        // made with the missing ones above it.
        uint32_t node;
        if (parent >= 0 && open_[size_t(parent)].node != CallTree::kNone) [[likely]]
            node = open_.back().node = child(out.tree, open_[size_t(parent)].node, s.function);
        else
            node = nodeOf(open_.size() - 1, out.tree);
        Acc& c = acc_[node];
        c.totalTime += t;
        c.selfTime += t;
        c.selfInsns += n;
        ++out.spans;
        ++out.thread.spans;
        out.thread.instructions += n;
        if (parent >= 0) {
            // Wraps below zero in a piece that does not hold the parent's own
            // span; the merged sums are exact (modulo 2^64 arithmetic).
            acc_[open_[size_t(parent)].node].selfTime -= t;
            if (s.start >= a && !s.foundRunning) {
                ++c.calls;
                ++out.thread.calls;
            }
        } else {
            out.thread.frameTime += t;
        }
    }

    static uint64_t clippedTime(const Span& s, uint64_t a, uint64_t b) {
        const uint64_t from = std::max(s.start, a), to = std::min(s.end, b);
        return to > from ? to - from : 0;
    }
    // The span's instructions spread evenly over its time: F(t) = floor(n * (t - start) / duration),
    // counted as F(clipped end) - F(clipped start) so that adjacent ranges split them exactly.
    static uint64_t clippedInsns(const Span& s, uint64_t a, uint64_t b) {
        if (s.start >= a && s.end <= b) return s.instructions;
        const uint64_t duration = s.end - s.start;
        if (duration == 0) return s.instructions;
        auto f = [&](uint64_t t) {
            t = std::clamp(t, s.start, s.end);
            return uint64_t((unsigned __int128)s.instructions * (t - s.start) / duration);
        };
        return f(std::min(s.end, b)) - f(std::max(s.start, a));
    }

private:
    struct Open {
        int32_t depth;
        uint32_t function;
        int32_t parent;  // index in open_ of its caller, -1: none (a root)
        uint32_t node;   // its call tree node, made when first needed
    };

    uint32_t nodeOf(size_t k, CallTree& tree) {
        if (open_[k].node != CallTree::kNone) return open_[k].node;
        // Make the missing nodes from the nearest ancestor that has one.
        size_t first = k;
        while (open_[first].parent >= 0 && open_[size_t(open_[first].parent)].node == CallTree::kNone)
            first = size_t(open_[first].parent);
        chain_.clear();
        for (size_t j = k;; j = size_t(open_[j].parent)) {
            chain_.push_back(j);
            if (j == first) break;
        }
        uint32_t up = open_[first].parent >= 0 ? open_[size_t(open_[first].parent)].node : 0;
        for (size_t c = chain_.size(); c-- > 0;) {
            Open& o = open_[chain_[c]];
            o.node = child(tree, up, o.function);
            up = o.node;
        }
        return open_[k].node;
    }

    // tree.child() behind a small direct-mapped cache: the stacks a stretch of
    // spans walks are few and repeat (a loop calling the same callees), and the
    // tree's own index is too large to stay in cache.
    uint32_t child(CallTree& tree, uint32_t parent, uint32_t function) {
        const uint64_t key = (uint64_t(parent) << 32) | function;
        CacheEntry& e = cache_[size_t((key * 0x9e3779b97f4a7c15ULL) >> 52) & (kCacheSize - 1)];
        if (e.key == key) return e.node;
        e.key = key;
        e.node = tree.child(parent, function);
        if (tree.size() > acc_.size()) acc_.resize(tree.size() * 2, Acc{});
        return e.node;
    }

    void report(uint64_t spans) {
        const uint64_t now = done_.fetch_add(spans, std::memory_order_relaxed) + spans;
        if (!q_.progress) return;
        std::lock_guard lock(progressLock_);
        q_.progress(std::min(now, total_), total_);
    }

    const RangeQuery& q_;
    std::atomic<uint64_t>& done_;
    const uint64_t total_;
    std::mutex& progressLock_;
    std::vector<Open> open_;
    // The costs counted per tree node, apart from the tree's nodes: the one
    // line of memory a span's node costs (added to the tree at the end).
    struct Acc {
        uint64_t totalTime = 0, selfTime = 0, selfInsns = 0, calls = 0;
    };
    std::vector<Acc> acc_;
    std::vector<size_t> chain_;
    static constexpr size_t kCacheSize = 4096;
    struct CacheEntry {
        uint64_t key = UINT64_MAX;
        uint32_t node = 0;
    };
    std::vector<CacheEntry> cache_ = std::vector<CacheEntry>(kCacheSize);
};

void addThread(ThreadRangeStats& into, const ThreadRangeStats& from) {
    into.spans += from.spans;
    into.frameTime += from.frameTime;
    into.instructions += from.instructions;
    into.calls += from.calls;
    for (const auto& [reason, g] : from.gaps) {
        into.gaps[reason].count += g.count;
        into.gaps[reason].time += g.time;
    }
}

}  // namespace

RangeStats RangeStats::ofThread(int32_t tid) const {
    RangeStats out;
    out.begin = begin, out.end = end;
    out.source = source;
    auto it = threads.find(tid);
    if (it == threads.end()) return out;
    ThreadRangeStats t = it->second;
    out.spans = t.spans;
    out.tree = std::move(t.tree);
    t.tree = {};
    out.gaps = t.gaps;
    out.functions = functionStatsOf(out.tree);
    out.threads.emplace(tid, std::move(t));
    return out;
}

Expected<RangeStats> computeRangeStats(const std::map<int32_t, SpanStore>& threads, const RangeQuery& query) {
    ThreadStores stores;
    stores.reserve(threads.size());
    for (const auto& [tid, store] : threads)
        stores.emplace_back(tid, &store);
    return computeRangeStats(stores, query);
}

namespace {

double msSince(std::chrono::steady_clock::time_point& t) {
    const auto now = std::chrono::steady_clock::now();
    const double d = std::chrono::duration<double, std::milli>(now - t).count();
    t = now;
    return d;
}

// Merges trees[0..n) into trees[0] by pairs, side by side: (0 1) (2 3) ...,
// then (0 2) (4 6) ... A merge appends the other tree's new stacks in its
// order, so the nodes come in the same order as merging 1, 2, ... into 0 one
// after the other. Returns the wall time of the last level (one merge).
double mergeTrees(std::vector<CallTree>& trees,
                  const std::function<void(size_t, const std::function<void(size_t)>&)>& run) {
    double last = 0;
    for (size_t step = 1; step < trees.size(); step *= 2) {
        const size_t n = (trees.size() + 2 * step - 1) / (2 * step);
        auto t = std::chrono::steady_clock::now();
        run(n, [&](size_t k) {
            const size_t into = k * 2 * step, from = into + step;
            if (from >= trees.size()) return;
            trees[into].merge(trees[from]);
            trees[from] = {};
        });
        if (n == 1) last += msSince(t);
    }
    return last;
}

}  // namespace

Expected<RangeStats> computeRangeStats(const ThreadStores& threads, const RangeQuery& query) {
    RangeStats result;
    result.begin = query.begin;
    result.end = query.end;
    if (query.end <= query.begin) return result;
    RangePhases phases;
    auto clock = std::chrono::steady_clock::now();
    // Cut every chosen thread's spans in the range into pieces. Each piece
    // builds a tree of its own, merged afterwards, which only pays where pieces
    // run side by side: on one thread a thread's spans are one piece, on N a
    // piece is about a million spans or 1/4N of them all, whichever is more.
    struct Range {
        int32_t tid;
        const SpanStore* store;
        size_t first, hi;
    };
    std::vector<Range> ranges;
    uint64_t total = 0;
    for (const auto& [tid, storePtr] : threads) {
        if (!query.tids.empty() && std::find(query.tids.begin(), query.tids.end(), tid) == query.tids.end())
            continue;
        result.threads[tid];
        if (!storePtr || storePtr->empty()) continue;
        const SpanStore& store = *storePtr;
        const size_t hi = query.end == UINT64_MAX ? store.size() : store.lowerBound(query.end);
        // From the first span starting in the range; the spans before it that
        // reach into the range come in as the first piece's prefix.
        const size_t first = query.begin == 0 ? 0 : store.lowerBound(query.begin);
        if (first >= hi && first == 0) continue;
        total += hi - first;
        ranges.push_back({tid, &store, first, hi});
    }
    const unsigned workers = query.parallel  ? std::max(1u, query.threads)
                             : query.threads ? query.threads
                                             : std::max(1u, std::thread::hardware_concurrency());
    const size_t pieceSpans = query.pieceSpans ? query.pieceSpans
                              : workers == 1 && !query.parallel
                                  ? SIZE_MAX
                                  : std::max<size_t>(kPieceSpans, size_t(total / (uint64_t(workers) * 4)));
    // Runs task(0) .. task(n - 1) on the workers.
    auto runAll = [&](size_t n, const std::function<void(size_t)>& task) {
        if (n == 0) return;
        if (query.parallel && n > 1) {
            query.parallel(n, task);
            return;
        }
        const unsigned helpersWanted = unsigned(std::min<size_t>(workers, n)) - 1;
        std::atomic<size_t> next{0};
        auto worker = [&] {
            for (size_t k; (k = next.fetch_add(1)) < n;)
                task(k);
        };
        std::vector<std::thread> helpers;
        for (unsigned i = 0; i < helpersWanted; ++i)
            helpers.emplace_back(worker);
        worker();
        for (auto& t : helpers)
            t.join();
    };

    // Runs of spans whose open frames are summed up side by side: per range,
    // the spans before it from where its open frames can be found (cut the
    // same way), then every piece but the last.
    struct Run {
        const SpanStore* store;
        size_t lo, hi;
        bool before;  // before the range: its spans reaching into the range are collected
    };
    std::vector<Piece> pieces;
    std::vector<Run> runs;
    std::vector<size_t> firstRun(ranges.size() + 1);
    std::vector<size_t> firstPiece(ranges.size() + 1);
    for (size_t r = 0; r < ranges.size(); ++r) {
        const Range& range = ranges[r];
        firstRun[r] = runs.size();
        firstPiece[r] = pieces.size();
        const size_t from = range.first == 0 ? 0 : stretchStart(*range.store, range.first);
        for (size_t lo = from; lo < range.first; lo += std::min(pieceSpans, range.first - lo))
            runs.push_back(
                {range.store, lo, std::min(range.first, lo + std::min(pieceSpans, range.first - lo)), true});
        for (size_t lo = range.first;; lo += pieceSpans) {
            const size_t hi = range.hi - lo <= pieceSpans ? range.hi : lo + pieceSpans;
            pieces.push_back({range.tid, range.store, lo, hi, {}, pieces.size() == firstPiece[r]});
            if (hi == range.hi) break;
            runs.push_back({range.store, lo, hi, false});
        }
    }
    firstRun[ranges.size()] = runs.size();
    firstPiece[ranges.size()] = pieces.size();
    phases.prepare += msSince(clock);

    std::vector<OpenFrames> summaries(runs.size());
    runAll(runs.size(), [&](size_t k) {
        const Run& run = runs[k];
        summaries[k] = run.before ? openFramesOf(*run.store, run.lo, run.hi, true, query.begin)
                                  : openFramesBackOf(*run.store, run.lo, run.hi);
    });
    phases.summarize += msSince(clock);

    // Each piece's prefix: the frames open where it starts (in index order);
    // the first piece's also every span before it that reaches into the range
    // (those are counted).
    for (size_t r = 0; r < ranges.size(); ++r) {
        std::vector<std::pair<size_t, int32_t>> open;
        std::vector<size_t> reaching;
        size_t k = firstRun[r];
        for (; k < firstRun[r + 1] && runs[k].before; ++k) {
            chain(open, summaries[k]);
            reaching.insert(reaching.end(), summaries[k].reaching.begin(), summaries[k].reaching.end());
        }
        for (size_t p = firstPiece[r]; p < firstPiece[r + 1]; ++p) {
            std::vector<size_t>& prefix = pieces[p].prefix;
            for (const auto& [i, d] : open)
                prefix.push_back(i);
            if (p == firstPiece[r] && !reaching.empty()) {
                prefix.insert(prefix.end(), reaching.begin(), reaching.end());
                std::sort(prefix.begin(), prefix.end());
                prefix.erase(std::unique(prefix.begin(), prefix.end()), prefix.end());
            }
            if (p + 1 < firstPiece[r + 1]) chain(open, summaries[k++]);
        }
    }
    summaries.clear();
    phases.link += msSince(clock);

    std::vector<PieceResult> results(pieces.size());
    std::atomic<uint64_t> done{0};
    std::mutex progressLock;
    std::atomic<bool> cancelled{false};
    runAll(pieces.size(), [&](size_t k) {
        if (cancelled.load(std::memory_order_relaxed)) return;
        Aggregator aggregator(query, done, total, progressLock);
        if (!aggregator.run(pieces[k], results[k]))
            cancelled = true;
        else
            results[k].done = true;
    });
    phases.aggregate += msSince(clock);
    if (cancelled || (query.cancel && query.cancel->load())) return makeError("cancelled");
    // Merge in piece order (threads ascending, time ascending): the same input
    // gives the same node order however many threads ran.
    for (size_t k = 0; k < pieces.size(); ++k) {
        PieceResult& r = results[k];
        result.spans += r.spans;
        addThread(result.threads[pieces[k].tid], r.thread);
    }
    std::vector<CallTree> trees;
    if (query.perThreadTrees) {
        // Each thread's pieces merged into its tree, then the threads' trees.
        std::vector<std::vector<CallTree>> perThread(ranges.size());
        for (size_t r = 0; r < ranges.size(); ++r)
            for (size_t p = firstPiece[r]; p < firstPiece[r + 1]; ++p)
                perThread[r].push_back(std::move(results[p].tree));
        runAll(ranges.size(), [&](size_t r) {
            mergeTrees(perThread[r], [](size_t n, const std::function<void(size_t)>& task) {
                for (size_t k = 0; k < n; ++k)
                    task(k);
            });
        });
        for (size_t r = 0; r < ranges.size(); ++r) {
            result.threads[ranges[r].tid].tree = std::move(perThread[r][0]);
            trees.push_back(result.threads[ranges[r].tid].tree);
        }
    } else {
        for (PieceResult& r : results)
            trees.push_back(std::move(r.tree));
    }
    results.clear();
    phases.merge += msSince(clock);
    if (!trees.empty()) {
        phases.mergeLast += mergeTrees(trees, runAll);
        phases.merge += msSince(clock) - phases.mergeLast;
        result.tree = std::move(trees[0]);
    }
    trees.clear();
    clock = std::chrono::steady_clock::now();
    for (auto& [tid, t] : result.threads) {
        for (const auto& [reason, g] : t.gaps) {
            result.gaps[reason].count += g.count;
            result.gaps[reason].time += g.time;
        }
        if (query.perThreadTrees) finishTree(t.tree);
    }
    finishTree(result.tree);
    result.functions = functionStatsOf(result.tree);
    phases.finish += msSince(clock);
    phases.pieces = pieces.size();
    if (query.phases) *query.phases = phases;
    return result;
}

}  // namespace auxscope
