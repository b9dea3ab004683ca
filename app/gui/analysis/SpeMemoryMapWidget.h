// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The SPE memory map: data address (up) x time (right), one cell per bin of
// the selection's loads and stores, coloured by their count or their mean
// total latency. The address axis is SpeAddressAxis' compressed one (only
// touched pages), labelled on the left with the mappings (binary segments,
// [heap], [stack]) and the data symbols where they start; the wheel (or
// zoomIn/zoomOut) zooms the address axis at the cursor, a click on a cell
// emits cellClicked with its bins.
#include <QWidget>

#include <memory>

#include "auxtrace/SpeAnalysis.h"

namespace auxscope {

class SpeMemoryMapWidget : public QWidget {
    Q_OBJECT
public:
    enum class Colour { Count, MeanLatency };
    explicit SpeMemoryMapWidget(QWidget* parent = nullptr);
    // The map to draw; `space`, `pid`: the address labels (the process most accesses are of).
    void setMap(SpeMemoryMap map, std::shared_ptr<const SpeAddressAxis> axis,
                std::shared_ptr<const SpeAddressSpace> space, int32_t pid);
    const SpeMemoryMap& map() const { return map_; }
    void setColour(Colour c);
    Colour colour() const { return colour_; }
    // The plot's cell at a point (false: outside), and the rectangle of a cell.
    bool cellAt(QPoint p, int& timeBin, int& addressBin) const;
    QRect cellRect(int timeBin, int addressBin) const;
    QSize sizeHint() const override { return {640, 360}; }

signals:
    void cellClicked(int timeBin, int addressBin);
    // The address axis asked to show [posBegin, posEnd) (the wheel zoomed).
    void addressRangeRequested(quint64 posBegin, quint64 posEnd);

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* e) override;
    void wheelEvent(QWheelEvent* e) override;
    bool event(QEvent* e) override;

private:
    QRect plotRect() const;
    SpeMemoryMap map_;
    std::shared_ptr<const SpeAddressAxis> axis_;
    std::shared_ptr<const SpeAddressSpace> space_;
    int32_t pid_ = -1;
    Colour colour_ = Colour::Count;
    int selectedTime_ = -1, selectedAddress_ = -1;
};

}  // namespace auxscope
