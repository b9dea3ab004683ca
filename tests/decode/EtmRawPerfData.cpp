// SPDX-License-Identifier: GPL-3.0-or-later
#include "EtmRawPerfData.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include "etm/FrameDeformatter.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataFormat.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/PerfDataWriter.h"

namespace auxscope::etmtest {

namespace {

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

// Gathers the bytes of one trace ID and counts the others.
class KeepOne final : public etm::FrameDeformatterSink {
public:
    explicit KeepOne(uint8_t id) : id_(id) {}
    void data(uint8_t traceId, uint64_t, std::span<const uint8_t> bytes) override {
        seen[traceId] += bytes.size();
        if (traceId == id_) kept.insert(kept.end(), bytes.begin(), bytes.end());
    }
    std::vector<uint8_t> kept;
    std::map<uint8_t, uint64_t> seen;

private:
    uint8_t id_;
};

struct ConvertedBuffer {
    uint64_t rawOffset = 0;
    std::vector<uint8_t> raw;
};

}  // namespace

Expected<RawEtmCopyReport> writeRawEtmCopy(const std::string& in, const std::string& out) {
    auto reader = PerfDataReader::open(in);
    if (!reader) return reader.error();
    const PerfDataReader& r = *reader;
    if (r.mode() != PerfDataMode::File)
        return makeError(in + ": a pipe-mode file (only file mode is copied)");
    const PerfDataSummary& sum = r.summary();
    RawEtmCopyReport report;

    // The trace ID of every CPU.
    const PerfAuxtraceInfo* info = nullptr;
    for (const auto& i : sum.auxtraceInfo)
        if (i.type == auxtrace::kTypeCsEtm) info = &i;
    if (!info) return makeError(in + ": no CoreSight ETM AUXTRACE_INFO record");
    auto cs = decodeCsEtmInfo(info->priv);
    if (!cs) return makeError(in + ": AUXTRACE_INFO at " + hex(info->fileOffset) + ": " + cs.error().message);
    if (cs->snapshot) return makeError(in + ": a snapshot-mode (-S) recording is not converted");
    for (const CsEtmCpuInfo& c : cs->cpus)
        report.traceIdByCpu[static_cast<int64_t>(c.cpu)] = static_cast<uint8_t>(c.traceId() & 0x7f);

    // AUX records per CPU, by AUX offset: their bounds cut the buffers into fragments.
    std::map<int64_t, std::set<uint64_t>> cuts;
    for (const PerfAuxRecord& a : sum.aux) {
        if (a.flags & perfdata::kAuxFlagCoresightFormatRaw)
            return makeError(in + ": AUX record at " + hex(a.fileOffset) + " is raw already");
        if (a.flags & perfdata::kAuxFlagOverwrite)
            return makeError(in + ": AUX record at " + hex(a.fileOffset) + " is a snapshot (OVERWRITE)");
        cuts[a.cpu].insert(a.auxOffset);
        cuts[a.cpu].insert(a.auxOffset + a.auxSize);
    }

    // Deformat the buffers, CPU by CPU in AUX offset order; raw offsets run on
    // from one buffer of a CPU to the next.
    std::vector<const PerfAuxtraceBuffer*> buffers;
    for (const auto& b : sum.auxtrace)
        buffers.push_back(&b);
    std::sort(buffers.begin(), buffers.end(), [](auto* a, auto* b) {
        return a->cpu != b->cpu ? a->cpu < b->cpu : a->auxOffset < b->auxOffset;
    });
    std::map<uint64_t, ConvertedBuffer> converted;          // by the AUXTRACE record's file offset
    std::map<int64_t, std::map<uint64_t, uint64_t>> rawAt;  // per CPU: formatted AUX offset -> raw
    std::map<int64_t, uint64_t> rawCursor;
    std::map<int64_t, std::set<uint8_t>> idsByCpu;
    for (const PerfAuxtraceBuffer* b : buffers) {
        const std::string where = in + ": AUXTRACE at " + hex(b->fileOffset);
        if (b->compressed) return makeError(where + ": inside a COMPRESSED record (not converted)");
        if (b->available < b->size) return makeError(where + ": payload cut short");
        auto idIt = report.traceIdByCpu.find(b->cpu);
        if (idIt == report.traceIdByCpu.end())
            return makeError(where + ": cpu " + std::to_string(b->cpu) + " has no ETM in AUXTRACE_INFO");
        const uint8_t id = idIt->second;
        const std::span<const uint8_t> bytes = r.fileBytes(b->dataOffset, b->size);
        if (bytes.size() != b->size) return makeError(where + ": payload outside the file");

        ConvertedBuffer& cb = converted[b->fileOffset];
        uint64_t& cursor = rawCursor[b->cpu];
        cb.rawOffset = cursor;
        auto& at = rawAt[b->cpu];
        // Fragments: the AUX records' bounds inside the buffer.
        std::vector<uint64_t> bounds{b->auxOffset};
        for (uint64_t c : cuts[b->cpu])
            if (c > b->auxOffset && c < b->auxOffset + b->size) bounds.push_back(c);
        bounds.push_back(b->auxOffset + b->size);
        for (size_t i = 0; i + 1 < bounds.size(); ++i) {
            KeepOne sink(id);
            etm::FrameDeformatterOptions o;
            o.resetOn4xFsync = true;  // perf's padding frames
            etm::FrameDeformatter d(sink, o);
            const auto piece = bytes.subspan(bounds[i] - b->auxOffset, bounds[i + 1] - bounds[i]);
            auto fed = d.feed(bounds[i], piece);
            if (fed) fed = d.finish();
            if (!fed) return makeError(where + ": " + fed.error().message);
            at[bounds[i]] = cursor;
            cb.raw.insert(cb.raw.end(), sink.kept.begin(), sink.kept.end());
            cursor += sink.kept.size();
            at[bounds[i + 1]] = cursor;
            for (auto [sid, n] : sink.seen) {
                report.bytesByCpuAndId[{b->cpu, sid}] += n;
                idsByCpu[b->cpu].insert(sid);
                if (sid != id) report.droppedBytes += n;
            }
            report.unknownIdBytes += d.stats().unknownIdBytes;
            report.resets += d.stats().resets;
        }
        report.formattedBytes += b->size;
        report.rawBytes += cb.raw.size();
        ++report.auxtraceBuffers;
    }
    for (const auto& [cpu, ids] : idsByCpu) {
        if (ids.size() < 2) continue;
        std::string list;
        for (uint8_t i : ids)
            list += " " + hex(i);
        report.notes.push_back("cpu " + std::to_string(cpu) + ": buffers hold trace IDs" + list + "; kept " +
                               hex(report.traceIdByCpu[cpu]) + " (the CPU's)");
    }
    if (report.unknownIdBytes)
        report.notes.push_back(
            std::to_string(report.unknownIdBytes) +
            " bytes came before the first ID byte of their AUX record's fragment (dropped)");

    // The AUX records' raw offsets and sizes, by file offset.
    struct AuxRaw {
        uint64_t offset, size;
    };
    std::map<uint64_t, AuxRaw> auxRaw;
    for (const PerfAuxRecord& a : sum.aux) {
        const auto& at = rawAt[a.cpu];
        auto s = at.find(a.auxOffset), e = at.find(a.auxOffset + a.auxSize);
        if (s == at.end() || e == at.end())
            return makeError(in + ": AUX record at " + hex(a.fileOffset) + " names AUX offsets " +
                             hex(a.auxOffset) + "+" + hex(a.auxSize) + " no AUXTRACE buffer holds");
        auxRaw[a.fileOffset] = {s->second, e->second - s->second};
    }

    std::vector<PerfDataEventAttr> attrs;
    for (const PerfAttr& a : r.attrs())
        attrs.push_back({a.name, a.attr, a.ids});
    auto writer = PerfDataWriter::create(out, std::move(attrs));
    if (!writer) return writer.error();
    PerfDataWriter& w = **writer;

    Expected<void> status;
    auto walked = r.forEachRecord([&](const PerfRecord& rec) {
        const uint32_t type = rec.header.type;
        if (type == perfdata::kRecordCompressed || type == perfdata::kRecordCompressed2) {
            status = makeError(in + ": COMPRESSED record at " + hex(rec.fileOffset) + " (not converted)");
            return false;
        }
        ++report.records;
        if (type == perfdata::kRecordAuxtraceInfo) {
            perfdata::AuxtraceInfoRecordHead head{};
            if (rec.bytes.size() < sizeof(perf_event_header) + sizeof head) {
                status = makeError(in + ": short AUXTRACE_INFO at " + hex(rec.fileOffset));
                return false;
            }
            std::memcpy(&head, rec.bytes.data() + sizeof(perf_event_header), sizeof head);
            const size_t privBytes = rec.bytes.size() - sizeof(perf_event_header) - sizeof head;
            std::vector<uint64_t> priv(privBytes / 8);
            std::memcpy(priv.data(), rec.bytes.data() + sizeof(perf_event_header) + sizeof head,
                        priv.size() * 8);
            status = w.writeAuxtraceInfo(head.type, priv);
        } else if (type == perfdata::kRecordAuxtrace) {
            auto it = converted.find(rec.fileOffset);
            perfdata::AuxtraceRecord head{};
            if (it == converted.end() || rec.bytes.size() < sizeof(perf_event_header) + sizeof head) {
                status = makeError(in + ": AUXTRACE at " + hex(rec.fileOffset) + " not converted");
                return false;
            }
            std::memcpy(&head, rec.bytes.data() + sizeof(perf_event_header), sizeof head);
            head.offset = it->second.rawOffset;
            status = w.writeAuxtrace(head, it->second.raw);
        } else if (type == PERF_RECORD_AUX) {
            auto it = auxRaw.find(rec.fileOffset);
            if (it == auxRaw.end() || rec.bytes.size() < sizeof(perf_event_header) + 24) {
                status = makeError(in + ": AUX record at " + hex(rec.fileOffset) + " not converted");
                return false;
            }
            std::vector<uint8_t> copy(rec.bytes.begin(), rec.bytes.end());
            uint64_t body[3];
            std::memcpy(body, copy.data() + sizeof(perf_event_header), sizeof body);
            body[0] = it->second.offset;
            body[1] = it->second.size;
            body[2] |= perfdata::kAuxFlagCoresightFormatRaw;
            std::memcpy(copy.data() + sizeof(perf_event_header), body, sizeof body);
            ++report.auxRecords;
            status = w.writeRecord(copy);
        } else {
            status = w.writeRecord(rec.bytes);
        }
        return status.ok();
    });
    if (!walked) return makeError(in + ": " + walked.error().message);
    if (!status) return status.error();

    // Features as the original has them, but HEADER_AUXTRACE (the writer indexes its own records).
    const perfdata::FileHeader& h = r.header();
    uint64_t table = h.data.offset + h.data.size;
    for (unsigned bit = 0; bit < 256; ++bit) {
        if (!((h.features[bit / 64] >> (bit % 64)) & 1)) continue;
        perfdata::FileSection sec{};
        const auto entry = r.fileBytes(table, sizeof sec);
        table += sizeof sec;
        if (entry.size() != sizeof sec)
            return makeError(in + ": feature index cut short at bit " + std::to_string(bit));
        std::memcpy(&sec, entry.data(), sizeof sec);
        if (bit == perfdata::kFeatAuxtrace || bit == perfdata::kFeatCompressed) continue;
        const auto body = r.fileBytes(sec.offset, sec.size);
        if (body.size() != sec.size)
            return makeError(in + ": feature " + std::to_string(bit) + " outside the file");
        w.setFeature(bit, std::vector<uint8_t>(body.begin(), body.end()));
    }
    if (auto f = w.finish(); !f) return f.error();
    return report;
}

}  // namespace auxscope::etmtest
