// SPDX-License-Identifier: GPL-3.0-or-later
#include "etm/EtmSyncIndex.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <set>

#include "etm/FrameDeformatter.h"

namespace auxscope::etm {

unsigned asyncZeros(EtmProtocol protocol) {
    switch (protocol) {
        case EtmProtocol::EtmV4:
        case EtmProtocol::Ete:
            return 11;
        case EtmProtocol::EtmV3:
        case EtmProtocol::Ptm:
            return 5;
        case EtmProtocol::Stm:
            break;
    }
    return 0;
}

namespace {

// Finds A-syncs in one trace ID's bytes as they come: a run of at least `zeros`
// zero bytes, then 0x80. Remembers where (`place`) each of the last zeros was,
// so the A-sync's first byte is known when its 0x80 arrives.
template <typename Place>
class BasicAsyncScanner {
public:
    explicit BasicAsyncScanner(unsigned zeros) : zeros_(zeros) {}
    // Returns true (and the place of the A-sync's first byte) when `b` ends an A-sync.
    bool push(uint8_t b, const Place& place, Place& asyncAt) {
        if (!zeros_) return false;
        if (b == 0) {
            places_[run_ % places_.size()] = place;
            ++run_;
            return false;
        }
        const bool found = b == 0x80 && run_ >= zeros_;
        if (found) asyncAt = places_[(run_ - zeros_) % places_.size()];
        run_ = 0;
        return found;
    }
    void reset() { run_ = 0; }

private:
    unsigned zeros_;
    uint64_t run_ = 0;
    std::array<Place, 16> places_{};
};
using AsyncScanner = BasicAsyncScanner<uint64_t>;

unsigned zerosOfId(const EtmCpuTrace& trace, uint8_t id) {
    for (const EtmSourceConfig& s : trace.sources)
        if (s.traceId() == id) return asyncZeros(s.protocol);
    return 0;
}

// A frame-formatted buffer fed one frame at a time: every ID's bytes arrive with
// the frame they came in.
class FrameScan final : public FrameDeformatterSink {
public:
    explicit FrameScan(const EtmCpuTrace& trace) : trace_(trace) {}
    void data(uint8_t id, uint64_t, std::span<const uint8_t> bytes) override {
        auto it = scanners.find(id);
        if (it == scanners.end()) it = scanners.emplace(id, AsyncScanner(zerosOfId(trace_, id))).first;
        ids.insert(id);
        uint64_t at = 0;
        for (uint8_t b : bytes)
            if (it->second.push(b, frame, at)) found[id].push_back(at);
    }
    void reset(uint64_t) override {
        for (auto& [id, s] : scanners)
            s.reset();
    }
    uint64_t frame = 0;
    std::map<uint8_t, AsyncScanner> scanners;
    std::map<uint8_t, std::vector<uint64_t>> found;  // frame of each A-sync's first byte
    std::set<uint8_t> ids;

private:
    const EtmCpuTrace& trace_;
};

// The first bytes a fresh deformatter started at `frame` hands `id`.
class FirstBytes final : public FrameDeformatterSink {
public:
    explicit FirstBytes(uint8_t id) : id_(id) {}
    void data(uint8_t id, uint64_t, std::span<const uint8_t> bytes) override {
        if (id == id_) kept.insert(kept.end(), bytes.begin(), bytes.end());
    }
    std::vector<uint8_t> kept;

private:
    uint8_t id_;
};

}  // namespace

EtmBufferSyncs EtmSyncIndex::buildBuffer(const EtmCpuTrace& trace, uint64_t begin, uint64_t end) {
    EtmBufferSyncs out;
    out.begin = begin;
    out.end = end;
    if (end <= begin) return out;
    std::vector<uint8_t> scratch;
    const std::span<const uint8_t> bytes = trace.stream.bytes.view(begin, end, scratch);
    if (trace.input == EtmInput::Raw) {
        if (trace.sources.size() != 1) return out;
        const uint8_t id = trace.sources[0].traceId();
        AsyncScanner scan(asyncZeros(trace.sources[0].protocol));
        std::vector<EtmSyncPoint>& points = out.byId[id];
        uint64_t at = 0;
        for (size_t i = 0; i < bytes.size(); ++i)
            if (scan.push(bytes[i], begin + i, at)) points.push_back({at, trace.timeAt(at), true});
        for (const EtmSyncPoint& p : points)
            if (p.offset > begin) out.cuts.push_back(p.offset);
        return out;
    }
    if (trace.input != EtmInput::Formatted) return out;  // FSYNC-framed streams: not from perf
    constexpr size_t kFrame = FrameDeformatter::kFrameSize;
    FrameDeformatterOptions options;
    options.resetOn4xFsync = true;
    FrameScan scan(trace);
    FrameDeformatter frames(scan, options);
    for (size_t i = 0; i + kFrame <= bytes.size(); i += kFrame) {
        scan.frame = begin + i;
        if (!frames.feed(begin + i, bytes.subspan(i, kFrame))) break;
    }
    for (const auto& [id, at] : scan.found) {
        const unsigned zeros = zerosOfId(trace, id);
        std::vector<EtmSyncPoint>& points = out.byId[id];
        for (uint64_t frame : at) {
            if (!points.empty() && points.back().offset == frame) continue;
            // A fresh start at the frame: the ID's first bytes must be the A-sync, whole.
            FirstBytes first(id);
            FrameDeformatter fresh(first, options);
            const uint64_t from = frame - begin;
            for (uint64_t k = from;
                 k + kFrame <= bytes.size() && k < from + 3 * kFrame && first.kept.size() < 16; k += kFrame)
                if (!fresh.feed(begin + k, bytes.subspan(k, kFrame))) break;
            size_t z = 0;
            while (z < first.kept.size() && first.kept[z] == 0)
                ++z;
            const bool clean = z >= zeros && z < first.kept.size() && first.kept[z] == 0x80;
            points.push_back({frame, trace.timeAt(frame), clean});
        }
    }
    out.ids = scan.ids;
    // One source: the buffer is cut at its clean sync points (a buffer whose one
    // ID never syncs has none, and is decoded whole).
    if (scan.ids.size() == 1)
        if (auto it = out.byId.find(*scan.ids.begin()); it != out.byId.end())
            for (const EtmSyncPoint& p : it->second)
                if (p.clean && p.offset > begin) out.cuts.push_back(p.offset);
    return out;
}

EtmSyncIndex EtmSyncIndex::build(const EtmCpuTrace& trace) {
    EtmSyncIndex index;
    for (const AuxBufferPlace& p : trace.stream.places)
        index.buffers.push_back(buildBuffer(trace, p.begin, p.end));
    return index;
}

std::map<uint8_t, uint64_t> EtmSyncIndex::syncsById() const {
    std::map<uint8_t, uint64_t> n;
    for (const EtmBufferSyncs& b : buffers)
        for (const auto& [id, points] : b.byId)
            n[id] += points.size();
    return n;
}

uint64_t EtmSyncIndex::cutCount() const {
    return std::accumulate(buffers.begin(), buffers.end(), uint64_t(0),
                           [](uint64_t n, const EtmBufferSyncs& b) { return n + b.cuts.size(); });
}

struct EtmSyncScanner::Impl final : public FrameDeformatterSink {
    using Scanner = BasicAsyncScanner<Point>;
    static constexpr uint64_t kNone = UINT64_MAX;

    explicit Impl(std::vector<EtmSourceConfig> s) : sources(std::move(s)), frames(*this, frameOptions()) {}
    static FrameDeformatterOptions frameOptions() {
        FrameDeformatterOptions o;
        o.resetOn4xFsync = true;
        return o;
    }
    void data(uint8_t id, uint64_t index, std::span<const uint8_t> bytes) override {
        auto it = scanners.find(id);
        if (it == scanners.end()) {
            unsigned zeros = asyncZeros(EtmProtocol::EtmV4);
            for (const EtmSourceConfig& c : sources)
                if (c.traceId() == id) zeros = asyncZeros(c.protocol);
            it = scanners.emplace(id, Scanner(zeros)).first;
        }
        // Where a fresh deformatter must start to know these bytes' ID: this
        // frame when an ID byte stands before them in it, else the last frame
        // with an ID byte (the ID is carried from there).
        const uint64_t runAt = index - frame;
        bool idBefore = false;
        for (uint64_t e = 0; e < 14 && e < runAt; e += 2)
            idBefore |= (current[e] & 1) != 0;
        const Point place{frame, idBefore || lastIdFrame == kNone ? frame : lastIdFrame};
        Point at;
        for (uint8_t b : bytes)
            if (it->second.push(b, place, at)) out->push_back(at);
    }
    void reset(uint64_t) override {
        for (auto& [id, sc] : scanners)
            sc.reset();
        lastIdFrame = kNone;
    }
    void restart() {
        frames.reset();
        reset(0);
        raw.reset();
        pendingSize = 0;
        started = false;
    }
    void feedFrame(uint64_t at, const uint8_t* bytes) {
        frame = at;
        current = bytes;
        if (!frames.feed(at, std::span<const uint8_t>(bytes, FrameDeformatter::kFrameSize))) {
            frames.reset();
            reset(0);
            return;
        }
        for (size_t e = 0; e < 15; e += 2)
            if (bytes[e] & 1) {
                lastIdFrame = at;
                break;
            }
    }

    std::vector<EtmSourceConfig> sources;
    FrameDeformatter frames;
    std::map<uint8_t, Scanner> scanners;
    Scanner raw{asyncZeros(EtmProtocol::EtmV4)};
    uint64_t frame = 0;                // the frame being fed
    const uint8_t* current = nullptr;  // its bytes
    uint64_t lastIdFrame = kNone;      // the last frame fed with an ID byte
    std::vector<Point>* out = nullptr;
    bool started = false;
    uint64_t next = 0;  // the stream offset the next bytes continue at
    uint8_t pending[FrameDeformatter::kFrameSize];
    size_t pendingSize = 0;
};

EtmSyncScanner::EtmSyncScanner(std::vector<EtmSourceConfig> sources, EtmInput input)
    : impl_(std::make_unique<Impl>(std::move(sources))), input_(input) {
    if (input_ == EtmInput::Raw && !impl_->sources.empty())
        impl_->raw = Impl::Scanner(asyncZeros(impl_->sources.front().protocol));
}

EtmSyncScanner::~EtmSyncScanner() = default;

void EtmSyncScanner::reset() {
    impl_->restart();
}

void EtmSyncScanner::feed(uint64_t offset, std::span<const uint8_t> bytes, std::vector<Point>& found) {
    const size_t before = found.size();
    scan(offset, bytes, found);
    // One ID's A-sync may end after another's that began later (frames interleave
    // the IDs), and several IDs may sync in one frame: ascending, once each.
    auto from = found.begin() + long(before);
    std::sort(from, found.end(), [](const Point& a, const Point& b) {
        return a.offset < b.offset || (a.offset == b.offset && a.entry < b.entry);
    });
    found.erase(
        std::unique(from, found.end(), [](const Point& a, const Point& b) { return a.offset == b.offset; }),
        found.end());
}

void EtmSyncScanner::scan(uint64_t offset, std::span<const uint8_t> bytes, std::vector<Point>& found) {
    Impl& m = *impl_;
    if (m.started && offset != m.next) m.restart();
    m.out = &found;
    constexpr size_t kFrame = FrameDeformatter::kFrameSize;
    if (!m.started) {
        m.started = true;
        if (input_ == EtmInput::Formatted && offset % kFrame) {
            // Into the middle of a frame: on from the next one.
            const size_t skip = std::min<size_t>(kFrame - offset % kFrame, bytes.size());
            offset += skip;
            bytes = bytes.subspan(skip);
        }
    }
    m.next = offset + bytes.size();
    if (input_ == EtmInput::Raw) {
        Point at;
        for (size_t i = 0; i < bytes.size(); ++i)
            if (m.raw.push(bytes[i], Point{offset + i, offset + i}, at)) found.push_back(at);
        return;
    }
    if (input_ != EtmInput::Formatted) return;
    // Complete a frame split by the last transfer.
    if (m.pendingSize) {
        const size_t n = std::min(kFrame - m.pendingSize, bytes.size());
        std::memcpy(m.pending + m.pendingSize, bytes.data(), n);
        m.pendingSize += n;
        offset += n;
        bytes = bytes.subspan(n);
        if (m.pendingSize < kFrame) return;
        m.feedFrame(offset - kFrame, m.pending);
        m.pendingSize = 0;
    }
    size_t i = 0;
    for (; i + kFrame <= bytes.size(); i += kFrame)
        m.feedFrame(offset + i, bytes.data() + i);
    m.pendingSize = bytes.size() - i;
    if (m.pendingSize) std::memcpy(m.pending, bytes.data() + i, m.pendingSize);
}

}  // namespace auxscope::etm
