// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/TimelineView.h"

#include <QCoreApplication>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPointer>
#include <QScrollBar>
#include <QTimer>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>
#include <map>
#include <thread>
#include <tuple>
#include <unordered_map>

namespace auxscope {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
// Summary cells: the function covering most of a bucket (24 bits), how much of
// the bucket it covers (7 bits, of 127) and whether a gap is in it (top bit).
constexpr uint32_t kGapBit = 0x80000000u, kFnMask = 0x00ffffffu, kEmptyFn = 0x00ffffffu;
constexpr uint32_t kEmptyCell = kEmptyFn;
constexpr int kMaxRows = 128;          // flame-chart rows shown per thread
constexpr size_t kSummaryMin = 4096;   // smaller stores are walked whole
constexpr size_t kWalkAlways = 20000;  // fewer spans in view: walk them (exact)
constexpr uint32_t kMaxBuckets = 1u << 17;
constexpr double kLabelMinWidth = 48;
constexpr int kRunBand = 9;    // thread lanes: run slices on top, sample ticks below
constexpr int kLossStrip = 5;  // CPU lanes: loss markers along the top

inline uint32_t coverOf(uint32_t cell) {
    return (cell >> 24) & 0x7f;
}
inline uint32_t fnOf(uint32_t cell) {
    return cell & kFnMask;
}

uint32_t fnv1a(const std::string& s) {
    uint32_t h = 2166136261u;
    for (unsigned char c : s)
        h = (h ^ c) * 16777619u;
    return h;
}

QString formatDuration(double ns) {
    const double a = std::fabs(ns);
    if (a < 1e3) return QString("%1 ns").arg(ns, 0, 'f', 0);
    if (a < 1e6) return QString("%1 µs").arg(ns / 1e3, 0, 'f', 2);
    if (a < 1e9) return QString("%1 ms").arg(ns / 1e6, 0, 'f', 3);
    return QString("%1 s").arg(ns / 1e9, 0, 'f', 4);
}

// An axis label: `ns` after the start, in the unit of the tick step.
QString formatTick(double ns, double step) {
    double unit = 1;
    const char* name = "ns";
    if (step >= 1e9)
        unit = 1e9, name = "s";
    else if (step >= 1e6)
        unit = 1e6, name = "ms";
    else if (step >= 1e3)
        unit = 1e3, name = "µs";
    const double v = ns / unit, s = step / unit;
    const int decimals = s >= 1 ? 0 : std::min(6, int(std::ceil(-std::log10(s) - 1e-9)));
    return QString("%1 %2").arg(v, 0, 'f', decimals).arg(name);
}

}  // namespace

// Per-thread summary (see the header): level 0 has n[0] buckets of bucketDur[0]
// ns from t0 up to extentEnd; each further level halves the count.
struct TimelineView::Lod {
    int rows = 1;
    size_t spans = 0;
    uint64_t t0 = 0, extentEnd = 0;
    std::vector<uint64_t> bucketDur;
    std::vector<uint32_t> n;
    std::vector<std::vector<std::vector<uint32_t>>> cells;  // [level][depth][bucket]
    std::vector<std::vector<uint32_t>> openAt;              // [depth][bucket]: span covering its start
    std::vector<uint32_t> tail;                             // [depth]: a span reaching past extentEnd
    bool summarized() const { return !cells.empty(); }
};

namespace {

std::unique_ptr<TimelineView::Lod> buildLod(const SpanStore& store, uint64_t decodedEnd) {
    auto lod = std::make_unique<TimelineView::Lod>();
    lod->spans = store.size();
    if (store.empty()) return lod;
    const size_t size = store.size();
    int maxDepth = 0;
    if (size < kSummaryMin) {
        for (size_t i = 0; i < size; ++i)
            maxDepth = std::max(maxDepth, store.at(i).depth);
        lod->rows = std::min(maxDepth + 1, kMaxRows);
        return lod;
    }
    const uint64_t t0 = store.firstStart();
    uint64_t extentEnd = store.lastStart() + 1;
    if (decodedEnd > extentEnd && decodedEnd - t0 <= 2 * (extentEnd - t0)) extentEnd = decodedEnd;
    uint32_t n0 = 64;
    while (n0 < kMaxBuckets && uint64_t(n0) * 2 * 64 <= size)
        n0 *= 2;
    uint64_t bd = std::max<uint64_t>(1, (extentEnd - t0 + n0 - 1) / n0);
    n0 = uint32_t(std::min<uint64_t>(n0, (extentEnd - t0 + bd - 1) / bd));
    n0 = std::max<uint32_t>(n0, 1);
    lod->t0 = t0;
    lod->extentEnd = t0 + uint64_t(n0) * bd;
    extentEnd = lod->extentEnd;
    auto& cells0 = lod->cells.emplace_back();
    auto& open = lod->openAt;
    for (size_t i = 0; i < size; ++i) {
        const Span s = store.at(i);
        maxDepth = std::max(maxDepth, s.depth);
        if (s.depth < 0 || s.depth >= kMaxRows) continue;
        const size_t d = size_t(s.depth);
        if (cells0.size() <= d) {
            cells0.resize(d + 1);
            open.resize(d + 1);
            lod->tail.resize(d + 1, kNone);
        }
        if (cells0[d].empty()) {
            cells0[d].assign(n0, kEmptyCell);
            open[d].assign(n0, kNone);
        }
        const uint64_t a = std::max(s.start, t0), e = std::max(s.end, s.start + 1);
        if (e > extentEnd) lod->tail[d] = uint32_t(i);
        if (a >= extentEnd) continue;
        const uint64_t b0 = (a - t0) / bd, b1 = (std::min(e, extentEnd) - 1 - t0) / bd;
        uint32_t* row = cells0[d].data();
        const uint32_t fn = std::min<uint32_t>(s.function, kEmptyFn - 1);
        for (uint64_t b = b0; b <= b1; ++b) {
            const uint64_t bs = t0 + b * bd, be = bs + bd;
            if (s.start <= bs) open[d][b] = uint32_t(i);
            uint32_t& cell = row[b];
            if (s.isGap()) {
                cell |= kGapBit;
                continue;
            }
            const uint64_t overlap = std::min(e, be) - std::max(a, bs);
            const uint32_t cover = std::max<uint32_t>(1, uint32_t((overlap * 127 + bd - 1) / bd));
            if (fnOf(cell) == kEmptyFn || cover > coverOf(cell)) cell = (cell & kGapBit) | (cover << 24) | fn;
        }
    }
    lod->rows = std::min(maxDepth + 1, kMaxRows);
    lod->bucketDur.push_back(bd);
    lod->n.push_back(n0);
    // Coarser levels: each cell merges two; the better-covering function wins, gaps stay.
    while (lod->n.back() > 1) {
        const auto& prev = lod->cells.back();
        const uint32_t pn = lod->n.back(), nn = (pn + 1) / 2;
        std::vector<std::vector<uint32_t>> next(prev.size());
        for (size_t d = 0; d < prev.size(); ++d) {
            if (prev[d].empty()) continue;
            next[d].resize(nn);
            for (uint32_t b = 0; b < nn; ++b) {
                const uint32_t x = prev[d][2 * b], y = 2 * b + 1 < pn ? prev[d][2 * b + 1] : kEmptyCell;
                const uint32_t pick = coverOf(x) >= coverOf(y) ? x : y;
                const uint32_t cover = (coverOf(x) + coverOf(y) + 1) / 2;
                next[d][b] = ((x | y) & kGapBit) | (cover << 24) | fnOf(pick);
            }
        }
        lod->cells.push_back(std::move(next));
        lod->n.push_back(nn);
        lod->bucketDur.push_back(lod->bucketDur.back() * 2);
    }
    return lod;
}

}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMinimumSize(300, 150);
    vbar_ = new QScrollBar(Qt::Vertical, this);
    vbar_->setObjectName("timelineScroll");
    connect(vbar_, &QScrollBar::valueChanged, this, [this] { update(); });
    debounce_ = new QTimer(this);
    debounce_->setSingleShot(true);
    debounce_->setInterval(150);
    connect(debounce_, &QTimer::timeout, this, [this] {
        if (viewBegin_ == emittedBegin_ && viewEnd_ == emittedEnd_) return;
        emittedBegin_ = viewBegin_, emittedEnd_ = viewEnd_;
        emit visibleRangeChanged(viewBegin_, viewEnd_);
    });
}

TimelineView::~TimelineView() = default;

void TimelineView::setDebounceMs(int ms) {
    debounce_->setInterval(ms);
}

QColor TimelineView::functionColor(const std::string& name) {
    const uint32_t h = fnv1a(name);
    // Hues away from pure red, which gaps use.
    return QColor::fromHsv(int(25 + h % 310), int(90 + (h >> 9) % 90), int(205 + (h >> 17) % 45));
}

QColor TimelineView::threadColor(int32_t tid) {
    const uint32_t h = fnv1a(std::to_string(tid)) * 2654435761u;
    return QColor::fromHsv(int(h % 360), int(70 + (h >> 11) % 80), int(190 + (h >> 19) % 50));
}

QColor TimelineView::processColor(int32_t pid) {
    return threadColor(pid);
}

QColor TimelineView::sampleColor() {
    return QColor(35, 35, 45);
}

QColor TimelineView::lossColor(int kind) {
    switch (kind) {
        case SidebandLanes::Loss::Throttle:
            return QColor(235, 130, 0);
        case SidebandLanes::Loss::Aux:
            return QColor(150, 0, 210);
        default:
            return QColor(220, 0, 0);
    }
}

QColor TimelineView::gapColor() {
    return QColor(255, 196, 196);
}

QColor TimelineView::gapHatchColor() {
    return QColor(200, 0, 0);
}

QColor TimelineView::colorOf(uint32_t function) const {
    if (function >= colors_.size()) {
        const size_t n = data_ && data_->functions ? data_->functions->size() : 0;
        colors_.resize(std::max<size_t>(function + 1, n));
    }
    QColor& c = colors_[function];
    if (!c.isValid()) c = functionColor(functionName(function).toStdString());
    return c;
}

QString TimelineView::functionName(uint32_t id) const {
    if (data_ && data_->functions && id < data_->functions->size())
        return QString::fromStdString((*data_->functions)[id].name);
    return id == FunctionTable::kUnknown ? QString("[unknown]") : QString("function %1").arg(id);
}

std::vector<std::unique_ptr<TimelineView::Lod>> TimelineView::buildLods(const TimelineData& data) {
    // The summaries, once per store, on a few threads when there is much to read.
    const size_t n = data.threads.size();
    std::vector<std::unique_ptr<Lod>> lods(n);
    size_t total = 0;
    for (const auto& t : data.threads)
        total += t.spans.size();
    const unsigned workers =
        total > 1'000'000 ? std::min<unsigned>(unsigned(n), std::max(1u, std::thread::hardware_concurrency()))
                          : 1;
    if (workers > 1) {
        std::atomic<size_t> next{0};
        std::vector<std::future<void>> jobs;
        for (unsigned w = 0; w < workers; ++w)
            jobs.push_back(std::async(std::launch::async, [&] {
                for (size_t i; (i = next++) < n;)
                    lods[i] = buildLod(data.threads[i].spans, data.decodedEnd);
            }));
        for (auto& j : jobs)
            j.get();
    } else {
        for (size_t i = 0; i < n; ++i)
            lods[i] = buildLod(data.threads[i].spans, data.decodedEnd);
    }
    return lods;
}

void TimelineView::setData(std::shared_ptr<const TimelineData> data) {
    const uint64_t generation = ++dataGeneration_;
    size_t total = 0;
    if (data)
        for (const auto& t : data->threads)
            total += t.spans.size();
    if (!data || !asyncSummaries_ || total < asyncMinSpans_) {
        std::vector<std::unique_ptr<Lod>> lods;
        if (data) lods = buildLods(*data);
        install(std::move(data), std::move(lods));
        return;
    }
    // Large: summarize on a worker thread, showing the current data until then.
    preparing_ = true;
    QPointer<TimelineView> self(this);
    std::thread([self, data = std::move(data), generation] {
        auto lods = std::make_shared<std::vector<std::unique_ptr<Lod>>>(buildLods(*data));
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, data, lods, generation] {
                if (!self || generation != self->dataGeneration_) return;  // a newer setData won
                self->preparing_ = false;
                self->install(data, std::move(*lods));
            },
            Qt::QueuedConnection);
    }).detach();
}

void TimelineView::install(std::shared_ptr<const TimelineData> data, std::vector<std::unique_ptr<Lod>> lods) {
    preparing_ = false;
    const bool first = !data_ || viewEnd_ <= viewBegin_;
    if (!data_ || !data || data_->functions != data->functions) colors_.clear();
    data_ = std::move(data);
    selected_ = {};
    lods_ = std::move(lods);
    layoutTracks();
    emit dataShown();
    if (!data_) {
        update();
        return;
    }
    const uint64_t oldBegin = viewBegin_, oldEnd = viewEnd_;
    const uint64_t b = data_->begin, e = std::max(data_->end, data_->begin + 1);
    if (follow_) {
        // The newest `followSeconds_`, or everything kept until the user zooms.
        const uint64_t w = followSeconds_ > 0 ? uint64_t(followSeconds_ * 1e9) : e - b;
        viewEnd_ = e;
        viewBegin_ = e - std::min(w, e - b);
    } else if (first) {
        viewBegin_ = b, viewEnd_ = e;
    } else {
        // Keep the zoom; only keep it inside the recording.
        const uint64_t w = std::min(viewEnd_ - viewBegin_, e - b);
        if (viewBegin_ < b) viewBegin_ = b;
        if (viewBegin_ + w > e) viewBegin_ = e - w;
        viewEnd_ = viewBegin_ + w;
    }
    if (first && !follow_) {
        // The first data shows whole: nothing to ask for until the range moves.
        emittedBegin_ = emittedEnd_ = 0;
        update();
    } else if (viewBegin_ != oldBegin || viewEnd_ != oldEnd) {
        rangeChanged();
    } else {
        update();
    }
}

void TimelineView::setFollowLatest(bool follow, double seconds) {
    follow_ = follow;
    followSeconds_ = seconds;
    if (follow_ && data_) {
        const uint64_t b = data_->begin, e = std::max(data_->end, data_->begin + 1);
        const uint64_t w = followSeconds_ > 0 ? std::min(uint64_t(followSeconds_ * 1e9), e - b) : e - b;
        setVisibleRange(e - w, e);
    }
}

void TimelineView::setUndecodedHint(const QString& text) {
    if (hint_ == text) return;
    hint_ = text;
    update();
}

uint64_t TimelineView::minWidth() const {
    return std::max<uint64_t>(50, uint64_t(plotWidth()) / 10);
}

void TimelineView::setVisibleRange(uint64_t begin, uint64_t end) {
    if (end <= begin) end = begin + 1;
    uint64_t w = std::max(end - begin, minWidth());
    if (data_ && data_->end > data_->begin) {
        const uint64_t b = data_->begin, e = data_->end;
        w = std::min(w, e - b);
        begin = std::clamp(begin, b, e - w);
    }
    if (begin == viewBegin_ && begin + w == viewEnd_) return;
    viewBegin_ = begin;
    viewEnd_ = begin + w;
    rangeChanged();
}

void TimelineView::rangeChanged() {
    update();
    debounce_->start();
}

int TimelineView::plotWidth() const {
    return std::max(1, width() - kLabelWidth - (vbar_ ? vbar_->sizeHint().width() : 0));
}

double TimelineView::xOf(uint64_t t) const {
    const double w = double(viewEnd_ - viewBegin_);
    return kLabelWidth + (double(t) - double(viewBegin_)) * plotWidth() / (w > 0 ? w : 1);
}

uint64_t TimelineView::timeAt(double x) const {
    const double w = double(viewEnd_ - viewBegin_);
    const double t = double(viewBegin_) + (x - kLabelWidth) * w / plotWidth();
    return t <= 0 ? 0 : uint64_t(t);
}

int TimelineView::contentTop() const {
    return kAxisHeight - vbar_->value();
}

void TimelineView::layoutTracks() {
    tracks_.clear();
    threadFirstTrack_.assign(data_ ? data_->threads.size() : 0, kNoThread);
    int y = 0;
    if (!data_) {
        contentHeight_ = y;
        updateScrollBar();
        return;
    }
    for (const auto& [cpu, slices] : data_->cpus) {
        tracks_.push_back({Track::Cpu, cpu, 0, 0, y, kLaneHeight});
        y += kLaneHeight;
    }
    y += 4;
    // A thread: its header (with lanes: its runs and samples), then its flame chart.
    auto addThread = [&](long lane, size_t span) {
        Track header{Track::ThreadHeader, -1, span, 0, y, kHeaderHeight};
        header.lane = lane;
        if (span != kNoThread) threadFirstTrack_[span] = tracks_.size();
        tracks_.push_back(header);
        y += kHeaderHeight;
        if (span == kNoThread) return;
        const int rows = lods_[span] ? std::max(1, lods_[span]->rows) : 1;
        for (int d = 0; d < rows; ++d) {
            tracks_.push_back({Track::ThreadRow, -1, span, d, y, kRowHeight});
            y += kRowHeight;
        }
        y += 2;
    };
    const SidebandLanes* lanes = data_->lanes.get();
    if (!lanes) {
        for (size_t i = 0; i < data_->threads.size(); ++i)
            addThread(-1, i);
        contentHeight_ = y;
        updateScrollBar();
        return;
    }
    // Grouped by process, in the lanes' order; threads with spans join their
    // process's lane, or a group of their own when the sideband has none for them.
    std::unordered_map<int32_t, size_t> spanOf;
    std::map<int32_t, std::vector<size_t>> spanOnly;  // by pid
    for (size_t i = 0; i < data_->threads.size(); ++i) {
        spanOf[data_->threads[i].tid] = i;
        if (lanes->threadIndex(data_->threads[i].tid) < 0) spanOnly[data_->threads[i].pid].push_back(i);
    }
    auto addProcess = [&](int32_t pid, long index) {
        Track t{Track::ProcessHeader, -1, kNoThread, 0, y, kProcessHeight};
        t.pid = pid;
        t.process = index;
        tracks_.push_back(t);
        y += kProcessHeight;
    };
    for (size_t p = 0; p < lanes->processes.size(); ++p) {
        const SidebandLanes::Process& proc = lanes->processes[p];
        addProcess(proc.pid, long(p));
        std::vector<std::tuple<int32_t, long, size_t>> members;  // tid, lane, span
        for (size_t li : proc.threads) {
            const int32_t tid = lanes->threads[li].tid;
            auto found = spanOf.find(tid);
            members.emplace_back(tid, long(li), found == spanOf.end() ? kNoThread : found->second);
        }
        if (auto extra = spanOnly.find(proc.pid); extra != spanOnly.end()) {
            for (size_t i : extra->second)
                members.emplace_back(data_->threads[i].tid, -1, i);
            spanOnly.erase(extra);
        }
        std::sort(members.begin(), members.end());
        for (const auto& [tid, lane, span] : members)
            addThread(lane, span);
        y += 2;
    }
    for (const auto& [pid, spans] : spanOnly) {
        addProcess(pid, -1);
        for (size_t i : spans)
            addThread(-1, i);
        y += 2;
    }
    contentHeight_ = y;
    updateScrollBar();
}

void TimelineView::updateScrollBar() {
    const int visible = std::max(0, height() - kAxisHeight);
    vbar_->setRange(0, std::max(0, contentHeight_ - visible));
    vbar_->setPageStep(visible);
    vbar_->setSingleStep(kRowHeight);
}

void TimelineView::resizeEvent(QResizeEvent*) {
    const int w = vbar_->sizeHint().width();
    vbar_->setGeometry(width() - w, kAxisHeight, w, height() - kAxisHeight);
    updateScrollBar();
}

int TimelineView::rowY(int32_t tid, int depth) const {
    if (!data_) return -1;
    for (size_t i = 0; i < data_->threads.size(); ++i) {
        if (data_->threads[i].tid != tid) continue;
        const size_t first = threadFirstTrack_[i] + 1 + size_t(depth);
        if (depth < 0 || first >= tracks_.size() || tracks_[first].kind != Track::ThreadRow ||
            tracks_[first].thread != i)
            return -1;
        return contentTop() + tracks_[first].y;
    }
    return -1;
}

int TimelineView::threadLaneY(int32_t tid) const {
    if (!data_) return -1;
    for (const Track& t : tracks_) {
        if (t.kind != Track::ThreadHeader) continue;
        if (t.lane >= 0 && data_->lanes && data_->lanes->threads[size_t(t.lane)].tid == tid)
            return contentTop() + t.y;
        if (t.thread != kNoThread && data_->threads[t.thread].tid == tid) return contentTop() + t.y;
    }
    return -1;
}

int TimelineView::processHeaderY(int32_t pid) const {
    for (const Track& t : tracks_)
        if (t.kind == Track::ProcessHeader && t.pid == pid) return contentTop() + t.y;
    return -1;
}

int TimelineView::cpuLaneY(int cpu) const {
    for (const Track& t : tracks_)
        if (t.kind == Track::Cpu && t.cpu == cpu) return contentTop() + t.y;
    return -1;
}

const TimelineView::Track* TimelineView::trackAt(int y) const {
    if (y < kAxisHeight) return nullptr;
    const int cy = y - contentTop();
    auto it =
        std::upper_bound(tracks_.begin(), tracks_.end(), cy, [](int v, const Track& t) { return v < t.y; });
    if (it == tracks_.begin()) return nullptr;
    const Track& t = *(it - 1);
    return cy < t.y + t.height ? &t : nullptr;
}

// ---- Painting ----

void TimelineView::paintEvent(QPaintEvent*) {
    frame_ = {};
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    if (!data_) {
        p.setPen(Qt::gray);
        p.drawText(rect(), Qt::AlignCenter, hint_.isEmpty() ? QString("No timeline yet") : hint_);
        return;
    }
    const int plotRight = kLabelWidth + plotWidth();
    const int top = contentTop();
    // Tracks in view.
    auto first = std::upper_bound(tracks_.begin(), tracks_.end(), kAxisHeight - top,
                                  [](int v, const Track& t) { return v < t.y + t.height; });
    p.setClipRect(QRect(0, kAxisHeight, plotRight, height() - kAxisHeight));
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
    p.setFont(small);
    for (auto it = first; it != tracks_.end() && top + it->y < height();) {
        const Track& t = *it;
        const int y = top + t.y;
        if (t.kind == Track::Cpu) {
            paintCpuLane(p, t, y);
            p.setPen(QColor(200, 200, 200));
            p.drawLine(kLabelWidth - 1, y, kLabelWidth - 1, y + t.height - 1);
            ++it;
            continue;
        }
        if (t.kind == Track::ProcessHeader) {
            paintProcessHeader(p, t, y);
            ++it;
            continue;
        }
        if (t.kind == Track::ThreadHeader && data_->lanes) {
            paintThreadLane(p, t, y);
            ++it;
            continue;
        }
        if (t.kind == Track::ThreadHeader) {
            const auto& th = data_->threads[t.thread];
            p.fillRect(QRect(0, y, plotRight, t.height), QColor(240, 242, 245));
            QFont bold = small;
            bold.setBold(true);
            p.setFont(bold);
            p.setPen(QColor(30, 30, 30));
            const QString title =
                QString("%1  tid %2  pid %3").arg(QString::fromStdString(th.name)).arg(th.tid).arg(th.pid);
            p.drawText(QRect(6, y, plotRight - 12, t.height), Qt::AlignVCenter | Qt::AlignLeft, title);
            p.setFont(small);
            ++it;
            continue;
        }
        // A run of a thread's rows: painted together, one walk of its spans.
        auto last = it;
        while (last + 1 != tracks_.end() && (last + 1)->kind == Track::ThreadRow &&
               (last + 1)->thread == t.thread && top + (last + 1)->y < height())
            ++last;
        const int firstRow = it->depth, lastRow = last->depth;
        const int y0 = top + it->y - firstRow * kRowHeight;
        p.setPen(QColor(150, 150, 150));
        for (auto r = it; r <= last; ++r)
            if (r->depth % 5 == 0 && r->depth)
                p.drawText(QRect(kLabelWidth - 40, top + r->y, 34, kRowHeight),
                           Qt::AlignRight | Qt::AlignVCenter, QString::number(r->depth));
        paintThreadRows(p, t.thread, firstRow, lastRow, y0);
        p.setPen(QColor(200, 200, 200));
        p.drawLine(kLabelWidth - 1, top + it->y, kLabelWidth - 1, top + last->y + last->height - 1);
        it = last + 1;
    }
    p.setClipping(false);
    paintAxis(p);
    paintOverlays(p);
    if (hasFocus()) {
        p.setPen(QPen(palette().highlight().color(), 1));
        p.drawRect(rect().adjusted(0, 0, -1, -1));
    }
}

void TimelineView::paintAxis(QPainter& p) {
    const int plotRight = kLabelWidth + plotWidth();
    p.fillRect(QRect(0, 0, width(), kAxisHeight), QColor(248, 248, 248));
    p.setPen(QColor(190, 190, 190));
    p.drawLine(0, kAxisHeight - 1, width(), kAxisHeight - 1);
    const double span = double(viewEnd_ - viewBegin_);
    if (span <= 0) return;
    const double pxDur = span / plotWidth();
    double step = std::pow(10.0, std::floor(std::log10(std::max(1.0, pxDur * 90))));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (step * m >= pxDur * 90) {
            step *= m;
            break;
        }
    step = std::max(step, 1.0);
    const double origin = double(data_->begin);
    const double rel0 = double(viewBegin_) - origin;
    double tick = std::ceil(rel0 / step) * step;
    p.setPen(QColor(60, 60, 60));
    p.drawText(QRect(4, 0, kLabelWidth - 8, kAxisHeight), Qt::AlignVCenter | Qt::AlignLeft,
               "+" + formatDuration(span) + " in view");
    for (int guard = 0; guard < 1000 && tick <= rel0 + span; ++guard, tick += step) {
        const double x = kLabelWidth + (tick - rel0) / pxDur;
        if (x > plotRight) break;
        p.setPen(QColor(120, 120, 120));
        p.drawLine(QPointF(x, kAxisHeight - 7), QPointF(x, kAxisHeight - 1));
        p.setPen(QColor(40, 40, 40));
        p.drawText(QRectF(x + 3, 0, 120, kAxisHeight - 4), Qt::AlignVCenter | Qt::AlignLeft,
                   formatTick(tick, step));
    }
}

void TimelineView::paintCpuLane(QPainter& p, const Track& track, int y) {
    p.fillRect(QRect(0, y, kLabelWidth, track.height), QColor(250, 250, 250));
    p.setPen(QColor(40, 40, 40));
    p.drawText(QRect(6, y, kLabelWidth - 12, track.height), Qt::AlignVCenter,
               track.cpu < 0 ? QString("no CPU") : QString("CPU %1").arg(track.cpu));
    const auto found = data_->cpus.find(track.cpu);
    if (found == data_->cpus.end()) return;
    const auto& slices = found->second;
    const double pxDur = double(viewEnd_ - viewBegin_) / plotWidth();
    const int h = track.height - 3;
    p.save();
    p.setClipRect(QRect(kLabelWidth, y, plotWidth(), track.height));
    if (slices.empty() && data_->lanes) {
        // A CPU the sideband has records from but no switch timeline for.
        p.setPen(QColor(150, 150, 150));
        p.drawText(QRect(kLabelWidth + 6, y, plotWidth() - 12, track.height),
                   Qt::AlignVCenter | Qt::AlignLeft,
                   track.cpu < 0 ? QString("records that name no CPU")
                                 : QString("no context switches recorded on this CPU"));
    } else if (!slices.empty()) {
        // Idle: a thin line from the first thread on (before it nothing is known);
        // the threads are painted over it.
        const double a = (double(slices.front().start) - double(viewBegin_)) / pxDur;
        const double b = (double(std::max(slices.back().end, data_->end)) - double(viewBegin_)) / pxDur;
        if (b > 0 && a < plotWidth()) {
            p.setPen(QColor(175, 175, 185));
            const int mid = y + 1 + h / 2;
            p.drawLine(QPointF(kLabelWidth + std::max(0.0, a), mid),
                       QPointF(kLabelWidth + std::min(double(plotWidth()), b), mid));
        }
    }
    auto nameOf = [&](int32_t tid) {
        auto it = data_->threadNames.find(tid);
        if (it != data_->threadNames.end()) return QString::fromStdString(it->second);
        for (const auto& t : data_->threads)
            if (t.tid == tid) return QString::fromStdString(t.name);
        return QString("tid %1").arg(tid);
    };
    // Coloured by process: slices of one process merged in a pixel keep its colour.
    auto key = [](const TimelineData::CpuSlice& s) {
        return s.pid > 0 ? int64_t(s.pid) : -int64_t(s.tid) - 1;
    };
    auto draw = [&](double x0, double x1, const TimelineData::CpuSlice& s, bool mixed) {
        const int a = int(std::floor(x0)), b = std::max(a + 1, int(std::ceil(x1)));
        const QRect r(kLabelWidth + a, y + 1, b - a, h);
        p.fillRect(r, mixed ? QColor(150, 150, 160) : s.pid > 0 ? processColor(s.pid) : threadColor(s.tid));
        ++frame_.rects;
        if (!mixed && r.width() >= kLabelMinWidth) {
            p.setPen(QColor(20, 20, 20));
            const QRect visible = r.intersected(QRect(kLabelWidth, y, plotWidth(), track.height));
            p.drawText(visible.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                       p.fontMetrics().elidedText(QString("%1 %2").arg(nameOf(s.tid)).arg(s.tid),
                                                  Qt::ElideRight, visible.width() - 5));
        }
    };
    auto it = std::upper_bound(slices.begin(), slices.end(), viewBegin_,
                               [](uint64_t t, const TimelineData::CpuSlice& s) { return t < s.start; });
    if (it != slices.begin()) --it;
    bool pending = false, mixed = false;
    double px0 = 0, px1 = 0;
    TimelineData::CpuSlice ps;
    auto flush = [&] {
        if (pending) draw(px0, px1, ps, mixed);
        pending = false;
    };
    while (it != slices.end() && it->start < viewEnd_) {
        const auto& s = *it;
        if (s.end <= viewBegin_ || s.tid <= 0) {
            ++it;
            continue;
        }
        const double x0 = std::max(-2.0, (double(s.start) - double(viewBegin_)) / pxDur);
        const double x1 = std::min(plotWidth() + 2.0, (double(s.end) - double(viewBegin_)) / pxDur);
        if (x1 - x0 >= 1) {
            flush();
            draw(x0, x1, s, false);
            ++it;
            continue;
        }
        if (pending && x0 < px1 + 1) {
            px1 = std::max(px1, x1);
            mixed = mixed || key(s) != key(ps);
        } else {
            flush();
            pending = true, mixed = false;
            px0 = x0, px1 = x1, ps = s;
        }
        // Skip the rest of this pixel column: its slices merge anyway. The last
        // one skipped may reach further: it is looked at next.
        // Galloping from here: the next column's slice is a few slices on, and a
        // binary search over the whole rest of the lane (a million switches)
        // misses the cache at every step, in every column of every lane.
        const uint64_t next = viewBegin_ + uint64_t((std::floor(x0) + 1) * pxDur) + 1;
        auto before = [](const TimelineData::CpuSlice& c, uint64_t t) { return c.start < t; };
        auto lo = it + 1;
        size_t step = 1;
        while (slices.end() - lo > ptrdiff_t(step) && (lo + ptrdiff_t(step))->start < next) {
            lo += ptrdiff_t(step);
            step *= 2;
        }
        auto jump = std::lower_bound(
            lo, slices.end() - lo > ptrdiff_t(step) ? lo + ptrdiff_t(step) + 1 : slices.end(), next, before);
        if (jump - it > 2) {
            auto prev = jump - 1;
            if (prev->tid > 0 && key(*prev) != key(ps)) mixed = true;
            px1 =
                std::max(px1, std::min(plotWidth() + 2.0, (double(prev->end) - double(viewBegin_)) / pxDur));
            it = jump;
        } else {
            ++it;
        }
    }
    flush();
    paintLosses(p, track.cpu, y, track.height);
    p.restore();
}

void TimelineView::paintLosses(QPainter& p, int cpu, int y, int height) {
    if (!data_->lanes) return;
    const auto found = data_->lanes->losses.find(cpu);
    if (found == data_->lanes->losses.end()) return;
    const auto& losses = found->second;
    const double pxDur = double(viewEnd_ - viewBegin_) / plotWidth();
    auto xOfTime = [&](uint64_t t) { return (double(t) - double(viewBegin_)) / pxDur; };
    // Throttles first: a translucent band for as long as sampling stopped.
    for (const SidebandLanes::Loss& l : losses) {
        if (l.kind != SidebandLanes::Loss::Throttle) continue;
        const uint64_t end = l.end ? l.end : data_->end;
        if (end < viewBegin_ || l.time > viewEnd_) continue;
        const double a = std::max(-2.0, xOfTime(l.time)), b = std::min(plotWidth() + 2.0, xOfTime(end));
        QColor band = lossColor(l.kind);
        band.setAlpha(70);
        p.fillRect(QRectF(kLabelWidth + a, y, std::max(1.0, b - a), height), band);
    }
    // Then a marker per loss (one per pixel column: the first there names the
    // colour): a strip along the top of the lane, and a triangle where markers
    // are far enough apart to be told apart, so the threads stay visible below.
    auto it = std::lower_bound(losses.begin(), losses.end(),
                               viewBegin_ > uint64_t(3 * pxDur) ? viewBegin_ - uint64_t(3 * pxDur) : 0,
                               [](const SidebandLanes::Loss& l, uint64_t t) { return l.time < t; });
    double lastMarker = -1e9;
    while (it != losses.end() && double(it->time) <= double(viewEnd_) + 3 * pxDur) {
        const double x = std::floor(xOfTime(it->time));
        const QColor c = lossColor(it->kind);
        const int xi = kLabelWidth + int(x);
        const uint64_t next = uint64_t(std::max(0.0, double(viewBegin_) + (x + 1) * pxDur)) + 1;
        auto jump = std::lower_bound(it + 1, losses.end(), next,
                                     [](const SidebandLanes::Loss& l, uint64_t t) { return l.time < t; });
        const bool isolated = (jump == losses.end() || xOfTime(jump->time) - x >= 8) && x - lastMarker >= 8;
        p.fillRect(QRect(xi - 1, y, 2, kLossStrip), c);
        if (isolated) {
            const QPointF tri[3] = {QPointF(xi - 4.5, y), QPointF(xi + 4.5, y), QPointF(xi, y + 9)};
            p.setPen(Qt::NoPen);
            p.setBrush(c);
            p.drawPolygon(tri, 3);
            p.fillRect(QRect(xi - 1, y, 2, height), c);
        }
        lastMarker = x;
        ++frame_.rects;
        it = jump > it ? jump : it + 1;
    }
    p.setBrush(Qt::NoBrush);
}

void TimelineView::paintProcessHeader(QPainter& p, const Track& track, int y) {
    const int plotRight = kLabelWidth + plotWidth();
    p.fillRect(QRect(0, y, plotRight, track.height), QColor(228, 233, 240));
    p.fillRect(QRect(0, y, 4, track.height), processColor(track.pid));
    QFont bold = p.font();
    bold.setBold(true);
    const QFont normal = p.font();
    p.setFont(bold);
    p.setPen(QColor(25, 25, 35));
    QString title;
    const SidebandLanes* lanes = data_->lanes.get();
    if (lanes && track.process >= 0) {
        const SidebandLanes::Process& proc = lanes->processes[size_t(track.process)];
        title = proc.pid > 0 ? QString("%1  pid %2").arg(QString::fromStdString(proc.name)).arg(proc.pid)
                             : QString::fromStdString(proc.name);
        title += QString("  ·  %1 %2  ·  %3 on CPU  ·  %4 samples")
                     .arg(proc.threads.size())
                     .arg(proc.threads.size() == 1 ? "thread" : "threads")
                     .arg(formatDuration(double(proc.runTime)))
                     .arg(proc.samples);
    } else {
        title = track.pid > 0 ? QString("pid %1").arg(track.pid) : QString("unknown process");
    }
    p.drawText(QRect(8, y, plotRight - 14, track.height), Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(title, Qt::ElideRight, plotRight - 14));
    p.setFont(normal);
}

void TimelineView::paintThreadLane(QPainter& p, const Track& track, int y) {
    const int plotRight = kLabelWidth + plotWidth();
    const SidebandLanes::Thread* lane =
        track.lane >= 0 ? &data_->lanes->threads[size_t(track.lane)] : nullptr;
    const TimelineData::Thread* spans = track.thread != kNoThread ? &data_->threads[track.thread] : nullptr;
    const int32_t pid = lane ? lane->pid : spans->pid, tid = lane ? lane->tid : spans->tid;
    const QString name = QString::fromStdString(lane ? lane->name : spans->name);
    p.fillRect(QRect(0, y, kLabelWidth, track.height), QColor(246, 247, 249));
    p.setPen(QColor(225, 228, 232));
    p.drawLine(0, y + track.height - 1, plotRight, y + track.height - 1);
    p.setPen(QColor(30, 30, 30));
    p.drawText(QRect(14, y, kLabelWidth - 20, track.height), Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(
                   name == QString("tid %1").arg(tid) ? name : QString("%1 %2").arg(name).arg(tid),
                   Qt::ElideMiddle, kLabelWidth - 20));
    p.setPen(QColor(200, 200, 200));
    p.drawLine(kLabelWidth - 1, y, kLabelWidth - 1, y + track.height - 1);
    if (!lane) return;
    const double pxDur = double(viewEnd_ - viewBegin_) / plotWidth();
    const double W = plotWidth();
    p.save();
    p.setClipRect(QRect(kLabelWidth, y, plotWidth(), track.height));
    // Runs, merged where narrower than a pixel.
    const QColor run = pid > 0 ? processColor(pid) : threadColor(tid);
    const auto& runs = lane->runs;
    auto it = std::upper_bound(runs.begin(), runs.end(), viewBegin_,
                               [](uint64_t t, const SidebandLanes::Run& r) { return t < r.start; });
    if (it != runs.begin()) --it;
    double px0 = 0, px1 = -1e300;
    bool pending = false;
    auto flush = [&] {
        if (!pending) return;
        const int a = int(std::floor(px0)), b = std::max(a + 1, int(std::ceil(px1)));
        p.fillRect(QRect(kLabelWidth + a, y + 3, b - a, kRunBand), run);
        ++frame_.rects;
        pending = false;
    };
    while (it != runs.end() && it->start < viewEnd_) {
        if (it->end <= viewBegin_) {
            ++it;
            continue;
        }
        const double x0 = std::max(-2.0, (double(it->start) - double(viewBegin_)) / pxDur);
        const double x1 = std::min(W + 2.0, (double(it->end) - double(viewBegin_)) / pxDur);
        if (pending && x0 < px1 + 1) {
            px1 = std::max(px1, x1);
        } else {
            flush();
            pending = true, px0 = x0, px1 = x1;
        }
        const uint64_t next = viewBegin_ + uint64_t((std::floor(x1) + 1) * pxDur) + 1;
        auto jump = std::lower_bound(it + 1, runs.end(), next,
                                     [](const SidebandLanes::Run& r, uint64_t t) { return r.start < t; });
        if (jump - it > 2) {
            px1 = std::max(px1, std::min(W + 2.0, (double((jump - 1)->end) - double(viewBegin_)) / pxDur));
            it = jump;
        } else {
            ++it;
        }
    }
    flush();
    // Samples: a tick per pixel column that has any.
    const auto& samples = lane->samples;
    auto si = std::lower_bound(samples.begin(), samples.end(), viewBegin_,
                               [](const SidebandLanes::Sample& s, uint64_t t) { return s.time < t; });
    const QColor tick = sampleColor();
    while (si != samples.end() && si->time < viewEnd_) {
        const double x = std::floor((double(si->time) - double(viewBegin_)) / pxDur);
        p.fillRect(QRect(kLabelWidth + int(x), y + 4 + kRunBand, 1, track.height - 6 - kRunBand), tick);
        ++frame_.rects;
        const uint64_t next = viewBegin_ + uint64_t((x + 1) * pxDur) + 1;
        auto jump = std::lower_bound(si + 1, samples.end(), next,
                                     [](const SidebandLanes::Sample& s, uint64_t t) { return s.time < t; });
        si = jump > si ? jump : si + 1;
    }
    p.restore();
}

void TimelineView::paintThreadRows(QPainter& p, size_t thread, int firstRow, int lastRow, int y0) {
    const TimelineData::Thread& th = data_->threads[thread];
    const Lod& lod = *lods_[thread];
    const SpanStore& store = th.spans;
    const int W = plotWidth();
    const double pxDur = double(viewEnd_ - viewBegin_) / W;
    const int rowsTop = y0 + firstRow * kRowHeight, rowsBottom = y0 + (lastRow + 1) * kRowHeight;
    // Decoded window in pixels; outside it: shaded, nothing drawn.
    const double dx0 = std::clamp((double(data_->decodedBegin) - double(viewBegin_)) / pxDur, 0.0, double(W));
    const double dx1 = std::clamp((double(data_->decodedEnd) - double(viewBegin_)) / pxDur, 0.0, double(W));
    const int decodedLeft = int(std::floor(dx0)), decodedRight = int(std::ceil(dx1));
    const QColor shade(226, 226, 230);
    if (decodedLeft > 0) p.fillRect(QRect(kLabelWidth, rowsTop, decodedLeft, rowsBottom - rowsTop), shade);
    if (decodedRight < W)
        p.fillRect(QRect(kLabelWidth + decodedRight, rowsTop, W - decodedRight, rowsBottom - rowsTop), shade);
    if (!hint_.isEmpty() && (decodedLeft > 0 || decodedRight < W) && firstRow == 0) {
        const int w = decodedLeft >= W - decodedRight ? decodedLeft : W - decodedRight;
        const int x = decodedLeft >= W - decodedRight ? 0 : decodedRight;
        p.setPen(QColor(90, 90, 100));
        p.drawText(QRect(kLabelWidth + x, rowsTop, w, kRowHeight), Qt::AlignCenter,
                   p.fontMetrics().elidedText(hint_, Qt::ElideRight, w - 4));
    }
    if (decodedRight <= decodedLeft || store.empty()) return;
    p.save();
    p.setClipRect(
        QRect(kLabelWidth + decodedLeft, rowsTop, decodedRight - decodedLeft, rowsBottom - rowsTop));

    QBrush gapBrush(gapHatchColor(), Qt::BDiagPattern);
    const QColor gapBase = gapColor();
    std::vector<int> rectsInRow(size_t(lastRow + 1), 0);
    auto fill = [&](int depth, int a, int b, uint32_t function, bool gap, size_t index, bool merged,
                    bool label) {
        const QRect r(kLabelWidth + a, y0 + depth * kRowHeight, std::max(1, b - a), kRowHeight - 1);
        ++frame_.rects;
        ++rectsInRow[size_t(depth)];
        if (gap) {
            p.fillRect(r, gapBase);
            if (r.width() >= 3)
                p.fillRect(r, gapBrush);
            else
                p.fillRect(r, gapHatchColor());
        } else if (!highlight_.empty() && (function >= highlight_.size() || !highlight_[function])) {
            // A search is on and this is not a hit: faded, as Perfetto draws slices that do not match.
            const QColor c = colorOf(function);
            p.fillRect(r,
                       QColor((c.red() + 3 * 245) / 4, (c.green() + 3 * 245) / 4, (c.blue() + 3 * 245) / 4));
        } else {
            p.fillRect(r, colorOf(function));
        }
        const bool isSelected = selected_.kind == TimelineHit::ThreadSpan && selected_.tid == th.tid &&
                                !merged && selected_.index == index && index != SIZE_MAX;
        if (isSelected) {
            p.setPen(QPen(Qt::black, 2));
            p.drawRect(r.adjusted(1, 1, -1, -1));
        }
        if (r.width() >= kLabelMinWidth && label) {
            const QRect visible = r.intersected(QRect(kLabelWidth, r.y(), W, r.height()));
            QString text = gap ? QString("gap") : functionName(function);
            if (gap && index < store.size()) {
                const Span g = store.at(index);
                if (g.isGap() && size_t(g.gap) < store.gaps().size())
                    text = QString("gap: ") + gapReasonName(store.gaps()[size_t(g.gap)].reason);
            }
            p.setPen(QColor(20, 20, 20));
            p.drawText(visible.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                       p.fontMetrics().elidedText(text, Qt::ElideRight, visible.width() - 5));
        }
    };

    const size_t lo = store.lowerBound(viewBegin_), hi = store.lowerBound(viewEnd_);
    const bool summary = lod.summarized() && pxDur >= double(lod.bucketDur[0]) && hi - lo >= kWalkAlways;
    if (summary) {
        size_t level = 0;
        while (level + 1 < lod.bucketDur.size() && double(lod.bucketDur[level + 1]) <= pxDur)
            ++level;
        const uint64_t bd = lod.bucketDur[level];
        const uint32_t n = lod.n[level];
        const auto& cells = lod.cells[level];
        for (int d = firstRow; d <= lastRow && size_t(d) < cells.size(); ++d) {
            if (cells[size_t(d)].empty()) continue;
            const uint32_t* row = cells[size_t(d)].data();
            int runStart = -1;
            uint32_t runKey = 0;
            auto flush = [&](int x) {
                if (runStart >= 0)
                    fill(d, runStart, x, runKey & kFnMask, runKey & kGapBit, SIZE_MAX, true,
                         !(runKey & kGapBit));
                runStart = -1;
            };
            for (int x = std::max(0, decodedLeft); x < std::min(W, decodedRight); ++x) {
                const double a = double(viewBegin_) + x * pxDur, b = a + pxDur;
                if (b <= double(lod.t0) || a >= double(lod.extentEnd)) {
                    flush(x);
                    continue;
                }
                const uint64_t ba = a <= double(lod.t0) ? 0 : uint64_t((a - double(lod.t0)) / double(bd));
                uint64_t bb = uint64_t(std::max(0.0, (b - double(lod.t0)) / double(bd)));
                if (bb >= n) bb = n - 1;
                uint32_t gap = 0, best = kEmptyCell;
                for (uint64_t k = ba; k <= bb && k < n; ++k) {
                    const uint32_t c = row[k];
                    gap |= c & kGapBit;
                    if (fnOf(c) != kEmptyFn && coverOf(c) > coverOf(best)) best = c;
                }
                frame_.summaryCells += bb >= ba ? bb - ba + 1 : 0;
                if (!gap && fnOf(best) == kEmptyFn) {
                    flush(x);
                    continue;
                }
                const uint32_t key = gap ? kGapBit : fnOf(best);
                if (runStart >= 0 && key == runKey) continue;
                flush(x);
                runStart = x, runKey = key;
            }
            flush(std::min(W, decodedRight));
        }
        // Spans reaching past the summary's end.
        for (int d = firstRow; d <= lastRow && size_t(d) < lod.tail.size(); ++d) {
            if (lod.tail[size_t(d)] == kNone) continue;
            const Span s = store.at(lod.tail[size_t(d)]);
            const double x0 = (double(std::max(lod.extentEnd, s.start)) - double(viewBegin_)) / pxDur;
            const double x1 = (double(s.end) - double(viewBegin_)) / pxDur;
            if (x1 <= 0 || x0 >= W) continue;
            fill(d, int(std::floor(std::max(-2.0, x0))), int(std::ceil(std::min(W + 2.0, x1))), s.function,
                 s.isGap(), lod.tail[size_t(d)], false, true);
        }
    } else {
        // Walk the spans in view, per row merging what is narrower than a pixel.
        struct Pending {
            double x0 = 0, x1 = -1e300;
            uint32_t function = 0;
            bool gap = false, active = false, merged = false;
            size_t index = 0;
        };
        std::vector<Pending> pending(size_t(lastRow + 1));
        auto flush = [&](int d) {
            Pending& q = pending[size_t(d)];
            if (!q.active) return;
            fill(d, int(std::floor(q.x0)), std::max(int(std::floor(q.x0)) + 1, int(std::ceil(q.x1))),
                 q.function, q.gap, q.index, q.merged, !q.merged);
            q.active = false;
        };
        auto visit = [&](const Span& s, size_t index) {
            ++frame_.spansWalked;
            if (s.depth < firstRow || s.depth > lastRow) return;
            if (s.end <= viewBegin_ && !(s.end == s.start && s.start == viewBegin_)) return;
            const double x0 = std::max(-2.0, (double(s.start) - double(viewBegin_)) / pxDur);
            const double x1 = std::min(W + 2.0, (double(s.end) - double(viewBegin_)) / pxDur);
            Pending& q = pending[size_t(s.depth)];
            if (x1 - x0 >= 1) {
                flush(s.depth);
                fill(s.depth, int(std::floor(x0)), int(std::ceil(x1)), s.function, s.isGap(), index, false,
                     true);
                return;
            }
            if (q.active && x0 < q.x1 + 1 && std::floor(x0) <= std::floor(q.x1)) {
                q.x1 = std::max(q.x1, x1);
                q.merged = true;
                if (s.isGap()) q.gap = true;
                return;
            }
            flush(s.depth);
            q = {x0, x1, s.function, s.isGap(), true, false, index};
        };
        size_t i0 = 0;
        if (lod.summarized()) {
            const uint64_t from = std::max(viewBegin_, lod.t0);
            uint64_t b = (from - lod.t0) / lod.bucketDur[0];
            if (b >= lod.n[0]) b = lod.n[0] - 1;
            i0 = store.lowerBound(lod.t0 + b * lod.bucketDur[0]);
            // The spans open at the bucket's start, row by row, before the rest.
            std::vector<std::pair<uint32_t, int>> open;
            for (int d = firstRow; d <= lastRow && size_t(d) < lod.openAt.size(); ++d)
                if (!lod.openAt[size_t(d)].empty() && lod.openAt[size_t(d)][b] != kNone &&
                    lod.openAt[size_t(d)][b] < i0)
                    open.push_back({lod.openAt[size_t(d)][b], d});
            std::sort(open.begin(), open.end());
            for (const auto& [index, d] : open)
                visit(store.at(index), index);
        }
        for (size_t i = i0; i < store.size(); ++i) {
            const Span s = store.at(i);
            if (s.start >= viewEnd_) break;
            visit(s, i);
        }
        for (int d = firstRow; d <= lastRow; ++d)
            flush(d);
    }
    for (int n : rectsInRow)
        frame_.maxRectsPerRow = std::max(frame_.maxRectsPerRow, n);
    p.restore();
}

// ---- Hit testing ----

std::optional<size_t> TimelineView::findSpan(size_t thread, int depth, uint64_t t, uint64_t tolerance) const {
    const SpanStore& store = data_->threads[thread].spans;
    const Lod& lod = *lods_[thread];
    if (store.empty()) return std::nullopt;
    const uint64_t from = t > tolerance ? t - tolerance : 0;
    size_t i0 = 0;
    std::optional<size_t> best;
    uint64_t bestDistance = UINT64_MAX;
    auto consider = [&](size_t i, const Span& s) {
        if (s.depth != depth) return;
        const uint64_t distance = t < s.start ? s.start - t : (t >= s.end ? t - s.end + 1 : 0);
        // Containment first; then the nearest; a gap before a function at the same distance.
        if (distance < bestDistance || (distance == bestDistance && s.isGap())) {
            bestDistance = distance;
            best = i;
        }
    };
    if (lod.summarized()) {
        uint64_t b = from <= lod.t0 ? 0 : (from - lod.t0) / lod.bucketDur[0];
        if (b >= lod.n[0]) b = lod.n[0] - 1;
        i0 = store.lowerBound(lod.t0 + b * lod.bucketDur[0]);
        if (size_t(depth) < lod.openAt.size() && !lod.openAt[size_t(depth)].empty()) {
            const uint32_t open = lod.openAt[size_t(depth)][b];
            if (open != kNone) consider(open, store.at(open));
        }
    }
    for (size_t i = i0, n = 0; i < store.size() && n < 4'000'000; ++i, ++n) {
        const Span s = store.at(i);
        if (s.start > t + tolerance) break;
        consider(i, s);
    }
    if (!best || bestDistance > tolerance) return std::nullopt;
    return best;
}

TimelineHit TimelineView::cpuHit(const Track& track, uint64_t t, uint64_t tolerance) const {
    TimelineHit hit;
    hit.cpu = track.cpu;
    // A loss marker first: they are drawn over the threads.
    if (data_->lanes) {
        const auto found = data_->lanes->losses.find(track.cpu);
        if (found != data_->lanes->losses.end()) {
            const auto& losses = found->second;
            const uint64_t reach = tolerance * 2;
            auto it = std::lower_bound(losses.begin(), losses.end(), t > reach ? t - reach : 0,
                                       [](const SidebandLanes::Loss& l, uint64_t v) { return l.time < v; });
            const SidebandLanes::Loss* best = nullptr;
            uint64_t bestDistance = UINT64_MAX;
            uint64_t total = 0;
            for (; it != losses.end() && it->time <= t + reach; ++it) {
                const uint64_t d = it->time > t ? it->time - t : t - it->time;
                total += it->count;
                if (d < bestDistance) bestDistance = d, best = &*it;
            }
            if (!best) {
                // Inside a throttle's band.
                for (const SidebandLanes::Loss& l : losses)
                    if (l.kind == SidebandLanes::Loss::Throttle && l.time <= t &&
                        t < (l.end ? l.end : data_->end))
                        best = &l;
            }
            if (best) {
                hit.kind = TimelineHit::Loss;
                hit.start = best->time;
                hit.end = best->kind == SidebandLanes::Loss::Throttle ? (best->end ? best->end : data_->end)
                                                                      : best->time;
                hit.loss = QString::fromStdString(describeLoss(*best));
                if (best->kind <= SidebandLanes::Loss::LostSamples && total > best->count)
                    hit.loss += QString("\n(%1 lost in the markers under the mouse)").arg(total);
                hit.pid = best->pid, hit.tid = best->tid;
                return hit;
            }
        }
    }
    const auto& slices = data_->cpus.at(track.cpu);
    auto it = std::upper_bound(slices.begin(), slices.end(), t,
                               [](uint64_t v, const TimelineData::CpuSlice& s) { return v < s.start; });
    const TimelineData::CpuSlice* found = nullptr;
    if (it != slices.begin() && (it - 1)->end > t)
        found = &*(it - 1);
    else if (it != slices.begin() && t - (it - 1)->end <= tolerance)
        found = &*(it - 1);
    else if (it != slices.end() && it->start - t <= tolerance)
        found = &*it;
    if (!found || found->tid <= 0) {
        // Between threads (after the first one): idle.
        if (it == slices.begin() || slices.empty()) return {};
        hit.kind = TimelineHit::CpuIdle;
        hit.start = (it - 1)->end;
        hit.end = it != slices.end() ? it->start : std::max(data_->end, hit.start);
        hit.pid = hit.tid = 0;
        return hit;
    }
    hit.kind = TimelineHit::CpuSlice;
    hit.pid = found->pid, hit.tid = found->tid;
    hit.start = found->start, hit.end = found->end;
    auto name = data_->threadNames.find(found->tid);
    if (name != data_->threadNames.end()) hit.threadName = QString::fromStdString(name->second);
    if (data_->lanes)
        if (const SidebandLanes::Process* proc = data_->lanes->process(found->pid))
            hit.processName = QString::fromStdString(proc->name);
    return hit;
}

TimelineHit TimelineView::laneHit(const Track& track, uint64_t t, uint64_t tolerance) const {
    TimelineHit hit;
    if (track.lane < 0 || !data_->lanes) return hit;
    const SidebandLanes& lanes = *data_->lanes;
    const SidebandLanes::Thread& th = lanes.threads[size_t(track.lane)];
    hit.pid = th.pid, hit.tid = th.tid;
    hit.threadName = QString::fromStdString(th.name);
    if (const SidebandLanes::Process* proc = lanes.process(th.pid))
        hit.processName = QString::fromStdString(proc->name);
    // The nearest sample within a couple of pixels.
    const auto& samples = th.samples;
    auto it = std::lower_bound(samples.begin(), samples.end(), t > tolerance ? t - tolerance : 0,
                               [](const SidebandLanes::Sample& s, uint64_t v) { return s.time < v; });
    const SidebandLanes::Sample* best = nullptr;
    uint64_t bestDistance = UINT64_MAX;
    size_t here = 0;
    for (; it != samples.end() && it->time <= t + tolerance; ++it) {
        ++here;
        const uint64_t d = it->time > t ? it->time - t : t - it->time;
        if (d < bestDistance) bestDistance = d, best = &*it;
    }
    if (best) {
        hit.kind = TimelineHit::Sample;
        hit.start = hit.end = best->time;
        hit.cpu = best->cpu;
        hit.ip = best->ip;
        hit.samplesHere = here;
        if (best->event >= 0 && size_t(best->event) < lanes.events.size())
            hit.event = QString::fromStdString(lanes.events[size_t(best->event)]);
        const FunctionTable* functions = lanes.functions ? lanes.functions.get() : data_->functions.get();
        if (functions && best->function < functions->size() && best->function != FunctionTable::kUnknown) {
            hit.function = QString::fromStdString((*functions)[best->function].name);
            hit.file = QString::fromStdString((*functions)[best->function].file);
        }
        return hit;
    }
    const auto& runs = th.runs;
    auto r = std::upper_bound(runs.begin(), runs.end(), t,
                              [](uint64_t v, const SidebandLanes::Run& x) { return v < x.start; });
    if (r != runs.begin() && (r - 1)->end + tolerance > t) {
        --r;
        hit.kind = TimelineHit::ThreadRun;
        hit.start = r->start, hit.end = r->end;
        hit.cpu = r->cpu;
        return hit;
    }
    return {};
}

TimelineHit TimelineView::spanHit(const TimelineData::Thread& th, size_t index) const {
    TimelineHit hit;
    hit.kind = TimelineHit::ThreadSpan;
    hit.index = index;
    hit.span = th.spans.at(index);
    hit.pid = th.pid, hit.tid = th.tid;
    hit.threadName = QString::fromStdString(th.name);
    hit.start = hit.span.start, hit.end = hit.span.end;
    if (hit.span.isGap()) {
        const Gap& g = th.spans.gaps()[size_t(hit.span.gap)];
        hit.gapReason = QString::fromUtf8(gapReasonName(g.reason));
        hit.gapDetail = QString::fromStdString(g.detail);
    } else {
        hit.function = functionName(hit.span.function);
        if (data_->functions && hit.span.function < data_->functions->size())
            hit.file = QString::fromStdString((*data_->functions)[hit.span.function].file);
    }
    return hit;
}

TimelineHit TimelineView::hitAt(QPoint pos) const {
    TimelineHit hit;
    if (!data_ || pos.x() < kLabelWidth || pos.x() >= kLabelWidth + plotWidth()) return hit;
    const Track* track = trackAt(pos.y());
    if (!track || track->kind == Track::ProcessHeader) return hit;
    const uint64_t t = timeAt(pos.x() + 0.5);
    const uint64_t tolerance = uint64_t(2.0 * double(viewEnd_ - viewBegin_) / plotWidth());
    if (track->kind == Track::Cpu) return cpuHit(*track, t, tolerance);
    if (track->kind == Track::ThreadHeader) return laneHit(*track, t, tolerance);
    const auto& th = data_->threads[track->thread];
    if (t < data_->decodedBegin || t >= data_->decodedEnd) return hit;
    auto index = findSpan(track->thread, track->depth, t, tolerance);
    if (!index) return hit;
    return spanHit(th, *index);
}

QString TimelineView::describe(const TimelineHit& hit, uint64_t recordingBegin) {
    if (!hit.valid()) return {};
    QStringList lines;
    auto thread = [&] {
        QString text = QString("Thread: %1 (tid %2, pid %3)").arg(hit.threadName).arg(hit.tid).arg(hit.pid);
        if (!hit.processName.isEmpty()) text += QString(" in %1").arg(hit.processName);
        return text;
    };
    if (hit.kind == TimelineHit::Loss) {
        lines << QString("CPU %1: %2").arg(hit.cpu).arg(hit.loss);
        lines << QString("At: +%1").arg(formatDuration(double(hit.start) - double(recordingBegin)));
        if (hit.end > hit.start)
            lines << QString("Until: +%1").arg(formatDuration(double(hit.end) - double(recordingBegin)));
        return lines.join('\n');
    }
    if (hit.kind == TimelineHit::Sample) {
        lines << QString("Sample: %1").arg(hit.event.isEmpty() ? QString("(unnamed event)") : hit.event);
        lines << QString("Function: %1").arg(hit.function.isEmpty() ? QString("[unknown]") : hit.function);
        if (!hit.file.isEmpty()) lines << QString("File: %1").arg(hit.file);
        lines << QString("IP: 0x%1").arg(hit.ip, 0, 16);
        lines << QString("CPU %1, at +%2")
                     .arg(hit.cpu)
                     .arg(formatDuration(double(hit.start) - double(recordingBegin)));
        if (hit.samplesHere > 1) lines << QString("%1 samples of this thread here").arg(hit.samplesHere);
        lines << thread();
        return lines.join('\n');
    }
    if (hit.kind == TimelineHit::CpuIdle) {
        lines << QString("CPU %1: idle").arg(hit.cpu);
    } else if (hit.kind == TimelineHit::ThreadRun) {
        lines << QString("%1 ran on CPU %2").arg(hit.threadName).arg(hit.cpu);
        lines << thread();
    } else if (hit.kind == TimelineHit::CpuSlice) {
        lines << QString("CPU %1: %2").arg(hit.cpu).arg(hit.threadName.isEmpty() ? "thread" : hit.threadName);
        lines << QString("tid %1, pid %2").arg(hit.tid).arg(hit.pid);
        if (!hit.processName.isEmpty()) lines << QString("Process: %1").arg(hit.processName);
    } else if (hit.span.isGap()) {
        lines << QString("Gap: %1").arg(hit.gapReason);
        if (!hit.gapDetail.isEmpty()) lines << hit.gapDetail;
    } else {
        lines << hit.function;
        if (!hit.file.isEmpty()) lines << QString("File: %1").arg(hit.file);
    }
    lines << QString("Start: +%1").arg(formatDuration(double(hit.start) - double(recordingBegin)));
    lines << QString("Duration: %1").arg(formatDuration(double(hit.end - hit.start)));
    if (hit.kind == TimelineHit::ThreadSpan) {
        if (!hit.span.isGap()) lines << QString("Instructions: %1").arg(hit.span.instructions);
        lines << QString("Depth: %1").arg(hit.span.depth);
        lines << QString("Thread: %1 (tid %2, pid %3)").arg(hit.threadName).arg(hit.tid).arg(hit.pid);
    }
    return lines.join('\n');
}

QString TimelineView::toolTipAt(QPoint pos) const {
    const TimelineHit hit = hitAt(pos);
    if (!hit.valid()) {
        if (!data_ || hint_.isEmpty()) return {};
        const Track* track = trackAt(pos.y());
        const uint64_t t = timeAt(pos.x());
        if (track && track->kind == Track::ThreadRow && pos.x() >= kLabelWidth &&
            (t < data_->decodedBegin || t >= data_->decodedEnd))
            return hint_;
        return {};
    }
    return describe(hit, data_ ? data_->begin : 0);
}

// ---- Interaction ----

void TimelineView::zoomAround(double x, double factor) {
    if (!data_ || viewEnd_ <= viewBegin_) return;
    if (follow_) {
        // Following: zoom keeps the newest time at the right edge.
        const double w = std::max(double(minWidth()), double(viewEnd_ - viewBegin_) * factor);
        followSeconds_ = w / 1e9;
        setVisibleRange(viewEnd_ > uint64_t(w) ? viewEnd_ - uint64_t(w) : 0, viewEnd_);
        return;
    }
    x = std::clamp(x, double(kLabelWidth), double(kLabelWidth + plotWidth()));
    const double t = double(viewBegin_) + (x - kLabelWidth) * double(viewEnd_ - viewBegin_) / plotWidth();
    double w = double(viewEnd_ - viewBegin_) * factor;
    w = std::max(w, double(minWidth()));
    const double begin = t - (t - double(viewBegin_)) * w / double(viewEnd_ - viewBegin_);
    setVisibleRange(uint64_t(std::max(0.0, std::round(begin))),
                    uint64_t(std::max(0.0, std::round(begin + w))));
}

void TimelineView::panBy(double pixels) {
    if (!data_ || viewEnd_ <= viewBegin_) return;
    follow_ = false;
    const double dt = pixels * double(viewEnd_ - viewBegin_) / plotWidth();
    const double begin = std::max(0.0, double(viewBegin_) + dt);
    const uint64_t w = viewEnd_ - viewBegin_;
    setVisibleRange(uint64_t(begin), uint64_t(begin) + w);
}

void TimelineView::wheelEvent(QWheelEvent* e) {
    const QPoint d = e->angleDelta();
    const double x = e->position().x();
    if (e->modifiers() & Qt::ControlModifier) {
        zoomAround(x, std::pow(0.8, d.y() / 120.0));
    } else if (d.x() != 0 || (e->modifiers() & Qt::ShiftModifier)) {
        panBy(-(d.x() != 0 ? d.x() : d.y()) / 120.0 * plotWidth() * 0.1);
    } else {
        vbar_->setValue(vbar_->value() - d.y() / 120 * 3 * kRowHeight);
    }
    e->accept();
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
    const double x = lastMouse_.x() >= kLabelWidth && lastMouse_.x() < kLabelWidth + plotWidth()
                         ? lastMouse_.x()
                         : kLabelWidth + plotWidth() / 2.0;
    switch (e->key()) {
        case Qt::Key_W:
            zoomAround(x, 0.8);
            break;
        case Qt::Key_S:
            zoomAround(x, 1.25);
            break;
        case Qt::Key_A:
            panBy(-plotWidth() * 0.1);
            break;
        case Qt::Key_D:
            panBy(plotWidth() * 0.1);
            break;
        case Qt::Key_Home:
        case Qt::Key_0:
            if (data_) setVisibleRange(data_->begin, data_->end);
            break;
        case Qt::Key_Up:
            vbar_->setValue(vbar_->value() - kRowHeight);
            break;
        case Qt::Key_Down:
            vbar_->setValue(vbar_->value() + kRowHeight);
            break;
        case Qt::Key_PageUp:
            vbar_->setValue(vbar_->value() - vbar_->pageStep());
            break;
        case Qt::Key_PageDown:
            vbar_->setValue(vbar_->value() + vbar_->pageStep());
            break;
        case Qt::Key_Escape:
            // Perfetto: Esc clears the selection, whatever it is (and the keys' overlay).
            helpVisible_ = false;
            selected_ = {};
            clearTimeSelection();
            update();
            break;
        case Qt::Key_F:
            focusSelection();
            break;
        case Qt::Key_M:
            toggleMark();
            break;
        case Qt::Key_Question:
            setKeysHelpVisible(!helpVisible_);
            break;
        case Qt::Key_Slash:
            emit searchRequested();
            break;
        default:
            if (e->text() == "?") {
                setKeysHelpVisible(!helpVisible_);
                break;
            }
            QWidget::keyPressEvent(e);
            return;
    }
    e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
    setFocus(Qt::MouseFocusReason);
    if (e->button() != Qt::LeftButton) return;
    pressed_ = true;
    dragged_ = false;
    pressPos_ = e->position().toPoint();
    // Shift+drag in the tracks or any drag on the time axis selects a range (Perfetto).
    rangeDrag_ = data_ && pressPos_.x() >= kLabelWidth &&
                 ((e->modifiers() & Qt::ShiftModifier) || pressPos_.y() < kAxisHeight);
    pressTime_ =
        timeAt(std::clamp(double(pressPos_.x()), double(kLabelWidth), double(kLabelWidth + plotWidth())));
    pressBegin_ = viewBegin_, pressEnd_ = viewEnd_;
    pressScroll_ = vbar_->value();
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
    const QPoint pos = e->position().toPoint();
    lastMouse_ = pos;
    if (!pressed_) return;
    const QPoint delta = pos - pressPos_;
    if (!dragged_ && delta.manhattanLength() < 4) return;
    dragged_ = true;
    if (rangeDrag_) {
        setCursor(Qt::IBeamCursor);
        const uint64_t t =
            timeAt(std::clamp(double(pos.x()), double(kLabelWidth), double(kLabelWidth + plotWidth())));
        selBegin_ = std::min(t, pressTime_), selEnd_ = std::max(t, pressTime_);
        if (selEnd_ == selBegin_) ++selEnd_;
        rangeChosenLast_ = true;
        update();
        emit timeSelectionDragged(selBegin_, selEnd_);
        return;
    }
    setCursor(Qt::ClosedHandCursor);
    const double dt = double(delta.x()) * double(pressEnd_ - pressBegin_) / plotWidth();
    const double begin = std::max(0.0, double(pressBegin_) - dt);
    if (delta.x() != 0) {
        follow_ = false;
        setVisibleRange(uint64_t(begin), uint64_t(begin) + (pressEnd_ - pressBegin_));
    }
    vbar_->setValue(pressScroll_ - delta.y());
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton || !pressed_) return;
    pressed_ = false;
    unsetCursor();
    if (dragged_ && rangeDrag_) {
        rangeDrag_ = false;
        emit timeSelectionChanged(selBegin_, selEnd_);
        return;
    }
    rangeDrag_ = false;
    if (dragged_) return;
    if (e->position().y() < kAxisHeight) return;  // a click on the axis selects nothing
    selected_ = hitAt(e->position().toPoint());
    if (selected_.valid()) rangeChosenLast_ = false;
    update();
    if (selected_.valid()) emit spanSelected(selected_);
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* e) {
    const TimelineHit hit = hitAt(e->position().toPoint());
    if (!hit.valid()) return;
    const uint64_t w = std::max<uint64_t>(hit.end - hit.start, 1);
    const uint64_t margin = std::max<uint64_t>(w / 20, 1);
    follow_ = false;
    setVisibleRange(hit.start > margin ? hit.start - margin : 0, hit.end + margin);
}

bool TimelineView::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const QString text = toolTipAt(help->pos());
        if (text.isEmpty()) {
            QToolTip::hideText();
            e->ignore();
        } else {
            QToolTip::showText(help->globalPos(), text, this);
        }
        return true;
    }
    if (e->type() == QEvent::Leave) lastMouse_ = {-1, -1};
    if (e->type() == QEvent::FocusIn || e->type() == QEvent::FocusOut) update();
    return QWidget::event(e);
}

// ---- Range selection, marks, search highlights ----

std::optional<TimelineView::Range> TimelineView::timeSelection() const {
    if (selEnd_ <= selBegin_) return std::nullopt;
    return Range{selBegin_, selEnd_};
}

void TimelineView::setTimeSelection(uint64_t begin, uint64_t end) {
    if (end <= begin) begin = end = 0;
    if (begin == selBegin_ && end == selEnd_) return;
    selBegin_ = begin, selEnd_ = end;
    if (end > begin) rangeChosenLast_ = true;
    update();
    emit timeSelectionChanged(begin, end);
}

void TimelineView::zoomTo(uint64_t begin, uint64_t end, double margin) {
    if (!data_) return;
    const uint64_t w = std::max<uint64_t>(end > begin ? end - begin : 1, 1);
    const uint64_t m = std::max<uint64_t>(uint64_t(double(w) * margin), 1);
    follow_ = false;
    setVisibleRange(begin > m ? begin - m : 0, end + m);
}

void TimelineView::focusSelection() {
    if (rangeChosenLast_ || !selected_.valid()) {
        if (auto r = timeSelection()) return zoomTo(r->begin, r->end);
    }
    if (selected_.valid()) zoomTo(selected_.start, std::max(selected_.end, selected_.start + 1));
}

bool TimelineView::toggleMark() {
    Range r;
    if (auto sel = timeSelection(); sel && (rangeChosenLast_ || !selected_.valid()))
        r = *sel;
    else if (selected_.valid())
        r = {selected_.start, selected_.end};
    else
        return false;
    auto same = std::find_if(marks_.begin(), marks_.end(),
                             [&](const Range& m) { return m.begin == r.begin && m.end == r.end; });
    const bool added = same == marks_.end();
    if (added)
        marks_.push_back(r);
    else
        marks_.erase(same);
    update();
    emit marksChanged();
    return added;
}

QString TimelineView::keysHelp() {
    return QStringLiteral(
        "Ctrl+wheel, W / S\tzoom around the mouse\n"
        "A / D, drag\tpan\n"
        "wheel, Up / Down\tscroll the tracks\n"
        "0, Home\tshow everything\n"
        "click\tselect a span (details, code)\n"
        "double-click\tzoom to a span\n"
        "Shift+drag, drag on the axis\tselect a time range (statistics)\n"
        "F\tzoom to the selection\n"
        "M\tmark / unmark the selection\n"
        "Esc\tclear the selection\n"
        "/\tsearch functions and threads\n"
        "Enter / Shift+Enter\tnext / previous hit\n"
        "?\tthis help");
}

void TimelineView::setKeysHelpVisible(bool on) {
    if (helpVisible_ == on) return;
    helpVisible_ = on;
    update();
}

bool TimelineView::selectSpan(int32_t tid, size_t index) {
    if (!data_) return false;
    for (size_t i = 0; i < data_->threads.size(); ++i) {
        const auto& th = data_->threads[i];
        if (th.tid != tid || index >= th.spans.size()) continue;
        selected_ = spanHit(th, index);
        rangeChosenLast_ = false;
        update();
        emit spanSelected(selected_);
        return true;
    }
    return false;
}

const TimelineView::Track* TimelineView::trackOfThread(int32_t tid, int depth) const {
    if (!data_) return nullptr;
    const Track* header = nullptr;
    for (const Track& t : tracks_) {
        const bool mine = (t.thread != kNoThread && t.kind != Track::Cpu && t.kind != Track::ProcessHeader &&
                           data_->threads.size() > t.thread && data_->threads[t.thread].tid == tid) ||
                          (t.kind == Track::ThreadHeader && t.lane >= 0 && data_->lanes &&
                           data_->lanes->threads[size_t(t.lane)].tid == tid);
        if (!mine) continue;
        if (t.kind == Track::ThreadHeader) header = &t;
        if (t.kind == Track::ThreadRow && t.depth == depth) return &t;
    }
    return header;
}

void TimelineView::scrollToThread(int32_t tid, int depth) {
    const Track* t = trackOfThread(tid, depth);
    if (!t) return;
    const int visible = std::max(0, height() - kAxisHeight);
    const int y = t->y, v = vbar_->value();
    if (y < v || y + t->height > v + visible) vbar_->setValue(std::max(0, y - visible / 3));
}

void TimelineView::setHighlight(std::vector<bool> functions, std::set<int32_t> threads) {
    highlight_ = std::move(functions);
    highlightThreads_ = std::move(threads);
    update();
}

void TimelineView::paintOverlays(QPainter& p) {
    const int plotRight = kLabelWidth + plotWidth();
    const QRect plot(kLabelWidth, 0, plotWidth(), height());
    p.save();
    p.setClipRect(plot);
    // Threads whose names a search matched: their labels outlined.
    if (!highlightThreads_.empty() && data_) {
        const int top = contentTop();
        p.setClipping(false);
        for (const Track& t : tracks_) {
            if (t.kind != Track::ThreadHeader) continue;
            int32_t tid = -1;
            if (t.lane >= 0 && data_->lanes)
                tid = data_->lanes->threads[size_t(t.lane)].tid;
            else if (t.thread != kNoThread)
                tid = data_->threads[t.thread].tid;
            if (!highlightThreads_.count(tid)) continue;
            const int y = top + t.y;
            if (y + t.height < kAxisHeight || y > height()) continue;
            p.setPen(QPen(QColor(255, 140, 0), 2));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRect(1, std::max(y, kAxisHeight) + 1, kLabelWidth - 3, t.height - 2));
        }
        p.setClipRect(plot);
    }
    // Marks: amber areas over the tracks, flags on the axis.
    const QColor amber(230, 150, 0);
    for (const Range& m : marks_) {
        const double x0 = xOf(m.begin), x1 = xOf(m.end);
        if (x1 < kLabelWidth || x0 > plotRight) continue;
        if (x1 - x0 >= 1) {
            QColor area = amber;
            area.setAlpha(40);
            p.fillRect(QRectF(x0, kAxisHeight, x1 - x0, height() - kAxisHeight), area);
        }
        p.setPen(QPen(amber, 1, Qt::DashLine));
        p.drawLine(QPointF(x0, kAxisHeight), QPointF(x0, height()));
        if (x1 - x0 >= 1) p.drawLine(QPointF(x1, kAxisHeight), QPointF(x1, height()));
        QPolygonF flag;
        flag << QPointF(x0, 2) << QPointF(x0 + 9, 6) << QPointF(x0, 10);
        p.setPen(QPen(amber.darker(120), 1));
        p.setBrush(amber);
        p.drawLine(QPointF(x0, 2), QPointF(x0, kAxisHeight - 1));
        p.drawPolygon(flag);
        p.setBrush(Qt::NoBrush);
    }
    // The selected range: a blue band, its ends, and its length on the axis.
    if (auto sel = timeSelection()) {
        const double x0 = xOf(sel->begin), x1 = std::max(xOf(sel->end), x0 + 1);
        const QColor blue(40, 110, 220);
        QColor band = blue;
        band.setAlpha(45);
        p.fillRect(QRectF(x0, kAxisHeight, x1 - x0, height() - kAxisHeight), band);
        QColor shade(0, 0, 0, 22);
        p.fillRect(QRectF(kLabelWidth, kAxisHeight, std::max(0.0, x0 - kLabelWidth), height()), shade);
        p.fillRect(QRectF(x1, kAxisHeight, std::max(0.0, plotRight - x1), height()), shade);
        p.setPen(QPen(blue, 1));
        p.drawLine(QPointF(x0, 0), QPointF(x0, height()));
        p.drawLine(QPointF(x1, 0), QPointF(x1, height()));
        const QRectF bar(x0, kAxisHeight - 12, x1 - x0, 11);
        p.fillRect(bar, QColor(40, 110, 220, 200));
        const QString text = formatDuration(double(sel->end - sel->begin));
        QFont f = font();
        f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.8));
        f.setBold(true);
        p.setFont(f);
        const int tw = p.fontMetrics().horizontalAdvance(text) + 8;
        QRectF label = bar;
        if (label.width() < tw) label = QRectF((x0 + x1 - tw) / 2, bar.y(), tw, bar.height());
        p.fillRect(label, QColor(40, 110, 220));
        p.setPen(Qt::white);
        p.drawText(label, Qt::AlignCenter, text);
    }
    p.restore();
    if (helpVisible_) {
        const QStringList lines = keysHelp().split('\n');
        QFont f = font();
        p.setFont(f);
        const QFontMetrics fm(f);
        QFont boldKeys = f;
        boldKeys.setBold(true);
        const QFontMetrics bm(boldKeys);
        int keyW = 0, descW = 0;
        for (const QString& l : lines) {
            const QStringList kv = l.split('\t');
            keyW = std::max(keyW, bm.horizontalAdvance(kv[0]));
            descW = std::max(descW, fm.horizontalAdvance(kv.value(1)));
        }
        const int lh = fm.height() + 2;
        const QRect box(0, 0, keyW + descW + 48, lh * (int(lines.size()) + 1) + 16);
        QRect r = box;
        r.moveCenter(rect().center());
        p.setPen(QColor(120, 120, 120));
        p.setBrush(QColor(255, 255, 255, 240));
        p.drawRoundedRect(r, 6, 6);
        p.setPen(QColor(20, 20, 20));
        QFont bold = f;
        bold.setBold(true);
        p.setFont(bold);
        p.drawText(QRect(r.x() + 12, r.y() + 8, r.width() - 24, lh), Qt::AlignLeft, "Keys (? or Esc closes)");
        for (int i = 0; i < lines.size(); ++i) {
            const QStringList kv = lines[i].split('\t');
            const int y = r.y() + 8 + lh * (i + 1);
            p.setFont(bold);
            p.drawText(QRect(r.x() + 12, y, keyW + 8, lh), Qt::AlignLeft, kv[0]);
            p.setFont(f);
            p.drawText(QRect(r.x() + 24 + keyW, y, descW + 8, lh), Qt::AlignLeft, kv.value(1));
        }
        p.setBrush(Qt::NoBrush);
    }
}

}  // namespace auxscope
