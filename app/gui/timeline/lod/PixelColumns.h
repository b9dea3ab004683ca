// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Drawing what the level of detail folds: a colour per pixel column painted as
// one image, and the skip past what folds into the same pixel column.
#include <QRgb>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

class QPainter;

namespace auxscope {

// Paints per pixel column `colour` (0: nothing) from x = left on: over the
// height `h` where `busy` (of 255; null: everywhere) is at least half, over
// the lower third elsewhere; one image for the lane, not a rectangle per column. Returns the
// number of runs of one colour.
int paintColumns(QPainter& p, int left, int y, int h, const std::vector<QRgb>& colour,
                 const std::vector<uint8_t>* busy);

// The first element of [from, end) that is not `before` (a prefix of them is):
// galloping from `from`, for a skip that is usually short in a long array.
template <typename It, typename Before>
It gallop(It from, It end, const Before& before) {
    It lo = from;
    ptrdiff_t step = 1;
    while (end - lo > step && before(*(lo + step))) {
        lo += step;
        step *= 2;
    }
    return std::partition_point(lo, end - lo > step ? lo + step + 1 : end, before);
}

}  // namespace auxscope
