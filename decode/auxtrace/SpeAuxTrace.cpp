// SPDX-License-Identifier: GPL-3.0-or-later
#include "auxtrace/SpeAuxTrace.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "spe/SpePacket.h"

namespace auxscope {

SpeAuxTraceSession::~SpeAuxTraceSession() = default;

Expected<std::unique_ptr<AuxTraceSession>> SpeAuxTraceSession::open(const PerfDataReader& file,
                                                                    const AuxTraceOptions& options,
                                                                    std::unique_ptr<AuxTraceSession>* carry) {
    auto sideband = Sideband::load(file);
    if (!sideband) return sideband.error();
    std::unique_ptr<SpeAuxTraceSession> s(new SpeAuxTraceSession);
    s->file_ = &file;
    s->sideband_ = std::make_unique<Sideband>(std::move(*sideband));
    auto records = spe::decodeSpeRecords(file, *s->sideband_);
    if (!records) return records.error();
    s->records_ = std::move(*records);
    std::vector<std::string> notes;  // decodeSpeRecords told them already
    s->streams_ = collectAuxStreams(file, "record boundary", notes);
    // A session of the same kind hands its loaded images on (its own object goes with them).
    auto* same = carry ? dynamic_cast<SpeAuxTraceSession*>(carry->get()) : nullptr;
    if (same && same->images_) {
        s->functions_ = std::move(same->functions_);
        s->images_ = std::move(same->images_);
        carry->reset();
        s->filesLoaded_ = s->images_->update(*s->sideband_).filesLoaded;
        s->carried_ = true;
    } else {
        s->functions_ = std::make_unique<FunctionTable>();
        s->images_ = std::make_unique<ImageResolver>(*s->sideband_, *s->functions_, options.images);
        s->images_->prepare();
        s->filesLoaded_ = s->images_->files().size();
    }
    return std::unique_ptr<AuxTraceSession>(std::move(s));
}

std::vector<std::string> SpeAuxTraceSession::traceNotes() const {
    std::vector<std::string> notes = records_.notes;
    notes.push_back(
        "Arm SPE samples single operations and has no control flow: no call-stack spans "
        "(`auxscope decode FILE --format records` lists the " +
        std::to_string(records_.records.size()) + " records)");
    return notes;
}

std::vector<std::string> SpeAuxTraceSession::imageNotes() const {
    return images_->notes();
}

std::vector<std::string> SpeAuxTraceSession::lossLines(std::optional<int> cpu) const {
    std::vector<std::string> lines;
    for (const AuxStream& s : streams_) {
        if (cpu && s.cpu != *cpu) continue;
        const AuxLoss& l = s.auxLoss;
        if (!l.truncated && !l.partial && !l.collision && !l.missingBytes) continue;
        std::string line = "cpu " + std::to_string(s.cpu) + ": AUX records with";
        if (l.truncated) line += " TRUNCATED " + std::to_string(l.truncated);
        if (l.partial) line += " PARTIAL " + std::to_string(l.partial);
        if (l.collision) line += " COLLISION " + std::to_string(l.collision);
        if (l.missingBytes)
            line += " and " + std::to_string(l.missingBytes) + " AUX bytes missing from the file in " +
                    std::to_string(l.missingGaps) + " gaps";
        lines.push_back(line + " (records lost there; " + std::to_string(l.splits) + " runs cut)\n");
    }
    return lines;
}

std::vector<AuxTraceSession::Segment> SpeAuxTraceSession::segments() const {
    std::vector<Segment> out;
    out.reserve(records_.buffers.size());
    for (const spe::SpeRecords::Buffer& b : records_.buffers)
        out.push_back({b.cpu, b.firstTime, b.lastTime, b.end - b.begin});
    return out;
}

DecodedSpans SpeAuxTraceSession::decodeSpans(const DecodeWindow&, unsigned) {
    return {};
}

DecodeStats SpeAuxTraceSession::forEachBlock(const DecodeWindow&,
                                             const std::function<void(const FlowBlock&)>&, unsigned,
                                             std::vector<Gap>*) {
    return {};
}

void speDumpLine(std::ostream& out, uint64_t offset, const uint8_t* bytes, size_t n,
                 const std::string* text) {
    char line[160];
    int len = std::snprintf(line, sizeof line, ".  %08" PRIx64 ": ", offset);
    for (size_t i = 0; i < 16; ++i)
        len += i < n ? std::snprintf(line + len, sizeof line - size_t(len), " %02x", bytes[i])
                     : std::snprintf(line + len, sizeof line - size_t(len), "   ");
    out.write(line, len);
    if (text)
        out << ' ' << *text << '\n';
    else
        out << " Bad packet!\n";
}

void speDumpBuffer(std::span<const uint8_t> bytes, std::ostream& out,
                   std::map<std::string, uint64_t>& counts) {
    char head[96];
    std::snprintf(head, sizeof head, ". ... ARM SPE data: size %#zx bytes\n", bytes.size());
    out << head;
    size_t pos = 0;
    spe::SpePacket pk;
    while (pos < bytes.size()) {
        const size_t left = bytes.size() - pos;
        int ret = spe::speNextPacket(bytes.data() + pos, left, pk, pos);
        if (ret > 0 && pk.kind == spe::PacketKind::Pad) {
            // perf puts consecutive PADs on one line, up to 16 bytes.
            while (ret < 16 && left > size_t(ret) && !bytes[pos + size_t(ret)])
                ++ret;
        }
        if (ret > 0) {
            const std::string text = spe::speDescribePacket(pk);
            speDumpLine(out, pos, bytes.data() + pos, size_t(ret), &text);
            ++counts[spe::spePacketName(pk.kind)];
            pos += size_t(ret);
        } else {
            speDumpLine(out, pos, bytes.data() + pos, 1, nullptr);
            ++counts["Bad packet"];
            ++pos;
        }
    }
}

int SpeAuxTraceSession::listPackets(std::optional<int> cpu, std::ostream& out, std::ostream& err) {
    // Each AUXTRACE record's payload in file order, as perf dumps it: its
    // announced size, the padding to 8 bytes included (the streams drop that
    // padding where the next buffer continues the AUX data).
    std::vector<uint8_t> scratch;
    std::map<int64_t, std::map<std::string, uint64_t>> counts;
    int status = 0;
    for (const PerfAuxtraceBuffer& b : file_->summary().auxtrace) {
        if (cpu && b.cpu != *cpu) continue;
        std::span<const uint8_t> data;
        if (!b.compressed) {
            data = file_->fileBytes(b.dataOffset, b.available);
        } else {
            // Inside a COMPRESSED record: the stream's copy of its bytes.
            for (const AuxStream& s : streams_) {
                if (s.cpu != b.cpu) continue;
                for (const AuxBufferPlace& p : s.places)
                    if (p.auxOffset == b.auxOffset) data = s.bytes.view(p.begin, p.end, scratch);
            }
        }
        char head[160];
        std::snprintf(head, sizeof head,
                      "cpu %" PRId64 ": AUXTRACE at %#" PRIx64 ", %" PRIu64 " bytes, AUX offset %#" PRIx64
                      "\n",
                      b.cpu, b.fileOffset, b.size, b.auxOffset);
        out << head;
        if (data.size() != b.available) {
            err << "auxscope decode: " << file_->path() << ": AUXTRACE record at offset " << b.fileOffset
                << ": payload not readable\n";
            status = 1;
            continue;
        }
        speDumpBuffer(data, out, counts[b.cpu]);
        if (b.available < b.size)
            out << ". ... AUXTRACE payload cut short by the end of the file: " << b.size - b.available
                << " of " << b.size << " bytes missing\n";
    }
    for (const auto& [c, byName] : counts) {
        out << "cpu " << c << " packets:";
        for (const auto& [name, n] : byName)
            out << " " << name << " " << n;
        out << "\n";
    }
    return status;
}

}  // namespace auxscope
