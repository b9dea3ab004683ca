// SPDX-License-Identifier: GPL-3.0-or-later
// CoreSight decode against OpenCSD's own lister: every snapshot of
// coresight/opencsd-snapshots, every trace buffer, every trace ID: the executed
// instruction ranges of `auxscope decode SNAPSHOT --format ranges` (the library
// function behind it) equal the OCSD_GEN_TRC_ELEM_INSTR_RANGE elements of
// `trc_pkt_lister -ss_dir DIR -src_name BUFFER -decode_only` (Debian
// libopencsd-bin), run here. The packet listing equals trc_pkt_lister's too.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "TestData.h"
#include "etm/EtmDecoder.h"
#include "etm/EtmSnapshot.h"
#include "etm/EtmSnapshotDecode.h"

namespace fs = std::filesystem;
using namespace auxscope::etm;

namespace {

const char* kLister = "/usr/bin/trc_pkt_lister";

std::string snapshotsDir() {
    return auxscope::test_support::testDataPath("coresight/opencsd-snapshots");
}

std::string run(const std::string& cmd) {
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        out.append(buf, n);
    pclose(p);
    return out;
}

struct Range {
    unsigned id;
    unsigned long long start, last;
    unsigned count;
    std::string isa;
    bool operator==(const Range&) const = default;
};
std::ostream& operator<<(std::ostream& o, const Range& r) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "ID 0x%x 0x%llx..0x%llx %u %s", r.id, r.start, r.last, r.count,
                  r.isa.c_str());
    return o << buf;
}

// trc_pkt_lister's ranges by trace ID.
std::map<unsigned, std::vector<Range>> listerRanges(const std::string& dir, const std::string& buffer) {
    // -logstdout alone still writes trc_pkt_lister.ppl (3.9 GB for bugfix-exact-match): its log file is
    // /dev/null.
    const std::string out = run("cd /tmp && " + std::string(kLister) + " -ss_dir '" + dir + "' -src_name '" +
                                buffer + "' -decode_only -logstdout -logfilename /dev/null 2>&1");
    std::map<unsigned, std::vector<Range>> byId;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        const size_t at = line.find("OCSD_GEN_TRC_ELEM_INSTR_RANGE(exec range=");
        if (at == std::string::npos) continue;
        unsigned id = 0, count = 0, size = 0;
        unsigned long long start = 0, end = 0;
        char isa[16] = {};
        if (std::sscanf(line.c_str(), "Idx:%*u; ID:%x;", &id) != 1) continue;
        if (std::sscanf(line.c_str() + at,
                        "OCSD_GEN_TRC_ELEM_INSTR_RANGE(exec range=0x%llx:[0x%llx] num_i(%u) last_sz(%u) "
                        "(ISA=%15[^)])",
                        &start, &end, &count, &size, isa) != 5)
            continue;
        byId[id].push_back(Range{id, start, end - size, count, isa});
    }
    return byId;
}

// Ours, from the `ranges` text.
std::map<unsigned, std::vector<Range>> parseRanges(const std::string& text) {
    std::map<unsigned, std::vector<Range>> byId;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        Range r{};
        char isa[16] = {};
        if (std::sscanf(line.c_str(), "0x%x 0x%llx 0x%llx %u %15s", &r.id, &r.start, &r.last, &r.count,
                        isa) != 5) {
            ADD_FAILURE() << "unparsable ranges line: " << line;
            continue;
        }
        r.isa = isa;
        byId[r.id].push_back(r);
    }
    return byId;
}

class EtmSnapshotGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(EtmSnapshotGolden, RangesEqualTrcPktLister) {
    AUXSCOPE_NEED_TEST_DATA();
    if (!fs::exists(kLister)) GTEST_SKIP() << kLister << " missing (Debian libopencsd-bin)";
    const std::string dir = snapshotsDir() + "/" + GetParam();
    auto snap = EtmSnapshot::read(dir);
    ASSERT_TRUE(snap.ok()) << snap.error().message;

    std::ostringstream out;
    auto summary = decodeSnapshot(dir, EtmOutputFormat::Ranges, out);
    ASSERT_TRUE(summary.ok()) << summary.error().message;
    for (const auto& e : summary->errors)
        ADD_FAILURE() << e;
    // Ranges of every buffer; trace IDs are unique across a snapshot's buffers here.
    const auto ours = parseRanges(out.str());

    size_t compared = 0;
    std::map<unsigned, std::vector<Range>> theirs;
    for (const auto& b : snap->buffers())
        for (auto& [id, v] : listerRanges(dir, b.name))
            theirs[id].insert(theirs[id].end(), v.begin(), v.end());
    ASSERT_FALSE(theirs.empty()) << "trc_pkt_lister printed no instruction range for " << dir;
    for (const auto& [id, want] : theirs) {
        auto it = ours.find(id);
        ASSERT_NE(it, ours.end()) << "no ranges for trace ID " << std::hex << id;
        const auto& got = it->second;
        EXPECT_EQ(got.size(), want.size()) << "trace ID 0x" << std::hex << id;
        const size_t n = std::min(got.size(), want.size());
        for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(got[i], want[i]) << "range #" << i << " of trace ID 0x" << std::hex << id;
        compared += n;
        std::printf("%s: trace ID 0x%x: %zu ranges equal trc_pkt_lister's\n", GetParam().c_str(), id, n);
    }
    for (const auto& [id, got] : ours)
        EXPECT_TRUE(theirs.count(id)) << "trace ID 0x" << std::hex << id << ": " << got.size()
                                      << " ranges trc_pkt_lister does not have";
    std::printf("%s: %zu instruction ranges compared with trc_pkt_lister\n", GetParam().c_str(), compared);
    RecordProperty("ranges_compared", static_cast<int>(compared));
}

INSTANTIATE_TEST_SUITE_P(Snapshots, EtmSnapshotGolden,
                         ::testing::Values("juno_r1_1", "TC2", "a57_single_step", "juno-uname-002",
                                           "bugfix-exact-match", "test-file-mem-offsets"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return n;
                         });

// The packet listing: trc_pkt_lister without -decode lists the packets of
// each trace ID through the same printers; every "Idx:" line must match.
std::vector<std::string> packetLines(const std::string& text) {
    std::vector<std::string> v;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("Idx:", 0) == 0) v.push_back(line);
    return v;
}

TEST(EtmSnapshotPackets, EqualTrcPktLister) {
    AUXSCOPE_NEED_TEST_DATA();
    if (!fs::exists(kLister)) GTEST_SKIP() << kLister << " missing (Debian libopencsd-bin)";
    for (const char* name : {"juno_r1_1", "TC2", "juno-uname-002"}) {
        const std::string dir = snapshotsDir() + "/" + name;
        std::ostringstream out;
        auto summary = decodeSnapshot(dir, EtmOutputFormat::Packets, out);
        ASSERT_TRUE(summary.ok()) << summary.error().message;
        auto snap = EtmSnapshot::read(dir);
        ASSERT_TRUE(snap.ok());
        std::vector<std::string> want;
        for (const auto& b : snap->buffers()) {
            auto v = packetLines(run("cd /tmp && " + std::string(kLister) + " -ss_dir '" + dir +
                                     "' -src_name '" + b.name + "' -logstdout -logfilename /dev/null 2>&1"));
            want.insert(want.end(), v.begin(), v.end());
        }
        const auto got = packetLines(out.str());
        ASSERT_EQ(got.size(), want.size()) << name;
        for (size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(got[i], want[i]) << name << " packet line " << i;
        std::printf("%s: %zu packets equal trc_pkt_lister's\n", name, got.size());
    }
}

// A snapshot whose memory dump is missing decodes: every address is not
// accessible, nothing crashes, the note names the dump.
TEST(EtmSnapshotMissingDump, DecodesAsNotAccessible) {
    AUXSCOPE_NEED_TEST_DATA();
    const fs::path src = snapshotsDir() + "/juno_r1_1";
    const fs::path tmp = fs::temp_directory_path() / ("auxscope-etm-nodump-" + std::to_string(getpid()));
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    for (const auto& e : fs::directory_iterator(src))
        if (e.is_regular_file() && e.path().filename() != "kernel_dump.bin")
            fs::create_symlink(e.path(), tmp / e.path().filename());
    std::ostringstream out, err;
    const int rc = decodeSnapshot(tmp.string(), EtmOutputFormat::Ranges, out, err);
    fs::remove_all(tmp);
    EXPECT_EQ(rc, 0) << err.str();
    EXPECT_NE(err.str().find("kernel_dump.bin"), std::string::npos) << err.str();
    EXPECT_NE(err.str().find("trace ID 0x10: 0 ranges"), std::string::npos) << err.str();
    EXPECT_NE(err.str().find("not accessible"), std::string::npos) << err.str();
    EXPECT_EQ(out.str().find("\n0x10 "), std::string::npos) << "ranges decoded without memory";
}

// The decoder is neutral of how the bytes arrive: one byte at a time, or
// everything at once, the same elements; reset() between two copies of a buffer
// decodes each copy the same.
struct Collect : EtmElementSink {
    std::vector<EtmElement> v;
    void element(const EtmElement& e) override { v.push_back(e); }
};

bool sameElement(const EtmElement& a, const EtmElement& b) {
    return a.kind == b.kind && a.traceId == b.traceId && a.start == b.start && a.end == b.end &&
           a.instructions == b.instructions && a.isa == b.isa && a.index == b.index;
}

TEST(EtmDecoderFeed, ChunkingAndResetDoNotChangeTheElements) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string dir = snapshotsDir() + "/juno_r1_1";
    auto snap = EtmSnapshot::read(dir);
    ASSERT_TRUE(snap.ok()) << snap.error().message;
    auto sources = snap->sources("ETB_0");
    ASSERT_TRUE(sources.ok()) << sources.error().message;
    std::vector<EtmSourceConfig> configs;
    for (const auto& s : *sources)
        if (s.config) configs.push_back(*s.config);
    ASSERT_EQ(configs.size(), 6u);
    EtmImageMemory image;
    for (const auto& d : snap->dumps("ETB_0"))
        ASSERT_TRUE(image.addFile(d.address, d.path, d.offset, d.length, d.space).ok());
    std::ifstream in(snap->buffer("ETB_0")->path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(bytes.size(), 65536u);

    auto decode = [&](size_t chunk, uint64_t base, bool twice) {
        Collect c;
        EtmMemoryCache cache(image);
        auto d = EtmDecoder::create(configs, {}, &cache, &c);
        EXPECT_TRUE(d.ok());
        for (int copy = 0; copy < (twice ? 2 : 1); ++copy) {
            const uint64_t start = base + copy * (1ull << 20);
            if (copy) {
                EXPECT_TRUE((*d)->reset(start).ok());
            }
            for (size_t off = 0; off < bytes.size(); off += chunk) {
                const size_t n = std::min(chunk, bytes.size() - off);
                auto r = (*d)->feed(start + off, std::span<const uint8_t>(bytes.data() + off, n));
                EXPECT_TRUE(r.ok()) << r.error().message;
            }
            EXPECT_TRUE((*d)->finish().ok());
        }
        // The file layer sees a read per page, and per address it has nothing at
        // (juno_r1_1 runs through much code outside its one kernel dump), not one
        // per instruction.
        uint64_t instructions = 0;
        for (const auto& e : c.v)
            instructions += e.instructions;
        EXPECT_LT(cache.stats().misses, instructions / 4)
            << cache.stats().hits << " hits, " << cache.stats().notMapped << " not mapped";
        return c.v;
    };
    const auto whole = decode(bytes.size(), 0, false);
    const auto bytewise = decode(1, 0, false);
    ASSERT_GT(whole.size(), 1000u);
    ASSERT_EQ(whole.size(), bytewise.size());
    for (size_t i = 0; i < whole.size(); ++i)
        ASSERT_TRUE(sameElement(whole[i], bytewise[i])) << "element " << i;
    // Two copies with a reset in between, the second at another offset.
    const auto twice = decode(4096, 0x1000, true);
    size_t ranges1 = 0, ranges2 = 0;
    for (const auto& e : twice)
        if (e.kind == EtmElementKind::InstrRange) (e.index < 0x1000 + (1u << 20) ? ranges1 : ranges2)++;
    EXPECT_EQ(ranges1, 6733u);
    EXPECT_EQ(ranges2, 6733u);
    // Offsets are the caller's.
    EXPECT_EQ(twice.front().index, whole.front().index + 0x1000);

    // A feed that skips bytes is refused, naming both offsets.
    Collect c;
    auto d = EtmDecoder::create(configs, {}, &image, &c);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE((*d)->feed(0, std::span<const uint8_t>(bytes.data(), 16)).ok());
    auto gap = (*d)->feed(64, std::span<const uint8_t>(bytes.data() + 64, 16));
    ASSERT_FALSE(gap.ok());
    EXPECT_NE(gap.error().message.find("0x40"), std::string::npos) << gap.error().message;
    EXPECT_NE(gap.error().message.find("0x10"), std::string::npos) << gap.error().message;
}

}  // namespace
