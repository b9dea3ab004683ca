// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/lod/PixelColumns.h"

#include <QImage>
#include <QPainter>

#include <cstring>

namespace auxscope {

int paintColumns(QPainter& p, int left, int y, int h, const std::vector<QRgb>& colour,
                 const std::vector<uint8_t>* busy) {
    const int W = int(colour.size());
    int first = 0, last = W;
    while (first < W && !colour[size_t(first)])
        ++first;
    if (first == W || h <= 0) return 0;
    while (!colour[size_t(last - 1)])
        --last;
    const int w = last - first;
    std::vector<QRgb> full(static_cast<size_t>(w)), low(static_cast<size_t>(w));
    int runs = 0;
    for (int x = first; x < last; ++x) {
        const QRgb c = colour[size_t(x)];
        low[size_t(x - first)] = c;
        full[size_t(x - first)] = !busy || (*busy)[size_t(x)] >= 128 ? c : 0;
        runs += c && (x == first || colour[size_t(x - 1)] != c);
    }
    // One buffer for every lane and row painted (on the GUI thread): no allocation
    // and no fresh pages per lane.
    static QImage image;
    if (image.width() < w || image.height() < h)
        image = QImage(std::max(w, image.width()), std::max(h, image.height()),
                       QImage::Format_ARGB32_Premultiplied);
    const int lowTop = h - std::max(2, h / 3);
    for (int r = 0; r < h; ++r)
        std::memcpy(image.scanLine(r), (r < lowTop ? full : low).data(), size_t(w) * sizeof(QRgb));
    p.drawImage(QPoint(left + first, y), image, QRect(0, 0, w, h));
    return runs;
}

}  // namespace auxscope
