// SPDX-License-Identifier: GPL-3.0-or-later
#include "perfdata/CaptureStatsFeature.h"

#include <cstring>
#include <string>

namespace auxscope {
namespace {

constexpr uint32_t kVersion = 2;
constexpr uint32_t kEntrySizeV1 = 64;
constexpr uint32_t kEntrySize = 128;

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof v);
    std::memcpy(out.data() + at, &v, sizeof v);
}

template <typename T>
T get(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

}  // namespace

std::vector<uint8_t> encodeCaptureStatsFeature(const std::vector<StatsSample>& history) {
    std::vector<uint8_t> out;
    out.reserve(16 + history.size() * kEntrySize);
    put<uint32_t>(out, kVersion);
    put<uint32_t>(out, kEntrySize);
    put<uint64_t>(out, history.size());
    for (const StatsSample& s : history) {
        put<uint64_t>(out, s.perfTime);
        put<uint64_t>(out, s.monotonicNs);
        put<int32_t>(out, s.cpu);
        put<float>(out, s.fillPeakPercent);
        put<uint64_t>(out, s.bytes);
        put<uint64_t>(out, s.records);
        put<uint64_t>(out, s.lostRecords);
        put<uint64_t>(out, s.lostSamples);
        put<uint64_t>(out, s.kernelLost);
        // Version 2: the AUX area.
        put<uint32_t>(out, s.hasAux ? 1 : 0);
        put<float>(out, s.auxFillPercent);
        for (uint64_t v : {s.auxBytes, s.auxTruncated, s.auxPartial, s.auxCollision, s.auxReenables,
                           s.auxSnapshots, s.auxSnapshotBytes})
            put<uint64_t>(out, v);
    }
    return out;
}

Expected<std::vector<StatsSample>> decodeCaptureStatsFeature(std::span<const uint8_t> bytes,
                                                             const std::string& where) {
    if (bytes.size() < 16)
        return makeError(where + ": auxscope capture statistics: section of " + std::to_string(bytes.size()) +
                         " bytes is shorter than its 16-byte head");
    const uint32_t version = get<uint32_t>(bytes.data()), entrySize = get<uint32_t>(bytes.data() + 4);
    const uint64_t count = get<uint64_t>(bytes.data() + 8);
    if (version != 1 && version != kVersion)
        return makeError(where + ": auxscope capture statistics: unknown version " + std::to_string(version));
    const uint32_t minEntry = version == 1 ? kEntrySizeV1 : kEntrySize;
    if (entrySize < minEntry)
        return makeError(where + ": auxscope capture statistics: entry size " + std::to_string(entrySize) +
                         " is below " + std::to_string(minEntry));
    const uint64_t fits = (bytes.size() - 16) / entrySize;
    std::vector<StatsSample> out;
    out.reserve(std::min(count, fits));
    for (uint64_t i = 0; i < std::min(count, fits); ++i) {
        const uint8_t* p = bytes.data() + 16 + i * entrySize;
        StatsSample s;
        s.perfTime = get<uint64_t>(p);
        s.monotonicNs = get<uint64_t>(p + 8);
        s.cpu = get<int32_t>(p + 16);
        s.fillPeakPercent = get<float>(p + 20);
        s.bytes = get<uint64_t>(p + 24);
        s.records = get<uint64_t>(p + 32);
        s.lostRecords = get<uint64_t>(p + 40);
        s.lostSamples = get<uint64_t>(p + 48);
        s.kernelLost = get<uint64_t>(p + 56);
        if (version >= 2) {
            s.hasAux = get<uint32_t>(p + 64) != 0;
            s.auxFillPercent = get<float>(p + 68);
            uint64_t* fields[] = {&s.auxBytes,     &s.auxTruncated, &s.auxPartial,      &s.auxCollision,
                                  &s.auxReenables, &s.auxSnapshots, &s.auxSnapshotBytes};
            for (size_t k = 0; k < 7; ++k)
                *fields[k] = get<uint64_t>(p + 72 + 8 * k);
        }
        out.push_back(s);
    }
    if (fits < count)
        return makeError(where + ": auxscope capture statistics: " + std::to_string(count) +
                         " entries announced, only " + std::to_string(fits) + " present");
    return out;
}

}  // namespace auxscope
