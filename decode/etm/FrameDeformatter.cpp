// SPDX-License-Identifier: GPL-3.0-or-later
#include "etm/FrameDeformatter.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace auxscope::etm {

namespace {

constexpr uint8_t kFsync[4] = {0xff, 0xff, 0xff, 0x7f};  // 0x7fffffff, little-endian

bool isFsync(const uint8_t* p) {
    return std::memcmp(p, kFsync, sizeof kFsync) == 0;
}
bool isHsync(const uint8_t* p) {
    return p[0] == 0xff && p[1] == 0x7f;
}

std::string at(uint64_t index) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "offset %llu (0x%llx)", static_cast<unsigned long long>(index),
                  static_cast<unsigned long long>(index));
    return buf;
}

}  // namespace

FrameDeformatter::FrameDeformatter(FrameDeformatterSink& sink, FrameDeformatterOptions options)
    : sink_(sink), options_(options) {
    run_.reserve(256);
    reset();
}

void FrameDeformatter::reset() {
    started_ = false;
    next_ = 0;
    synced_ = options_.sync == FrameSync::MemoryAligned;
    failed_ = false;
    error_.clear();
    cur_ = kNoId;
    frameLen_ = 0;
    pend_.clear();
    pendIndex_ = 0;
    run_.clear();
    runId_ = kNoId;
}

Expected<void> FrameDeformatter::fail(uint64_t index, const std::string& cause) {
    flushRun();
    failed_ = true;
    error_ = "frame deformatter: " + at(index) + ": " + cause;
    return makeError(error_);
}

Expected<void> FrameDeformatter::feed(uint64_t index, std::span<const uint8_t> bytes) {
    if (failed_) return makeError(error_ + " (reset() before feeding more)");
    if (started_ && index != next_)
        return fail(index, "the bytes do not continue the stream (expected " + at(next_) +
                               "); reset() before a new stream");
    if (!started_) {
        started_ = true;
        next_ = index;
        pendIndex_ = index;
    }
    if (bytes.empty()) return {};
    Expected<void> r = options_.sync == FrameSync::MemoryAligned ? feedAligned(bytes) : feedFsync(bytes);
    next_ += bytes.size();
    if (r) flushRun();
    return r;
}

Expected<void> FrameDeformatter::feedAligned(std::span<const uint8_t> bytes) {
    const uint8_t* p = bytes.data();
    size_t n = bytes.size();
    uint64_t index = next_;
    auto frameAt = [this](const uint8_t* f, uint64_t start) -> Expected<void> {
        if (options_.resetOn4xFsync && isFsync(f)) {
            for (size_t w = 4; w < kFrameSize; w += 4)
                if (!isFsync(f + w))
                    return fail(start + w,
                                "a frame starting with an FSYNC is not 4 FSYNCs (perf's reset frame)");
            flushRun();
            stats_.syncBytes += kFrameSize;
            ++stats_.resets;
            cur_ = kNoId;
            sink_.reset(start);
            return {};
        }
        uint64_t pairs[kFrameSize / 2];
        for (size_t i = 0; i < kFrameSize / 2; ++i)
            pairs[i] = start + 2 * i;
        unpack(f, pairs);
        return {};
    };
    if (frameLen_ > 0) {
        const size_t take = std::min(kFrameSize - frameLen_, n);
        std::memcpy(frame_ + frameLen_, p, take);
        frameLen_ += take;
        p += take, n -= take, index += take;
        if (frameLen_ < kFrameSize) return {};
        frameLen_ = 0;
        if (auto r = frameAt(frame_, index - kFrameSize); !r) return r;
    }
    for (; n >= kFrameSize; p += kFrameSize, n -= kFrameSize, index += kFrameSize)
        if (auto r = frameAt(p, index); !r) return r;
    if (n > 0) {
        std::memcpy(frame_, p, n);
        frameLen_ = n;
    }
    return {};
}

Expected<void> FrameDeformatter::feedFsync(std::span<const uint8_t> bytes) {
    pend_.insert(pend_.end(), bytes.begin(), bytes.end());
    const uint8_t* d = pend_.data();
    const size_t size = pend_.size();
    size_t pos = 0;
    Expected<void> result;
    while (pos < size) {
        const size_t avail = size - pos;
        if (!synced_) {
            size_t p = pos;
            while (p + 4 <= size && !isFsync(d + p))
                ++p;
            if (p + 4 > size) {
                // Keep the last 3 bytes: an FSYNC may start among them.
                const size_t keep = std::min<size_t>(3, avail);
                stats_.unsyncedBytes += avail - keep;
                pos = size - keep;
                break;
            }
            stats_.unsyncedBytes += p - pos;
            pos = p;
            synced_ = true;
            continue;
        }
        if (frameLen_ == 0) {
            // FSYNCs may stand before a frame.
            if (avail < 4) break;
            if (isFsync(d + pos)) {
                stats_.syncBytes += 4;
                pos += 4;
                continue;
            }
        }
        if (frameLen_ % 4 == 0) {
            // A 32-bit word of the frame: an FSYNC here breaks the frame.
            if (avail < 4) break;
            if (isFsync(d + pos)) {
                result = fail(pendIndex_ + pos, "FSYNC inside a frame (" + std::to_string(frameLen_) +
                                                    " bytes into the frame)");
                break;
            }
        }
        if (avail < 2) break;
        if (isHsync(d + pos)) {
            if (!options_.hsyncs) {
                result =
                    fail(pendIndex_ + pos, "HSYNC inside a frame, and the stream is not one with HSYNCs");
                break;
            }
            stats_.syncBytes += 2;
            pos += 2;
            continue;
        }
        pairIndex_[frameLen_ / 2] = pendIndex_ + pos;
        frame_[frameLen_] = d[pos];
        frame_[frameLen_ + 1] = d[pos + 1];
        frameLen_ += 2;
        pos += 2;
        if (frameLen_ == kFrameSize) {
            frameLen_ = 0;
            unpack(frame_, pairIndex_);
        }
    }
    pend_.erase(pend_.begin(), pend_.begin() + static_cast<std::ptrdiff_t>(pos));
    pendIndex_ += pos;
    return result;
}

Expected<void> FrameDeformatter::finish() {
    if (failed_) return makeError(error_);
    flushRun();
    if (options_.sync == FrameSync::MemoryAligned) {
        if (frameLen_ > 0) {
            const uint64_t start = next_ - frameLen_;
            const size_t n = frameLen_;
            frameLen_ = 0;
            return fail(start,
                        std::to_string(n) + " bytes of an incomplete frame at the end (frames are 16 bytes)");
        }
        return {};
    }
    if (!synced_) {
        const uint64_t n = stats_.unsyncedBytes + pend_.size();
        stats_.unsyncedBytes += pend_.size();
        pend_.clear();
        if (n > 0) return fail(next_ - n, "no FSYNC in the " + std::to_string(n) + " bytes from here");
        return {};
    }
    const size_t left = frameLen_ + pend_.size();
    if (left > 0) {
        const uint64_t start = frameLen_ > 0 ? pairIndex_[0] : pendIndex_;
        frameLen_ = 0;
        pend_.clear();
        return fail(start, std::to_string(left) + " bytes of an incomplete frame at the end");
    }
    return {};
}

void FrameDeformatter::flushRun() {
    if (!run_.empty()) {
        sink_.data(runId_, runIndex_, run_);
        run_.clear();
    }
}

inline void FrameDeformatter::emit(uint8_t id, uint8_t byte, uint64_t index) {
    if (!validTraceId(id)) {
        if (id == kNoId)
            ++stats_.unknownIdBytes;
        else if (id == 0)
            ++stats_.nullIdBytes;
        else
            ++stats_.reservedIdBytes;
        return;
    }
    if (id != runId_) {
        flushRun();
        runId_ = id;
    }
    if (run_.empty()) runIndex_ = index;
    run_.push_back(byte);
    ++stats_.dataBytes;
}

void FrameDeformatter::unpack(const uint8_t* f, const uint64_t* pairIndex) {
    ++stats_.frames;
    const uint8_t aux = f[15];
    for (unsigned i = 0; i < 7; ++i) {
        const uint8_t even = f[2 * i], odd = f[2 * i + 1];
        const bool auxBit = (aux >> i) & 1;
        if (even & 1) {
            const uint8_t id = even >> 1;
            if (id != cur_ && auxBit) {
                // Delayed ID: the odd byte is the old ID's last.
                emit(cur_, odd, pairIndex[i] + 1);
                cur_ = id;
                continue;
            }
            cur_ = id;
        } else {
            emit(cur_, static_cast<uint8_t>(even | (auxBit ? 1 : 0)), pairIndex[i]);
        }
        emit(cur_, odd, pairIndex[i] + 1);
    }
    // Byte 14: an ID for the next frame, or data; byte 15 is the aux byte.
    const uint8_t last = f[14];
    if (last & 1)
        cur_ = last >> 1;
    else
        emit(cur_, static_cast<uint8_t>(last | ((aux >> 7) & 1)), pairIndex[7]);
}

namespace {

class Collector final : public FrameDeformatterSink {
public:
    explicit Collector(DeformattedBuffer& out) : out_(out) {}
    void data(uint8_t traceId, uint64_t, std::span<const uint8_t> bytes) override {
        auto& v = out_.streams[traceId];
        v.insert(v.end(), bytes.begin(), bytes.end());
    }

private:
    DeformattedBuffer& out_;
};

}  // namespace

Expected<DeformattedBuffer> deformatBuffer(std::span<const uint8_t> bytes,
                                           const FrameDeformatterOptions& options) {
    DeformattedBuffer out;
    Collector sink(out);
    FrameDeformatter d(sink, options);
    if (auto r = d.feed(0, bytes); !r) return r.error();
    if (auto r = d.finish(); !r) return r.error();
    out.stats = d.stats();
    return out;
}

}  // namespace auxscope::etm
