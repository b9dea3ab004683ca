// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/SearchBar.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QTimer>
#include <QToolButton>

#include <algorithm>
#include <tuple>

#include "gui/timeline/TimeFormat.h"
#include "gui/timeline/TimelineState.h"

namespace auxscope {

SearchResult searchTimeline(const TimelineData& data, const QString& pattern, bool regex,
                            const std::vector<std::shared_ptr<const TimelineData>>& earlier) {
    SearchResult out;
    if (pattern.isEmpty()) return out;
    QRegularExpression re;
    if (regex) {
        re = QRegularExpression(pattern, QRegularExpression::CaseInsensitiveOption);
        if (!re.isValid()) {
            out.valid = false;
            out.error = re.errorString();
            return out;
        }
    }
    auto matches = [&](const std::string& s) {
        const QString q = QString::fromStdString(s);
        return regex ? re.match(q).hasMatch() : q.contains(pattern, Qt::CaseInsensitive);
    };
    // Functions: matched once each.
    bool any = false;
    if (data.functions) {
        out.functions.assign(data.functions->size(), false);
        for (uint32_t id = 0; id < data.functions->size(); ++id)
            if (matches((*data.functions)[id].name)) out.functions[id] = any = true;
    }
    // Threads: their names, process names and tids.
    std::map<int32_t, std::string> names = data.threadNames;
    for (const auto& t : data.threads)
        names.emplace(t.tid, t.name);
    if (data.lanes) {
        for (const auto& t : data.lanes->threads)
            names.emplace(t.tid, t.name);
        for (const auto& p : data.lanes->processes)
            if (matches(p.name))
                for (const auto& t : data.lanes->threads)
                    if (t.pid == p.pid) out.threads.insert(t.tid);
    }
    for (const auto& [tid, name] : names)
        if (tid > 0 && (matches(name) || QString::number(tid) == pattern)) out.threads.insert(tid);
    for (int32_t tid : out.threads)
        out.hits.push_back({tid, SIZE_MAX, 0});
    const size_t threadHits = out.hits.size();
    // A span in several windows is counted once: thread, start, function, depth.
    std::set<std::tuple<int32_t, uint64_t, uint32_t, int32_t>> seen;
    if (any) {
        // Each thread's hits come in start order (its store is); threads are merged.
        std::vector<size_t> bounds{out.hits.size()};
        for (const auto& t : data.threads) {
            t.spans.forEach(0, t.spans.size(), [&](size_t i, const Span& s) {
                if (!s.isGap() && s.function < out.functions.size() && out.functions[s.function]) {
                    out.hits.push_back({t.tid, i, s.start});
                    if (s.start < data.decodedBegin || s.start >= data.decodedEnd)
                        seen.insert({t.tid, s.start, s.function, s.depth});
                }
            });
            if (out.hits.size() > bounds.back()) bounds.push_back(out.hits.size());
        }
        auto before = [](const SearchHit& a, const SearchHit& b) {
            return a.start < b.start || (a.start == b.start && a.tid < b.tid);
        };
        for (size_t k = 2; k < bounds.size(); ++k)
            std::inplace_merge(out.hits.begin() + ptrdiff_t(threadHits),
                               out.hits.begin() + ptrdiff_t(bounds[k - 1]),
                               out.hits.begin() + ptrdiff_t(bounds[k]), before);
    }
    // The windows decoded before (newest first): a span counts in the window whose decoded
    // range holds its start unless the view's or a newer window's does; a span that starts
    // outside every window's range (it ran into them) counts once (thread, start, function, depth).
    if (any) {
        std::vector<std::pair<uint64_t, uint64_t>> ranges{{data.decodedBegin, data.decodedEnd}};
        for (const auto& w : earlier)
            if (w && w->functions == data.functions) ranges.push_back({w->decodedBegin, w->decodedEnd});
        auto owner = [&](uint64_t t) {
            for (size_t r = 0; r < ranges.size(); ++r)
                if (t >= ranges[r].first && t < ranges[r].second) return long(r);
            return -1L;
        };
        std::vector<SearchHit> elsewhere;
        long index = 0;
        for (const auto& w : earlier) {
            if (!w || w->functions != data.functions) continue;
            ++index;
            for (const auto& t : w->threads)
                t.spans.forEach(0, t.spans.size(), [&](size_t, const Span& s) {
                    if (s.isGap() || s.function >= out.functions.size() || !out.functions[s.function]) return;
                    const long r = owner(s.start);
                    const std::tuple key{t.tid, s.start, s.function, s.depth};
                    if (r >= 0 ? r != index || seen.count(key) : !seen.insert(key).second) return;
                    elsewhere.push_back({t.tid, SIZE_MAX, s.start, s.end, false});
                });
        }
        auto before = [](const SearchHit& a, const SearchHit& b) {
            return a.start < b.start || (a.start == b.start && a.tid < b.tid);
        };
        std::sort(elsewhere.begin(), elsewhere.end(), before);
        out.elsewhereHits = elsewhere.size();
        const size_t mid = out.hits.size();
        out.hits.insert(out.hits.end(), elsewhere.begin(), elsewhere.end());
        std::inplace_merge(out.hits.begin() + ptrdiff_t(threadHits), out.hits.begin() + ptrdiff_t(mid),
                           out.hits.end(), before);
    }
    out.spanHits = out.hits.size() - threadHits;
    return out;
}

SearchBar::SearchBar(TimelineState* state, QWidget* parent) : QWidget(parent), state_(state) {
    setObjectName("searchBar");
    field_ = new QLineEdit;
    field_->setObjectName("searchField");
    field_->setPlaceholderText(
        "Search functions and threads (Enter: next, Shift+Enter: previous, Esc: close)");
    field_->setClearButtonEnabled(true);
    regex_ = new QCheckBox("regex");
    regex_->setObjectName("searchRegex");
    count_ = new QLabel;
    count_->setObjectName("searchCount");
    count_->setMinimumWidth(160);
    auto* prev = new QToolButton;
    prev->setText("▲");
    prev->setToolTip("Previous hit (Shift+Enter)");
    auto* next = new QToolButton;
    next->setText("▼");
    next->setToolTip("Next hit (Enter)");
    auto* close = new QToolButton;
    close->setText("✕");
    close->setToolTip("Close the search (Esc)");
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(new QLabel("Find:"));
    layout->addWidget(field_, 1);
    layout->addWidget(regex_);
    layout->addWidget(count_);
    layout->addWidget(prev);
    layout->addWidget(next);
    layout->addWidget(close);
    field_->installEventFilter(this);
    // Typing searches once it pauses (a search reads every decoded span); Enter searches at once.
    typing_ = new QTimer(this);
    typing_->setSingleShot(true);
    typing_->setInterval(200);
    connect(typing_, &QTimer::timeout, this, [this] { run(); });
    connect(field_, &QLineEdit::textChanged, this, [this] { typing_->start(); });
    connect(regex_, &QCheckBox::toggled, this, [this] { run(); });
    connect(prev, &QToolButton::clicked, this, [this] { step(false); });
    connect(next, &QToolButton::clicked, this, [this] { step(true); });
    connect(close, &QToolButton::clicked, this, &SearchBar::dismiss);
    connect(state_, &TimelineState::dataChanged, this, [this] {
        remember(state_->data());
        if (!field_->text().isEmpty()) run(true);
    });
}

void SearchBar::dismiss() {
    field_->clear();
    hide();
    emit closed();
}

void SearchBar::activate() {
    show();
    field_->setFocus();
    field_->selectAll();
}

void SearchBar::setPattern(const QString& text, bool regex) {
    regex_->blockSignals(true);
    regex_->setChecked(regex);
    regex_->blockSignals(false);
    field_->setText(text);
    typing_->stop();
    run();
}

void SearchBar::remember(const std::shared_ptr<const TimelineData>& shown) {
    // The window shown before this one becomes an earlier window (a whole-recording
    // window makes every earlier one redundant; another function table, unusable).
    if (shown_ && shown && shown_ != shown && shown_->functions == shown->functions &&
        shown_->decodedEnd > shown_->decodedBegin)
        earlier_.insert(earlier_.begin(), shown_);
    shown_ = shown;
    if (!shown || (shown->decodedBegin <= shown->begin && shown->decodedEnd >= shown->end)) earlier_.clear();
    std::erase_if(earlier_, [&](const auto& w) { return !shown || w->functions != shown->functions; });
    uint64_t spans = 0;
    for (size_t k = 0; k < earlier_.size(); ++k) {
        for (const auto& t : earlier_[k]->threads)
            spans += t.spans.size();
        if (spans > keptSpanBudget_) {
            earlier_.resize(k);
            break;
        }
    }
}

void SearchBar::refresh() {
    if (!field_->text().isEmpty()) run();
}

namespace {
// A thread whose name matched (not a span).
bool isThreadHit(const SearchHit& h) {
    return h.index == SIZE_MAX && h.inView;
}
}  // namespace

void SearchBar::run(bool keepPlace) {
    // New data for the same search keeps the place: the hit stepped to (or still pending).
    std::optional<SearchHit> keep = pending_;
    if (!keep && keepPlace && current_ >= 0 && size_t(current_) < result_.hits.size())
        keep = result_.hits[size_t(current_)];
    if (!keepPlace) pending_.reset();
    current_ = -1;
    const auto& data = state_->data();
    if (!data || field_->text().isEmpty()) {
        result_ = {};
        pending_.reset();
        state_->setHighlight({}, {});
        updateCount();
        return;
    }
    result_ = searchTimeline(*data, field_->text(), regex_->isChecked(), earlier_);
    if (result_.valid)
        state_->setHighlight(result_.functions, result_.threads);
    else
        state_->setHighlight({}, {});
    if (keepPlace && keep) {
        for (size_t k = 0; k < result_.hits.size(); ++k) {
            const SearchHit& h = result_.hits[k];
            if (h.tid != keep->tid || h.start != keep->start || isThreadHit(h) != isThreadHit(*keep))
                continue;
            current_ = long(k);
            if (h.inView && h.index != SIZE_MAX) {
                if (pending_) {
                    // Stepped to from outside the view: its window is decoded now.
                    pending_.reset();
                    selectHit(h);
                } else {
                    state_->selectSpan(h.tid, h.index);  // new data cleared the selection
                }
            }
            break;
        }
    }
    updateCount();
}

void SearchBar::updateCount() {
    if (!result_.valid) {
        count_->setText("bad regex: " + result_.error);
        count_->setStyleSheet("color: #b00020;");
        return;
    }
    count_->setStyleSheet(result_.hits.empty() && !field_->text().isEmpty() ? "color: #b00020;" : "");
    if (field_->text().isEmpty()) {
        count_->clear();
        return;
    }
    QString text = current_ >= 0 ? QString("%1 / %2").arg(current_ + 1).arg(formatCount(result_.hits.size()))
                                 : QString("%1 hits").arg(formatCount(result_.hits.size()));
    if (!result_.threads.empty())
        text +=
            QString(" (%1 spans, %2 threads)").arg(formatCount(result_.spanHits)).arg(result_.threads.size());
    if (result_.elsewhereHits)
        text += QString(": %1 in view, %2 elsewhere in the decoded windows")
                    .arg(formatCount(result_.spanHits - result_.elsewhereHits))
                    .arg(formatCount(result_.elsewhereHits));
    if (pending_) text += " (decoding its window…)";
    // Spans are searched where they are decoded: say so when that is not the whole recording.
    if (const auto& d = state_->data(); d && (d->decodedBegin > d->begin || d->decodedEnd < d->end)) {
        text += QString(" in the decoded +%1 … +%2")
                    .arg(formatNs(double(d->decodedBegin - std::min(d->decodedBegin, d->begin))))
                    .arg(formatNs(double(d->decodedEnd - std::min(d->decodedEnd, d->begin))));
        count_->setToolTip(
            "Spans are searched in the window decoded for the view and in the windows decoded "
            "before it (kept up to a span budget); zoom out (within the decode budget) or visit "
            "other windows to search more of the recording. Thread names are searched everywhere.");
    } else {
        count_->setToolTip({});
    }
    count_->setText(text);
}

bool SearchBar::step(bool forward) {
    if (result_.hits.empty()) return false;
    const long n = long(result_.hits.size());
    current_ = current_ < 0 ? (forward ? 0 : n - 1) : ((current_ + (forward ? 1 : -1)) % n + n) % n;
    const SearchHit hit = result_.hits[size_t(current_)];
    pending_.reset();
    if (!hit.inView) {
        // In a window decoded earlier: zooming to it decodes it, and run() selects it then.
        pending_ = hit;
        state_->zoomTo(hit.start, std::max(hit.end, hit.start + 1), 1.0);
        state_->revealThread(hit.tid, -1);
    } else {
        selectHit(hit);
    }
    updateCount();
    return true;
}

void SearchBar::selectHit(const SearchHit& hit) {
    if (hit.index == SIZE_MAX) {
        state_->revealThread(hit.tid, -1);
        return;
    }
    state_->selectSpan(hit.tid, hit.index);
    const TimelineHit& sel = state_->selection();
    state_->zoomTo(sel.start, std::max(sel.end, sel.start + 1), 1.0);
    state_->revealThread(hit.tid, sel.span.depth);
}

bool SearchBar::eventFilter(QObject* watched, QEvent* event) {
    if (watched == field_ && event->type() == QEvent::KeyPress) {
        auto* key = static_cast<QKeyEvent*>(event);
        if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
            if (typing_->isActive()) {
                typing_->stop();
                run();
            }
            step(!(key->modifiers() & Qt::ShiftModifier));
            return true;
        }
        if (key->key() == Qt::Key_Escape) {
            dismiss();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

}  // namespace auxscope
