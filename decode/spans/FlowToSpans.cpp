// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/FlowToSpans.h"

#include <algorithm>

namespace auxscope {

void FlowToSpans::close(Thread& t, const Frame& f, uint64_t end) {
    t.out.spans.push_back({f.start, std::max(end, f.start), f.function, f.depth, f.instructions, -1});
}

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
    auto lossyGap = [&](const Span& s) {
        return s.isGap() && t.out.gaps[s.gap].reason != GapReason::Untraced;
    };
    int32_t lowest = 0;
    for (size_t i = t.stretchBegin; i < spans.size(); ++i)
        if (!lossyGap(spans[i])) lowest = std::min(lowest, spans[i].depth);
    if (lowest < 0)
        for (size_t i = t.stretchBegin; i < spans.size(); ++i)
            if (!lossyGap(spans[i])) spans[i].depth -= lowest;
    t.stretchBegin = spans.size();
}

void FlowToSpans::openGap(Thread& t, uint64_t time) {
    if (t.gapOpen) endGap(t, time);
    if (gap_.reason == GapReason::Untraced) {
        // The code that ran untraced was most likely called (syscall, interrupt):
        // draw it below the frame it interrupted, which continues afterwards.
        t.gapDepth = t.stack.empty() ? 0 : t.stack.back().depth + 1;
        t.pending = Pending::None;
    } else {
        closeAll(t, time);
        closeStretch(t);
        t.gapDepth = 0;
        t.pending = Pending::None;
    }
    t.gapOpen = true;
    t.gapStart = time;
    t.gap = gap_;
}

void FlowToSpans::endGap(Thread& t, uint64_t time) {
    if (!t.gapOpen) return;
    t.gapOpen = false;
    t.out.gaps.push_back(t.gap);
    t.out.spans.push_back({t.gapStart, std::max(time, t.gapStart), 0, t.gapDepth, 0,
                           static_cast<int32_t>(t.out.gaps.size() - 1)});
}

void FlowToSpans::gap(uint64_t time, GapReason reason, std::string detail, uint64_t traceOffset, int cpu) {
    gap_ = Gap{reason, std::move(detail), traceOffset, cpu};
    gapOpen_ = true;
    openGap(thread(), time);
}

void FlowToSpans::switchThread(uint64_t time, int32_t tid) {
    if (tid == current_) return;
    if (gapOpen_) endGap(thread(), time);
    current_ = tid;
    currentThread_ = nullptr;
    // What the incoming thread does during the rest of the gap is just as unknown.
    if (gapOpen_) openGap(thread(), time);
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
        stack.push_back({function, 0, time, 0});
    } else if (pending == Pending::Call) {
        stack.push_back({function, stack.back().depth + 1, time, 0});
    } else if (pending == Pending::Return) {
        // The frame returned to: the nearest one below the top running `function`;
        // when there is none, the caller is new (outside what the trace saw).
        if (!unwindTo(function)) {
            if (stack.size() == 1) {
                int32_t depth = stack.back().depth - 1;
                close(t, stack.back(), time);
                stack.back() = {function, depth, time, 0};
            } else {
                close(t, stack.back(), time);
                stack.pop_back();
                close(t, stack.back(), time);
                stack.back() = {function, stack.back().depth, time, 0};
            }
        }
    } else if (stack.back().function != function) {
        // A jump into a function further down the stack unwinds to it; any other
        // change of function without a call or return is a tail call.
        if (pending != Pending::Jump || !unwindTo(function)) {
            close(t, stack.back(), time);
            stack.back() = {function, stack.back().depth, time, 0};
        }
    }
    stack.back().instructions += count;
    t.pending = pendingAfter(last);
}

void FlowToSpans::finish(uint64_t time) {
    gapOpen_ = false;
    for (auto& [tid, t] : threads_) {
        endGap(t, time);
        closeAll(t, time);
        closeStretch(t);
        t.pending = Pending::None;
    }
}

std::map<int32_t, FlowToSpans::ThreadSpans> FlowToSpans::take() {
    std::map<int32_t, ThreadSpans> result;
    for (auto& [tid, t] : threads_) {
        if (t.out.spans.empty()) continue;
        result[tid] = std::move(t.out);
        t.out = {};
        t.stretchBegin = 0;
    }
    return result;
}

namespace {
bool spanOrder(const Span& a, const Span& b) {
    return a.start < b.start || (a.start == b.start && a.depth < b.depth);
}
}  // namespace

void sortSpans(std::vector<Span>& spans) {
    // Stable, so that sorted pieces concatenated in order are the same as the
    // whole sorted at once; the check makes an already sorted input cost one pass.
    if (!std::is_sorted(spans.begin(), spans.end(), spanOrder))
        std::stable_sort(spans.begin(), spans.end(), spanOrder);
}

void storeSpans(std::map<int32_t, FlowToSpans::ThreadSpans>& spans, std::map<int32_t, SpanStore>& stores) {
    for (auto& [tid, thread] : spans) {
        sortSpans(thread.spans);
        stores[tid].append(thread.spans, thread.gaps);
    }
}

}  // namespace auxscope
