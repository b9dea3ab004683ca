// SPDX-License-Identifier: GPL-3.0-or-later
// The reader on perf.data files built here byte by byte: the paths real captures
// on this machine cannot produce (AUX flags, lost records, AUXTRACE errors,
// records straddling COMPRESSED records, unknown types, damage of every kind).
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>

#include "perfdata/PerfDataReader.h"

using namespace auxscope;
using namespace auxscope::perfdata;

namespace {

constexpr uint64_t kSt = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                         PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;

// Little-endian byte building; the methods return the derived type so calls chain.
template <typename Self>
struct ByteBuilder {
    std::vector<uint8_t> b;
    Self& self() { return static_cast<Self&>(*this); }
    template <typename T>
    Self& put(const T& v) {
        auto p = reinterpret_cast<const uint8_t*>(&v);
        b.insert(b.end(), p, p + sizeof v);
        return self();
    }
    Self& u64(uint64_t v) { return put(v); }
    Self& u32(uint32_t v) { return put(v); }
    Self& raw(const std::vector<uint8_t>& v) {
        b.insert(b.end(), v.begin(), v.end());
        return self();
    }
    // perf_header_string: u32 length (padded to 8), NUL-terminated.
    Self& str(const std::string& s) {
        const uint32_t len = uint32_t((s.size() + 1 + 7) / 8 * 8);
        u32(len);
        std::vector<uint8_t> v(len, 0);
        std::memcpy(v.data(), s.data(), s.size());
        return raw(v);
    }
};

struct Bytes : ByteBuilder<Bytes> {};

struct Rec : ByteBuilder<Rec> {
    explicit Rec(uint32_t type, uint16_t misc = 0) {
        const perf_event_header h{type, misc, 0};
        b.resize(sizeof h);
        std::memcpy(b.data(), &h, sizeof h);
    }
    // sample_id for kSt: TID, TIME, CPU, IDENTIFIER
    Rec& trailer(uint32_t cpu, uint64_t id, uint64_t time = 1) {
        return u64(uint64_t(101) << 32 | 100).u64(time).u64(cpu).u64(id);
    }
    std::vector<uint8_t> done() {
        while (b.size() % 8)
            b.push_back(0);
        const uint16_t size = uint16_t(b.size());
        std::memcpy(b.data() + 6, &size, 2);
        return b;
    }
};

perf_event_attr attr(uint64_t sampleType, uint32_t type = PERF_TYPE_SOFTWARE) {
    perf_event_attr a{};
    a.type = type;
    a.size = sizeof a;
    a.sample_type = sampleType;
    a.sample_id_all = 1;
    return a;
}

struct Event {
    perf_event_attr a;
    std::vector<uint64_t> ids;
};

// A file-mode perf.data: header, ids, attrs, data, feature table and sections.
std::vector<uint8_t> fileMode(const std::vector<Event>& events, const std::vector<uint8_t>& data,
                              const std::map<unsigned, std::vector<uint8_t>>& features = {}) {
    FileHeader h{};
    h.magic = kMagic;
    h.size = sizeof h;
    h.attrSize = sizeof(perf_event_attr) + sizeof(FileSection);
    std::vector<uint8_t> out(sizeof h);
    std::vector<FileSection> idSections;
    for (const Event& e : events) {
        idSections.push_back({out.size(), e.ids.size() * 8});
        auto p = reinterpret_cast<const uint8_t*>(e.ids.data());
        out.insert(out.end(), p, p + e.ids.size() * 8);
    }
    h.attrs = {out.size(), events.size() * h.attrSize};
    for (size_t i = 0; i < events.size(); ++i) {
        auto p = reinterpret_cast<const uint8_t*>(&events[i].a);
        out.insert(out.end(), p, p + sizeof(perf_event_attr));
        auto s = reinterpret_cast<const uint8_t*>(&idSections[i]);
        out.insert(out.end(), s, s + sizeof(FileSection));
    }
    h.data = {out.size(), data.size()};
    out.insert(out.end(), data.begin(), data.end());
    uint64_t at = out.size() + features.size() * sizeof(FileSection);
    std::vector<uint8_t> table, bodies;
    for (auto& [id, body] : features) {
        h.features[id / 64] |= uint64_t(1) << (id % 64);
        FileSection s{at, body.size()};
        auto p = reinterpret_cast<const uint8_t*>(&s);
        table.insert(table.end(), p, p + sizeof s);
        bodies.insert(bodies.end(), body.begin(), body.end());
        at += body.size();
    }
    out.insert(out.end(), table.begin(), table.end());
    out.insert(out.end(), bodies.begin(), bodies.end());
    std::memcpy(out.data(), &h, sizeof h);
    return out;
}

std::vector<uint8_t> cat(std::initializer_list<std::vector<uint8_t>> parts) {
    std::vector<uint8_t> out;
    for (auto& p : parts)
        out.insert(out.end(), p.begin(), p.end());
    return out;
}

std::vector<uint8_t> sample(uint64_t id, uint32_t cpu, uint64_t ip = 0x1000) {
    Rec r(PERF_RECORD_SAMPLE);
    r.u64(id).u64(ip).u64(uint64_t(101) << 32 | 100).u64(5).u64(cpu).u64(1);
    return r.done();
}

std::vector<uint8_t> auxRecord(uint32_t cpu, uint64_t id, uint64_t offset, uint64_t size, uint64_t flags) {
    Rec r(PERF_RECORD_AUX);
    r.u64(offset).u64(size).u64(flags);
    return r.trailer(cpu, id).done();
}

std::vector<uint8_t> auxtrace(uint32_t cpu, const std::vector<uint8_t>& payload, uint64_t announced = ~0ull) {
    Rec r(kRecordAuxtrace);
    AuxtraceRecord a{announced == ~0ull ? payload.size() : announced, 0, 0, cpu, 42, cpu, 0};
    r.put(a);
    return cat({r.done(), payload});
}

PerfDataReader open(std::vector<uint8_t> bytes, const char* name = "synthetic.data") {
    auto r = PerfDataReader::fromBytes(std::move(bytes), name);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return std::move(r).value();
}

std::string issuesText(const PerfDataReader& r) {
    std::string s;
    for (auto& i : r.issues())
        s += (i.error ? "error: " : "warning: ") + i.message + "\n";
    return s;
}

bool hasIssue(const PerfDataReader& r, const std::string& text, bool error) {
    for (auto& i : r.issues())
        if (i.error == error && i.message.find(text) != std::string::npos) return true;
    return false;
}

std::vector<uint8_t> zstdStream(const std::vector<std::vector<uint8_t>>& chunks,
                                std::vector<std::vector<uint8_t>>& frames) {
    // One zstd stream flushed after each chunk, like perf record -z: every
    // COMPRESSED record continues the stream of the one before.
    ZSTD_CStream* cs = ZSTD_createCStream();
    ZSTD_initCStream(cs, 3);
    std::vector<uint8_t> all;
    for (const auto& chunk : chunks) {
        std::vector<uint8_t> out(ZSTD_compressBound(chunk.size()) + 1024);
        ZSTD_inBuffer in{chunk.data(), chunk.size(), 0};
        ZSTD_outBuffer o{out.data(), out.size(), 0};
        while (in.pos < in.size)
            ZSTD_compressStream(cs, &o, &in);
        while (ZSTD_flushStream(cs, &o) != 0) {
        }
        out.resize(o.pos);
        frames.push_back(out);
        all.insert(all.end(), out.begin(), out.end());
    }
    ZSTD_freeCStream(cs);
    return all;
}

}  // namespace

TEST(ReaderSynthetic, FileModeCountsLossesAndAuxFlags) {
    auto data = cat({
        sample(1, 0),
        sample(2, 1),
        sample(1, 0),
        Rec(PERF_RECORD_LOST).u64(1).u64(1234).trailer(0, 1).done(),
        Rec(PERF_RECORD_LOST).u64(1).u64(6).trailer(0, 1).done(),
        Rec(PERF_RECORD_LOST_SAMPLES).u64(77).trailer(1, 2).done(),
        auxRecord(0, 1, 0, 4096, kAuxFlagTruncated),
        auxRecord(0, 1, 4096, 100, kAuxFlagPartial | kAuxFlagCollision),
        auxRecord(1, 2, 0, 64, kAuxFlagOverwrite | kAuxFlagCoresightFormatRaw),
        auxtrace(0, std::vector<uint8_t>(4196, 0xab)),
        auxtrace(1, std::vector<uint8_t>(64, 0xcd)),
        Rec(kRecordFinishedRound).done(),
    });
    Bytes err;
    AuxtraceErrorRecordHead eh{1, 7, 1, 100, 101, 1, 0xffffffff81000000ull};
    err.put(eh).u64(12345);
    std::vector<uint8_t> msg(64, 0);
    std::memcpy(msg.data(), "overflow packet", 15);
    err.raw(msg).u32(0).u32(0);
    Rec errRec(kRecordAuxtraceError);
    errRec.raw(err.b);
    data = cat({data, errRec.done()});

    Bytes host;
    host.str("testhost");
    Bytes nr;
    nr.u32(4).u32(2);
    auto r = open(
        fileMode({{attr(kSt), {1}}, {attr(kSt), {2}}}, data, {{kFeatHostname, host.b}, {kFeatNrCpus, nr.b}}));
    EXPECT_FALSE(r.hasErrors()) << issuesText(r);
    const auto& s = r.summary();
    EXPECT_EQ(s.records, 13u);
    EXPECT_EQ(s.recordsByType.at(PERF_RECORD_SAMPLE), 3u);
    EXPECT_EQ(s.cpus.at(0).recordsByType.at(PERF_RECORD_SAMPLE), 2u);
    EXPECT_EQ(s.cpus.at(1).recordsByType.at(PERF_RECORD_SAMPLE), 1u);
    EXPECT_EQ(s.cpus.at(0).lostRecords, 2u);
    EXPECT_EQ(s.cpus.at(0).lost, 1240u);
    EXPECT_EQ(s.cpus.at(1).lostSamplesRecords, 1u);
    EXPECT_EQ(s.cpus.at(1).lostSamples, 77u);
    EXPECT_EQ(s.cpus.at(0).aux.records, 2u);
    EXPECT_EQ(s.cpus.at(0).aux.bytes, 4196u);
    EXPECT_EQ(s.cpus.at(0).aux.truncated, 1u);
    EXPECT_EQ(s.cpus.at(0).aux.partial, 1u);
    EXPECT_EQ(s.cpus.at(0).aux.collision, 1u);
    EXPECT_EQ(s.cpus.at(1).aux.overwrite, 1u);
    EXPECT_EQ(s.cpus.at(1).aux.formatRaw, 1u);
    ASSERT_EQ(s.auxtrace.size(), 2u);
    EXPECT_EQ(s.auxtrace[0].cpu, 0);
    EXPECT_EQ(s.auxtrace[0].size, 4196u);
    EXPECT_EQ(s.auxtrace[0].available, 4196u);
    auto payload = r.fileBytes(s.auxtrace[1].dataOffset, s.auxtrace[1].size);
    ASSERT_EQ(payload.size(), 64u);
    EXPECT_EQ(payload[0], 0xcd);
    EXPECT_EQ(s.cpus.at(1).auxtraceBytes, 64u);
    ASSERT_EQ(s.auxtraceErrors.size(), 1u);
    EXPECT_EQ(s.auxtraceErrors[0].message, "overflow packet");
    EXPECT_EQ(s.auxtraceErrors[0].time, 12345u);
    EXPECT_EQ(s.auxtraceErrors[0].cpu, 1);
    EXPECT_EQ(s.cpus.at(1).recordsByType.at(kRecordAuxtraceError), 1u);
    EXPECT_EQ(r.features().hostname, "testhost");
    ASSERT_TRUE(r.features().nrCpus);
    EXPECT_EQ(r.features().nrCpus->available, 4u);
    EXPECT_EQ(r.features().nrCpus->online, 2u);

    // The walk gives the same records, the AUXTRACE payload beside its record.
    size_t n = 0, payloadBytes = 0;
    ASSERT_TRUE(r.forEachRecord([&](const PerfRecord& rec) {
        ++n;
        payloadBytes += rec.payload.size();
        return true;
    }));
    EXPECT_EQ(n, 13u);
    EXPECT_EQ(payloadBytes, 4196u + 64u);
}

TEST(ReaderSynthetic, AuxtraceErrorOfOldPerfHasNoTime) {
    // fmt 0 (perf before 4.20): the message follows ip directly.
    Bytes body;
    body.put(AuxtraceErrorRecordHead{1, 2, 3, 10, 11, 0, 0x400000});
    std::vector<uint8_t> msg(64, 0);
    std::memcpy(msg.data(), "Lost trace data", 15);
    body.raw(msg);
    Rec rec(kRecordAuxtraceError);
    rec.raw(body.b);
    auto r = open(fileMode({{attr(kSt), {1}}}, rec.done()));
    ASSERT_EQ(r.summary().auxtraceErrors.size(), 1u);
    const auto& e = r.summary().auxtraceErrors[0];
    EXPECT_EQ(e.message, "Lost trace data");
    EXPECT_EQ(e.time, 0u);
    EXPECT_EQ(e.cpu, 3);
    EXPECT_EQ(e.code, 2u);
    EXPECT_EQ(e.ip, 0x400000u);
}

TEST(ReaderSynthetic, PipeModeWithPayloadsFeaturesAndNames) {
    Bytes ab;
    ab.put(attr(kSt)).u64(10).u64(11);
    Rec attrRec(kRecordHeaderAttr);
    attrRec.raw(ab.b);
    Rec feature(kRecordHeaderFeature);
    feature.u64(kFeatArch);
    feature.str("x86_64");
    // TRACING_DATA: the header (padded to 16), then `size` bytes not counted in it.
    Rec tracing(kRecordHeaderTracingData);
    tracing.u32(24);
    std::vector<uint8_t> tracingPayload(24, 0x55);
    Rec update(kRecordEventUpdate);
    update.u64(2).u64(11);
    const char name[16] = "cpu-clock";
    update.put(name);
    Rec buildId(kRecordHeaderBuildId, PERF_RECORD_MISC_USER);
    buildId.u32(-1u);
    std::vector<uint8_t> bid(24, 0);
    for (int i = 0; i < 20; ++i)
        bid[i] = uint8_t(i);
    buildId.raw(bid);
    const char file[16] = "/usr/bin/true";
    buildId.put(file);

    std::vector<uint8_t> stream = {'P', 'E', 'R', 'F', 'I', 'L', 'E', '2', 16, 0, 0, 0, 0, 0, 0, 0};
    stream = cat({stream, attrRec.done(), feature.done(), tracing.done(), tracingPayload, update.done(),
                  buildId.done(), sample(10, 0), sample(11, 1), auxtrace(1, std::vector<uint8_t>(40, 1)),
                  Rec(kRecordFinishedRound).done()});
    auto r = open(stream, "pipe.data");
    EXPECT_EQ(r.mode(), PerfDataMode::Pipe);
    EXPECT_FALSE(r.hasErrors()) << issuesText(r);
    ASSERT_EQ(r.attrs().size(), 1u);
    EXPECT_EQ(r.attrs()[0].ids, (std::vector<uint64_t>{10, 11}));
    EXPECT_EQ(r.attrs()[0].name, "cpu-clock");
    EXPECT_EQ(r.features().arch, "x86_64");
    ASSERT_TRUE(r.features().buildIds);
    ASSERT_EQ(r.features().buildIds->size(), 1u);
    EXPECT_EQ((*r.features().buildIds)[0].filename, "/usr/bin/true");
    EXPECT_EQ((*r.features().buildIds)[0].hex().substr(0, 6), "000102");
    const auto& s = r.summary();
    EXPECT_EQ(s.records, 9u);
    EXPECT_EQ(s.recordsByType.at(PERF_RECORD_SAMPLE), 2u);
    EXPECT_EQ(s.cpus.at(1).recordsByType.at(PERF_RECORD_SAMPLE), 1u);
    EXPECT_EQ(s.recordsByType.at(kRecordHeaderTracingData), 1u);
    EXPECT_EQ(s.dataEnd, r.fileSize());
    size_t tracingSeen = 0;
    ASSERT_TRUE(r.forEachRecord([&](const PerfRecord& rec) {
        if (rec.header.type == kRecordHeaderTracingData) tracingSeen = rec.payload.size();
        return true;
    }));
    EXPECT_EQ(tracingSeen, 24u);
}

TEST(ReaderSynthetic, CompressedRecordsShareOneStreamAndRecordsStraddleThem) {
    // Three kernel records; the second is split across two COMPRESSED records.
    auto a = sample(1, 0, 0xa), b = sample(1, 1, 0xb), c = sample(1, 0, 0xc);
    std::vector<uint8_t> plain = cat({a, b, c});
    const size_t cut = a.size() + 20;
    std::vector<std::vector<uint8_t>> frames;
    zstdStream({{plain.begin(), plain.begin() + cut}, {plain.begin() + cut, plain.end()}}, frames);
    Rec c1(kRecordCompressed), c2(kRecordCompressed2);
    c1.raw(frames[0]);
    c2.u64(frames[1].size()).raw(frames[1]);
    auto data = cat({c1.done(), c2.done(), sample(1, 1, 0xd)});
    Bytes comp;
    comp.put(CompressedFeature{1, 1, 3, 10, 4096});
    auto r = open(fileMode({{attr(kSt), {1}}}, data, {{kFeatCompressed, comp.b}}));
    EXPECT_FALSE(r.hasErrors()) << issuesText(r);
    EXPECT_TRUE(r.issues().empty()) << issuesText(r);
    const auto& s = r.summary();
    EXPECT_EQ(s.recordsByType.at(PERF_RECORD_SAMPLE), 4u);
    EXPECT_EQ(s.recordsByType.at(kRecordCompressed), 1u);
    EXPECT_EQ(s.recordsByType.at(kRecordCompressed2), 1u);
    EXPECT_EQ(s.decompressedBytes, plain.size());
    ASSERT_TRUE(r.features().compressed);
    EXPECT_EQ(r.features().compressed->level, 3u);
    std::vector<uint64_t> ips, offsets;
    ASSERT_TRUE(r.forEachRecord([&](const PerfRecord& rec) {
        if (rec.header.type == PERF_RECORD_SAMPLE)
            ips.push_back(rec.parsed.ip), offsets.push_back(rec.fileOffset);
        return true;
    }));
    EXPECT_EQ(ips, (std::vector<uint64_t>{0xa, 0xb, 0xc, 0xd}));
    // a lies in the first COMPRESSED record; b completes in the second, with c.
    const uint64_t first = r.dataOffset(), second = first + c1.done().size();
    EXPECT_EQ(offsets[0], first);
    EXPECT_EQ(offsets[1], second);
    EXPECT_EQ(offsets[2], second);
}

TEST(ReaderSynthetic, DamagedCompressedStreamIsReportedAndTheRestRead) {
    Rec c1(kRecordCompressed);
    c1.raw(std::vector<uint8_t>(40, 0x77));  // not zstd
    auto data = cat({sample(1, 0), c1.done(), sample(1, 1)});
    auto r = open(fileMode({{attr(kSt), {1}}}, data));
    EXPECT_TRUE(hasIssue(r, "does not decompress: zstd", true)) << issuesText(r);
    EXPECT_EQ(r.summary().recordsByType.at(PERF_RECORD_SAMPLE), 2u);
}

TEST(ReaderSynthetic, UnknownRecordTypesAreCountedAndSkipped) {
    auto data =
        cat({sample(1, 0), Rec(99).u64(1).done(), Rec(99).done(), Rec(40000).u64(3).done(), sample(1, 1)});
    auto r = open(fileMode({{attr(kSt), {1}}}, data));
    EXPECT_FALSE(r.hasErrors()) << issuesText(r);
    EXPECT_EQ(r.summary().recordsByType.at(99), 2u);
    EXPECT_EQ(r.summary().recordsByType.at(40000), 1u);
    EXPECT_EQ(r.summary().unknownRecords, 3u);
    EXPECT_EQ(r.summary().recordsByType.at(PERF_RECORD_SAMPLE), 2u);
    EXPECT_TRUE(hasIssue(r, "2 record(s) of unknown type 99", false)) << issuesText(r);
    EXPECT_EQ(perfRecordTypeName(40000), "simpleperf 40000");
}

TEST(ReaderSynthetic, ZeroSizeRecordStopsWithOffsetAndKeepsWhatCameBefore) {
    auto good = cat({sample(1, 0), sample(1, 1)});
    std::vector<uint8_t> bad(16, 0);  // type 0, size 0
    auto bytes = fileMode({{attr(kSt), {1}}}, cat({good, bad, sample(1, 0)}));
    auto r = open(bytes, "zero.data");
    ASSERT_TRUE(r.hasErrors());
    const uint64_t at = r.dataOffset() + good.size();
    EXPECT_TRUE(hasIssue(r, "zero.data: offset " + std::to_string(at), true)) << issuesText(r);
    EXPECT_TRUE(hasIssue(r, "less than its 8-byte header", true)) << issuesText(r);
    EXPECT_EQ(r.summary().records, 2u);
    EXPECT_EQ(r.summary().dataEnd, at);
    size_t n = 0;
    auto walk = r.forEachRecord([&](const PerfRecord&) { return ++n, true; });
    EXPECT_FALSE(walk.ok());
    EXPECT_NE(walk.error().message.find("offset " + std::to_string(at)), std::string::npos);
    EXPECT_EQ(n, 2u);
}

TEST(ReaderSynthetic, AuxtracePayloadPastTheEnd) {
    auto data = cat({sample(1, 0), auxtrace(0, std::vector<uint8_t>(100, 1), 5000)});
    auto r = open(fileMode({{attr(kSt), {1}}}, data));
    ASSERT_TRUE(r.hasErrors());
    EXPECT_TRUE(hasIssue(r, "AUXTRACE payload of 5000 bytes runs past the end", true)) << issuesText(r);
    ASSERT_EQ(r.summary().auxtrace.size(), 1u);
    EXPECT_EQ(r.summary().auxtrace[0].size, 5000u);
    EXPECT_EQ(r.summary().auxtrace[0].available, 100u);
}

TEST(ReaderSynthetic, SectionsPastTheEnd) {
    auto bytes = fileMode({{attr(kSt), {1}}}, cat({sample(1, 0), sample(1, 1)}));
    FileHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    {
        auto b = bytes;
        FileHeader x = h;
        x.attrs.size = 1u << 30;
        std::memcpy(b.data(), &x, sizeof x);
        auto r = open(b, "attrs.data");
        EXPECT_TRUE(hasIssue(r, "attrs section of 1073741824 bytes runs past the end of the file", true))
            << issuesText(r);
        EXPECT_EQ(r.summary().records, 2u);  // the data is still read
    }
    {
        auto b = bytes;
        FileHeader x = h;
        x.data.size += 4096;
        std::memcpy(b.data(), &x, sizeof x);
        auto r = open(b, "data.data");
        EXPECT_TRUE(hasIssue(r, "runs past the end of the file", true)) << issuesText(r);
        EXPECT_TRUE(hasIssue(r, "the file is truncated", true)) << issuesText(r);
        EXPECT_EQ(r.summary().records, 2u);
    }
    {
        auto b = bytes;
        FileHeader x = h;
        x.data.offset = 1ull << 40;
        std::memcpy(b.data(), &x, sizeof x);
        auto r = open(b, "far.data");
        EXPECT_TRUE(hasIssue(r, "lies past the end of the file", true)) << issuesText(r);
        EXPECT_EQ(r.summary().records, 0u);
    }
    {
        // A feature section pointing past the end; the other features still decode.
        Bytes host, arch;
        host.str("h");
        arch.str("a");
        auto f = fileMode({{attr(kSt), {1}}}, sample(1, 0), {{kFeatHostname, host.b}, {kFeatArch, arch.b}});
        FileHeader y;
        std::memcpy(&y, f.data(), sizeof y);
        FileSection s{1ull << 33, 8};
        std::memcpy(f.data() + y.data.offset + y.data.size, &s, sizeof s);
        auto r = open(f, "feat.data");
        EXPECT_TRUE(
            hasIssue(r, "feature HOSTNAME: its section (8 bytes at 0x200000000) runs past the end", true))
            << issuesText(r);
        EXPECT_FALSE(r.features().hostname);
        EXPECT_EQ(r.features().arch, "a");
    }
}

TEST(ReaderSynthetic, DataSizeZeroIsRecoveredByScanning) {
    auto data = cat({sample(1, 0), sample(1, 1), auxtrace(1, std::vector<uint8_t>(64, 2)), sample(1, 0)});
    auto bytes = fileMode({{attr(kSt), {1}}}, data);
    FileHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    h.data.size = 0;
    h.features[0] = (1u << kFeatHostname) | (1u << kFeatBuildId);  // announced, never written
    std::memcpy(bytes.data(), &h, sizeof h);
    // The last record was being written when the capture was killed.
    auto partial = sample(1, 1);
    bytes.insert(bytes.end(), partial.begin(), partial.begin() + 20);
    auto r = open(bytes, "killed.data");
    EXPECT_TRUE(r.dataSizeRecovered());
    EXPECT_EQ(r.dataSize(), data.size());
    EXPECT_TRUE(hasIssue(
        r, "data size recovered by scanning: " + std::to_string(data.size()) + " bytes in 4 records", false))
        << issuesText(r);
    EXPECT_TRUE(hasIssue(r, "20 bytes after the last complete record", true)) << issuesText(r);
    EXPECT_TRUE(hasIssue(r, "features not read", false)) << issuesText(r);
    EXPECT_EQ(r.summary().records, 4u);
    EXPECT_EQ(r.summary().auxtrace.size(), 1u);
}

TEST(ReaderSynthetic, EmptyDataWithFeaturesIsNotMistakenForAKilledCapture) {
    Bytes host;
    host.str("h");
    auto r = open(fileMode({{attr(kSt), {1}}}, {}, {{kFeatHostname, host.b}}));
    EXPECT_FALSE(r.dataSizeRecovered());
    EXPECT_TRUE(r.issues().empty()) << issuesText(r);
    EXPECT_EQ(r.features().hostname, "h");
}

TEST(ReaderSynthetic, BadHeadersAreErrorsNamingFileOffsetAndCause) {
    auto expectError = [](std::vector<uint8_t> b, const std::string& text) {
        auto r = PerfDataReader::fromBytes(std::move(b), "bad.data");
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("bad.data: offset "), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find(text), std::string::npos) << r.error().message;
    };
    auto good = fileMode({{attr(kSt), {1}}}, sample(1, 0));
    expectError({}, "the file is empty");
    expectError({'P', 'E', 'R'}, "too short for the perf.data magic");
    auto wrong = good;
    wrong[0] = 'X';
    expectError(wrong, "wrong magic \"XERFILE2\"");
    auto swapped = good;
    std::reverse(swapped.begin(), swapped.begin() + 8);
    expectError(swapped, "big-endian");
    auto v1 = good;
    std::memcpy(v1.data(), "PERFFILE", 8);
    expectError(v1, "version 1");
    auto size = good;
    size[8] = 50;
    expectError(size, "unexpected header size 50");
    expectError({good.begin(), good.begin() + 12}, "the header is cut short");
    expectError({good.begin(), good.begin() + 60}, "the header is cut short");
    EXPECT_FALSE(PerfDataReader::open("/nonexistent/perf.data").ok());
    auto dir = PerfDataReader::open("/");
    ASSERT_FALSE(dir.ok());
    EXPECT_NE(dir.error().message.find("directory"), std::string::npos);
}

TEST(ReaderSynthetic, EveryTruncationIsHandled) {
    // Cut the file at every byte: never a crash; the records before the cut survive.
    auto full = fileMode({{attr(kSt), {1, 2}}}, cat({sample(1, 0), auxRecord(0, 1, 0, 32, 0),
                                                     auxtrace(0, std::vector<uint8_t>(32, 3)), sample(2, 1),
                                                     Rec(kRecordFinishedRound).done()}));
    FileHeader h;
    std::memcpy(&h, full.data(), sizeof h);
    for (size_t cut = 0; cut < full.size(); ++cut) {
        auto r = PerfDataReader::fromBytes({full.begin(), full.begin() + cut}, "cut.data");
        if (!r.ok()) {
            EXPECT_LT(cut, sizeof h) << r.error().message;
            continue;
        }
        if (cut < h.data.offset + h.data.size) {
            EXPECT_TRUE(r->hasErrors()) << "cut at " << cut;
        }
        size_t n = 0;
        (void)r->forEachRecord([&](const PerfRecord&) { return ++n, true; });
        EXPECT_EQ(n, r->summary().records);
    }
}
