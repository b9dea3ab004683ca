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

#include <algorithm>
#include <map>

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
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
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
    if (data_) {
        std::map<int32_t, uint64_t> perThread;
        for (const spe::SpeRecord& r : data_->records)
            ++perThread[r.tid];
        for (const auto& [tid, n] : perThread)
            thread_->addItem(QString("%1 (%2 records)").arg(tid).arg(n), tid);
    }
    refresh();
}

std::pair<uint64_t, uint64_t> SpePane::range() const {
    if (state_)
        if (auto r = state_->timeSelection(); r && r->end > r->begin) return {r->begin, r->end};
    if (!data_) return {0, 0};
    // The records' times (those with one: a record without a TIMESTAMP has time 0).
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const spe::SpeRecord& r : data_->records)
        if (r.time) lo = std::min(lo, r.time), hi = std::max(hi, r.time);
    return lo <= hi ? std::pair<uint64_t, uint64_t>{lo, hi + 1} : std::pair<uint64_t, uint64_t>{0, 0};
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
    const SpeSelection s = selection();
    const auto [begin, end] = range();
    uint64_t n = 0, loads = 0, stores = 0, branches = 0, untimed = 0;
    for (const spe::SpeRecord& r : data_->records)
        if (s.takes(r))
            ++n, loads += r.isLoad, stores += r.isStore, branches += r.isBranch, untimed += !r.time;
    summary_->setText(QString("%1 SPE records in %2 (%3 loads, %4 stores, %5 branches)%6%7")
                          .arg(formatCount(n))
                          .arg(formatNs(double(end - begin)))
                          .arg(formatCount(loads))
                          .arg(formatCount(stores))
                          .arg(formatCount(branches))
                          .arg(state_ && state_->timeSelection() ? QString(", the selected range")
                                                                 : QString(", the whole recording"))
                          .arg(untimed
                                   ? QString("; %1 without a time (no TIMESTAMP packet): in the histogram, "
                                             "not on the memory map")
                                         .arg(formatCount(untimed))
                                   : QString()));
    fillFunctions();
    refreshHistogram();
    refreshMap();
}

void SpePane::fillFunctions() {
    const QVariant was = function_->currentData();
    QSignalBlocker block(function_);
    function_->clear();
    function_->addItem("every function in the selection", -1);
    if (!data_ || !data_->profile) return;
    const SpeSelection s = selection();
    std::map<uint32_t, uint64_t> count;
    for (size_t i = 0; i < data_->records.size(); ++i)
        if (s.takes(data_->records[i])) ++count[data_->function[i]];
    std::vector<std::pair<uint64_t, uint32_t>> order;
    for (const auto& [f, n] : count)
        order.push_back({n, f});
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (order.size() > 200) order.resize(200);
    for (const auto& [n, f] : order)
        function_->addItem(
            QString("%1 (%2)").arg(QString::fromStdString(data_->profile->functions()[f].name)).arg(n),
            int(f));
    const int at = function_->findData(was);
    function_->setCurrentIndex(at >= 0 ? at : 0);
}

void SpePane::refreshHistogram() {
    if (!data_) return;
    SpeSelection s = selection();
    const int f = function_->currentData().isValid() ? function_->currentData().toInt() : -1;
    const int ops = ops_->currentData().toInt();
    QString of = "every function";
    if (f >= 0) of = QString::fromStdString(data_->profile->functions()[uint32_t(f)].name);
    if (f >= 0 || ops) {
        const spe::SpeRecord* base = data_->records.data();
        const std::vector<uint32_t>* fn = &data_->function;
        s.accept = [base, fn, f, ops](const spe::SpeRecord& r) {
            const bool op = ops == 0   ? true
                            : ops == 1 ? r.isLoad
                            : ops == 2 ? r.isStore
                            : ops == 3 ? r.isLoad || r.isStore
                                       : r.isBranch;
            return op && (f < 0 || (*fn)[size_t(&r - base)] == uint32_t(f));
        };
    }
    const auto kind = SpeLatencyKind(latency_->currentData().toInt());
    SpeHistogram h = speLatencyHistogram(data_->records, s, kind, data_->sourceName);
    const QString title = QString("%1 latency of %2 in %3: %4 records by data source")
                              .arg(speLatencyKindName(kind))
                              .arg(ops_->currentText())
                              .arg(of)
                              .arg(formatCount(h.records));
    histogram_->setHistogram(std::move(h), title);
}

void SpePane::setAddressRange(uint64_t posBegin, uint64_t posEnd) {
    posBegin_ = posBegin, posEnd_ = posEnd;
    refreshMap();
}

void SpePane::refreshMap() {
    cellList_->clear();
    if (!data_ || !data_->axis) return;
    const SpeSelection s = selection();
    SpeMemoryMapQuery q;
    std::tie(q.begin, q.end) = range();
    q.tid = s.tid;
    q.loads = loads_->isChecked(), q.stores = stores_->isChecked();
    q.timeBins = kTimeBins, q.addressBins = kAddressBins;
    q.posBegin = posEnd_ > posBegin_ ? posBegin_ : 0;
    q.posEnd = posEnd_ > posBegin_ ? posEnd_ : data_->axis->size();
    // The labels are of the process with the most accesses.
    std::map<int32_t, uint64_t> perPid;
    for (const spe::SpeRecord& r : data_->records)
        if (speMapTakes(r, q) && r.time >= q.begin && r.time < q.end) ++perPid[r.pid];
    mapPid_ = -1;
    uint64_t most = 0;
    for (const auto& [pid, n] : perPid)
        if (n > most) most = n, mapPid_ = pid;
    map_->setMap(speMemoryMap(data_->records, *data_->axis, q), data_->axis, data_->space, mapPid_);
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
