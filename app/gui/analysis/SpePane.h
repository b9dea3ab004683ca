// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The SPE tab under the timeline (an Arm SPE file): what the SPE records of
// the selection (the timeline's time range, else the whole recording; one
// thread or all) say that the sampled views do not:
//   - Latency: a histogram of total (or issue, translation) latency in log2
//     buckets, one series per data source, for every function of the
//     selection or a picked one (the function of each record's PC);
//   - Memory map: data address x time of the loads and stores, coloured by
//     count or mean latency, the address axis labelled with the mappings and
//     data symbols and zoomed with the wheel; a click on a cell lists its
//     accesses (time, thread, PC as function+offset, data address as
//     symbol+offset, latency, source, events).
// It obeys the tab's TimelineState (its time selection).
#include <QWidget>

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "auxtrace/SpeAnalysis.h"
#include "spe/SpeRecord.h"

class QComboBox;
class QCheckBox;
class QLabel;
class QTreeWidget;
class QTabWidget;

namespace auxscope {

class SampleProfile;
class SpeHistogramWidget;
class SpeMemoryMapWidget;
class TimelineState;

// What the tab shows: the records (by time), each one's function (an id in
// the profile's functions), the address space, and the names of data sources.
struct SpeViewData {
    std::shared_ptr<const void> owner;  // keeps `records` alive
    std::span<const spe::SpeRecord> records;
    std::shared_ptr<const SampleProfile> profile;
    std::vector<uint32_t> function;  // per record
    std::shared_ptr<const SpeAddressSpace> space;
    std::shared_ptr<const SpeAddressAxis> axis;
    std::function<std::string(uint16_t source)> sourceName;
    std::function<std::string(uint64_t events)> eventNames;
    // The records' threads with their counts, and the first and last time (of
    // records with one); set with the records.
    std::vector<std::pair<int32_t, uint64_t>> threads;
    uint64_t firstTime = 0, lastTime = 0;
    // Fills threads, firstTime and lastTime from the records.
    void summarize();
};

class SpePane : public QWidget {
    Q_OBJECT
public:
    explicit SpePane(QWidget* parent = nullptr);
    void setState(TimelineState* state);
    void setData(std::shared_ptr<const SpeViewData> data);
    const SpeViewData* data() const { return data_.get(); }

    QTabWidget* tabs() const { return tabs_; }
    SpeHistogramWidget* histogram() const { return histogram_; }
    SpeMemoryMapWidget* memoryMap() const { return map_; }
    QComboBox* latencyChoice() const { return latency_; }
    QComboBox* opsChoice() const { return ops_; }  // data: 0 all, 1 loads, 2 stores, 3 both, 4 branches
    QComboBox* functionChoice() const { return function_; }  // data: function id, -1: every function
    QComboBox* threadChoice() const { return thread_; }      // data: tid, -1: every thread
    QComboBox* colourChoice() const { return colour_; }
    // How the thread lanes colour SPE ticks (TimelineState::sampleShading).
    QComboBox* laneShadingChoice() const { return shading_; }
    QTreeWidget* cellList() const { return cellList_; }
    QLabel* summary() const { return summary_; }
    // The time range the views use: the selection, else the whole recording.
    std::pair<uint64_t, uint64_t> range() const;
    // Lists the accesses of a memory-map cell (as a click does).
    void showCell(int timeBin, int addressBin);
    // The address axis shows [posBegin, posEnd) of the compressed addresses (0, 0: all of it).
    void setAddressRange(uint64_t posBegin, uint64_t posEnd);
    // "fn+0x1c" for a record's PC.
    QString pcName(const spe::SpeRecord& r, uint32_t function) const;

    // Whether a pass over the records is running (computed() tells when none is).
    bool busy() const { return busy_ > 0; }

public slots:
    void refresh();

signals:
    // Every pass asked for has come back: the views show the current choices.
    void computed();

private:
    enum Part { kSummary = 1, kFunctions = 2, kHistogram = 4, kMap = 8 };
    void compute(int parts);
    template <typename Pass>
    void apply(Pass& pass);
    void refreshHistogram();
    void refreshMap();
    SpeSelection selection() const;

    TimelineState* state_ = nullptr;
    std::shared_ptr<const SpeViewData> data_;
    QTabWidget* tabs_ = nullptr;
    QLabel* summary_ = nullptr;
    QComboBox* latency_ = nullptr;
    QComboBox* ops_ = nullptr;
    QComboBox* function_ = nullptr;
    QComboBox* thread_ = nullptr;
    QComboBox* colour_ = nullptr;
    QComboBox* shading_ = nullptr;
    QCheckBox* loads_ = nullptr;
    QCheckBox* stores_ = nullptr;
    SpeHistogramWidget* histogram_ = nullptr;
    SpeMemoryMapWidget* map_ = nullptr;
    QTreeWidget* cellList_ = nullptr;
    uint64_t posBegin_ = 0, posEnd_ = 0;
    uint64_t generation_[4] = {};  // per Part (bit index): the newest pass asked for
    int busy_ = 0;
    int32_t mapPid_ = -1;
};

}  // namespace auxscope
