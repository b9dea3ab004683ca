// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/FlowToSpans.h"

#include <algorithm>

namespace auxscope {

void FlowToSpans::closeAll(Thread& t, uint64_t end) {
    while (!t.stack.empty()) {
        close(t, t.stack.back(), end);
        t.stack.pop_back();
    }
}

// The stretch of flow since the last lossy gap is complete: shift its depths so
// the outermost frame it saw is 0 (frames found by returning past the first
// known one have negative depths until now).
void FlowToSpans::closeStretch(Thread& t) {
    auto& spans = t.out.spans;
    // Depths go below 0 only where a return finds a caller further out (see
    // instructionsSlow), which records it: most stretches need no pass.
    if (t.lowest >= 0) {
        t.stretchBegin = spans.size();
        return;
    }
    // It is also the lowest depth of the stretch (every other frame opens one
    // level under an open frame or in its place): one pass.
    const int32_t lowest = t.lowest;
    t.lowest = 0;
    const std::vector<Gap>& gaps = t.out.gaps;
    for (size_t i = t.stretchBegin; i < spans.size(); ++i) {
        Span& s = spans[i];
        if (!s.isGap() || gaps[size_t(s.gap)].reason == GapReason::Untraced) [[likely]]
            s.depth -= lowest;
    }
    t.stretchBegin = spans.size();
}

void FlowToSpans::openGap(Thread& t, uint64_t time, bool keepBranch) {
    if (t.gapOpen) endGap(t, time);
    if (!t.out.spans.empty() && time < t.out.spans.back().start) t.unordered = true;
    int32_t depth = 0;
    if (gap_.reason == GapReason::Untraced) {
        // The code that ran untraced was most likely called (syscall, interrupt):
        // draw it below the frame it interrupted, which continues afterwards.
        depth = t.stack.empty() ? 0 : t.stack.back().depth + 1;
    } else {
        closeAll(t, time);
        closeStretch(t);
        if (t.firstStretch) {
            t.firstStretch = false;
            t.ends.firstStretchEnd = uint32_t(t.out.spans.size());
            t.ends.firstStretchEndTime = time;
        }
    }
    if (!keepBranch) t.pending = Pending::None;
    t.gapOpen = true;
    t.gapSlot = t.out.spans.size();
    t.out.gaps.push_back(gap_);
    t.out.spans.push_back({time, time, 0, depth, 0, static_cast<int32_t>(t.out.gaps.size() - 1)});
}

void FlowToSpans::endGap(Thread& t, uint64_t time) {
    if (!t.gapOpen) return;
    t.gapOpen = false;
    Span& s = t.out.spans[t.gapSlot];
    s.end = std::max(time, s.start);
}

void FlowToSpans::openGap(uint64_t time, GapReason reason, std::string detail, uint64_t traceOffset, int cpu,
                          bool keepBranch) {
    gap_ = Gap{reason, std::move(detail), traceOffset, cpu};
    gapOpen_ = true;
    openGap(thread(), time, keepBranch && reason == GapReason::Untraced);
}

void FlowToSpans::switchThread(uint64_t time, int32_t tid) {
    if (tid == current_) return;
    if (gapOpen_) endGap(thread(), time);
    current_ = tid;
    currentThread_ = nullptr;
    // What the incoming thread does during the rest of the gap is just as unknown.
    // Untraced, it is the kernel resuming it: the branch it left its flow at (kept
    // when an interrupt switched it out, forgotten at a system call) still holds.
    if (gapOpen_) openGap(thread(), time, gap_.reason == GapReason::Untraced);
}

void FlowToSpans::interrupt(uint64_t) {
    thread().pending = Pending::Call;
}

void FlowToSpans::instructionsSlow(uint64_t time, uint32_t function, uint64_t count, BranchClass last) {
    Thread& t = thread();
    if (gapOpen_) {
        endGap(t, time);
        gapOpen_ = false;
    }
    Pending pending = t.pending;
    auto& stack = t.stack;
    // Closes every frame above the nearest one below the top that runs
    // `target`; false (and nothing closed) when none does.
    auto unwindTo = [&](uint32_t target) {
        ptrdiff_t at = static_cast<ptrdiff_t>(stack.size()) - 2;
        while (at >= 0 && stack[at].function != target)
            --at;
        if (at < 0) return false;
        while (stack.size() > size_t(at) + 1) {
            close(t, stack.back(), time);
            stack.pop_back();
        }
        return true;
    };
    if (stack.empty()) {
        if (t.firstStretch && t.ends.entry.empty()) t.ends.entry.push_back(uint32_t(t.out.spans.size()));
        stack.push_back(open(t, function, 0, time, Entered::Outermost));
    } else if (pending == Pending::Call) {
        stack.push_back(open(t, function, stack.back().depth + 1, time));
    } else if (pending == Pending::Return) {
        // The frame returned to: the nearest one below the top running `function`;
        // when there is none, the caller is new (outside what the trace saw).
        if (!unwindTo(function)) {
            if (stack.size() == 1) {
                const int32_t depth = stack.back().depth - 1;
                t.lowest = std::min(t.lowest, depth);
                close(t, stack.back(), time);
                if (t.firstStretch) t.ends.entry.push_back(uint32_t(t.out.spans.size()));
                stack.back() = open(t, function, depth, time, Entered::Outermost);
            } else {
                // Returned into neither the caller nor a frame below it: the
                // caller's frame is replaced by one found running.
                close(t, stack.back(), time);
                stack.pop_back();
                close(t, stack.back(), time);
                if (t.firstStretch && stack.size() == 1) t.ends.entryBroken = true;
                stack.back() = open(t, function, stack.back().depth, time,
                                    stack.size() == 1 ? Entered::Outermost : Entered::Running);
            }
        }
    } else if (stack.back().function != function) {
        // A jump into a function further down the stack unwinds to it; any other
        // jump to another function is a tail call. Reached without a branch (after
        // untraced code, or falling through), the function was found running.
        if (pending != Pending::Jump || !unwindTo(function)) {
            close(t, stack.back(), time);
            stack.back() = open(t, function, stack.back().depth, time,
                                pending == Pending::Jump ? Entered::Called : Entered::Running);
        }
    }
    stack.back().instructions += count;
    t.pending = pendingAfter(last);
}

void FlowToSpans::finish(uint64_t time) {
    gapOpen_ = false;
    for (auto& [tid, t] : threads_) {
        StackEnds& ends = t.ends;
        ends.exit.clear();
        for (const Frame& f : t.stack)
            ends.exit.push_back(uint32_t(f.slot));
        switch (t.pending) {
            case Pending::Call:
                ends.exitBranch = BranchClass::Call;
                break;
            case Pending::Return:
                ends.exitBranch = BranchClass::Return;
                break;
            case Pending::Jump:
                ends.exitBranch = BranchClass::Jump;
                break;
            case Pending::None:
                ends.exitBranch = BranchClass::Other;
                break;
        }
        ends.finishTime = time;
        ends.lastStretchBegin = uint32_t(t.stretchBegin);
        if (t.firstStretch) {
            ends.firstStretchEnd = uint32_t(t.out.spans.size());
            ends.firstStretchEndTime = time;
        }
        endGap(t, time);
        closeAll(t, time);
        closeStretch(t);
        t.pending = Pending::None;
    }
}

std::map<int32_t, FlowToSpans::StackEnds> FlowToSpans::stackEnds() const {
    std::map<int32_t, StackEnds> out;
    for (const auto& [tid, t] : threads_)
        if (!t.out.spans.empty() && !t.unordered) out[tid] = t.ends;
    return out;
}

std::map<int32_t, FlowToSpans::ThreadSpans> FlowToSpans::take() {
    std::map<int32_t, ThreadSpans> result;
    for (auto& [tid, t] : threads_) {
        if (t.out.spans.empty()) continue;
        // Spans from the first one still open (and the stretch being built, whose
        // depths may still shift) stay.
        size_t keep = std::min(t.out.spans.size(), t.stretchBegin);
        for (const Frame& f : t.stack)
            keep = std::min(keep, f.slot);
        if (t.gapOpen) keep = std::min(keep, t.gapSlot);
        if (keep == 0) continue;
        ThreadSpans& out = result[tid];
        if (keep == t.out.spans.size()) {
            out = std::move(t.out);
            out.inStartOrder = !t.unordered;
            t.out = {};
            t.unordered = false;
        } else {
            // Gaps stay with the thread (the kept spans' indices stay valid); the
            // taken spans get a copy of them.
            out.spans.assign(t.out.spans.begin(), t.out.spans.begin() + ptrdiff_t(keep));
            out.gaps = t.out.gaps;
            out.inStartOrder = !t.unordered;
            t.out.spans.erase(t.out.spans.begin(), t.out.spans.begin() + ptrdiff_t(keep));
            for (Frame& f : t.stack)
                f.slot -= keep;
            if (t.gapOpen) t.gapSlot -= keep;
        }
        t.stretchBegin -= keep;
    }
    return result;
}

namespace {
bool startOrder(const Span& a, const Span& b) {
    return a.start < b.start;
}
}  // namespace

void sortSpans(std::vector<Span>& spans) {
    // Stable, so that sorted pieces concatenated in order are the same as the
    // whole sorted at once; the check makes an already sorted input cost one pass.
    if (!std::is_sorted(spans.begin(), spans.end(), startOrder))
        std::stable_sort(spans.begin(), spans.end(), startOrder);
}

void storeSpans(std::map<int32_t, FlowToSpans::ThreadSpans>& spans, std::map<int32_t, SpanStore>& stores) {
    for (auto& [tid, thread] : spans) {
        sortSpans(thread.spans);
        stores[tid].append(thread.spans, thread.gaps);
    }
}

}  // namespace auxscope
