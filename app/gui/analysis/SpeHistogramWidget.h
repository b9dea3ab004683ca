// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An SPE latency histogram (auxtrace/SpeAnalysis): one bar per log2 bucket of
// cycles, stacked by data source (one colour per source, a legend at the top
// right); hovering a bar tells its bucket's count per source.
#include <QWidget>

#include "auxtrace/SpeAnalysis.h"

namespace auxscope {

class SpeHistogramWidget : public QWidget {
    Q_OBJECT
public:
    explicit SpeHistogramWidget(QWidget* parent = nullptr);
    void setHistogram(SpeHistogram histogram, const QString& title);
    const SpeHistogram& histogram() const { return histogram_; }
    // A source's colour, as the legend and the thread lanes' ticks show it.
    static QColor seriesColor(const SpeHistogramSeries& series);
    // The bucket under a point (-1: none).
    int bucketAt(QPoint p) const;
    QSize sizeHint() const override { return {640, 260}; }

protected:
    void paintEvent(QPaintEvent*) override;
    bool event(QEvent* e) override;

private:
    QRect plotRect() const;
    SpeHistogram histogram_;
    QString title_;
};

}  // namespace auxscope
