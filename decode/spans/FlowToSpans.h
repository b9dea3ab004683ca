// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Turns a decoded instruction flow into per-thread call-stack spans. The input is
// decoder-independent (Intel PT's block decoder and CoreSight's element stream
// both reduce to it): runs of instructions in one function ending in a branch of
// some class, thread switches, interrupts and gaps, in time order for one CPU.
//
// How the stack is kept, and why:
// - a call (near or far, or an interrupt) opens a frame for whatever runs next;
// - a return closes the top frame; when the code returned to is further down the
//   stack (longjmp, exception unwinding) the frames above it close too; when the
//   stack is already at its outermost known frame, the caller gets a new frame
//   one level further out, since a trace usually starts in the middle of a call
//   chain (the stack grows downward, as perf and magic-trace do);
// - control reaching another function without a call or return (a tail call, a
//   jump through the PLT) replaces the top frame, unless a jump lands in a
//   function already further down the stack: that is an unwind (x86-64 libgcc
//   reaches a landing pad, and glibc's longjmp its target, by restoring the
//   stack pointer and jumping), so the frames above it close. A tail call into
//   a caller's function (mutual recursion) is read the same way;
// - each thread keeps its own stack across switches;
// - untraced time (tracing off, e.g. a syscall in a user-only trace) becomes a
//   gap span one level below the top frame, and the stack is kept; any other gap
//   (overflow, lost data, decode error, missing code) means the flow in between
//   is unknown: every open frame of the thread closes and the gap spans depth 0.
// Depths are made non-negative per stretch of flow between lossy gaps, so the
// outermost frame seen in that stretch is depth 0.
//
// Spans come out in pre-order: a frame's span takes its place when the frame
// opens (its end and instructions are filled in when it closes), so a span
// follows its caller and every span its caller opened before it. Starts are
// therefore non-decreasing (the order SpanStore keeps, with no sort; but see
// ThreadSpans::inStartOrder for gaps opened at a late thread switch), and the
// caller of a span is the latest span one level up before it, also when
// several frames open and close at the same time (a start-then-depth order
// would put a second callee at time t before the first callee's own callees at
// t). A frame the decoder found already running -- the first frame of a
// thread, of a segment or after lost trace, and a caller found by returning
// past the outermost known frame -- opens on an empty stack: its span is marked
// Span::outermost (every span before it has closed, none is its caller) and
// Span::foundRunning (not a call). So is a frame entered without a call or jump
// the trace shows (resumed in another function after untraced code, such as a
// signal handler after the system call it interrupted): foundRunning only.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "spans/SpanStore.h"

namespace auxscope {

// How the last instruction of a run of instructions leaves it.
enum class BranchClass : uint8_t {
    Other,      // falls through, or any non-branch (also: the run was cut by an event)
    Jump,       // near jump, direct or indirect, conditional or not
    Call,       // near call
    Return,     // near return
    FarCall,    // syscall, sysenter, int n, far call
    FarReturn,  // sysret, sysexit, iret, far return
    FarJump,    // far jump
};

class FlowToSpans {
public:
    FlowToSpans() = default;
    FlowToSpans(const FlowToSpans&) = delete;  // would copy the pointer to the running thread
    FlowToSpans& operator=(const FlowToSpans&) = delete;

    // `count` instructions of `function`, the first executed at `time`; the last
    // one leaves as `last` says. Called for every block of a decode: the common
    // cases (more of the top frame's function, a call into a new frame) are
    // handled inline, the rest (returns, changes of function, gaps, the first
    // run of a thread) out of line.
    void instructions(uint64_t time, uint32_t function, uint64_t count, BranchClass last) {
        Thread* t = currentThread_;
        if (t && !gapOpen_ && !t->stack.empty()) [[likely]] {
            Frame& top = t->stack.back();
            if (t->pending == Pending::Call) {
                if (t->stack.size() < t->stack.capacity()) [[likely]] {
                    const int32_t depth = top.depth + 1;
                    t->stack.push_back({function, depth, count, t->out.spans.size()});
                    t->out.spans.push_back({time, time, function, depth, 0, -1});
                    t->pending = pendingAfter(last);
                    return;
                }
            } else if (t->pending != Pending::Return) {
                if (top.function == function) {
                    top.instructions += count;
                    t->pending = pendingAfter(last);
                    return;
                }
            } else if (const size_t n = t->stack.size(); n >= 2 && t->stack[n - 2].function == function) {
                // A return to the caller: the top frame closes.
                close(*t, top, time);
                t->stack.pop_back();
                t->stack.back().instructions += count;
                t->pending = pendingAfter(last);
                return;
            }
        }
        instructionsSlow(time, function, count, last);
    }
    // An asynchronous transfer (interrupt, exception) before the next instructions:
    // they run as if called.
    void interrupt(uint64_t time);
    // From `time` on, instructions belong to `tid`.
    void switchThread(uint64_t time, int32_t tid);
    // From `time` on, nothing is known until the next instructions (or finish()).
    void gap(uint64_t time, GapReason reason, std::string detail, uint64_t traceOffset = 0, int cpu = -1) {
        openGap(time, reason, std::move(detail), traceOffset, cpu, false);
    }
    // Tracing stopped asynchronously (an interrupt or exception in a user-only
    // trace: Intel PT's FUP + TIP.PGD) before the instruction where the flow will
    // resume: an Untraced gap, after which the branch that ended the last run
    // still applies (a call completed just before the interrupt enters its callee
    // when the thread resumes there, a return returns). After a synchronous stop
    // (a syscall or a call into untraced code) the flow resumes after that branch
    // has returned: gap() forgets the branch.
    void interruptedGap(uint64_t time, std::string detail, uint64_t traceOffset = 0, int cpu = -1) {
        openGap(time, GapReason::Untraced, std::move(detail), traceOffset, cpu, true);
    }
    // Closes every open frame and gap at `time`.
    void finish(uint64_t time);

    int32_t currentThread() const { return current_; }

    // Gives the builder an emptied span vector to fill for the next thread it
    // sees: a decoder that reuses its vectors from segment to segment spares
    // itself the allocation and page faults of tens of MB per segment.
    void reuse(std::vector<Span>&& buffer) {
        buffer.clear();
        spare_.push_back(std::move(buffer));
    }

    struct ThreadSpans {
        std::vector<Span> spans;  // in pre-order, hence by start (see the top)
        std::vector<Gap> gaps;    // what spans' gap index refers to
        // False when a gap opened at a thread switch earlier than the thread's
        // latest span (a decoder that applies switches when its time passes them
        // can reach one after a later event): sort them (sortSpans).
        bool inStartOrder = true;
    };

    // How a thread's spans of one piece of flow (a segment) meet those of the
    // pieces before and after it, for SegmentedDecode to join the frames that
    // cross a cut (see SegmentedDecode.h). Span indices are into the thread's
    // spans as the first take() after finish() gives them.
    struct StackEnds {
        // The frames found running in the first stretch, in the order found: the
        // first frame, then each caller found by returning past the outermost
        // one. Empty when the thread's flow began with a lossy gap.
        std::vector<uint32_t> entry;
        // A return found a function that was neither the caller nor below it:
        // the found frames do not form a chain of callers.
        bool entryBroken = false;
        uint32_t firstStretchEnd = 0;                 // spans [0, firstStretchEnd) are the first stretch
        uint64_t firstStretchEndTime = 0;             // when a lossy gap ended it (else the finish time)
        uint32_t lastStretchBegin = 0;                // spans [lastStretchBegin, end) are the last stretch
        std::vector<uint32_t> exit;                   // the frames open at finish(), outermost first
        BranchClass exitBranch = BranchClass::Other;  // how the last run of instructions left
        uint64_t finishTime = 0;
    };
    // Each thread's StackEnds; valid after finish() and before take(). A thread
    // whose spans are not in start order (see ThreadSpans) has none.
    std::map<int32_t, StackEnds> stackEnds() const;
    // The spans so far, by thread id; leaves the builder empty. After finish()
    // that is all of them; before, a thread's spans up to its first frame or
    // gap still open (those and the spans after them stay for a later take()).
    std::map<int32_t, ThreadSpans> take();

private:
    struct Frame {
        uint32_t function;
        int32_t depth;
        uint64_t instructions;
        size_t slot;  // its span in Thread::out.spans (start, function and depth set there)
    };
    enum class Pending : uint8_t { None, Call, Return, Jump };
    // What the next run of instructions follows, after one that ends in `last`.
    static Pending pendingAfter(BranchClass last) {
        switch (last) {
            case BranchClass::Call:
            case BranchClass::FarCall:
                return Pending::Call;
            case BranchClass::Return:
            case BranchClass::FarReturn:
                return Pending::Return;
            case BranchClass::Jump:
                return Pending::Jump;
            default:
                return Pending::None;
        }
    }
    struct Thread {
        std::vector<Frame> stack;
        Pending pending = Pending::None;
        size_t stretchBegin = 0;   // first span of the current stretch (see the top)
        bool firstStretch = true;  // no lossy gap yet
        bool unordered = false;    // see ThreadSpans::inStartOrder
        StackEnds ends;
        int32_t lowest = 0;  // the lowest depth opened in the stretch (below 0: shift it)
        bool gapOpen = false;
        size_t gapSlot = 0;  // the open gap's span (its gap already in out.gaps)
        ThreadSpans out;
    };

    // The running thread's state; kept as a pointer because it is needed for every
    // run of instructions (map nodes do not move).
    Thread& thread() {
        if (!currentThread_) {
            auto [it, inserted] = threads_.try_emplace(current_);
            if (inserted && !spare_.empty()) {
                it->second.out.spans = std::move(spare_.back());
                spare_.pop_back();
            }
            currentThread_ = &it->second;
        }
        return *currentThread_;
    }
    void instructionsSlow(uint64_t time, uint32_t function, uint64_t count, BranchClass last);
    // A frame's span placed at the end of the thread's spans (its end and
    // instructions set by close()).
    enum class Entered : uint8_t { Called, Running, Outermost };
    static Frame open(Thread& t, uint32_t function, int32_t depth, uint64_t time,
                      Entered entered = Entered::Called) {
        const size_t slot = t.out.spans.size();
        Span s{time, time, function, depth, 0, -1};
        s.foundRunning = entered != Entered::Called;
        s.outermost = entered == Entered::Outermost;
        t.out.spans.push_back(s);
        return {function, depth, 0, slot};
    }
    void close(Thread& t, const Frame& f, uint64_t end) {
        Span& s = t.out.spans[f.slot];
        s.end = std::max(end, s.start);
        s.instructions = f.instructions;
    }
    void closeAll(Thread& t, uint64_t end);
    void closeStretch(Thread& t);
    void openGap(uint64_t time, GapReason reason, std::string detail, uint64_t traceOffset, int cpu,
                 bool keepBranch);
    // keepBranch: the thread's pending branch survives the gap (Untraced only).
    void openGap(Thread& t, uint64_t time, bool keepBranch);
    void endGap(Thread& t, uint64_t time);

    std::map<int32_t, Thread> threads_;
    int32_t current_ = -1;
    Thread* currentThread_ = nullptr;
    std::vector<std::vector<Span>> spare_;
    // A gap as the CPU sees it: it moves to whichever thread switches in during it.
    bool gapOpen_ = false;
    Gap gap_;
};

// Sorts spans by start (stable: spans of equal start keep their order, so
// FlowToSpans' pre-order is kept, as are pieces of it concatenated in time).
void sortSpans(std::vector<Span>& spans);
// Sorts each thread's spans by start (see sortSpans) and appends them to `stores`.
void storeSpans(std::map<int32_t, FlowToSpans::ThreadSpans>& spans, std::map<int32_t, SpanStore>& stores);

}  // namespace auxscope
