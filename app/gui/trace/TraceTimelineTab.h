// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The trace page's Timeline tab: its status line (with a progress bar and
// Cancel), the search bar, the overview strip, the lane bar, the timeline view
// and the line that says what is selected, and under them the answers
// (Selection: RangeStatsPane, Span: SpanDetailsPane, Code: CodeView; SPE:
// SpePane, for an Arm SPE file). One
// TimelineState, the tab's, is given to every pane, and every pane obeys it;
// the tab only shows the answer to what was chosen last, and passes on what
// the panes ask of the page (an export of the range, the code of a function).
#include <QWidget>

#include <cstdint>
#include <memory>

class QLabel;
class QProgressBar;
class QPushButton;
class QTabWidget;

namespace auxscope {

class CodeView;
class OverviewStrip;
class RangeStatsPane;
class SearchBar;
class SpanDetailsPane;
class SpePane;
struct SpeViewData;
class TimelineState;
class TimelineView;

class TraceTimelineTab : public QWidget {
    Q_OBJECT
public:
    // `path`: the file, whose lane state the lane bar keeps; `opening`: the first status line.
    TraceTimelineTab(const QString& path, const QString& opening, QWidget* parent = nullptr);

    TimelineState* state() const { return state_; }
    TimelineView* view() const { return view_; }
    OverviewStrip* overview() const { return overview_; }
    SearchBar* searchBar() const { return search_; }
    RangeStatsPane* rangeStats() const { return rangeStats_; }
    SpanDetailsPane* spanDetails() const { return spanDetails_; }
    CodeView* codeView() const { return codeView_; }
    // The SPE tab (null until an Arm SPE file's records are shown: showSpe).
    SpePane* spePane() const { return spePane_; }
    void showSpe(std::shared_ptr<const SpeViewData> data);
    QTabWidget* analysisTabs() const { return analysisTabs_; }
    QLabel* selectionLine() const { return selectionLine_; }
    QLabel* status() const { return status_; }
    QProgressBar* progress() const { return progress_; }
    QPushButton* cancelButton() const { return cancel_; }

    void setStatus(const QString& text, bool error = false);
    // A determinate progress: `percent` of `phase` ("Resolving samples 40%").
    void setProgress(int percent, const QString& phase);
    // An indeterminate one until the first report ("Decoding %p%").
    void setBusyProgress(const QString& format);
    void showBusy(bool on);
    // Shows the code view (the page fills it).
    void showCodeTab();

signals:
    void cancelRequested();
    // Export the selected range (the Selection tab's buttons).
    void exportRequested(const QString& format, quint64 begin, quint64 end);
    // The code of `function` as `tid` (-1: any thread) executed it in [begin, end).
    void codeRequested(int32_t tid, uint32_t function, quint64 begin, quint64 end);
    // The code of the sampled profile's `function` with the samples of `event` (an
    // index into the profile's events; -1: off-CPU time, which has none) of `tid`
    // (-1: any thread) in [begin, end): a function double-clicked while the
    // selection shows samples.
    void sampleCodeRequested(int event, int32_t tid, uint32_t function, quint64 begin, quint64 end);

private:
    void updateSelectionLine();

    // The state, and the panes over the lanes that follow it.
    TimelineState* state_ = nullptr;
    TimelineView* view_ = nullptr;
    OverviewStrip* overview_ = nullptr;
    SearchBar* search_ = nullptr;
    QLabel* selectionLine_ = nullptr;
    // The answers under them, one tab each.
    QTabWidget* analysisTabs_ = nullptr;
    RangeStatsPane* rangeStats_ = nullptr;
    SpanDetailsPane* spanDetails_ = nullptr;
    CodeView* codeView_ = nullptr;
    SpePane* spePane_ = nullptr;
    // The status line: what is being built or decoded, how far, and Cancel.
    QLabel* status_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancel_ = nullptr;
};

}  // namespace auxscope
