// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/analysis/SpanDetailsPane.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <unordered_map>

#include "gui/analysis/CallTreeModel.h"
#include "gui/timeline/HitDescription.h"
#include "gui/timeline/TimelineState.h"

namespace auxscope {
namespace {
constexpr size_t kMaxWalk = 50'000'000;  // callee spans read at most
}

SpanDetails spanDetails(const TimelineData& data, int32_t tid, size_t index) {
    SpanDetails d;
    const TimelineData::Thread* th = nullptr;
    for (const auto& t : data.threads)
        if (t.tid == tid) th = &t;
    if (!th || index >= th->spans.size()) return d;
    const SpanStore& store = th->spans;
    d.valid = true;
    d.span = store.at(index);
    d.tid = tid, d.pid = th->pid;
    // CPU: the sideband's slice running the thread at the span's start.
    for (const auto& [cpu, slices] : data.cpus) {
        auto it = std::upper_bound(slices.begin(), slices.end(), d.span.start,
                                   [](uint64_t t, const TimelineData::CpuSlice& s) { return t < s.start; });
        if (it != slices.begin() && (it - 1)->tid == tid && (it - 1)->end > d.span.start) {
            d.cpu = cpu;
            break;
        }
    }
    // Callers: walk back, one level up at a time.
    if (!d.span.outermost) {
        int32_t want = d.span.depth - 1;
        for (size_t i = index; i-- > 0 && want >= 0;) {
            const Span s = store.at(i);
            if (s.depth > want) {
                if (s.outermost) break;  // a stack opened here: nothing before it is open
                continue;
            }
            if (s.depth < want || s.isGap()) break;  // the stack was cut: nothing above is open
            d.callers.push_back({s.function, i});
            if (s.outermost) break;
            --want;
        }
        std::reverse(d.callers.begin(), d.callers.end());
    }
    // Callees: one level down, until a span at this level or above.
    std::unordered_map<uint32_t, SpanDetails::Callee> byFunction;
    uint64_t below = 0;
    size_t walked = 0;
    for (size_t i = index + 1; i < store.size(); ++i) {
        if (++walked > kMaxWalk) {
            d.calleesCut = true;
            break;
        }
        const Span s = store.at(i);
        if (s.depth <= d.span.depth || s.outermost) break;
        if (s.depth != d.span.depth + 1) continue;
        const uint64_t clipped =
            std::min(s.end, d.span.end) - std::min(std::max(s.start, d.span.start), d.span.end);
        below += clipped;
        if (s.isGap()) {
            ++d.gapsBelow;
            continue;
        }
        auto& c = byFunction[s.function];
        c.function = s.function;
        if (!s.foundRunning) ++c.calls;
        c.time += clipped;
        c.instructions += s.instructions;
    }
    const uint64_t duration = d.span.end - d.span.start;
    d.selfTime = duration > below ? duration - below : 0;
    for (auto& [f, c] : byFunction)
        d.callees.push_back(c);
    std::sort(d.callees.begin(), d.callees.end(), [](const auto& a, const auto& b) {
        return a.time > b.time || (a.time == b.time && a.function < b.function);
    });
    return d;
}

SpanDetailsPane::SpanDetailsPane(QWidget* parent) : QWidget(parent) {
    title_ = new QLabel("Click a span on the timeline to see its details.");
    title_->setObjectName("spanTitle");
    title_->setWordWrap(true);
    title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    code_ = new QPushButton("Show code");
    code_->setObjectName("spanShowCode");
    code_->setToolTip(
        "Disassembly of the function with the instructions executed in this span and their counts");
    code_->setEnabled(false);
    tree_ = new QTreeWidget;
    tree_->setObjectName("spanDetails");
    tree_->setHeaderLabels({"", "Value", "Calls", "Time", "Instructions"});
    tree_->setColumnWidth(0, 160);
    tree_->setColumnWidth(1, 360);
    auto* bar = new QHBoxLayout;
    bar->addWidget(title_, 1);
    bar->addWidget(code_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(bar);
    layout->addWidget(tree_, 1);
    connect(code_, &QPushButton::clicked, this, [this] {
        if (details_.valid && !details_.span.isGap())
            emit codeRequested(details_.tid, details_.span.function, details_.span.start, details_.span.end);
    });
    connect(tree_, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem* item) {
        const QVariant v = item->data(0, Qt::UserRole);
        if (v.isValid()) emit spanRequested(details_.tid, v.toULongLong());
    });
}

void SpanDetailsPane::setState(TimelineState* state) {
    state_ = state;
    connect(state, &TimelineState::dataChanged, this, [this] { setData(state_->data()); });
    connect(state, &TimelineState::spanSelected, this, [this](const TimelineHit& hit) {
        setData(state_->data());
        showHit(hit);
    });
    connect(this, &SpanDetailsPane::spanRequested, state,
            [this](int32_t tid, qulonglong index) { state_->selectSpan(tid, size_t(index)); });
}

void SpanDetailsPane::showHit(const TimelineHit& hit) {
    tree_->clear();
    details_ = {};
    code_->setEnabled(false);
    const uint64_t origin = data_ ? data_->begin : 0;
    if (hit.kind != TimelineHit::ThreadSpan || !data_) {
        title_->setText(describeHit(hit, origin).replace('\n', "  ·  "));
        return;
    }
    details_ = spanDetails(*data_, hit.tid, hit.index);
    if (!details_.valid) {
        title_->setText(describeHit(hit, origin).replace('\n', "  ·  "));
        return;
    }
    const SpanDetails& d = details_;
    const Span& s = d.span;
    auto name = [&](uint32_t f) {
        return data_->functions && f < data_->functions->size()
                   ? QString::fromStdString((*data_->functions)[f].name)
                   : QString("[function %1]").arg(f);
    };
    auto add = [&](QTreeWidgetItem* parent, const QString& key, const QString& value) {
        auto* item =
            parent ? new QTreeWidgetItem(parent, {key, value}) : new QTreeWidgetItem(tree_, {key, value});
        return item;
    };
    if (s.isGap()) {
        title_->setText(QString("Gap: %1").arg(hit.gapReason));
        add(nullptr, "reason", hit.gapReason);
        if (!hit.gapDetail.isEmpty()) add(nullptr, "detail", hit.gapDetail);
    } else {
        title_->setText(name(s.function));
        add(nullptr, "function", name(s.function));
        add(nullptr, "image", hit.file);
        code_->setEnabled(true);
    }
    add(nullptr, "thread", QString("%1 (tid %2, pid %3)").arg(hit.threadName).arg(d.tid).arg(d.pid));
    add(nullptr, "CPU", d.cpu >= 0 ? QString::number(d.cpu) : QString("unknown"));
    add(nullptr, "start", QString("+%1").arg(formatNs(double(s.start - origin))));
    add(nullptr, "duration", formatNs(double(s.end - s.start)));
    if (!s.isGap()) {
        add(nullptr, "self time", formatNs(double(d.selfTime)));
        add(nullptr, "instructions", formatCount(s.instructions) + " (its own)");
    }
    add(nullptr, "depth", QString::number(s.depth));
    if (s.foundRunning) add(nullptr, "entered", "found running (not a call the trace shows)");
    auto* callers =
        add(nullptr, QString("callers (%1)").arg(d.callers.size()),
            d.callers.empty() ? QString("none: the outermost frame known") : QString("outermost first"));
    for (const auto& c : d.callers) {
        auto* item = add(callers, name(c.function), {});
        item->setData(0, Qt::UserRole, QVariant::fromValue<qulonglong>(c.index));
        item->setToolTip(0, "double-click: select this frame");
    }
    auto* callees = add(nullptr, QString("callees (%1 functions)").arg(d.callees.size()),
                        d.calleesCut ? QString("cut: too many spans below") : QString());
    for (const auto& c : d.callees) {
        auto* item = add(callees, name(c.function), {});
        item->setText(2, formatCount(c.calls));
        item->setText(3, formatNs(double(c.time)));
        item->setText(4, formatCount(c.instructions));
    }
    if (d.gapsBelow) add(callees, "gaps", QString::number(d.gapsBelow));
    tree_->expandAll();
}

}  // namespace auxscope
