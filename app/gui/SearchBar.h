// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Search over a timeline's decoded spans (`/` on a trace page): a function name
// substring (case-insensitive) or, with "regex", a regular expression, matched
// against the function table once; every span of a matching function is a hit,
// in time order (ties by thread). Threads whose name (COMM), process name or
// tid match are hits too (listed first). Enter / Shift+Enter step to the
// next / previous hit: the timeline selects that span, zooms to it and scrolls
// its thread into view; the count is shown ("3 / 1,204"), and the view fades
// every span that is not a hit. Esc closes the bar and clears the highlight.
// Spans are searched where the view has them decoded (the whole recording when
// its trace fits the decode budget; otherwise the window in view, which the
// count then names).
#include <QWidget>

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "spans/TimelineData.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QTimer;
class QToolButton;

namespace auxscope {

class TimelineView;

struct SearchHit {
    int32_t tid = -1;
    size_t index = SIZE_MAX;  // in the thread's store; SIZE_MAX: the thread (its name matched)
    uint64_t start = 0;
};

struct SearchResult {
    bool valid = true;  // false: a bad regular expression (error says why)
    QString error;
    std::vector<bool> functions;  // per function id: matches
    std::set<int32_t> threads;    // threads whose name matched
    std::vector<SearchHit> hits;  // threads first, then spans by start
    uint64_t spanHits = 0;
};

// Searches `data`'s spans and thread names for `pattern`.
SearchResult searchTimeline(const TimelineData& data, const QString& pattern, bool regex);

class SearchBar : public QWidget {
    Q_OBJECT
public:
    explicit SearchBar(TimelineView* view, QWidget* parent = nullptr);

    // Focuses the field (what `/` does), showing the bar.
    void activate();
    // Searches again (new data in the view).
    void refresh();
    void setPattern(const QString& text, bool regex = false);
    // Steps to the next (or previous) hit; false when there are none.
    bool step(bool forward = true);
    const SearchResult& result() const { return result_; }
    // The hit stepped to last (-1: none yet).
    long current() const { return current_; }
    QLineEdit* field() const { return field_; }
    QLabel* countLabel() const { return count_; }

signals:
    void closed();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void run();
    void updateCount();

    TimelineView* view_;
    QLineEdit* field_ = nullptr;
    QCheckBox* regex_ = nullptr;
    QLabel* count_ = nullptr;
    QTimer* typing_ = nullptr;  // a search once typing pauses
    SearchResult result_;
    long current_ = -1;
};

}  // namespace auxscope
