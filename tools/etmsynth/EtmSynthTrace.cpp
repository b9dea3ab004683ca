// SPDX-License-Identifier: GPL-3.0-or-later
// The truth's path as ETMv4 instruction trace (ETMv4 architecture: A-sync,
// Trace Info, Trace On, Address with Context, Long Address, Atom F1-F3), and
// CoreSight formatter frames around it.
#include "EtmSynth.h"

namespace auxscope::etmsynth {

namespace {

// Context info byte (address with context): EL0, SF (AArch64), NS; no VMID, no CID.
constexpr uint8_t kContextEl0Aarch64Ns = 0x30;

class Etmv4Writer {
public:
    explicit Etmv4Writer(std::vector<uint8_t>& out) : out_(out) {}

    void async() {
        flushAtoms();
        out_.insert(out_.end(), 11, 0x00);
        out_.push_back(0x80);
    }
    void traceInfo() {
        flushAtoms();
        out_.push_back(0x01);  // Trace Info
        out_.push_back(0x00);  // PLCTL: no sections (INFO, KEY, SPEC, CYCT all 0)
    }
    void traceOn() {
        flushAtoms();
        out_.push_back(0x04);
    }
    // Address with Context, 64-bit, IS0: the address and the context it runs in.
    void addressWithContext(uint64_t a) {
        flushAtoms();
        out_.push_back(0x85);
        address64(a);
        out_.push_back(kContextEl0Aarch64Ns);
    }
    // Long Address, 64-bit, IS0: the target of an indirect branch.
    void longAddress(uint64_t a) {
        flushAtoms();
        out_.push_back(0x9d);
        address64(a);
    }
    void atom(bool e) {
        pending_ |= uint8_t(e) << count_;
        if (++count_ == 3) flushAtoms();
    }
    // Atom F1 (1 atom), F2 (2) or F3 (3): the oldest atom in bit 0, E = 1.
    void flushAtoms() {
        if (count_ == 0) return;
        static const uint8_t kHeader[] = {0, 0xf6, 0xd8, 0xf8};
        out_.push_back(kHeader[count_] | pending_);
        pending_ = 0;
        count_ = 0;
    }
    size_t size() const { return out_.size(); }

private:
    void address64(uint64_t a) {
        out_.push_back(uint8_t((a >> 2) & 0x7f));
        out_.push_back(uint8_t((a >> 9) & 0x7f));
        for (int b = 2; b < 8; ++b)
            out_.push_back(uint8_t(a >> (8 * b)));
    }
    std::vector<uint8_t>& out_;
    uint8_t pending_ = 0;
    unsigned count_ = 0;
};

}  // namespace

std::vector<uint8_t> encodeEtmv4(const Truth& truth, const EtmConfig& config) {
    std::vector<uint8_t> out;
    Etmv4Writer w(out);
    w.async();
    w.traceInfo();
    w.traceOn();
    w.addressWithContext(truth.startPc);
    size_t lastSync = 0;
    for (const Range& r : truth.ranges) {
        w.atom(r.taken);
        if (r.indirect) w.longAddress(r.next);
        if (w.size() - lastSync >= config.syncPeriod && &r != &truth.ranges.back()) {
            // Periodic re-sync at a waypoint: where execution goes on is known.
            w.async();
            lastSync = w.size() - 12;
            w.traceInfo();
            w.addressWithContext(r.next);
        }
    }
    w.flushAtoms();
    return out;
}

std::vector<uint8_t> formatFrames(const std::vector<uint8_t>& raw, uint8_t traceId) {
    std::vector<uint8_t> out;
    out.reserve((raw.size() / 14 + 1) * 16);
    for (size_t at = 0; at < raw.size(); at += 14) {
        const size_t n = std::min<size_t>(14, raw.size() - at);
        uint8_t frame[16] = {};
        uint8_t aux = 0;
        // Byte 0: the ID, taking effect at once (flag 0): bytes 1.. are its data.
        frame[0] = uint8_t(traceId << 1 | 1);
        size_t pos = 1;
        auto put = [&](uint8_t byte) {
            if (pos % 2 == 0) {  // an even byte: data with its bit 0 in the flag byte
                frame[pos] = byte & 0xfe;
                aux |= uint8_t((byte & 1) << (pos / 2));
            } else {
                frame[pos] = byte;
            }
            ++pos;
        };
        bool idle = false;  // switched to the null ID 0 for the padding
        for (size_t k = 0; k < n; ++k) {
            if (n < 14 && k + 1 == n && pos % 2 == 0) {
                // The last byte would be even: an ID 0 change there, flag 1 (the
                // next byte still belongs to the old ID), then that byte.
                frame[pos] = 0x01;
                aux |= uint8_t(1u << (pos / 2));
                ++pos;
                frame[pos++] = raw[at + k];
                idle = true;
                break;
            }
            put(raw[at + k]);
        }
        if (!idle && pos < 15) frame[pos] = 0x01;  // pos is even here: the rest is ID 0's
        frame[15] = aux;
        out.insert(out.end(), frame, frame + 16);
    }
    return out;
}

}  // namespace auxscope::etmsynth
