// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The selected span: function, image, thread, CPU, start, duration, self time,
// instructions, depth, its callers (the stack above it, outermost first) and
// its callees grouped by function with their calls, time and instructions.
// Callers and callees follow the rule RangeStats counts by (spans come in
// pre-order): the caller of a span is the latest earlier span one level up,
// unless the span opened a stack (Span::outermost); its callees are the spans
// one level down that follow it before a span at its level or above.
// "Show code" asks for the code view of the span's function. Given a timeline's
// TimelineState (setState), the pane shows the span it selects, and a caller
// double-clicked is selected there.
#include <QPointer>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <vector>

#include "spans/TimelineData.h"

class QLabel;
class QPushButton;
class QTreeWidget;

namespace auxscope {

class TimelineState;
struct TimelineHit;

struct SpanDetails {
    bool valid = false;
    Span span;
    int32_t tid = -1, pid = -1;
    int cpu = -1;           // the CPU the thread ran on at the span's start (-1: unknown)
    uint64_t selfTime = 0;  // duration less its callees' (and gaps below it)
    struct Caller {
        uint32_t function = 0;
        size_t index = 0;
    };
    std::vector<Caller> callers;  // outermost first
    struct Callee {
        uint32_t function = 0;
        uint64_t calls = 0, time = 0, instructions = 0;
    };
    std::vector<Callee> callees;  // by time, largest first
    uint64_t gapsBelow = 0;       // gap spans among the callees
    bool calleesCut = false;      // more callee spans than walked (kMaxWalk)
};

// Details of span `index` of thread `tid` in `data`.
SpanDetails spanDetails(const TimelineData& data, int32_t tid, size_t index);

class SpanDetailsPane : public QWidget {
    Q_OBJECT
public:
    explicit SpanDetailsPane(QWidget* parent = nullptr);
    // The timeline state whose selected span the pane shows (and selects callers in).
    void setState(TimelineState* state);
    void setData(std::shared_ptr<const TimelineData> data) { data_ = std::move(data); }
    // Shows the span a timeline hit names (other hits: their description only).
    void showHit(const TimelineHit& hit);
    const SpanDetails& details() const { return details_; }
    QTreeWidget* tree() const { return tree_; }
    QPushButton* codeButton() const { return code_; }

signals:
    // The code of the shown span's function over its time (tid, function, start, end).
    void codeRequested(int32_t tid, uint32_t function, quint64 begin, quint64 end);
    // A caller was double-clicked: select that span (the pane does, in its state).
    void spanRequested(int32_t tid, qulonglong index);

private:
    QPointer<TimelineState> state_;
    std::shared_ptr<const TimelineData> data_;
    SpanDetails details_;
    QLabel* title_ = nullptr;
    QTreeWidget* tree_ = nullptr;
    QPushButton* code_ = nullptr;
};

}  // namespace auxscope
