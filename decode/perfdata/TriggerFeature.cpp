// SPDX-License-Identifier: GPL-3.0-or-later
#include "perfdata/TriggerFeature.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace auxscope {
namespace {

constexpr uint32_t kVersion = 1;
constexpr uint32_t kFiringSize = 88;

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof v);
    std::memcpy(out.data() + at, &v, sizeof v);
}

struct Cursor {
    std::span<const uint8_t> bytes;
    size_t at = 0;
    bool ok = true;
    template <typename T>
    T get() {
        T v{};
        if (at + sizeof v > bytes.size()) {
            ok = false;
            return v;
        }
        std::memcpy(&v, bytes.data() + at, sizeof v);
        at += sizeof v;
        return v;
    }
};

std::string ms(uint64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f ms", double(ns) / 1e6);
    return buf;
}

}  // namespace

std::vector<uint8_t> encodeTriggerFeature(const TriggerFileData& d) {
    const TriggerReport& r = d.report;
    std::vector<uint8_t> out;
    put<uint32_t>(out, kVersion);
    put<uint32_t>(out, kFiringSize);
    put<uint32_t>(out, uint32_t(r.triggers.size()));
    put<uint32_t>(out, 0);
    for (uint64_t v : {d.postNs, d.max, d.gapNs})
        put<uint64_t>(out, v);
    for (uint64_t v : r.skipped)
        put<uint64_t>(out, v);
    for (uint64_t v : {r.samples, r.unmatchedEnds, r.lost, r.depthOverflows, r.snapshotsRequested,
                       r.snapshotsTaken, r.otherProcesses})
        put<uint64_t>(out, v);
    for (const std::string& name : r.triggers) {
        put<uint32_t>(out, uint32_t(name.size()));
        out.insert(out.end(), name.begin(), name.end());
        out.resize((out.size() + 7) / 8 * 8, 0);
    }
    put<uint64_t>(out, r.firings.size());
    for (const TriggerFiring& f : r.firings) {
        put<uint32_t>(out, f.trigger);
        put<int32_t>(out, f.pid);
        put<int32_t>(out, f.tid);
        put<int32_t>(out, f.cpu);
        for (uint64_t v : {f.start, f.time, f.duration, f.snapshot, f.snapshotTime, f.windowStart,
                           f.windowEnd, f.seenMono, f.snapshotMono})
            put<uint64_t>(out, v);
    }
    return out;
}

Expected<TriggerFileData> decodeTriggerFeature(std::span<const uint8_t> bytes, const std::string& where) {
    const std::string what = where + ": auxscope triggers: ";
    Cursor c{bytes};
    TriggerFileData d;
    TriggerReport& r = d.report;
    const uint32_t version = c.get<uint32_t>(), firingSize = c.get<uint32_t>(), triggers = c.get<uint32_t>();
    (void)c.get<uint32_t>();
    if (!c.ok) return makeError(what + "section of " + std::to_string(bytes.size()) + " bytes is cut short");
    if (version != kVersion) return makeError(what + "unknown version " + std::to_string(version));
    if (firingSize < kFiringSize)
        return makeError(what + "firing size " + std::to_string(firingSize) + " is below " +
                         std::to_string(kFiringSize));
    d.postNs = c.get<uint64_t>(), d.max = c.get<uint64_t>(), d.gapNs = c.get<uint64_t>();
    for (auto& v : r.skipped)
        v = c.get<uint64_t>();
    for (uint64_t* v : {&r.samples, &r.unmatchedEnds, &r.lost, &r.depthOverflows, &r.snapshotsRequested,
                        &r.snapshotsTaken, &r.otherProcesses})
        *v = c.get<uint64_t>();
    for (uint32_t i = 0; i < triggers && c.ok; ++i) {
        const uint32_t len = c.get<uint32_t>();
        if (!c.ok || len > bytes.size() - c.at)
            return makeError(what + "trigger name " + std::to_string(i) + " is cut short");
        r.triggers.emplace_back(reinterpret_cast<const char*>(bytes.data() + c.at), len);
        c.at = std::min(bytes.size(), (c.at + len + 7) / 8 * 8);
    }
    const uint64_t count = c.get<uint64_t>();
    if (!c.ok) return makeError(what + "section is cut short before its firings");
    const uint64_t fits = (bytes.size() - c.at) / firingSize;
    if (count > fits)
        return makeError(what + std::to_string(count) + " firings announced, " + std::to_string(fits) +
                         " fit in the section");
    r.perTrigger.assign(r.triggers.size(), 0);
    for (uint64_t i = 0; i < count; ++i) {
        const size_t base = c.at;
        TriggerFiring f;
        f.trigger = c.get<uint32_t>();
        f.pid = c.get<int32_t>(), f.tid = c.get<int32_t>(), f.cpu = c.get<int32_t>();
        for (uint64_t* v : {&f.start, &f.time, &f.duration, &f.snapshot, &f.snapshotTime, &f.windowStart,
                            &f.windowEnd, &f.seenMono, &f.snapshotMono})
            *v = c.get<uint64_t>();
        c.at = base + firingSize;
        if (f.trigger >= r.triggers.size())
            return makeError(what + "firing " + std::to_string(i) + " names trigger " +
                             std::to_string(f.trigger) + " of " + std::to_string(r.triggers.size()));
        ++r.perTrigger[f.trigger];
        if (f.snapshot != UINT64_MAX && f.snapshotTime > f.time &&
            (r.firings.empty() || r.firings.back().snapshot != f.snapshot))
            r.latenciesNs.push_back(f.snapshotTime - f.time);
        r.firings.push_back(f);
    }
    return d;
}

std::string formatTriggerReport(const TriggerFileData& d, uint64_t timeBase, size_t maxFirings) {
    const TriggerReport& r = d.report;
    std::string o = "triggers: " + std::to_string(r.firings.size()) + " firings, " +
                    std::to_string(r.snapshotsTaken) + " snapshots taken of " +
                    std::to_string(r.snapshotsRequested) + " asked for";
    if (d.postNs) o += ", --trigger-post " + ms(d.postNs);
    if (d.max) o += ", --trigger-max " + std::to_string(d.max);
    if (d.gapNs) o += ", --trigger-gap " + ms(d.gapNs);
    o += "\n";
    for (size_t i = 0; i < r.triggers.size(); ++i)
        o += "  [" + std::to_string(i) + "] " + r.triggers[i] + ": " +
             std::to_string(i < r.perTrigger.size() ? r.perTrigger[i] : 0) + " firings\n";
    for (size_t s = 0; s < r.skipped.size(); ++s)
        if (r.skipped[s])
            o += "  skipped " + std::to_string(r.skipped[s]) +
                 " firings: " + triggerSkipName(TriggerSkip(s)) + "\n";
    if (r.unmatchedEnds)
        o += "  " + std::to_string(r.unmatchedEnds) +
             " returns/exits without their entry (entered before the capture, or a sample was lost)\n";
    if (r.lost)
        o += "  " + std::to_string(r.lost) + " trigger samples lost by the kernel (firings may be missing)\n";
    if (r.otherProcesses)
        o += "  " + std::to_string(r.otherProcesses) +
             " trigger samples of other processes ignored (uprobe hits in other processes running the "
             "binary, tracepoint pairs of their threads)"
             "\n";
    if (r.depthOverflows)
        o += "  " + std::to_string(r.depthOverflows) + " entries past the nesting limit ignored\n";
    std::vector<uint64_t> seen;
    for (const TriggerFiring& f : r.firings)
        if (f.snapshotMono >= f.seenMono && f.seenMono) seen.push_back(f.snapshotMono - f.seenMono);
    if (!seen.empty()) {
        std::sort(seen.begin(), seen.end());
        o += "  firing seen by the drain thread -> snapshot start: median " + ms(seen[seen.size() / 2]) +
             ", max " + ms(seen.back()) + "\n";
    }
    if (!r.latenciesNs.empty()) {
        std::vector<uint64_t> l = r.latenciesNs;
        std::sort(l.begin(), l.end());
        o += "  firing -> snapshot start: median " + ms(l[l.size() / 2]) + ", p99 " +
             ms(l[std::min(l.size() - 1, l.size() * 99 / 100)]) + ", max " + ms(l.back()) +
             (d.postNs ? " (--trigger-post included)" : "") + "\n";
    }
    auto rel = [&](uint64_t t) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.6f",
                      t >= timeBase ? double(t - timeBase) / 1e9 : -double(timeBase - t) / 1e9);
        return std::string(buf);
    };
    for (size_t i = 0; i < r.firings.size() && i < maxFirings; ++i) {
        const TriggerFiring& f = r.firings[i];
        o += "  firing " + std::to_string(i) + ": [" + std::to_string(f.trigger) + "] " +
             (f.trigger < r.triggers.size() ? r.triggers[f.trigger] : "?") + " tid " + std::to_string(f.tid) +
             " (pid " + std::to_string(f.pid) + ") cpu " + std::to_string(f.cpu) + " at " + rel(f.time) +
             " s";
        if (f.duration) o += ", took " + ms(f.duration);
        if (f.snapshot == UINT64_MAX)
            o += ", no snapshot";
        else
            o += ", snapshot " + std::to_string(f.snapshot) +
                 (f.snapshotTime ? " at " + rel(f.snapshotTime) + " s" : std::string());
        o += "\n";
    }
    if (r.firings.size() > maxFirings)
        o += "  ... " + std::to_string(r.firings.size() - maxFirings) + " more firings\n";
    return o;
}

}  // namespace auxscope
