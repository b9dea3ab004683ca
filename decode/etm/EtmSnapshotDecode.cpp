// SPDX-License-Identifier: GPL-3.0-or-later
#include "etm/EtmSnapshotDecode.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <type_traits>

#include "etm/EtmDecoder.h"
#include "etm/EtmMemory.h"
#include "etm/EtmSnapshot.h"
#include "spans/IsolatedDecode.h"

namespace auxscope::etm {

namespace {

// Formats lines into a local buffer and hands them to the stream in large writes.
class LineWriter {
public:
    explicit LineWriter(std::ostream& out) : out_(out) { buf_.reserve(kFlushAt + 512); }
    ~LineWriter() { flush(); }
    void append(const char* s, size_t n) {
        buf_.append(s, n);
        if (buf_.size() >= kFlushAt) flush();
    }
    void append(std::string_view s) { append(s.data(), s.size()); }
    void flush() {
        out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
        buf_.clear();
    }

private:
    static constexpr size_t kFlushAt = 1 << 16;
    std::ostream& out_;
    std::string buf_;
};

// The pieces of a buffer's listing, from the process that decodes it.
static_assert(std::is_trivially_copyable_v<EtmTraceIdCounts>);

// Appends to `to` where set (the process decoding the buffer sets it).
class ForwardOutput final : public IsolatedOutput {
public:
    void append(uint8_t kind, const void* data, size_t n) override {
        if (to) to->append(kind, data, n);
    }
    IsolatedOutput* to = nullptr;
};

class Printer final : public EtmElementSink, public EtmPacketSink {
public:
    Printer(LineWriter& w, EtmBufferSummary& sum, EtmOutputFormat format)
        : w_(w), sum_(sum), format_(format) {}

    void element(const EtmElement& e) override {
        EtmTraceIdCounts& c = sum_.traceIds[e.traceId];
        switch (e.kind) {
            case EtmElementKind::InstrRange: {
                ++c.ranges;
                c.instructions += e.instructions;
                if (format_ == EtmOutputFormat::Ranges) {
                    char line[96];
                    const int n = std::snprintf(line, sizeof line, "0x%x 0x%llx 0x%llx %u %s\n", e.traceId,
                                                static_cast<unsigned long long>(e.start),
                                                static_cast<unsigned long long>(e.lastAddr), e.instructions,
                                                etmIsaName(e.isa));
                    w_.append(line, static_cast<size_t>(n));
                }
                break;
            }
            case EtmElementKind::AddrNacc:
                ++c.notAccessible;
                break;
            case EtmElementKind::NoSync:
                ++c.noSync;
                break;
            case EtmElementKind::TraceOn:
                ++c.traceOn;
                break;
            case EtmElementKind::Exception:
                ++c.exceptions;
                break;
            default:
                break;
        }
    }
    void decodeError(uint64_t, uint8_t traceId, std::string_view) override {
        ++sum_.traceIds[traceId].decodeErrors;
    }

    void packet(uint8_t traceId, uint64_t index, std::string_view text) override {
        ++sum_.traceIds[traceId].packets;
        char head[48];
        const int n = std::snprintf(head, sizeof head, "Idx:%llu; ID:%x;\t",
                                    static_cast<unsigned long long>(index), traceId);
        w_.append(head, static_cast<size_t>(n));
        w_.append(text);
        w_.append("\n", 1);
    }
    void endOfTrace(uint8_t traceId) override {
        char line[48];
        const int n = std::snprintf(line, sizeof line, "ID:%x\tEND OF TRACE DATA\n", traceId);
        w_.append(line, static_cast<size_t>(n));
    }

private:
    LineWriter& w_;
    EtmBufferSummary& sum_;
    EtmOutputFormat format_;
};

Expected<std::vector<uint8_t>> readWhole(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return makeError(path + ": trace buffer file missing");
    std::ifstream in(path, std::ios::binary);
    if (!in) return makeError(path + ": cannot open the trace buffer file");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return makeError(path + ": read error");
    return bytes;
}

}  // namespace

bool isEtmSnapshotDir(const std::string& path) {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec) &&
           std::filesystem::is_regular_file(std::filesystem::path(path) / "snapshot.ini", ec);
}

Expected<EtmSnapshotSummary> decodeSnapshot(const std::string& dir, EtmOutputFormat format,
                                            std::ostream& out) {
    auto snap = EtmSnapshot::read(dir);
    if (!snap) return snap.error();
    EtmSnapshotSummary summary;
    summary.notes = snap->notes();
    LineWriter w(out);
    const DecoderIsolation isolation = DecoderIsolation::fromEnvironment();
    size_t bufferIndex = 0;  // what the isolation test doubles name
    for (const SnapshotBuffer& buffer : snap->buffers()) {
        const size_t index = bufferIndex++;
        EtmBufferSummary& bs = summary.buffers.emplace_back();
        bs.name = buffer.name;
        bs.file = buffer.file;
        auto sources = snap->sources(buffer.name);
        if (!sources) {
            summary.errors.push_back(sources.error().message);
            continue;
        }
        std::vector<EtmSourceConfig> configs;
        std::string described;
        for (const SnapshotSource& s : *sources) {
            if (!s.note.empty()) summary.notes.push_back(buffer.name + ": " + s.note);
            if (!s.config) continue;
            // Raw data holds one source: OpenCSD decodes the first.
            if (buffer.input == EtmInput::Raw && !configs.empty()) {
                summary.notes.push_back(buffer.name + ": raw (source_data) buffer holds one source; " +
                                        s.name + " is not decoded");
                continue;
            }
            // The packet listing works on every protocol; the instruction decode skips STM.
            if (format == EtmOutputFormat::Ranges && s.config->protocol == EtmProtocol::Stm) continue;
            configs.push_back(*s.config);
            described += (described.empty() ? "" : ", ") + s.name + " " + s.config->describe();
        }
        if (configs.empty()) {
            summary.notes.push_back(buffer.name +
                                    (format == EtmOutputFormat::Ranges
                                         ? ": no instruction trace source (STM and the like are "
                                           "listed by --format packets)"
                                         : ": no trace source with a decoder"));
            continue;
        }
        auto bytes = readWhole(buffer.path);
        if (!bytes) {
            summary.errors.push_back(buffer.where + ": " + bytes.error().message);
            continue;
        }
        bs.bytes = bytes->size();

        EtmImageMemory image;
        if (format == EtmOutputFormat::Ranges) {
            for (const SnapshotDump& d : snap->dumps(buffer.name)) {
                if (auto r = image.addFile(d.address, d.path, d.offset, d.length, d.space); !r)
                    summary.notes.push_back(d.where + ": memory dump not used: " + r.error().message +
                                            " (code there decodes as not accessible)");
            }
        }
        EtmMemoryCache cache(image);
        // OpenCSD decodes the buffer in a worker process (spans/IsolatedDecode.h):
        // one it crashes or hangs on ends that buffer's listing with an error
        // naming it, the other buffers go on. The printer writes to whichever
        // process runs it (`forward`), the parent copies the text to `w` in order.
        ForwardOutput forward;
        IsolatedOutputStream text(forward, kListingText);
        LineWriter lines(text);
        EtmBufferSummary counts;
        Printer printer(lines, counts, format);
        EtmDecoderOptions options;
        options.input = buffer.input;
        options.packetsOnly = format == EtmOutputFormat::Packets;
        auto decoder = EtmDecoder::create(configs, options, &cache, &printer,
                                          format == EtmOutputFormat::Packets ? &printer : nullptr);
        if (!decoder) {
            summary.errors.push_back(buffer.where + ": " + decoder.error().message);
            continue;
        }
        char head[256];
        std::snprintf(head, sizeof head, "# buffer %s: %s, %s, %llu bytes\n", buffer.name.c_str(),
                      buffer.file.c_str(), buffer.format.empty() ? "coresight" : buffer.format.c_str(),
                      static_cast<unsigned long long>(bytes->size()));
        w.append(head);
        w.append("# sources: " + described + "\n");
        if (format == EtmOutputFormat::Ranges)
            w.append("# trace_id first_instruction last_instruction count isa\n");
        streamIsolated(
            {index}, 1, isolation, "OpenCSD",
            [&](size_t, IsolatedOutput& to) {
                forward.to = &to;
                // Fed in chunks, as a capture would hand the bytes over.
                constexpr size_t kChunk = 64 * 1024;
                Expected<void> fed;
                for (size_t off = 0; off < bytes->size() && fed; off += kChunk) {
                    const size_t n = std::min(kChunk, bytes->size() - off);
                    fed = (*decoder)->feed(off, std::span<const uint8_t>(bytes->data() + off, n));
                }
                if (fed) fed = (*decoder)->finish();
                lines.flush();
                text.flush();
                for (const auto& [id, c] : counts.traceIds) {
                    uint8_t record[1 + sizeof c] = {id};
                    std::memcpy(record + 1, &c, sizeof c);
                    to.append(kListingCounts, record, sizeof record);
                }
                if (!fed) {
                    const std::string m = buffer.path + ": " + fed.error().message;
                    to.append(kListingError, m.data(), m.size());
                }
                forward.to = nullptr;
            },
            listingConsumer([&](std::string_view text) { w.append(text.data(), text.size()); },
                            [&](std::string_view line) { summary.errors.emplace_back(line); },
                            [&](const uint8_t* data, size_t n) {
                                constexpr size_t kEach = 1 + sizeof(EtmTraceIdCounts);
                                for (size_t at = 0; at + kEach <= n; at += kEach)
                                    std::memcpy(&bs.traceIds[data[at]], data + at + 1,
                                                sizeof(EtmTraceIdCounts));
                            }),
            [&](size_t, const DecoderFailure& f) {
                summary.errors.push_back(buffer.where + ": " + f.detail + ": the listing of buffer " +
                                         buffer.name + " ends there");
            });
    }
    return summary;
}

int decodeSnapshot(const std::string& dir, EtmOutputFormat format, std::ostream& out, std::ostream& err) {
    auto summary = decodeSnapshot(dir, format, out);
    out.flush();
    if (!summary) {
        err << summary.error().message << "\n";
        return 1;
    }
    for (const auto& n : summary->notes)
        err << "note: " << n << "\n";
    for (const auto& b : summary->buffers) {
        for (const auto& [id, c] : b.traceIds) {
            char line[320];
            if (format == EtmOutputFormat::Ranges)
                std::snprintf(line, sizeof line,
                              "%s: trace ID 0x%x: %llu ranges, %llu instructions, %llu exceptions, %llu not "
                              "accessible, "
                              "%llu no-sync, %llu trace-on, %llu decode errors\n",
                              b.name.c_str(), id, static_cast<unsigned long long>(c.ranges),
                              static_cast<unsigned long long>(c.instructions),
                              static_cast<unsigned long long>(c.exceptions),
                              static_cast<unsigned long long>(c.notAccessible),
                              static_cast<unsigned long long>(c.noSync),
                              static_cast<unsigned long long>(c.traceOn),
                              static_cast<unsigned long long>(c.decodeErrors));
            else
                std::snprintf(line, sizeof line, "%s: trace ID 0x%x: %llu packets\n", b.name.c_str(), id,
                              static_cast<unsigned long long>(c.packets));
            err << line;
        }
    }
    for (const auto& e : summary->errors)
        err << "error: " << e << "\n";
    return summary->errors.empty() ? 0 : 1;
}

}  // namespace auxscope::etm
