// SPDX-License-Identifier: GPL-3.0-or-later
#include "pt/PtPacketDump.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace auxscope {
namespace {

// ---------------------------------------------------------------- formatting

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
    char buffer[128];
    va_list args;
    va_start(args, fmt);
    int n = std::vsnprintf(buffer, sizeof buffer, fmt, args);
    va_end(args);
    return std::string(buffer, n < 0 ? 0 : std::min<size_t>(n, sizeof buffer - 1));
}

// ptdump lays a line out in fixed-size columns and silently cuts what does not fit;
// reproducing the cut keeps long payloads identical.
struct DumpLine {
    static constexpr size_t kOffsetWidth = 16;
    static constexpr size_t kRawWidth = 32;
    static constexpr size_t kNameWidth = 9;
    static constexpr size_t kPayloadWidth = 24;
    static constexpr size_t kLongPayloadWidth = 47;  // TNT bit strings
    static constexpr size_t kTrackingIdWidth = 4;
    static constexpr size_t kTrackingWidth = 16;

    std::string offset, raw, name, payload, trackingId, tracking;
    bool longPayload = false;
    bool hidden = false;       // not shown (--no-pad, --no-timing, --no-cyc)
    bool timeSkipped = false;  // the packet does not move time (CBR): no tsc column
    bool tcalSkipped = false;  // the packet does not change calibration (TMA, CYC): no fcr column

    static std::string fit(std::string text, size_t width) {
        if (text.size() > width) text.resize(width);
        return text;
    }
    static std::string pad(const std::string& text, size_t width) {
        return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
    }

    void print(std::ostream& out, const PtPacketDumpOptions& options) const {
        if (hidden || options.quiet) return;
        std::string line;
        const char* separator = "";
        if (options.showOffset) {
            line += pad(offset, kOffsetWidth + 1);
            separator = " ";
        }
        if (!raw.empty()) {
            line += separator + pad(raw, kRawWidth + 1);
            separator = " ";
        }
        std::string shownPayload = fit(payload, longPayload ? kLongPayloadWidth : kPayloadWidth);
        line += separator;
        line += shownPayload.empty() ? name : pad(name, kNameWidth + 1);
        if (longPayload) {
            line += " " + shownPayload;
        } else if (!trackingId.empty()) {
            line += " " + pad(shownPayload, kPayloadWidth + 1);
            line += " " + pad(trackingId, kTrackingIdWidth + 1);
            line += tracking;
        } else if (!shownPayload.empty()) {
            line += " " + shownPayload;
        }
        out << line << '\n';
    }
};

// ---------------------------------------------------------------- time

// Widths of the CTC, TMA and TSC fields in the packets (Intel SDM, Intel PT chapter).
constexpr uint32_t kMtcCtcBits = 8;
constexpr uint32_t kMtcCtcMask = (1u << kMtcCtcBits) - 1;
constexpr uint32_t kTmaCtcBits = 16;
constexpr uint32_t kTmaCtcMask = (1u << kTmaCtcBits) - 1;
constexpr uint32_t kTscBits = 56;
// Calibration keeps cycles-to-TSC ratios in fixed point with this many fraction bits.
constexpr uint32_t kFcrFractionBits = 8;

// How far the CTC moved from `last` to `now`, allowing one wrap of the bits MTC can
// carry (a second wrap would mean MTCs were lost; the estimate is then off until the next TSC).
int ctcDistance(uint32_t& distance, uint32_t now, uint32_t last, const pt_config& config) {
    if (now < last) {
        now += 1u << ((config.mtc_freq + kMtcCtcBits) & 31);
        if (now < last) return -pte_bad_packet;
    }
    distance = now - last;
    return 0;
}

// CTC ticks to TSC ticks (CPUID 0x15: TSC/CTC = EBX/EAX).
int ctcToTsc(uint64_t& tsc, uint64_t ctc, const pt_config& config) {
    if (config.cpuid_0x15_eax == 0 || config.cpuid_0x15_ebx == 0) return -pte_bad_config;
    tsc = ctc * config.cpuid_0x15_ebx / config.cpuid_0x15_eax;
    return 0;
}

// The estimated TSC: the last TSC packet, moved on by MTC (CTC converted to TSC)
// and between MTCs by CYC (core cycles converted with the calibration).
struct TimeEstimate {
    uint64_t tsc = 0;            // the estimate
    uint64_t base = 0;           // TSC at the last MTC (or at TSC, minus TMA's fast counter)
    uint64_t fc = 0;             // TSC ticks added by CYC since `base`
    uint32_t ctc = 0;            // CTC at the last MTC/TMA
    uint32_t ctcAtCycStart = 0;  // CTC where the running CYC count started
    uint32_t lostMtc = 0;
    uint32_t lostCyc = 0;
    uint8_t cbr = 0;
    bool haveTsc = false, haveCbr = false, haveTma = false, haveMtc = false;

    int query(uint64_t& out) const {
        out = tsc;
        return haveTsc ? 0 : -pte_no_time;
    }

    int onTsc(const pt_packet_tsc& packet) {
        haveTsc = true;
        haveTma = haveMtc = false;
        tsc = base = packet.tsc;
        ctc = 0;
        fc = 0;
        lostMtc = lostCyc = 0;  // a full time stamp makes up for earlier losses
        return 0;
    }

    int onCbr(const pt_packet_cbr& packet) {
        if (packet.ratio == 0) return -pte_bad_packet;
        haveCbr = true;
        cbr = packet.ratio;
        return 0;
    }

    int onTma(const pt_packet_tma& packet, const pt_config& config) {
        if (!haveTsc || haveTma) return -pte_bad_context;  // TMA belongs right after one TSC
        if (haveMtc) return -pte_internal;
        uint32_t ctcBits = config.mtc_freq + kMtcCtcBits;
        uint32_t ctcMask = ctcBits >= 32 ? ~0u : (1u << ctcBits) - 1u;
        haveTma = true;
        base -= packet.fc;
        fc += packet.fc;
        // When TMA carries every CTC bit an MTC would, it can stand in for the
        // previous MTC; otherwise the next MTC fills in the missing high bits.
        if (ctcBits <= kTmaCtcBits) haveMtc = true;
        ctc = ctcAtCycStart = packet.ctc & ctcMask;
        return 0;
    }

    int onMtc(const pt_packet_mtc& packet, const pt_config& config) {
        // Between TSC and TMA an MTC would look like a CTC jump: skip it.
        if (haveTsc && !haveTma) return 0;
        uint32_t lastCtc = ctc;
        uint32_t now = static_cast<uint32_t>(packet.ctc) << config.mtc_freq;
        bool hadMtc = haveMtc;
        if (fc || lostCyc || !haveMtc) ctcAtCycStart = now;
        haveMtc = true;
        fc = 0;
        ctc = now;
        lostCyc = 0;
        if (!hadMtc) {
            // First MTC: without TMA we do not know where in this period tracing
            // began, so it only sets the reference.
            if (!haveTma) return 0;
            if (lastCtc & ~kTmaCtcMask) return -pte_internal;
            // Take the high CTC bits TMA lacks from this MTC, one period back if
            // the low bits wrapped since the TMA.
            uint32_t low = now & kTmaCtcMask;
            uint32_t high = now & ~kTmaCtcMask;
            if (low < lastCtc) {
                high -= 1u << kTmaCtcBits;
                high &= kMtcCtcMask << config.mtc_freq;
            }
            lastCtc |= high;
        }
        uint32_t distance = 0;
        if (int status = ctcDistance(distance, now, lastCtc, config); status < 0) {
            lostMtc += 1;
            return status;
        }
        uint64_t ticks = 0;
        if (int status = ctcToTsc(ticks, distance, config); status < 0) return status;
        base += ticks;
        tsc = base;
        return 0;
    }

    // A CYC counts cycles since the previous CYC; when MTCs came in between, the
    // part before the latest MTC is already in `base` and must not count twice.
    int cyclesSinceLastMtc(uint64_t& cycles, const pt_config& config, uint64_t fcr) const {
        if (fcr == 0) return -pte_internal;
        if (ctc == ctcAtCycStart) return 0;
        uint32_t distance = 0;
        if (int status = ctcDistance(distance, ctc, ctcAtCycStart, config); status < 0) return status;
        uint64_t ticks = 0;
        if (int status = ctcToTsc(ticks, distance, config); status < 0) return status;
        uint64_t before = (ticks << kFcrFractionBits) / fcr;
        // Rather stall than run ahead when the calibration overestimates.
        cycles = cycles < before ? 0 : cycles - before;
        return 0;
    }

    int onCyc(const pt_packet_cyc& packet, const pt_config& config, uint64_t fcr) {
        if (fcr == 0) {
            lostCyc += 1;
            return 0;
        }
        uint64_t cycles = packet.value;
        if (fc == 0) {
            if (int status = cyclesSinceLastMtc(cycles, config, fcr); status < 0) return status;
        }
        fc += (cycles * fcr) >> kFcrFractionBits;
        tsc = base + fc;
        return 0;
    }
};

// The TSC ticks per core cycle ("fcr", fixed point), learned from CBR with the
// nominal frequency, from cycles counted between two MTCs, or between two TSCs in PSB+.
struct TimeCalibration {
    uint64_t fcr = 0;
    uint64_t minFcr = UINT64_MAX, maxFcr = 0;  // minFcr <= maxFcr once a ratio is known
    uint64_t lastTsc = 0;
    uint64_t cyclesSinceTsc = 0;
    uint64_t cyclesSinceMtc = 0;
    uint32_t lastCtc = 0;
    uint32_t lostMtc = 0;
    bool haveMtc = false;
    bool checkSkl168 = false;

    void reset() { *this = TimeCalibration{}; }
    bool known() const { return minFcr <= maxFcr; }
    int query(uint64_t& out) const {
        if (!known()) return -pte_no_time;
        out = fcr;
        return 0;
    }
    void set(uint64_t value) {
        fcr = value;
        minFcr = std::min(minFcr, value);
        maxFcr = std::max(maxFcr, value);
    }

    int onPsb(const pt_config& config) {
        if (config.errata.skl168) checkSkl168 = true;
        return 0;
    }

    // Outside PSB+ a TSC may follow lost time: remember it, do not calibrate on it.
    int onTsc(const pt_packet_tsc& packet) {
        lastTsc = packet.tsc;
        cyclesSinceTsc = 0;
        return 0;
    }

    int onHeaderTsc(const pt_packet_tsc& packet) {
        uint64_t previous = lastTsc, cycles = cyclesSinceTsc, now = packet.tsc;
        lastTsc = now;
        cyclesSinceTsc = 0;
        if (!previous || !cycles || haveMtc) return 0;  // MTC calibrates better when there is one
        if (now < previous) {
            now += 1ull << kTscBits;
            if (now < previous) return -pte_bad_packet;
        }
        uint64_t delta = now - previous;
        if (delta & ~(~0ull >> kFcrFractionBits)) return -pte_internal;
        set((delta << kFcrFractionBits) / cycles);
        return 0;
    }

    // Outside PSB+ a CBR means the core frequency changed: start over.
    int onCbr(const pt_packet_cbr& packet, const pt_config& config) {
        reset();
        return onHeaderCbr(packet, config);
    }

    int onHeaderCbr(const pt_packet_cbr& packet, const pt_config& config) {
        if (!config.nom_freq) return 0;
        if (!packet.ratio) return -pte_bad_packet;
        set((static_cast<uint64_t>(config.nom_freq) << kFcrFractionBits) / packet.ratio);
        return 0;
    }

    int onMtc(const pt_packet_mtc& packet, const pt_config& config) {
        uint32_t previousCtc = lastCtc;
        uint64_t cycles = cyclesSinceMtc;
        bool checkErratum = checkSkl168;
        checkSkl168 = false;  // only the first MTC after PSB is suspect
        uint32_t now = static_cast<uint32_t>(packet.ctc) << config.mtc_freq;
        if (!haveMtc) {
            cyclesSinceMtc = 0;
            lastCtc = now;
            haveMtc = true;
            return 0;
        }
        // No cycles yet: spread the next ones over both MTC periods.
        if (!cycles) return 0;
        cyclesSinceMtc = 0;
        lastCtc = now;
        lostMtc += 1;  // undone below once the ratio is updated
        uint32_t distance = 0;
        if (int status = ctcDistance(distance, now, previousCtc, config); status < 0) return status;
        uint64_t ticks = 0;
        if (int status = ctcToTsc(ticks, distance, config); status < 0) return status;
        if (ticks & ~(~0ull >> kFcrFractionBits)) return -pte_internal;
        uint64_t ratio = (ticks << kFcrFractionBits) / cycles;
        // SKL168: a CYC right before PSB may be dropped. Skip this MTC when MTCs
        // were lost since PSB, or when the cycles look a whole CYC wrap (4096) short.
        if (checkErratum) {
            if ((1u << config.mtc_freq) < distance) return 0;
            if (config.mtc_freq < 10 && known()) {
                uint64_t expected = (fcr * (cycles + 0xf00)) >> kFcrFractionBits;
                if (expected < ticks) return 0;
            }
        }
        set(ratio);
        lostMtc = 0;
        return 0;
    }

    int onCyc(const pt_packet_cyc& packet) {
        cyclesSinceMtc += packet.value;
        cyclesSinceTsc += packet.value;
        return 0;
    }
};

// ---------------------------------------------------------------- last IP

struct LastIp {
    uint64_t ip = 0;
    bool haveIp = false;
    bool suppressed = false;

    int update(const pt_packet_ip& packet) {
        auto keepHigh = [&](uint64_t lowMask) { ip = (ip & ~lowMask) | (packet.ip & lowMask); };
        switch (packet.ipc) {
            case pt_ipc_suppressed:
                suppressed = true;
                return 0;
            case pt_ipc_update_16:
                keepHigh(0xffffull);
                break;
            case pt_ipc_update_32:
                keepHigh(0xffffffffull);
                break;
            case pt_ipc_update_48:
                keepHigh(0xffffffffffffull);
                break;
            case pt_ipc_sext_48:
                ip = (packet.ip & (1ull << 47)) ? packet.ip | ~0xffffffffffffull
                                                : packet.ip & 0xffffffffffffull;
                break;
            case pt_ipc_full:
                ip = packet.ip;
                break;
            default:
                return -pte_bad_packet;
        }
        haveIp = true;
        suppressed = false;
        return 0;
    }
    int query(uint64_t& out) const {
        out = 0;
        if (!haveIp) return -pte_noip;
        if (suppressed) return -pte_ip_suppressed;
        out = ip;
        return 0;
    }
};

// ---------------------------------------------------------------- the dump

const char* const kNoPsb = "no PSB packet found: nothing to decode (not Intel PT trace data?)";

class PacketDumper {
public:
    PacketDumper(const PtConfig& config, const PtPacketDumpOptions& options, std::ostream& out,
                 PtSidebandSession* sideband)
        : config_(config.config), options_(options), out_(out), sideband_(sideband) {
        // Sideband records are shown by time, so time is kept even when not shown.
        trackTime_ = options.showTime || options.showTcal || sideband;
    }

    PtPacketDumpResult run(pt_packet_decoder* decoder) {
        int status = options_.noSync ? pt_pkt_sync_set(decoder, 0) : pt_pkt_sync_forward(decoder);
        if (status < 0) {
            if (status != -pte_eos) {
                diag(0, "sync error", status, PtDecodeIssue::Severity::Error);
            } else {
                // ptdump prints nothing here; the caller still learns why nothing came out.
                result_.issues.push_back({PtDecodeIssue::Severity::Error, 0, kNoPsb});
            }
            return std::move(result_);
        }
        while (true) {
            status = dumpUntilError(decoder);
            if (status == 0) break;
            // Lost bytes up to the next PSB: start over there with fresh tracking.
            status = pt_pkt_sync_forward(decoder);
            if (status < 0) {
                if (status != -pte_eos) diag(0, "sync error", status, PtDecodeIssue::Severity::Error);
                break;
            }
            resetTracking();
        }
        return std::move(result_);
    }

private:
    void resetTracking() {
        lastIp_ = LastIp{};
        tcal_.reset();
        time_ = TimeEstimate{};
        shownTsc_ = shownFcr_ = 0;
        inPsbHeader_ = false;
    }

    // ptdump's inline diagnostic: "[offset: what]" or "[offset: what: libipt error]".
    int diag(uint64_t offset, const std::string& what, int errorCode,
             PtDecodeIssue::Severity severity = PtDecodeIssue::Severity::Warning) {
        std::string text = errorCode ? what + ": " + ptErrorName(errorCode) : what;
        out_ << '[' << format("%" PRIx64, offset) << ": " << text << "]\n";
        result_.issues.push_back({severity, offset, text});
        return errorCode;
    }

    int dumpUntilError(pt_packet_decoder* decoder) {
        uint64_t offset = 0;
        while (true) {
            if (int status = pt_pkt_get_offset(decoder, &offset); status < 0)
                return diag(offset, "error getting offset", status, PtDecodeIssue::Severity::Error);
            pt_packet packet;
            int status = pt_pkt_next(decoder, &packet, sizeof packet);
            if (status < 0) {
                if (status == -pte_eos) return 0;
                return diag(offset, "error decoding packet", status, PtDecodeIssue::Severity::Error);
            }
            if (static_cast<size_t>(packet.type) < PtPacketCounts::kTypes)
                result_.counts.byType[packet.type] += 1;
            if (int status = dumpPacket(offset, packet); status < 0) return status;
        }
    }

    int dumpPacket(uint64_t offset, const pt_packet& packet) {
        DumpLine line;
        line.offset = format("%016" PRIx64, offset);
        if (options_.showRawBytes) {
            const uint8_t* begin = config_.begin + offset;
            if (config_.end < begin + packet.size)
                return diag(offset, "bad packet size", -pte_bad_packet, PtDecodeIssue::Severity::Error);
            for (const uint8_t* byte = begin; byte < begin + packet.size; ++byte) {
                if (line.raw.size() + 2 > DumpLine::kRawWidth) {
                    diag(offset, "truncating raw packet", 0);
                    break;
                }
                line.raw += format("%02x", *byte);
            }
        }
        if (int status = describe(line, offset, packet); status < 0) return status;
        line.print(out_, options_);
        return 0;
    }

    void ipPayload(DumpLine& line, uint64_t offset, const pt_packet_ip& ip) {
        switch (ip.ipc) {
            case pt_ipc_suppressed:
                line.payload = format("%x: ????????????????", pt_ipc_suppressed);
                break;
            case pt_ipc_update_16:
                line.payload = format("%x: ????????????%04" PRIx64, pt_ipc_update_16, ip.ip);
                break;
            case pt_ipc_update_32:
                line.payload = format("%x: ????????%08" PRIx64, pt_ipc_update_32, ip.ip);
                break;
            case pt_ipc_update_48:
                line.payload = format("%x: ????%012" PRIx64, pt_ipc_update_48, ip.ip);
                break;
            case pt_ipc_sext_48: {
                uint64_t full =
                    (ip.ip & (1ull << 47)) ? ip.ip | ~0xffffffffffffull : ip.ip & 0xffffffffffffull;
                line.payload = format("%x: %016" PRIx64, pt_ipc_sext_48, full);
                break;
            }
            case pt_ipc_full:
                line.payload = format("%x: %016" PRIx64, pt_ipc_full, ip.ip);
                break;
            default:
                line.payload = format("%x: %016" PRIx64, static_cast<unsigned>(ip.ipc), ip.ip);
                diag(offset, "bad ipc", -pte_bad_packet, PtDecodeIssue::Severity::Error);
                break;
        }
        if (!options_.showLastIp) return;
        line.trackingId = "ip";
        if (int status = lastIp_.update(ip); status < 0) {
            line.tracking = "<unavailable>";
            diag(offset, "error tracking last-ip", status);
            return;
        }
        uint64_t full = 0;
        int status = lastIp_.query(full);
        if (status == -pte_ip_suppressed) {
            line.tracking = "<suppressed>";
        } else if (status < 0) {
            line.tracking = "<unavailable>";
            diag(offset, "error tracking last-ip", status);
        } else {
            line.tracking = format("%016" PRIx64, full);
        }
    }

    // Prints the estimated TSC (or its change) into the tracking column.
    void showTime(DumpLine& line, uint64_t offset) {
        line.trackingId = "tsc";
        uint64_t tsc = 0;
        int status = time_.query(tsc);
        if (status < 0 && !(status == -pte_no_time && options_.noWallClock)) {
            diag(offset, "error printing time", status);
            line.tracking = "<unavailable>";
            return;
        }
        if (options_.timeAsDelta) {
            line.tracking = shownTsc_ <= tsc ? format("+%" PRIx64, tsc - shownTsc_)
                                             : format("-%" PRIx64, shownTsc_ - tsc);
            shownTsc_ = tsc;
        } else {
            line.tracking = format("%016" PRIx64, tsc);
        }
    }

    void showTcal(DumpLine& line, uint64_t offset) {
        line.trackingId = "fcr";
        uint64_t fcr = 0;
        if (int status = tcal_.query(fcr); status < 0) {
            line.tracking = "<unavailable>";
            diag(offset, "error printing time", status);
            return;
        }
        // Shown as a decimal ratio: the fixed point divided out.
        double ratio = static_cast<double>(fcr) / static_cast<double>(1ull << kFcrFractionBits);
        if (options_.timeAsDelta) {
            double previous = static_cast<double>(shownFcr_) / static_cast<double>(1ull << kFcrFractionBits);
            line.tracking = format("%+.3f", ratio - previous);
            shownFcr_ = fcr;
        } else {
            line.tracking = format("%.3f", ratio);
        }
    }

    void showTiming(DumpLine& line, uint64_t offset) {
        if (options_.showTcal && !line.tcalSkipped) showTcal(line, offset);
        if (options_.showTime && !line.timeSkipped) showTime(line, offset);
        if (sideband_) {
            // The records due by now come before this packet's line, as in ptdump;
            // before the first TSC the estimate is 0 and only untimed records are due.
            uint64_t tsc = 0;
            time_.query(tsc);
            sideband_->dumpUntil(tsc);
        }
    }

    void timingError(uint64_t offset, const char* what, int status) {
        if (status < 0) diag(offset, what, status);
    }

    void trackTsc(DumpLine& line, uint64_t offset, const pt_packet_tsc& tsc) {
        if (!options_.noTcal)
            timingError(offset, "error calibrating time",
                        inPsbHeader_ ? tcal_.onHeaderTsc(tsc) : tcal_.onTsc(tsc));
        timingError(offset, "error updating time", time_.onTsc(tsc));
        showTiming(line, offset);
    }

    void trackCbr(DumpLine& line, uint64_t offset, const pt_packet_cbr& cbr) {
        if (!options_.noTcal)
            timingError(offset, "error calibrating time",
                        inPsbHeader_ ? tcal_.onHeaderCbr(cbr, config_) : tcal_.onCbr(cbr, config_));
        timingError(offset, "error updating time", time_.onCbr(cbr));
        line.timeSkipped = true;
        showTiming(line, offset);
    }

    void trackTma(DumpLine& line, uint64_t offset, const pt_packet_tma& tma) {
        timingError(offset, "error updating time", time_.onTma(tma, config_));
        line.tcalSkipped = true;
        showTiming(line, offset);
    }

    void trackMtc(DumpLine& line, uint64_t offset, const pt_packet_mtc& mtc) {
        if (!options_.noTcal) timingError(offset, "error calibrating time", tcal_.onMtc(mtc, config_));
        timingError(offset, "error updating time", time_.onMtc(mtc, config_));
        showTiming(line, offset);
    }

    void trackCyc(DumpLine& line, uint64_t offset, const pt_packet_cyc& cyc) {
        uint64_t fcr = 0;  // stays 0 without calibration: the CYC then counts as lost time
        if (!options_.noTcal) {
            timingError(offset, "calibration error", tcal_.query(fcr));
            timingError(offset, "error calibrating time", tcal_.onCyc(cyc));
        }
        int status = time_.onCyc(cyc, config_, fcr);
        if (status < 0)
            diag(offset, "error updating time", status);
        else if (!fcr)
            diag(offset, "error updating time: no calibration", 0);
        line.tcalSkipped = true;
        showTiming(line, offset);
    }

    int describe(DumpLine& line, uint64_t offset, const pt_packet& packet) {
        const auto& payload = packet.payload;
        line.name = ptPacketTypeName(packet.type);
        switch (packet.type) {
            case ppt_unknown:
            case ppt_invalid:
            case ppt_ovf:
            case ppt_stop:
                return 0;
            case ppt_psb:
                if (trackTime_) timingError(offset, "error calibrating time", tcal_.onPsb(config_));
                inPsbHeader_ = true;
                return 0;
            case ppt_psbend:
                inPsbHeader_ = false;
                return 0;
            case ppt_pad:
                line.hidden = options_.noPad;
                return 0;
            case ppt_fup:
            case ppt_tip:
            case ppt_tip_pge:
            case ppt_tip_pgd:
                ipPayload(line, offset, payload.ip);
                return 0;
            case ppt_pip:
                line.payload = format("%" PRIx64 "%s", payload.pip.cr3, payload.pip.nr ? ", nr" : "");
                line.trackingId = "cr3";
                line.tracking = format("%016" PRIx64, payload.pip.cr3);
                return 0;
            case ppt_vmcs:
                line.payload = format("%" PRIx64, payload.vmcs.base);
                line.trackingId = "vmcs";
                line.tracking = format("%016" PRIx64, payload.vmcs.base);
                return 0;
            case ppt_tnt_8:
            case ppt_tnt_64: {
                // Oldest branch first: '!' taken, '.' not taken.
                uint8_t bits = payload.tnt.bit_size;
                if (bits > DumpLine::kLongPayloadWidth) diag(offset, "truncating tnt payload", 0);
                for (uint8_t bit = bits; bit > 0 && line.payload.size() < DumpLine::kLongPayloadWidth; --bit)
                    line.payload += (payload.tnt.payload & (1ull << (bit - 1))) ? '!' : '.';
                line.longPayload = true;
                return 0;
            }
            case ppt_mode:
                return describeMode(line, offset, payload.mode);
            case ppt_tsc:
                line.payload = format("%" PRIx64, payload.tsc.tsc);
                if (trackTime_) trackTsc(line, offset, payload.tsc);
                line.hidden = options_.noTiming;
                return 0;
            case ppt_cbr:
                line.payload = format("%x", payload.cbr.ratio);
                if (trackTime_) trackCbr(line, offset, payload.cbr);
                line.hidden = options_.noTiming;
                return 0;
            case ppt_tma:
                line.payload = format("%x, %x", payload.tma.ctc, payload.tma.fc);
                if (trackTime_) trackTma(line, offset, payload.tma);
                line.hidden = options_.noTiming;
                return 0;
            case ppt_mtc:
                line.payload = format("%x", payload.mtc.ctc);
                if (trackTime_) trackMtc(line, offset, payload.mtc);
                line.hidden = options_.noTiming;
                return 0;
            case ppt_cyc:
                line.payload = format("%" PRIx64, payload.cyc.value);
                if (trackTime_ && !options_.noCyc) trackCyc(line, offset, payload.cyc);
                line.hidden = options_.noTiming || options_.noCyc;
                return 0;
            case ppt_mnt:
                line.payload = format("%" PRIx64, payload.mnt.payload);
                return 0;
            case ppt_exstop:
                line.payload = payload.exstop.ip ? "ip" : "";
                return 0;
            case ppt_mwait:
                line.payload = format("%08x, %08x", payload.mwait.hints, payload.mwait.ext);
                return 0;
            case ppt_pwre:
                line.payload = format("c%u.%u%s", (payload.pwre.state + 1u) & 0xf,
                                      (payload.pwre.sub_state + 1u) & 0xf, payload.pwre.hw ? ", hw" : "");
                return 0;
            case ppt_pwrx: {
                // Exactly one wake reason is expected; anything else shows as "bad".
                const pt_packet_pwrx& pwrx = payload.pwrx;
                int reasons = pwrx.interrupt + pwrx.store + pwrx.autonomous;
                const char* reason = reasons != 1     ? "bad"
                                     : pwrx.interrupt ? "int"
                                     : pwrx.store     ? " st"
                                                      : " hw";
                line.payload =
                    format("%s: c%u, c%u", reason, (pwrx.last + 1u) & 0xf, (pwrx.deepest + 1u) & 0xf);
                return 0;
            }
            case ppt_ptw:
                line.payload = format("%x: %" PRIx64 "%s", payload.ptw.plc, payload.ptw.payload,
                                      payload.ptw.ip ? ", ip" : "");
                return 0;
        }
        return diag(offset, "unknown packet", -pte_bad_opc, PtDecodeIssue::Severity::Error);
    }

    int describeMode(DumpLine& line, uint64_t offset, const pt_packet_mode& mode) {
        auto joined = [](const char* a, const char* b) {
            return std::string(a) + (*a && *b ? ", " : "") + b;
        };
        if (mode.leaf == pt_mol_exec) {
            line.name = "mode.exec";
            line.payload = joined(mode.bits.exec.csd ? "cs.d" : "", mode.bits.exec.csl ? "cs.l" : "");
            if (options_.showExecMode) {
                line.trackingId = "em";
                switch (pt_get_exec_mode(&mode.bits.exec)) {
                    case ptem_64bit:
                        line.tracking = "64-bit";
                        break;
                    case ptem_32bit:
                        line.tracking = "32-bit";
                        break;
                    case ptem_16bit:
                        line.tracking = "16-bit";
                        break;
                    case ptem_unknown:
                        line.tracking = "unknown";
                        break;
                    default:
                        line.tracking = "invalid";
                        diag(offset, "bad exec mode", -pte_bad_packet);
                        break;
                }
            }
            return 0;
        }
        if (mode.leaf == pt_mol_tsx) {
            line.name = "mode.tsx";
            line.payload = joined(mode.bits.tsx.intx ? "intx" : "", mode.bits.tsx.abrt ? "abrt" : "");
            return 0;
        }
        line.name = "mode";
        line.payload = format("leaf: %x", static_cast<unsigned>(mode.leaf));
        diag(offset, "unknown mode leaf", 0);
        return 0;
    }

    const pt_config& config_;
    const PtPacketDumpOptions& options_;
    std::ostream& out_;
    PtSidebandSession* sideband_ = nullptr;
    bool trackTime_ = false;
    PtPacketDumpResult result_;
    LastIp lastIp_;
    TimeEstimate time_;
    TimeCalibration tcal_;
    uint64_t shownTsc_ = 0;  // for --time-delta
    uint64_t shownFcr_ = 0;
    bool inPsbHeader_ = false;
};

}  // namespace

const char* ptPacketTypeName(pt_packet_type type) {
    switch (type) {
        case ppt_invalid:
            return "<invalid>";
        case ppt_unknown:
            return "<unknown>";
        case ppt_pad:
            return "pad";
        case ppt_psb:
            return "psb";
        case ppt_psbend:
            return "psbend";
        case ppt_fup:
            return "fup";
        case ppt_tip:
            return "tip";
        case ppt_tip_pge:
            return "tip.pge";
        case ppt_tip_pgd:
            return "tip.pgd";
        case ppt_tnt_8:
            return "tnt.8";
        case ppt_tnt_64:
            return "tnt.64";
        case ppt_mode:
            return "mode";
        case ppt_pip:
            return "pip";
        case ppt_vmcs:
            return "vmcs";
        case ppt_cbr:
            return "cbr";
        case ppt_tsc:
            return "tsc";
        case ppt_tma:
            return "tma";
        case ppt_mtc:
            return "mtc";
        case ppt_cyc:
            return "cyc";
        case ppt_stop:
            return "stop";
        case ppt_ovf:
            return "ovf";
        case ppt_mnt:
            return "mnt";
        case ppt_exstop:
            return "exstop";
        case ppt_mwait:
            return "mwait";
        case ppt_pwre:
            return "pwre";
        case ppt_pwrx:
            return "pwrx";
        case ppt_ptw:
            return "ptw";
    }
    return "<unknown>";
}

uint64_t PtPacketCounts::total() const {
    uint64_t sum = 0;
    for (uint64_t count : byType)
        sum += count;
    return sum;
}

bool PtPacketDumpResult::hasErrors() const {
    for (const PtDecodeIssue& issue : issues)
        if (issue.severity == PtDecodeIssue::Severity::Error) return true;
    return false;
}

Expected<bool> parsePtPacketDumpFlag(PtPacketDumpOptions& options, const std::string& flag,
                                     const std::optional<std::string>& /*value: switches only*/) {
    struct Switch {
        const char* name;
        bool PtPacketDumpOptions::*member;
        bool value;
    };
    static const Switch kSwitches[] = {
        {"--no-offset", &PtPacketDumpOptions::showOffset, false},
        {"--raw-bytes", &PtPacketDumpOptions::showRawBytes, true},
        {"--lastip", &PtPacketDumpOptions::showLastIp, true},
        {"--exec-mode", &PtPacketDumpOptions::showExecMode, true},
        {"--time-delta", &PtPacketDumpOptions::timeAsDelta, true},
        {"--quiet", &PtPacketDumpOptions::quiet, true},
        {"--no-pad", &PtPacketDumpOptions::noPad, true},
        {"--no-sync", &PtPacketDumpOptions::noSync, true},
        {"--no-tcal", &PtPacketDumpOptions::noTcal, true},
        {"--no-wall-clock", &PtPacketDumpOptions::noWallClock, true},
        {"--no-timing", &PtPacketDumpOptions::noTiming, true},
        {"--no-cyc", &PtPacketDumpOptions::noCyc, true},
    };
    for (const Switch& s : kSwitches) {
        if (flag != s.name) continue;
        options.*s.member = s.value;
        return true;
    }
    if (flag == "--time" || flag == "--tcal") {
        if ((flag == "--time" && options.showTcal) || (flag == "--tcal" && options.showTime))
            return makeError(flag + ": give either --time or --tcal, not both");
        (flag == "--time" ? options.showTime : options.showTcal) = true;
        return true;
    }
    return false;
}

Expected<PtPacketDumpResult> dumpPtPackets(const PtConfig& config, const PtPacketDumpOptions& options,
                                           std::ostream& out, PtSidebandSession* sideband) {
    PacketDumper dumper(config, options, out, sideband);
    // ptdump reports a CPU libipt has no errata table for, then decodes by the spec.
    PtPacketDumpResult prefix;
    if (config.errataError < 0) {
        std::string what = "failed to determine errata: " + ptErrorName(config.errataError);
        out << "[0: " << what << "]\n";
        prefix.issues.push_back({PtDecodeIssue::Severity::Warning, 0, what});
    }
    pt_packet_decoder* decoder = pt_pkt_alloc_decoder(&config.config);
    if (!decoder) return makeError("libipt refused the trace configuration (pt_pkt_alloc_decoder failed)");
    PtPacketDumpResult result = dumper.run(decoder);
    pt_pkt_free_decoder(decoder);
    // Records after the trace's last timing packet.
    if (sideband) sideband->dumpUntil(UINT64_MAX);
    result.issues.insert(result.issues.begin(), prefix.issues.begin(), prefix.issues.end());
    return result;
}

}  // namespace auxscope
