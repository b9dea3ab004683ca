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
// All of it through the timeline's TimelineState (its data, highlight,
// selection, window, and a request to reveal a thread).
// Spans are searched where the view has them decoded (the whole recording when
// its trace fits the decode budget; otherwise the window in view) and in the
// windows decoded before it, which the bar keeps (the newest first, up to a
// span budget; only those of the same function table): the count says how many
// hits are in view and how many elsewhere in those decoded windows, and
// stepping to one elsewhere zooms the timeline to it, which decodes its window
// again (from the decoder's segment cache) and selects it there.
#include <QPointer>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "spans/TimelineData.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QTimer;
class QToolButton;

namespace auxscope {

class TimelineState;

struct SearchHit {
    int32_t tid = -1;
    size_t index = SIZE_MAX;  // in the thread's store; SIZE_MAX: the thread (its name matched)
    uint64_t start = 0;
    uint64_t end = 0;    // spans outside the view only
    bool inView = true;  // false: in a window decoded earlier, not in the view's
};

struct SearchResult {
    bool valid = true;  // false: a bad regular expression (error says why)
    QString error;
    std::vector<bool> functions;  // per function id: matches
    std::set<int32_t> threads;    // threads whose name matched
    std::vector<SearchHit> hits;  // threads first, then spans by start
    uint64_t spanHits = 0;        // every span hit
    uint64_t elsewhereHits = 0;   // of which in the earlier windows, outside the view's
};

// Searches `data`'s spans and thread names for `pattern`, and the spans of
// `earlier` (windows decoded before, newest first, sharing `data`'s function
// table) that start outside `data`'s decoded window; a span found in several
// windows counts once.
SearchResult searchTimeline(const TimelineData& data, const QString& pattern, bool regex,
                            const std::vector<std::shared_ptr<const TimelineData>>& earlier = {});

class SearchBar : public QWidget {
    Q_OBJECT
public:
    explicit SearchBar(TimelineState* state, QWidget* parent = nullptr);

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
    // The windows decoded before the view's, newest first (searched too).
    const std::vector<std::shared_ptr<const TimelineData>>& earlierWindows() const { return earlier_; }
    // Spans kept in earlier windows at most (the oldest go first).
    void setKeptSpanBudget(uint64_t spans) { keptSpanBudget_ = spans; }

signals:
    // Esc or the close button: the bar is hidden (the page gives the timeline the focus back).
    void closed();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void dismiss();  // Esc, the close button: clears the search and hides the bar
    void run(bool keepPlace = false);
    void updateCount();
    void remember(const std::shared_ptr<const TimelineData>& shown);
    void selectHit(const SearchHit& hit);

    QPointer<TimelineState> state_;
    QLineEdit* field_ = nullptr;
    QCheckBox* regex_ = nullptr;
    QLabel* count_ = nullptr;
    QTimer* typing_ = nullptr;  // a search once typing pauses
    SearchResult result_;
    long current_ = -1;
    std::vector<std::shared_ptr<const TimelineData>> earlier_;  // newest first
    std::shared_ptr<const TimelineData> shown_;                 // the view's data last seen
    uint64_t keptSpanBudget_ = 16u << 20;
    std::optional<SearchHit> pending_;  // stepped to outside the view: selected once decoded
};

}  // namespace auxscope
