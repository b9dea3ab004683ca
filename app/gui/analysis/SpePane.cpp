// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/analysis/SpePane.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <QApplication>
#include <QPointer>

#include <algorithm>
#include <bit>
#include <map>
#include <thread>
#include <unordered_map>

#include "gui/analysis/SpeHistogramWidget.h"
#include "gui/analysis/SpeMemoryMapWidget.h"
#include "gui/timeline/TimeFormat.h"
#include "gui/timeline/TimelineState.h"
#include "samples/SampleProfile.h"

namespace auxscope {
namespace {
constexpr int kTimeBins = 120;
constexpr int kAddressBins = 64;
QString hex(uint64_t v) {
    return "0x" + QString::number(v, 16);
}
}  // namespace

void SpeViewData::summarize() {
    std::map<int32_t, uint64_t> perThread;
    firstTime = UINT64_MAX, lastTime = 0;
    for (const spe::SpeRecord& r : records) {
        ++perThread[r.tid];
        if (r.time) firstTime = std::min(firstTime, r.time), lastTime = std::max(lastTime, r.time);
    }
    threads.assign(perThread.begin(), perThread.end());
    if (firstTime > lastTime) firstTime = lastTime = 0;
}

SpePane::SpePane(QWidget* parent) : QWidget(parent) {
    setObjectName("spePane");
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* controls = new QHBoxLayout;
    summary_ = new QLabel("No SPE records");
    summary_->setObjectName("speSummary");
    thread_ = new QComboBox;
    thread_->setObjectName("speThread");
    thread_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    controls->addWidget(new QLabel("Thread:"));
    controls->addWidget(thread_);
    controls->addWidget(summary_, 1);
    shading_ = new QComboBox;
    shading_->setObjectName("speLaneShading");
    shading_->addItem("Lane ticks: by latency", int(TimelineState::SampleShading::Value));
    shading_->addItem("Lane ticks: by data source", int(TimelineState::SampleShading::Key));
    shading_->addItem("Lane ticks: plain", int(TimelineState::SampleShading::Plain));
    shading_->setToolTip(
        "How the thread lanes colour SPE samples: by total latency (blue fast, red slow), "
        "by data source (the histogram's colours), or plain");
    controls->addWidget(shading_);
    layout->addLayout(controls);

    tabs_ = new QTabWidget;
    tabs_->setObjectName("speTabs");
    tabs_->setDocumentMode(true);
    // Latency.
    auto* latencyPage = new QWidget;
    auto* lv = new QVBoxLayout(latencyPage);
    lv->setContentsMargins(0, 4, 0, 0);
    auto* lc = new QHBoxLayout;
    latency_ = new QComboBox;
    latency_->setObjectName("speLatencyKind");
    latency_->addItem("Total latency", int(SpeLatencyKind::Total));
    latency_->addItem("Issue latency", int(SpeLatencyKind::Issue));
    latency_->addItem("Translation latency", int(SpeLatencyKind::Translation));
    function_ = new QComboBox;
    function_->setObjectName("speFunction");
    function_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    ops_ = new QComboBox;
    ops_->setObjectName("speOps");
    ops_->addItem("all ops", 0);
    ops_->addItem("loads", 1);
    ops_->addItem("stores", 2);
    ops_->addItem("loads and stores", 3);
    ops_->addItem("branches", 4);
    lc->addWidget(latency_);
    lc->addWidget(new QLabel("of"));
    lc->addWidget(ops_);
    lc->addWidget(new QLabel("in"));
    lc->addWidget(function_);
    lc->addStretch(1);
    lv->addLayout(lc);
    histogram_ = new SpeHistogramWidget;
    lv->addWidget(histogram_, 1);
    tabs_->addTab(latencyPage, "Latency");
    // Memory map.
    auto* mapPage = new QWidget;
    auto* mv = new QVBoxLayout(mapPage);
    mv->setContentsMargins(0, 4, 0, 0);
    auto* mc = new QHBoxLayout;
    colour_ = new QComboBox;
    colour_->setObjectName("speMapColour");
    colour_->addItem("Colour: count", int(SpeMemoryMapWidget::Colour::Count));
    colour_->addItem("Colour: mean latency", int(SpeMemoryMapWidget::Colour::MeanLatency));
    loads_ = new QCheckBox("Loads");
    loads_->setChecked(true);
    stores_ = new QCheckBox("Stores");
    stores_->setChecked(true);
    auto* zoomIn = new QPushButton("Zoom in");
    auto* zoomOut = new QPushButton("Zoom out");
    auto* zoomAll = new QPushButton("All addresses");
    mc->addWidget(colour_);
    mc->addWidget(loads_);
    mc->addWidget(stores_);
    mc->addStretch(1);
    mc->addWidget(zoomIn);
    mc->addWidget(zoomOut);
    mc->addWidget(zoomAll);
    mv->addLayout(mc);
    auto* split = new QSplitter(Qt::Horizontal);
    map_ = new SpeMemoryMapWidget;
    cellList_ = new QTreeWidget;
    cellList_->setObjectName("speCellList");
    cellList_->setRootIsDecorated(false);
    cellList_->setHeaderLabels({"Time", "Thread", "Op", "PC", "Data address", "Latency", "Source", "Events"});
    split->addWidget(map_);
    split->addWidget(cellList_);
    // The list's columns (PC, data address, source, events) want room too.
    cellList_->setMinimumWidth(360);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    mv->addWidget(split, 1);
    tabs_->addTab(mapPage, "Memory map");
    layout->addWidget(tabs_, 1);

    connect(latency_, &QComboBox::currentIndexChanged, this, &SpePane::refreshHistogram);
    connect(function_, &QComboBox::currentIndexChanged, this, &SpePane::refreshHistogram);
    connect(ops_, &QComboBox::currentIndexChanged, this, &SpePane::refreshHistogram);
    connect(thread_, &QComboBox::currentIndexChanged, this, &SpePane::refresh);
    connect(colour_, &QComboBox::currentIndexChanged, this,
            [this] { map_->setColour(SpeMemoryMapWidget::Colour(colour_->currentData().toInt())); });
    connect(loads_, &QCheckBox::toggled, this, &SpePane::refreshMap);
    connect(stores_, &QCheckBox::toggled, this, &SpePane::refreshMap);
    connect(map_, &SpeMemoryMapWidget::cellClicked, this, &SpePane::showCell);
    connect(map_, &SpeMemoryMapWidget::addressRangeRequested, this,
            [this](quint64 a, quint64 b) { setAddressRange(a, b); });
    auto zoom = [this](double factor) {
        if (!data_ || !data_->axis || data_->axis->empty()) return;
        const uint64_t size = data_->axis->size();
        const uint64_t a = posEnd_ > posBegin_ ? posBegin_ : 0, b = posEnd_ > posBegin_ ? posEnd_ : size;
        const double mid = (double(a) + double(b)) / 2;
        const double span = std::clamp(double(b - a) * factor, double(kAddressBins), double(size));
        const double lo = std::clamp(mid - span / 2, 0.0, double(size) - span);
        setAddressRange(uint64_t(lo), uint64_t(lo + span));
    };
    connect(zoomIn, &QPushButton::clicked, this, [zoom] { zoom(0.5); });
    connect(zoomOut, &QPushButton::clicked, this, [zoom] { zoom(2); });
    connect(zoomAll, &QPushButton::clicked, this, [this] { setAddressRange(0, 0); });
}

void SpePane::setState(TimelineState* state) {
    state_ = state;
    shading_->setCurrentIndex(shading_->findData(int(state_->sampleShading())));
    connect(shading_, &QComboBox::currentIndexChanged, this, [this] {
        state_->setSampleShading(TimelineState::SampleShading(shading_->currentData().toInt()));
    });
    connect(state_, &TimelineState::timeSelectionChanged, this, [this] { refresh(); });
}

void SpePane::setData(std::shared_ptr<const SpeViewData> data) {
    data_ = std::move(data);
    posBegin_ = posEnd_ = 0;
    QSignalBlocker block(thread_);
    thread_->clear();
    thread_->addItem("All threads", -1);
    if (data_)
        for (const auto& [tid, n] : data_->threads)
            thread_->addItem(QString("%1 (%2 records)").arg(tid).arg(n), tid);
    refresh();
}

std::pair<uint64_t, uint64_t> SpePane::range() const {
    if (state_)
        if (auto r = state_->timeSelection(); r && r->end > r->begin) return {r->begin, r->end};
    if (!data_ || !data_->lastTime) return {0, 0};
    return {data_->firstTime, data_->lastTime + 1};
}

SpeSelection SpePane::selection() const {
    SpeSelection s;
    // No range selected: every record, those without a time too.
    if (state_)
        if (auto r = state_->timeSelection(); r && r->end > r->begin) s.begin = r->begin, s.end = r->end;
    s.tid = thread_->currentData().isValid() ? thread_->currentData().toInt() : -1;
    return s;
}

void SpePane::refresh() {
    if (!data_) {
        summary_->setText("No SPE records");
        histogram_->setHistogram({}, {});
        return;
    }
    compute(kSummary | kFunctions | kHistogram | kMap);
}

void SpePane::refreshHistogram() {
    compute(kHistogram);
}

void SpePane::setAddressRange(uint64_t posBegin, uint64_t posEnd) {
    posBegin_ = posBegin, posEnd_ = posEnd;
    refreshMap();
}

void SpePane::refreshMap() {
    compute(kMap);
}

// One pass over the records on a worker thread: what `parts` asks for, from
// the choices as they are now; a part asked for again before it comes back is
// dropped (its generation moved on).
void SpePane::compute(int parts) {
    cellList_->clear();
    if (!data_) return;
    struct Pass {
        int parts = 0;
        uint64_t generation[4] = {};
        SpeSelection selection;
        std::pair<uint64_t, uint64_t> range;
        bool selected = false;
        int function = -1, ops = 0;
        SpeLatencyKind kind = SpeLatencyKind::Total;
        SpeMemoryMapQuery query;
        // Results.
        uint64_t records = 0, loads = 0, stores = 0, branches = 0, untimed = 0;
        std::vector<std::pair<uint64_t, uint32_t>> functions;  // records, function: the most first
        SpeHistogram histogram;
        SpeMemoryMap map;
        int32_t mapPid = -1;
    };
    auto pass = std::make_shared<Pass>();
    pass->parts = parts;
    for (int k = 0; k < 4; ++k)
        if (parts & (1 << k)) pass->generation[k] = ++generation_[k];
    pass->selection = selection();
    pass->range = range();
    pass->selected = state_ && state_->timeSelection().has_value();
    pass->function = function_->currentData().isValid() ? function_->currentData().toInt() : -1;
    pass->ops = ops_->currentData().toInt();
    pass->kind = SpeLatencyKind(latency_->currentData().toInt());
    SpeMemoryMapQuery& q = pass->query;
    std::tie(q.begin, q.end) = pass->range;
    q.tid = pass->selection.tid;
    q.loads = loads_->isChecked(), q.stores = stores_->isChecked();
    q.timeBins = kTimeBins, q.addressBins = kAddressBins;
    q.posBegin = posEnd_ > posBegin_ ? posBegin_ : 0;
    q.posEnd = posEnd_ > posBegin_ ? posEnd_ : (data_->axis ? data_->axis->size() : 0);
    ++busy_;
    QPointer<SpePane> self(this);
    std::thread([self, data = data_, pass] {
        Pass& p = *pass;
        const auto& records = data->records;
        if (p.parts & (kSummary | kFunctions)) {
            std::unordered_map<uint32_t, uint64_t> count;
            for (size_t i = 0; i < records.size(); ++i) {
                const spe::SpeRecord& r = records[i];
                if (!p.selection.takes(r)) continue;
                ++p.records, p.loads += r.isLoad, p.stores += r.isStore, p.branches += r.isBranch;
                p.untimed += !r.time;
                ++count[data->function[i]];
            }
            for (const auto& [f, n] : count)
                p.functions.push_back({n, f});
            std::sort(p.functions.begin(), p.functions.end(), [](const auto& a, const auto& b) {
                return a.first != b.first ? a.first > b.first : a.second < b.second;
            });
            if (p.functions.size() > 200) p.functions.resize(200);
        }
        if (p.parts & kHistogram) {
            SpeSelection s = p.selection;
            if (p.function >= 0 || p.ops) {
                const spe::SpeRecord* base = records.data();
                const std::vector<uint32_t>* fn = &data->function;
                s.accept = [base, fn, f = p.function, ops = p.ops](const spe::SpeRecord& r) {
                    const bool op = ops == 0   ? true
                                    : ops == 1 ? r.isLoad
                                    : ops == 2 ? r.isStore
                                    : ops == 3 ? r.isLoad || r.isStore
                                               : r.isBranch;
                    return op && (f < 0 || (*fn)[size_t(&r - base)] == uint32_t(f));
                };
            }
            p.histogram = speLatencyHistogram(records, s, p.kind, data->sourceName);
        }
        if ((p.parts & kMap) && data->axis) {
            p.map = speMemoryMap(records, *data->axis, p.query);
            // The labels are of the process with the most accesses.
            std::map<int32_t, uint64_t> perPid;
            for (const spe::SpeRecord& r : records)
                if (speMapTakes(r, p.query) && r.time >= p.query.begin && r.time < p.query.end)
                    ++perPid[r.pid];
            uint64_t most = 0;
            for (const auto& [pid, n] : perPid)
                if (n > most) most = n, p.mapPid = pid;
        }
        QMetaObject::invokeMethod(
            qApp,
            [self, data, pass] {
                if (!self) return;
                --self->busy_;
                if (self->data_ == data) self->apply(*pass);
                if (!self->busy_) emit self->computed();
            },
            Qt::QueuedConnection);
    }).detach();
}

template <typename Pass>
void SpePane::apply(Pass& p) {
    const auto current = [&](int part) {
        return (p.parts & part) && p.generation[std::countr_zero(unsigned(part))] ==
                                       generation_[std::countr_zero(unsigned(part))];
    };
    if (current(kSummary)) {
        const auto [begin, end] = p.range;
        summary_->setText(
            QString("%1 SPE records in %2 (%3 loads, %4 stores, %5 branches)%6%7")
                .arg(formatCount(p.records))
                .arg(formatNs(double(end - begin)))
                .arg(formatCount(p.loads))
                .arg(formatCount(p.stores))
                .arg(formatCount(p.branches))
                .arg(p.selected ? QString(", the selected range") : QString(", the whole recording"))
                .arg(p.untimed ? QString("; %1 without a time (no TIMESTAMP packet): in the "
                                         "histogram, not on the memory map")
                                     .arg(formatCount(p.untimed))
                               : QString()));
    }
    if (current(kFunctions)) {
        const QVariant was = function_->currentData();
        {
            QSignalBlocker block(function_);
            function_->clear();
            function_->addItem("every function in the selection", -1);
            if (data_->profile)
                for (const auto& [n, f] : p.functions)
                    function_->addItem(QString("%1 (%2)")
                                           .arg(QString::fromStdString(data_->profile->functions()[f].name))
                                           .arg(n),
                                       int(f));
            const int at = function_->findData(was);
            function_->setCurrentIndex(at >= 0 ? at : 0);
        }
        // The function chosen is not in this selection: the histogram of every
        // function, asked for again (this pass's histogram is then stale).
        if (function_->currentData() != was) compute(kHistogram);
    }
    if (current(kHistogram)) {
        QString of = "every function";
        if (p.function >= 0 && data_->profile)
            of = QString::fromStdString(data_->profile->functions()[uint32_t(p.function)].name);
        const QString title = QString("%1 latency of %2 in %3: %4 records by data source")
                                  .arg(speLatencyKindName(p.kind))
                                  .arg(ops_->itemText(ops_->findData(p.ops)))
                                  .arg(of)
                                  .arg(formatCount(p.histogram.records));
        histogram_->setHistogram(std::move(p.histogram), title);
    }
    if (current(kMap)) {
        mapPid_ = p.mapPid;
        map_->setMap(std::move(p.map), data_->axis, data_->space, mapPid_);
    }
}

QString SpePane::pcName(const spe::SpeRecord& r, uint32_t function) const {
    if (!r.hasPc) return "-";
    if (!data_->profile || function == FunctionTable::kUnknown) return hex(r.pc);
    const FunctionInfo& info = data_->profile->functions()[function];
    const QString name = QString::fromStdString(info.name);
    // The function's link-time address: the PC's offset from it, at run time
    // through the mapping's load bias where the file is mapped elsewhere.
    uint64_t link = r.pc;
    if (info.address && (r.pc < info.address || r.pc - info.address > (1u << 20)) && data_->space)
        if (const SpeRegion* m = data_->space->mappingAt(r.pid, r.pc)) {
            // A position-independent file: link-time addresses count from its lowest mapping.
            uint64_t base = m->start;
            for (const SpeRegion& other : data_->space->mappings(r.pid))
                if (other.name == m->name) base = std::min(base, other.start);
            link = r.pc - base;
        }
    if (info.address && link >= info.address && link - info.address < (1u << 20))
        return link == info.address ? name : name + "+" + hex(link - info.address);
    return name + " (" + hex(r.pc) + ")";
}

void SpePane::showCell(int timeBin, int addressBin) {
    cellList_->clear();
    if (!data_ || !data_->axis) return;
    const SpeMemoryMapQuery& q = map_->map().query;
    const std::vector<size_t> rows = speMapCellRecords(data_->records, *data_->axis, q, timeBin, addressBin);
    const uint64_t origin = range().first;
    QList<QTreeWidgetItem*> items;
    for (size_t i : rows) {
        const spe::SpeRecord& r = data_->records[i];
        auto* item = new QTreeWidgetItem;
        item->setText(0, "+" + formatNs(double(r.time - std::min(origin, r.time))));
        item->setData(0, Qt::UserRole, QVariant::fromValue<qulonglong>(i));
        item->setText(1, QString::number(r.tid));
        item->setText(2, r.isLoad ? "load" : r.isStore ? "store" : "other");
        item->setText(3, pcName(r, data_->function[i]));
        item->setText(
            4, data_->space ? QString::fromStdString(data_->space->name(r.pid, r.dataVa)) : hex(r.dataVa));
        item->setText(5, r.hasTotalLatency ? QString::number(r.totalLatency) : QString("-"));
        item->setText(6, !r.hasDataSource    ? QString("-")
                         : data_->sourceName ? QString::fromStdString(data_->sourceName(r.dataSource))
                                             : QString::number(r.dataSource));
        item->setText(
            7, data_->eventNames ? QString::fromStdString(data_->eventNames(r.events)) : hex(r.events));
        items << item;
    }
    cellList_->addTopLevelItems(items);
    for (int c = 0; c < cellList_->columnCount(); ++c)
        cellList_->resizeColumnToContents(c);
}

}  // namespace auxscope
