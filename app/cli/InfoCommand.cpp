// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/InfoCommand.h"

#include "OptionParser.h"
#include "cli/JsonString.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/CaptureStatsFeature.h"
#include "perfdata/TriggerFeature.h"
#include "sideband/Sideband.h"
#include "spe/SpeDecoder.h"

#include <bit>
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

namespace auxscope {
namespace {

const char* kInfoHelp = R"(usage: auxscope info [--json] FILE

Shows what a perf.data file holds: its header, events (attrs with their ids),
features, records per CPU and type, AUX records with their flags, AUXTRACE
buffers, and every loss and problem the file records (LOST, LOST_SAMPLES,
throttling, truncated/partial/collision AUX data, AUXTRACE errors, missing AUX
data, damage), each problem with its byte offset.

Per AUX area (per CPU, or per thread), the AUX bytes the AUX records announce
against those the AUXTRACE records hold: every range announced and missing
from the file is a loss, listed with its AUX offset, size and the record after
which it is missing. Snapshot mode (AUX records flagged OVERWRITE) overwrites
by design: nothing is missing there.

Reads perf.data from perf (file and pipe mode, compressed with -z) and simpleperf.

  --json      print one JSON object instead of text
  -h, --help  this text

Exit status: 0 read cleanly (warnings allowed), 1 errors in the file (what
precedes them is still shown) or the file cannot be read, 2 usage.
)";

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
    return buf;
}

std::string sampleTypeString(uint64_t st) {
    static const char* const kBits[] = {
        "IP",
        "TID",
        "TIME",
        "ADDR",
        "READ",
        "CALLCHAIN",
        "ID",
        "CPU",
        "PERIOD",
        "STREAM_ID",
        "RAW",
        "BRANCH_STACK",
        "REGS_USER",
        "STACK_USER",
        "WEIGHT",
        "DATA_SRC",
        "IDENTIFIER",
        "TRANSACTION",
        "REGS_INTR",
        "PHYS_ADDR",
        "AUX",
        "CGROUP",
        "DATA_PAGE_SIZE",
        "CODE_PAGE_SIZE",
        "WEIGHT_STRUCT",
    };
    std::string s;
    for (unsigned b = 0; b < 64; ++b) {
        if (!(st >> b & 1)) continue;
        if (!s.empty()) s += '|';
        s += b < std::size(kBits) ? kBits[b] : "bit" + std::to_string(b);
    }
    return s.empty() ? "0" : s;
}

std::string attrTypeName(uint32_t type, const PerfFeatures& f) {
    switch (type) {
        case PERF_TYPE_HARDWARE:
            return "hardware";
        case PERF_TYPE_SOFTWARE:
            return "software";
        case PERF_TYPE_TRACEPOINT:
            return "tracepoint";
        case PERF_TYPE_HW_CACHE:
            return "hw_cache";
        case PERF_TYPE_RAW:
            return "raw";
        case PERF_TYPE_BREAKPOINT:
            return "breakpoint";
        default:
            break;
    }
    if (f.pmuMappings)
        for (const auto& m : *f.pmuMappings)
            if (m.type == type) return m.name;
    return "pmu " + std::to_string(type);
}

const char* auxtraceTypeName(uint32_t t) {
    switch (t) {
        case 1:
            return "Intel PT";
        case 2:
            return "Intel BTS";
        case 3:
            return "CoreSight ETM";
        case 4:
            return "Arm SPE";
        case 5:
            return "s390 CPUMSF";
        case 6:
            return "HiSilicon PTT";
        default:
            return "unknown";
    }
}

// 67108936 -> "67,108,936".
std::string grouped(uint64_t v) {
    std::string digits = std::to_string(v), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string percentOf(uint64_t part, uint64_t whole) {
    if (!whole) return "0%";
    const double p = 100.0 * double(part) / double(whole);
    char buf[32];
    if (part && p < 0.1)
        std::snprintf(buf, sizeof buf, "<0.1%%");
    else
        std::snprintf(buf, sizeof buf, "%.1f%%", p);
    return buf;
}

std::string plural(uint64_t n, const char* one, const char* many) {
    return grouped(n) + " " + (n == 1 ? one : many);
}

constexpr size_t kListedGaps = 10;  // per AUX area in the text

// "16,777,216 bytes at AUX offset 0x1000000-0x2000000: after the AUXTRACE record at 0x29c0"
std::string gapText(const PerfAuxGap& g, const PerfAuxArea& area) {
    std::string s =
        grouped(g.size) + " bytes at AUX offset " + hex(g.auxOffset) + "-" + hex(g.auxOffset + g.size);
    switch (g.kind) {
        case PerfAuxGapKind::Missing:
            if (g.afterAuxtrace)
                s += ": after the AUXTRACE record at " + hex(g.fileOffset) +
                     (g.compressed ? " (in compressed data)" : "") +
                     (g.cutShort ? ", which the end of the file cuts short" : "");
            else
                s += ": announced by the AUX record at " + hex(g.auxRecordOffset) +
                     ", before any AUXTRACE record of " + perfAuxAreaName(area);
            break;
        case PerfAuxGapKind::Overlap:
            s += ": held again by the AUXTRACE record at " + hex(g.fileOffset);
            break;
        case PerfAuxGapKind::Backwards:
            s += ": the AUXTRACE record at " + hex(g.fileOffset) + " goes back to it";
            break;
    }
    return s;
}

std::string cpuName(int64_t cpu) {
    return cpu < 0 ? "no cpu" : "cpu " + std::to_string(cpu);
}

std::string auxFlagsString(uint64_t f) {
    std::string s;
    auto add = [&](uint64_t bit, const char* name) {
        if (!(f & bit)) return;
        if (!s.empty()) s += '|';
        s += name;
        f &= ~bit;
    };
    add(perfdata::kAuxFlagTruncated, "truncated");
    add(perfdata::kAuxFlagOverwrite, "overwrite");
    add(perfdata::kAuxFlagPartial, "partial");
    add(perfdata::kAuxFlagCollision, "collision");
    add(perfdata::kAuxFlagCoresightFormatRaw, "coresight-raw");
    if (f) s += (s.empty() ? "" : "|") + hex(f);
    return s.empty() ? "none" : s;
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
    std::string s;
    for (const auto& e : v)
        s += (s.empty() ? "" : sep) + e;
    return s;
}

std::string typeCounts(const std::map<uint32_t, uint64_t>& byType) {
    std::string s;
    for (auto& [type, n] : byType)
        s += (s.empty() ? "" : ", ") + perfRecordTypeName(type) + " " + std::to_string(n);
    return s;
}

// ---------------------------------------------------------------------------
// Text

void featureLines(std::ostringstream& o, const PerfFeatures& f) {
    auto line = [&](const char* name, const std::string& value) {
        o << "  " << name << ": " << value << "\n";
    };
    if (f.hostname) line("hostname", *f.hostname);
    if (f.osRelease) line("osrelease", *f.osRelease);
    if (f.version) line("version", *f.version);
    if (f.arch) line("arch", *f.arch);
    if (f.nrCpus)
        line("nrcpus", std::to_string(f.nrCpus->online) + " online, " + std::to_string(f.nrCpus->available) +
                           " available");
    if (f.cpuDesc) line("cpudesc", *f.cpuDesc);
    if (f.cpuId) line("cpuid", *f.cpuId);
    if (f.totalMemKb) line("total_mem", std::to_string(*f.totalMemKb) + " kB");
    if (f.cmdline) line("cmdline", joined(*f.cmdline, " "));
    if (f.eventDesc) {
        std::vector<std::string> v;
        for (const auto& e : *f.eventDesc)
            v.push_back(e.name + " (" + std::to_string(e.ids.size()) + " ids)");
        line("event_desc", std::to_string(f.eventDesc->size()) + " events: " + joined(v, ", "));
    }
    if (f.cpuTopology) {
        const auto& t = *f.cpuTopology;
        std::string s = "cores " + joined(t.coreSiblings, " ") + "; threads " + joined(t.threadSiblings, " ");
        if (!t.cpus.empty()) {
            s += "; core/socket per cpu:";
            for (size_t i = 0; i < t.cpus.size(); ++i)
                s += " " + std::to_string(i) + ":" + std::to_string(t.cpus[i].coreId) + "/" +
                     std::to_string(t.cpus[i].socketId);
        }
        if (!t.dieSiblings.empty()) s += "; dies " + joined(t.dieSiblings, " ");
        line("cpu_topology", s);
    }
    if (f.pmuMappings) {
        std::vector<std::string> v;
        for (const auto& m : *f.pmuMappings)
            v.push_back(m.name + "=" + std::to_string(m.type));
        line("pmu_mappings", joined(v, ", "));
    }
    if (f.groupDesc) {
        std::vector<std::string> v;
        for (const auto& g : *f.groupDesc)
            v.push_back((g.name.empty() ? "(unnamed)" : g.name) + " leader #" +
                        std::to_string(g.leaderIndex) + ", " + std::to_string(g.members) + " members");
        line("group_desc", v.empty() ? "none" : joined(v, "; "));
    }
    if (f.buildIds) {
        std::string s = std::to_string(f.buildIds->size()) + " entries";
        for (size_t i = 0; i < f.buildIds->size() && i < 3; ++i)
            s += (i ? ", " : ": ") + (*f.buildIds)[i].hex() + " " + (*f.buildIds)[i].filename;
        if (f.buildIds->size() > 3) s += ", ...";
        line("build_id", s);
    }
    if (f.auxtraceIndex)
        line("auxtrace", "index of " + std::to_string(f.auxtraceIndex->size()) + " AUXTRACE records");
    if (f.sampleTime)
        line("sample_time", "first " + std::to_string(f.sampleTime->first) + " ns, last " +
                                std::to_string(f.sampleTime->last) + " ns");
    if (f.clockid) line("clockid", "clock resolution " + std::to_string(*f.clockid) + " ns");
    if (f.clockData)
        line("clock_data", "clockid " + std::to_string(f.clockData->clockid) + ", wall clock " +
                               std::to_string(f.clockData->wallClockNs) + " ns at clock " +
                               std::to_string(f.clockData->clockidTimeNs) + " ns");
    if (f.compressed)
        line("compressed",
             std::string(f.compressed->type == 1 ? "zstd" : "type " + std::to_string(f.compressed->type)) +
                 " level " + std::to_string(f.compressed->level) + ", ratio " +
                 std::to_string(f.compressed->ratio) + ", mmap " + std::to_string(f.compressed->mmapLen) +
                 " bytes");
    if (f.simpleperfMetaInfo) {
        std::vector<std::string> v;
        for (const auto& [k, val] : *f.simpleperfMetaInfo)
            v.push_back(k + "=" + val);
        line("simpleperf meta_info", joined(v, ", "));
    }
    for (const auto& r : f.raw)
        o << "  " << perfFeatureName(r.id) << " (" << r.id << "): " << r.bytes.size() << " bytes at "
          << hex(r.offset)
          << (r.id == kFeatAuxscopeTriggers || r.id == kFeatAuxscopeCaptureStats ? ", listed below\n"
                                                                                 : ", not decoded\n");
}

}  // namespace

// The Arm SPE block and what the trace holds: records, bytes, gaps.
static std::string describeArmSpe(const PerfDataReader& r, const PerfAuxtraceInfo& block) {
    std::ostringstream o;
    auto info = decodeArmSpeInfo(block.priv);
    if (!info) return "    " + info.error().message + "\n";
    o << "    Arm SPE: info version " << info->version << ", PMU type " << info->pmuType;
    if (info->version == 1) o << ", per-CPU mmaps " << info->perCpuMmaps;
    o << "\n";
    for (const ArmSpeCpuInfo& c : info->cpus)
        o << "    cpu " << c.cpu << ": MIDR " << hex(c.midr) << ", PMU type " << int64_t(c.pmuType)
          << ", min interval " << c.minInterval << "\n";
    // Records and gaps need no sideband (threads are not listed here).
    auto recs = spe::decodeSpeRecords(r, Sideband{});
    if (!recs) return o.str() + "    " + recs.error().message + "\n";
    const spe::SpeDecodeStats& st = recs->stats;
    o << "    Arm SPE records: " << st.records << " in " << st.bytes << " bytes (" << st.packets
      << " packets); gaps: " << st.gapBytes << " bytes";
    if (st.droppedRecords) o << ", " << st.droppedRecords << " partial records dropped";
    o << "\n";
    for (const auto& [reason, bytes] : st.gaps)
        o << "      " << reason << ": " << bytes << " bytes\n";
    return o.str();
}

std::string formatInfo(const PerfDataReader& r) {
    std::ostringstream o;
    const PerfDataSummary& s = r.summary();
    const PerfFeatures& f = r.features();
    const bool pipe = r.mode() == PerfDataMode::Pipe;

    o << r.path() << ": perf.data, " << (pipe ? "pipe mode" : "file mode") << " (PERFILE2), " << r.fileSize()
      << " bytes\n";
    if (!pipe) {
        const auto& h = r.header();
        o << "  header: " << h.size << " bytes; attrs: " << h.attrs.size << " bytes at "
          << hex(h.attrs.offset) << " (entry " << h.attrSize << " bytes); data: " << h.data.size
          << " bytes at " << hex(h.data.offset) << "\n";
    }
    o << "  data read: " << r.dataSize() << " bytes at " << hex(r.dataOffset())
      << (r.dataSizeRecovered() ? " (data size recovered by scanning)" : "") << "\n";

    o << "\nevents (" << r.attrs().size() << "):\n";
    for (size_t i = 0; i < r.attrs().size(); ++i) {
        const PerfAttr& a = r.attrs()[i];
        o << "  #" << i << " " << (a.name.empty() ? "(unnamed)" : a.name) << ": type " << a.attr.type << " ("
          << attrTypeName(a.attr.type, f) << "), config " << hex(a.attr.config) << ", sample_type "
          << sampleTypeString(a.attr.sample_type) << ", " << a.ids.size() << " ids\n";
    }

    o << "\nfeatures (" << f.present.size() << "):";
    for (unsigned id : f.present)
        o << " " << perfFeatureName(id);
    o << "\n";
    featureLines(o, f);

    o << "\nrecords: " << s.records << " in " << (s.dataEnd - r.dataOffset()) << " bytes";
    if (s.compressedRecords)
        o << " (" << s.compressedRecords << " COMPRESSED records, " << s.compressedBytes
          << " bytes, unpacked to " << s.decompressedBytes << ")";
    o << "\n  by type: " << typeCounts(s.recordsByType) << "\n";
    for (const auto& [cpu, st] : s.cpus) {
        uint64_t n = 0;
        for (auto& [t, c] : st.recordsByType)
            n += c;
        o << "  " << cpuName(cpu) << ": " << n << " records: " << typeCounts(st.recordsByType) << "\n";
    }

    // auxscope's snapshot triggers: what fired, when, and which snapshot it asked for.
    for (const PerfRawFeature& raw : r.features().raw) {
        if (raw.id != kFeatAuxscopeTriggers) continue;
        auto t = decodeTriggerFeature(raw.bytes, r.path() + ": offset " + std::to_string(raw.offset));
        if (!t) {
            o << "\ntriggers: " << t.error().message << "\n";
            continue;
        }
        o << "\n" << formatTriggerReport(*t, 0);
    }

    // auxscope's own section: each CPU's ring fill and the kernel's lost count over time.
    for (const PerfRawFeature& raw : r.features().raw) {
        if (raw.id != kFeatAuxscopeCaptureStats) continue;
        auto history =
            decodeCaptureStatsFeature(raw.bytes, r.path() + ": offset " + std::to_string(raw.offset));
        if (!history) {
            o << "\ncapture statistics: " << history.error().message << "\n";
            continue;
        }
        std::map<int32_t, StatsSample> last;
        std::map<int32_t, float> maxFill;
        std::map<int32_t, size_t> count;
        for (const StatsSample& st : history.value()) {
            last[st.cpu] = st;
            maxFill[st.cpu] = std::max(maxFill[st.cpu], st.fillPeakPercent);
            ++count[st.cpu];
        }
        o << "\ncapture statistics (auxscope, " << history->size() << " samples):\n";
        for (auto& [cpu, st] : last) {
            char fill[32];
            std::snprintf(fill, sizeof fill, "%.1f%%", double(maxFill[cpu]));
            o << "  cpu " << cpu << ": " << count[cpu] << " samples, max data ring fill " << fill << ", "
              << st.records << " records drained, " << st.lostRecords << " lost records, " << st.lostSamples
              << " lost samples, kernel count of lost " << st.kernelLost << "\n";
            if (st.hasAux)
                o << "    AUX: " << st.auxBytes << " bytes, TRUNCATED " << st.auxTruncated << ", PARTIAL "
                  << st.auxPartial << ", COLLISION " << st.auxCollision << ", re-enables " << st.auxReenables
                  << ", snapshots " << st.auxSnapshots << " (" << st.auxSnapshotBytes << " bytes)\n";
        }
    }

    // Every loss the file records.
    o << "\nlosses:\n";
    bool anyLoss = false;
    for (const auto& [cpu, st] : s.cpus) {
        auto throttle = st.recordsByType.find(PERF_RECORD_THROTTLE);
        std::vector<std::string> v;
        if (st.lostRecords)
            v.push_back("LOST " + std::to_string(st.lostRecords) + " records, " + std::to_string(st.lost) +
                        " events lost");
        if (st.lostSamplesRecords)
            v.push_back("LOST_SAMPLES " + std::to_string(st.lostSamplesRecords) + " records, " +
                        std::to_string(st.lostSamples) + " samples lost");
        if (throttle != st.recordsByType.end())
            v.push_back("THROTTLE " + std::to_string(throttle->second) + " (sampling throttled)");
        // The kernel's own AUX losses (flags on PERF_RECORD_AUX); bytes missing
        // from the file are told per AUX area below.
        if (st.aux.truncated)
            v.push_back("AUX truncated " + std::to_string(st.aux.truncated) +
                        " (by the kernel: AUX area full, the hardware stopped)");
        if (st.aux.partial) v.push_back("AUX partial " + std::to_string(st.aux.partial) + " (by the kernel)");
        if (st.aux.collision)
            v.push_back("AUX collision " + std::to_string(st.aux.collision) + " (by the kernel)");
        if (st.aux.overwrite)
            v.push_back("AUX overwrite " + std::to_string(st.aux.overwrite) +
                        " (snapshot: older trace overwritten)");
        if (v.empty()) continue;
        anyLoss = true;
        o << "  " << cpuName(cpu) << ": " << joined(v, "; ") << "\n";
    }
    // AUX bytes the AUX records announce and the file does not hold.
    for (const PerfAuxArea& a : s.auxAreas) {
        if (a.gaps.empty()) continue;
        anyLoss = true;
        o << "  " << perfAuxAreaName(a) << ": " << grouped(a.missingBytes) << " of "
          << grouped(a.announcedBytes) << " announced AUX bytes missing from the file in "
          << plural(a.gaps.size(), "gap", "gaps") << "\n";
        for (size_t i = 0; i < a.gaps.size() && i < kListedGaps; ++i)
            o << "    " << gapText(a.gaps[i], a) << "\n";
        if (a.gaps.size() > kListedGaps) {
            uint64_t rest = 0;
            for (size_t i = kListedGaps; i < a.gaps.size(); ++i)
                rest += a.gaps[i].size;
            o << "    ... " << plural(a.gaps.size() - kListedGaps, "more gap", "more gaps") << " ("
              << grouped(rest) << " bytes)\n";
        }
    }
    for (const PerfAuxArea& a : s.auxAreas) {
        if (a.damage.empty()) continue;
        anyLoss = true;
        o << "  " << perfAuxAreaName(a) << ": "
          << plural(a.damage.size(), "AUXTRACE record", "AUXTRACE records")
          << " hold AUX offsets again or out of order (" << grouped(a.damageBytes) << " bytes)\n";
        for (size_t i = 0; i < a.damage.size() && i < kListedGaps; ++i)
            o << "    " << gapText(a.damage[i], a) << "\n";
        if (a.damage.size() > kListedGaps)
            o << "    ... " << plural(a.damage.size() - kListedGaps, "more", "more") << "\n";
    }
    for (const auto& b : s.auxtrace)
        if (b.available < b.size) {
            anyLoss = true;
            o << "  AUXTRACE at " << hex(b.fileOffset) << " (" << cpuName(b.cpu)
              << ") cut short: " << b.available << " of " << b.size << " bytes\n";
        }
    if (!s.auxtraceErrors.empty()) {
        anyLoss = true;
        o << "  AUXTRACE_ERROR: " << s.auxtraceErrors.size() << " records\n";
    }
    if (f.simpleperfMetaInfo)
        for (const auto& [k, v] : *f.simpleperfMetaInfo)
            if (k == "record_stat") {
                anyLoss = true;
                o << "  simpleperf record_stat: " << v << "\n";
            }
    for (const auto& i : r.issues())
        if (i.cause.find("AUX data is missing") != std::string::npos) {
            anyLoss = true;
            o << "  " << i.cause << "\n";
        }
    if (!anyLoss) o << "  none recorded\n";

    uint64_t auxRecords = 0;
    for (const auto& [cpu, st] : s.cpus)
        auxRecords += st.aux.records;
    o << "\nAUX records: " << auxRecords << "\n";
    for (const auto& [cpu, st] : s.cpus) {
        if (!st.aux.records) continue;
        const auto& a = st.aux;
        o << "  " << cpuName(cpu) << ": " << a.records << " records, " << a.bytes
          << " bytes announced; AUX flags: truncated " << a.truncated << ", partial " << a.partial
          << ", collision " << a.collision << ", overwrite " << a.overwrite << ", coresight-raw "
          << a.formatRaw << "\n";
    }
    size_t flagged = 0;
    for (const auto& a : s.aux) {
        if (!(a.flags & ~perfdata::kAuxFlagCoresightFormatRaw)) continue;
        if (flagged++ == 20) {
            o << "  ... (more flagged AUX records not listed)\n";
            break;
        }
        o << "  at " << hex(a.fileOffset) << " " << cpuName(a.cpu) << ": aux offset " << hex(a.auxOffset)
          << " size " << a.auxSize << " flags " << auxFlagsString(a.flags) << "\n";
    }

    if (!s.auxAreas.empty()) {
        o << "\nAUX areas: " << s.auxAreas.size()
          << " (AUX bytes the AUX records announce, and the AUXTRACE records hold)\n";
        for (const PerfAuxArea& a : s.auxAreas) {
            o << "  " << perfAuxAreaName(a) << ": ";
            if (a.snapshot) {
                o << "snapshot mode (AUX records say OVERWRITE: the trace is overwritten by design), "
                  << grouped(a.presentBytes) << " bytes in "
                  << plural(a.auxtraceRecords, "AUXTRACE record", "AUXTRACE records");
            } else {
                o << grouped(a.announcedBytes) << " bytes announced by "
                  << plural(a.auxRecords, "AUX record", "AUX records") << ", " << grouped(a.presentBytes)
                  << " present in " << plural(a.auxtraceRecords, "AUXTRACE record", "AUXTRACE records");
                if (a.missingBytes)
                    o << ", " << grouped(a.missingBytes) << " missing ("
                      << percentOf(a.missingBytes, a.announcedBytes) << ") in "
                      << plural(a.gaps.size(), "gap", "gaps");
                else
                    o << ", none missing";
            }
            if (a.truncated || a.partial || a.collision)
                o << "; the kernel flagged truncated " << a.truncated << ", partial " << a.partial
                  << ", collision " << a.collision;
            o << "\n";
        }
    }

    uint64_t auxtraceBytes = 0;
    for (const auto& b : s.auxtrace)
        auxtraceBytes += b.size;
    o << "\nAUXTRACE buffers: " << s.auxtrace.size() << ", " << auxtraceBytes << " bytes\n";
    for (const auto& b : s.auxtrace)
        o << "  at " << hex(b.fileOffset) << ": " << cpuName(b.cpu) << " idx " << b.idx << " tid "
          << int32_t(b.tid) << " size " << b.size << " aux offset " << hex(b.auxOffset)
          << (b.compressed ? " (in compressed data)" : "") << "\n";
    for (const auto& i : s.auxtraceInfo) {
        o << "  AUXTRACE_INFO at " << hex(i.fileOffset) << ": type " << i.type << " ("
          << auxtraceTypeName(i.type) << "), " << i.priv.size() << " private values\n";
        if (i.type == auxtrace::kTypeArmSpe) o << describeArmSpe(r, i);
    }
    if (!s.auxtraceErrors.empty()) {
        o << "\nAUXTRACE_ERROR records (" << s.auxtraceErrors.size() << "):\n";
        for (size_t i = 0; i < s.auxtraceErrors.size() && i < 20; ++i) {
            const auto& e = s.auxtraceErrors[i];
            o << "  at " << hex(e.fileOffset) << ": " << cpuName(e.cpu) << " pid " << int32_t(e.pid)
              << " tid " << int32_t(e.tid) << " ip " << hex(e.ip) << " code " << e.code << ": " << e.message
              << "\n";
        }
        if (s.auxtraceErrors.size() > 20) o << "  ...\n";
    }
    if (s.timeConv)
        o << "\nTIME_CONV: shift " << s.timeConv->timeShift << ", mult " << s.timeConv->timeMult << ", zero "
          << s.timeConv->timeZero << "\n";

    size_t errors = 0, warnings = 0;
    for (const auto& i : r.issues())
        (i.error ? errors : warnings)++;
    o << "\nproblems: " << errors << " errors, " << warnings << " warnings\n";
    for (const auto& i : r.issues())
        o << "  " << (i.error ? "error: " : "warning: ") << i.message << "\n";
    return o.str();
}

namespace {

// Minimal JSON building: objects and arrays are written in order, strings escaped.

constexpr size_t kListedJsonGaps = 10000;  // per AUX area; gap_count has them all

std::string jnum(uint64_t v) {
    return std::to_string(v);
}

std::string jtypes(const std::map<uint32_t, uint64_t>& byType) {
    std::string s = "{";
    for (auto& [t, n] : byType)
        s += (s.size() > 1 ? "," : "") + jsonString(perfRecordTypeName(t)) + ":" + jnum(n);
    return s + "}";
}

}  // namespace

std::string formatInfoJson(const PerfDataReader& r) {
    const PerfDataSummary& s = r.summary();
    const PerfFeatures& f = r.features();
    std::string o = "{";
    o += "\"file\":" + jsonString(r.path());
    o += ",\"mode\":" + jsonString(r.mode() == PerfDataMode::Pipe ? "pipe" : "file");
    o += ",\"size\":" + jnum(r.fileSize());
    o += ",\"data\":{\"offset\":" + jnum(r.dataOffset()) + ",\"size\":" + jnum(r.dataSize()) +
         ",\"recovered\":" + (r.dataSizeRecovered() ? "true" : "false") + "}";
    o += ",\"events\":[";
    for (size_t i = 0; i < r.attrs().size(); ++i) {
        const PerfAttr& a = r.attrs()[i];
        o += std::string(i ? "," : "") + "{\"name\":" + jsonString(a.name) +
             ",\"type\":" + jnum(a.attr.type) + ",\"config\":" + jnum(a.attr.config) +
             ",\"sample_type\":" + jnum(a.attr.sample_type) +
             ",\"sample_type_names\":" + jsonString(sampleTypeString(a.attr.sample_type)) +
             ",\"ids\":" + jnum(a.ids.size()) + "}";
    }
    o += "],\"features\":{";
    std::string fs;
    auto field = [&](const char* k, const std::string& v) {
        fs += (fs.empty() ? "" : ",") + jsonString(k) + ":" + v;
    };
    {
        std::string p = "[";
        for (unsigned id : f.present)
            p += (p.size() > 1 ? "," : "") + jsonString(perfFeatureName(id));
        field("present", p + "]");
    }
    if (f.hostname) field("hostname", jsonString(*f.hostname));
    if (f.osRelease) field("osrelease", jsonString(*f.osRelease));
    if (f.version) field("version", jsonString(*f.version));
    if (f.arch) field("arch", jsonString(*f.arch));
    if (f.nrCpus)
        field("nrcpus",
              "{\"online\":" + jnum(f.nrCpus->online) + ",\"available\":" + jnum(f.nrCpus->available) + "}");
    if (f.cpuDesc) field("cpudesc", jsonString(*f.cpuDesc));
    if (f.cpuId) field("cpuid", jsonString(*f.cpuId));
    if (f.totalMemKb) field("total_mem_kb", jnum(*f.totalMemKb));
    if (f.cmdline) field("cmdline", jsonString(joined(*f.cmdline, " ")));
    if (f.eventDesc) {
        std::string v = "[";
        for (const auto& e : *f.eventDesc)
            v += (v.size() > 1 ? "," : "") + std::string("{\"name\":") + jsonString(e.name) +
                 ",\"ids\":" + jnum(e.ids.size()) + "}";
        field("event_desc", v + "]");
    }
    if (f.pmuMappings) {
        std::string v = "{";
        for (const auto& m : *f.pmuMappings)
            v += (v.size() > 1 ? "," : "") + jsonString(m.name) + ":" + jnum(m.type);
        field("pmu_mappings", v + "}");
    }
    if (f.buildIds) field("build_ids", jnum(f.buildIds->size()));
    if (f.auxtraceIndex) field("auxtrace_index", jnum(f.auxtraceIndex->size()));
    if (f.sampleTime)
        field("sample_time",
              "{\"first\":" + jnum(f.sampleTime->first) + ",\"last\":" + jnum(f.sampleTime->last) + "}");
    if (f.clockid) field("clockid", jnum(*f.clockid));
    if (f.compressed)
        field("compressed", "{\"type\":" + jnum(f.compressed->type) + ",\"level\":" +
                                jnum(f.compressed->level) + ",\"ratio\":" + jnum(f.compressed->ratio) + "}");
    if (f.simpleperfMetaInfo) {
        std::string v = "{";
        for (const auto& [k, val] : *f.simpleperfMetaInfo)
            v += (v.size() > 1 ? "," : "") + jsonString(k) + ":" + jsonString(val);
        field("simpleperf_meta_info", v + "}");
    }
    {
        std::string v = "[";
        for (const auto& raw : f.raw)
            v += (v.size() > 1 ? "," : "") + std::string("{\"id\":") + jnum(raw.id) +
                 ",\"name\":" + jsonString(perfFeatureName(raw.id)) + ",\"size\":" + jnum(raw.bytes.size()) +
                 "}";
        field("raw", v + "]");
    }
    o += fs + "}";
    o += ",\"records\":{\"total\":" + jnum(s.records) + ",\"by_type\":" + jtypes(s.recordsByType) +
         ",\"cpus\":[";
    bool first = true;
    for (const auto& [cpu, st] : s.cpus) {
        o += std::string(first ? "" : ",") + "{\"cpu\":" + std::to_string(cpu) +
             ",\"by_type\":" + jtypes(st.recordsByType) + ",\"lost_records\":" + jnum(st.lostRecords) +
             ",\"lost\":" + jnum(st.lost) + ",\"lost_samples_records\":" + jnum(st.lostSamplesRecords) +
             ",\"lost_samples\":" + jnum(st.lostSamples) + ",\"aux\":{\"records\":" + jnum(st.aux.records) +
             ",\"bytes\":" + jnum(st.aux.bytes) + ",\"truncated\":" + jnum(st.aux.truncated) +
             ",\"partial\":" + jnum(st.aux.partial) + ",\"collision\":" + jnum(st.aux.collision) +
             ",\"overwrite\":" + jnum(st.aux.overwrite) + ",\"coresight_raw\":" + jnum(st.aux.formatRaw) +
             "},\"auxtrace_buffers\":" + jnum(st.auxtraceBuffers) +
             ",\"auxtrace_bytes\":" + jnum(st.auxtraceBytes) + "}";
        first = false;
    }
    o += "]},\"auxtrace\":[";
    for (size_t i = 0; i < s.auxtrace.size(); ++i) {
        const auto& b = s.auxtrace[i];
        o += std::string(i ? "," : "") + "{\"offset\":" + jnum(b.fileOffset) +
             ",\"data_offset\":" + jnum(b.dataOffset) + ",\"size\":" + jnum(b.size) +
             ",\"available\":" + jnum(b.available) + ",\"cpu\":" + std::to_string(b.cpu) +
             ",\"tid\":" + std::to_string(int32_t(b.tid)) + ",\"idx\":" + jnum(b.idx) +
             ",\"aux_offset\":" + jnum(b.auxOffset) + "}";
    }
    o += "],\"aux_announced_bytes\":" + jnum(s.auxAnnouncedBytes) +
         ",\"aux_missing_bytes\":" + jnum(s.auxMissingBytes) + ",\"aux_areas\":[";
    auto jgaps = [](const std::vector<PerfAuxGap>& gaps) {
        std::string v = "[";
        for (size_t i = 0; i < gaps.size() && i < kListedJsonGaps; ++i) {
            const PerfAuxGap& g = gaps[i];
            const char* kind = g.kind == PerfAuxGapKind::Missing   ? "missing"
                               : g.kind == PerfAuxGapKind::Overlap ? "overlap"
                                                                   : "backwards";
            v += std::string(i ? "," : "") + "{\"kind\":" + jsonString(kind) +
                 ",\"aux_offset\":" + jnum(g.auxOffset) + ",\"size\":" + jnum(g.size) +
                 ",\"file_offset\":" + jnum(g.fileOffset) +
                 ",\"after_auxtrace\":" + (g.afterAuxtrace ? "true" : "false") +
                 ",\"cut_short\":" + (g.cutShort ? "true" : "false") +
                 ",\"compressed\":" + (g.compressed ? "true" : "false");
            if (g.kind == PerfAuxGapKind::Missing)
                v += ",\"aux_record\":" + jnum(g.auxRecordOffset) + ",\"time\":" + jnum(g.time);
            v += "}";
        }
        return v + "]";
    };
    for (size_t i = 0; i < s.auxAreas.size(); ++i) {
        const PerfAuxArea& a = s.auxAreas[i];
        o += std::string(i ? "," : "") + "{\"cpu\":" + std::to_string(a.cpu) +
             ",\"tid\":" + std::to_string(a.tid) + ",\"name\":" + jsonString(perfAuxAreaName(a)) +
             ",\"snapshot\":" + (a.snapshot ? "true" : "false") + ",\"aux_records\":" + jnum(a.auxRecords) +
             ",\"announced_bytes\":" + jnum(a.announcedBytes) +
             ",\"auxtrace_records\":" + jnum(a.auxtraceRecords) +
             ",\"present_bytes\":" + jnum(a.presentBytes) + ",\"missing_bytes\":" + jnum(a.missingBytes) +
             ",\"kernel_truncated\":" + jnum(a.truncated) + ",\"kernel_partial\":" + jnum(a.partial) +
             ",\"kernel_collision\":" + jnum(a.collision) + ",\"gap_count\":" + jnum(a.gaps.size()) +
             ",\"gaps\":" + jgaps(a.gaps) + ",\"damage_count\":" + jnum(a.damage.size()) +
             ",\"damage_bytes\":" + jnum(a.damageBytes) + ",\"damage\":" + jgaps(a.damage) + "}";
    }
    o += "],\"auxtrace_errors\":" + jnum(s.auxtraceErrors.size());
    o += ",\"issues\":[";
    for (size_t i = 0; i < r.issues().size(); ++i) {
        const auto& is = r.issues()[i];
        o += std::string(i ? "," : "") + "{\"severity\":" + jsonString(is.error ? "error" : "warning") +
             ",\"offset\":" + jnum(is.offset) + ",\"message\":" + jsonString(is.message) + "}";
    }
    o += "]}\n";
    return o;
}

Expected<InfoArgs> parseInfoArgs(const std::vector<std::string>& args) {
    static constexpr OptionSpec kOptions[] = {
        {"json", 0, OptionArg::None, "", ""},
        {"help", 'h', OptionArg::None, "", ""},
    };
    auto cl = parseCommandLine(kOptions, args);
    if (!cl) return cl.error();
    InfoArgs out;
    for (const ParsedOption& o : cl->options) {
        if (o.is("help")) {
            out.help = true;
            return out;
        }
        if (o.is("json")) out.json = true;
    }
    if (cl->operands.size() > 1)
        return makeError("one file at a time (got '" + cl->operands[0] + "' and '" + cl->operands[1] + "')");
    if (cl->operands.empty()) return makeError("which file? (usage: auxscope info [--json] FILE)");
    out.file = cl->operands[0];
    return out;
}

int runInfoCommand(const std::vector<std::string>& args) {
    auto parsed = parseInfoArgs(args);
    if (!parsed) {
        std::cerr << "auxscope info: " << parsed.error().message << " (auxscope info --help)\n";
        return 2;
    }
    if (parsed->help) {
        std::cout << kInfoHelp;
        return 0;
    }
    const bool json = parsed->json;
    const std::string& file = parsed->file;
    auto reader = PerfDataReader::open(file == "-" ? "/dev/stdin" : file);
    if (!reader) {
        if (json)
            std::cout << "{\"file\":" << jsonString(file)
                      << ",\"error\":" << jsonString(reader.error().message) << "}\n";
        std::cerr << "auxscope info: " << reader.error().message << "\n";
        return 1;
    }
    std::cout << (json ? formatInfoJson(*reader) : formatInfo(*reader));
    return reader->hasErrors() ? 1 : 0;
}

}  // namespace auxscope
