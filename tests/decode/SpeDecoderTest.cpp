// SPDX-License-Identifier: GPL-3.0-or-later
// Arm SPE: packets from hand-built bytes, perf 6.1's packet text, record
// assembly, gaps with reasons, cut buffers, AUXTRACE_INFO v1/v2, and a whole
// file's records (threads from CONTEXT packets and from the switch sideband).
// Independent references: quipper's arm_spe_decoder_test.cc byte strings and
// expected decodes (google/perf_data_converter), re-encoded below; Arm's
// spe-parser tests (ARM-software/spe-parser, test_spe_decoder.py) hold no byte
// strings of their own: they decode downloaded perf.data files and compare with
// `perf report -D`, which is what PacketListingEqualsPerfReportD and
// tests/decode/spe_synth_check.sh do here with perf 6.1 as the oracle.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "SpeTestFile.h"
#include "WriterTestSupport.h"
#include "auxtrace/SpeAuxTrace.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "spe/SpeDecoder.h"
#include "spe/SpePacket.h"
#include "spe/SpeRecordCsv.h"

namespace auxscope::spe {
namespace {

using spetest::SpeBytes;

// One packet: its length, kind, index, payload and perf's text.
struct One {
    int len;
    PacketKind kind;
    uint8_t index;
    uint64_t payload;
    std::string text;
};

One decodeOne(const std::vector<uint8_t>& b) {
    SpePacket pk;
    const int len = speNextPacket(b.data(), b.size(), pk);
    return {len, pk.kind, pk.index, pk.payload, len > 0 ? speDescribePacket(pk) : std::string()};
}

TEST(SpePacket, EveryKindFromHandBuiltBytes) {
    One p = decodeOne(SpeBytes().pad().bytes);
    EXPECT_EQ(p.len, 1);
    EXPECT_EQ(p.text, "PAD");
    p = decodeOne(SpeBytes().end().bytes);
    EXPECT_EQ(p.kind, PacketKind::End);
    EXPECT_EQ(p.text, "END");
    p = decodeOne(SpeBytes().ts(44731163950).bytes);
    EXPECT_EQ(p.len, 9);
    EXPECT_EQ(p.kind, PacketKind::Timestamp);
    EXPECT_EQ(p.text, "TS 44731163950");
    p = decodeOne(SpeBytes().events(0x16, 2).bytes);
    EXPECT_EQ(p.len, 3);
    EXPECT_EQ(p.text, "EV RETIRED L1D-ACCESS TLB-ACCESS");
    p = decodeOne(SpeBytes().events(0x7ff, 4).bytes);
    EXPECT_EQ(p.len, 5);
    EXPECT_EQ(p.text,
              "EV EXCEPTION-GEN RETIRED L1D-ACCESS L1D-REFILL TLB-ACCESS TLB-REFILL NOT-TAKEN MISPRED "
              "LLC-ACCESS LLC-REFILL REMOTE-ACCESS");
    p = decodeOne(SpeBytes().events(0x2, 1).bytes);
    EXPECT_EQ(p.len, 2);
    EXPECT_EQ(p.text, "EV RETIRED");
    p = decodeOne(SpeBytes().source(0xe, 2).bytes);
    EXPECT_EQ(p.kind, PacketKind::DataSource);
    EXPECT_EQ(p.text, "DATA-SOURCE 14");
    p = decodeOne(SpeBytes().source(0, 1).bytes);
    EXPECT_EQ(p.len, 2);
    EXPECT_EQ(p.text, "DATA-SOURCE 0");
    p = decodeOne(SpeBytes().context(0x5f80, 1).bytes);
    EXPECT_EQ(p.len, 5);
    EXPECT_EQ(p.index, 1);
    EXPECT_EQ(p.text, "CONTEXT 0x5f80 el2");
    p = decodeOne(SpeBytes().context(1234, 0).bytes);
    EXPECT_EQ(p.text, "CONTEXT 0x4d2 el1");
    // OP-TYPE: the three classes and their subclasses.
    EXPECT_EQ(decodeOne(SpeBytes().op(1, 0x00).bytes).text, "LD GP-REG");
    EXPECT_EQ(decodeOne(SpeBytes().op(1, 0x01).bytes).text, "ST GP-REG");
    EXPECT_EQ(decodeOne(SpeBytes().op(1, 0x04).bytes).text, "LD SIMD-FP");
    EXPECT_EQ(decodeOne(SpeBytes().op(1, 0x1f).bytes).text, "ST AT EXCL AR");
    EXPECT_EQ(decodeOne(SpeBytes().op(1, 0x10).bytes).text, "LD UNSPEC-REG");
    EXPECT_EQ(decodeOne(SpeBytes().op(1, 0x30).bytes).text, "LD NV-SYSREG");
    EXPECT_EQ(decodeOne(SpeBytes().op(1, 0x08 | 0x20 | 0x04 | 0x80).bytes).text, "LD EVLEN 128 PRED SG");
    EXPECT_EQ(decodeOne(SpeBytes().op(0, 0x00).bytes).text, "OTHER INSN-OTHER");
    EXPECT_EQ(decodeOne(SpeBytes().op(0, 0x01).bytes).text, "OTHER COND-SELECT");
    EXPECT_EQ(decodeOne(SpeBytes().op(0, 0x08 | 0x10 | 0x02 | 0x04).bytes).text,
              "SVE-OTHER EVLEN 64 FP PRED");
    EXPECT_EQ(decodeOne(SpeBytes().op(2, 0x00).bytes).text, "B");
    EXPECT_EQ(decodeOne(SpeBytes().op(2, 0x01).bytes).text, "B COND");
    EXPECT_EQ(decodeOne(SpeBytes().op(2, 0x02).bytes).text, "B IND");
    EXPECT_EQ(decodeOne(SpeBytes().op(3, 0x05).bytes).text, "OP-TYPE 0x5 (3)");  // reserved class: raw
    // ADDRESS: PC, branch target, data VA, data PA (NS, CH, PAT), previous branch target.
    p = decodeOne(SpeBytes().addr(0, 0xc0ffba66eda1c2d0ull).bytes);
    EXPECT_EQ(p.len, 9);
    EXPECT_EQ(p.text, "PC 0xffba66eda1c2d0 el2 ns=1");
    EXPECT_EQ(decodeOne(SpeBytes().addr(1, 0x8000000000400abcull).bytes).text, "TGT 0x400abc el0 ns=1");
    EXPECT_EQ(decodeOne(SpeBytes().addr(2, 0x2a0000ffff001000ull).bytes).text, "VA 0x2a0000ffff001000");
    EXPECT_EQ(decodeOne(SpeBytes().addr(3, 0xc500000012345000ull).bytes).text,
              "PA 0x12345000 ns=1 ch=1 pat=5");
    EXPECT_EQ(decodeOne(SpeBytes().addr(4, 0x400100ull).bytes).text, "ADDR 0x400100 (4)");  // perf 6.1: raw
    // COUNTER: total, issue, translation, and an index perf does not name.
    EXPECT_EQ(decodeOne(SpeBytes().counter(0, 12).bytes).text, "LAT 12 TOT");
    EXPECT_EQ(decodeOne(SpeBytes().counter(1, 4).bytes).text, "LAT 4 ISSUE");
    EXPECT_EQ(decodeOne(SpeBytes().counter(2, 1).bytes).text, "LAT 1 XLAT");
    EXPECT_EQ(decodeOne(SpeBytes().counter(5, 7).bytes).text, "LAT 7 ");
    // Extended (2-byte) headers: index = hh << 3 | iii.
    p = decodeOne(SpeBytes().addr(9, 0x1234).bytes);
    EXPECT_EQ(p.len, 10);
    EXPECT_EQ(p.kind, PacketKind::Address);
    EXPECT_EQ(p.index, 9);
    EXPECT_EQ(p.text, "ADDR 0x1234 (9)");
    p = decodeOne(SpeBytes().counter(10, 300).bytes);
    EXPECT_EQ(p.len, 4);
    EXPECT_EQ(p.kind, PacketKind::Counter);
    EXPECT_EQ(p.index, 10);
    EXPECT_EQ(p.text, "LAT 300 ");
    // Reserved headers, an extended header with a reserved second byte, cut packets.
    for (uint8_t h : {0x02, 0x10, 0x40, 0x44, 0x70, 0x80, 0xa0, 0xc0, 0xff})
        EXPECT_EQ(decodeOne({h, 0, 0, 0, 0, 0, 0, 0, 0, 0}).len, kSpeBadPacket) << int(h);
    EXPECT_EQ(decodeOne({0x20, 0x42, 0, 0}).len, kSpeBadPacket);
    EXPECT_EQ(decodeOne({0x20}).len, kSpeBadPacket);
    EXPECT_EQ(decodeOne({0x71, 1, 2, 3}).len, kSpeNeedMoreBytes);
    EXPECT_EQ(decodeOne({0xb0, 1}).len, kSpeNeedMoreBytes);
}

TEST(SpePacket, HeaderTableMatchesTheArmLayouts) {
    // Every first byte is exactly one of the kinds the Arm ARM lays out.
    int kinds[16] = {};
    for (unsigned b = 0; b < 256; ++b)
        ++kinds[int(speHeader(uint8_t(b)).kind)];
    EXPECT_EQ(kinds[int(PacketKind::Pad)], 1);
    EXPECT_EQ(kinds[int(PacketKind::End)], 1);
    EXPECT_EQ(kinds[int(PacketKind::Timestamp)], 1);
    EXPECT_EQ(kinds[int(PacketKind::Events)], 4);
    EXPECT_EQ(kinds[int(PacketKind::DataSource)], 4);
    EXPECT_EQ(kinds[int(PacketKind::Context)], 4);
    EXPECT_EQ(kinds[int(PacketKind::OpType)], 4);
    EXPECT_EQ(kinds[int(PacketKind::Extended)], 4);
    EXPECT_EQ(kinds[int(PacketKind::Address)], 8);
    EXPECT_EQ(kinds[int(PacketKind::Counter)], 8);
    EXPECT_EQ(kinds[int(PacketKind::Bad)], 256 - 39);
}

// The two records of quipper's arm_spe_decoder_test.cc (google/perf_data_converter,
// SampleSPEPackets), re-encoded here as bytes; its expected decodes (and the perf
// text in its comments) are the expectations.
std::vector<std::string> quipperPackets() {
    return {
        "b0 d0 c2 a1 ed 66 ba ff c0",
        "00 00 00 00 00",
        "65 80 5f 00 00",
        "49 00",
        "52 16 00",
        "99 04 00",
        "98 0c 00",
        "b2 28 6b 09 03 37 0e ff 00",
        "9a 01 00",
        "00 00 00 00 00 00 00 00 00",
        "43 00",
        "00 00",
        "71 2e 65 2f 6a 0a 00 00 00",
        // record 1
        "b0 e0 b0 ef ed 66 ba ff c0",
        "00 00 00 00 00",
        "65 0e 00 00 00",
        "4a 01",
        "52 42 00",
        "99 10 00",
        "98 11 00",
        "b1 e4 b0 ef ed 66 ba ff c0",
        "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
        "71 8d 65 2f 6a 0a 00 00 00",
    };
}

TEST(SpeRecords, QuipperSampleDecodesToItsTwoRecords) {
    SpeBytes b;
    for (const std::string& p : quipperPackets())
        b.hex(p);
    std::vector<SpeRecord> recs;
    SpeDecodeStats stats;
    decodeSpeRun(b.bytes, 3, recs, stats);
    ASSERT_EQ(recs.size(), 2u);
    EXPECT_EQ(stats.gapBytes, 0u);
    EXPECT_EQ(stats.records, 2u);
    const SpeRecord& r0 = recs[0];
    EXPECT_EQ(r0.cpu, 3);
    EXPECT_EQ(r0.events, kEvRetired | kEvL1dAccess | kEvTlbAccess);
    EXPECT_EQ(r0.opClass, OpClass::LoadStore);
    EXPECT_TRUE(r0.isLoad);
    EXPECT_FALSE(r0.isStore || r0.isAtomic || r0.isSve || r0.isBranch);
    EXPECT_EQ(r0.totalLatency, 12);
    EXPECT_EQ(r0.issueLatency, 4);
    EXPECT_EQ(r0.translationLatency, 1);
    EXPECT_TRUE(r0.hasTotalLatency && r0.hasIssueLatency && r0.hasTranslationLatency);
    EXPECT_EQ(r0.pc, 0xffffba66eda1c2d0ull);
    EXPECT_EQ(r0.pcEl, 2);
    EXPECT_TRUE(r0.pcNs);
    EXPECT_EQ(r0.dataVa, 0xffff0e3703096b28ull);
    EXPECT_EQ(r0.dataVaTag, 0);
    EXPECT_TRUE(r0.hasDataVa);
    EXPECT_FALSE(r0.hasDataPa);
    EXPECT_EQ(r0.timestamp, 44731163950ull);
    EXPECT_EQ(r0.context, 0x5f80u);
    EXPECT_EQ(r0.contextIndex, 1);  // CONTEXTIDR_EL2
    EXPECT_TRUE(r0.hasDataSource);
    EXPECT_EQ(r0.dataSource, 0);
    const SpeRecord& r1 = recs[1];
    EXPECT_EQ(r1.events, kEvRetired | kEvNotTaken);
    EXPECT_EQ(r1.opClass, OpClass::Branch);
    EXPECT_TRUE(r1.isBranch && r1.isConditional);
    EXPECT_EQ(r1.totalLatency, 17);
    EXPECT_EQ(r1.issueLatency, 16);
    EXPECT_FALSE(r1.hasTranslationLatency);
    EXPECT_EQ(r1.pc, 0xffffba66edefb0e0ull);
    EXPECT_EQ(r1.branchTarget, 0xffffba66edefb0e4ull);
    EXPECT_TRUE(r1.hasBranchTarget);
    EXPECT_EQ(r1.timestamp, 44731164045ull);
    EXPECT_EQ(r1.context, 0xeu);
    EXPECT_FALSE(r1.hasDataSource || r1.hasDataVa);
}

TEST(SpeRecords, QuipperSamplePacketTextIsPerfs) {
    // The perf text quipper's test gives beside each packet.
    const std::vector<std::string> want = {
        "PC 0xffba66eda1c2d0 el2 ns=1",
        "PAD",
        "CONTEXT 0x5f80 el2",
        "LD GP-REG",
        "EV RETIRED L1D-ACCESS TLB-ACCESS",
        "LAT 4 ISSUE",
        "LAT 12 TOT",
        "VA 0xff0e3703096b28",
        "LAT 1 XLAT",
        "PAD",
        "DATA-SOURCE 0",
        "PAD",
        "TS 44731163950",
        "PC 0xffba66edefb0e0 el2 ns=1",
        "PAD",
        "CONTEXT 0xe el2",
        "B COND",
        "EV RETIRED NOT-TAKEN",
        "LAT 16 ISSUE",
        "LAT 17 TOT",
        "TGT 0xffba66edefb0e4 el2 ns=1",
        "PAD",
        "TS 44731164045",
    };
    const std::vector<std::string> packets = quipperPackets();
    ASSERT_EQ(packets.size(), want.size());
    for (size_t i = 0; i < packets.size(); ++i) {
        const std::vector<uint8_t> b = SpeBytes().hex(packets[i]).bytes;
        SpePacket pk;
        int len = speNextPacket(b.data(), b.size(), pk);
        ASSERT_GT(len, 0) << packets[i];
        if (pk.kind != PacketKind::Pad) EXPECT_EQ(size_t(len), b.size()) << packets[i];
        EXPECT_EQ(speDescribePacket(pk), want[i]) << packets[i];
    }
}

TEST(SpeRecords, QuipperInvalidDataIsAllGaps) {
    // quipper's ReturnFalseUponInvalidData bytes: no record, every byte a counted gap.
    std::vector<SpeRecord> recs;
    SpeDecodeStats stats;
    decodeSpeRun(SpeBytes().hex("ab cd ef ff 99 88 77 66 55 44").bytes, 0, recs, stats);
    EXPECT_TRUE(recs.empty());
    EXPECT_EQ(stats.bytes, 10u);
    EXPECT_EQ(stats.gapBytes, 10u);
    // ab cd ef ff: reserved headers; 99 88 77: a COUNTER opening a record; 66 55 44: a CONTEXT cut short.
    std::map<std::string, uint64_t> gaps(stats.gaps.begin(), stats.gaps.end());
    EXPECT_EQ(gaps[kGapReservedHeader], 4u);
    EXPECT_EQ(gaps[kGapPartialRecord], 3u);
    EXPECT_EQ(gaps[kGapTruncatedPacket], 3u);
    EXPECT_EQ(stats.droppedRecords, 1u);
}

TEST(SpeRecords, BadBytesAreAGapAndDecodingResyncs) {
    SpeBytes b;
    b.addr(0, 0x400100).op(1, 0x00).addr(2, 0x7fff0010).counter(0, 30).ts(100);  // record 1
    const size_t firstEnd = b.bytes.size();
    b.addr(0, 0x400200).op(1, 0x01);  // record 2, broken by garbage below
    const size_t brokenLen = b.bytes.size() - firstEnd;
    b.raw({0x02, 0x03, 0xff, 0x80});                                          // reserved headers
    b.addr(0, 0x400300).op(2, 0x01).addr(1, 0x400400).counter(0, 5).ts(200);  // record 3
    std::vector<SpeRecord> recs;
    SpeDecodeStats stats;
    decodeSpeRun(b.bytes, 0, recs, stats);
    ASSERT_EQ(recs.size(), 2u);
    EXPECT_EQ(recs[0].pc, 0x400100u);
    EXPECT_EQ(recs[0].dataVa, 0x7fff0010u);
    EXPECT_EQ(recs[0].timestamp, 100u);
    EXPECT_EQ(recs[1].pc, 0x400300u);
    EXPECT_EQ(recs[1].branchTarget, 0x400400u);
    EXPECT_EQ(recs[1].timestamp, 200u);
    std::map<std::string, uint64_t> gaps(stats.gaps.begin(), stats.gaps.end());
    EXPECT_EQ(gaps[kGapReservedHeader], 4u);
    EXPECT_EQ(gaps[kGapPartialRecord], brokenLen);
    EXPECT_EQ(stats.gapBytes, 4u + brokenLen);
    EXPECT_EQ(stats.droppedRecords, 1u);
}

TEST(SpeRecords, ABufferCutMidRecordDropsThePartialRecord) {
    SpeBytes b;
    b.addr(0, 0x400100).op(1, 0x00).counter(0, 30).end();
    b.addr(0, 0x400200).op(0, 0x00).counter(0, 3);  // no END: the run ends here
    std::vector<SpeRecord> recs;
    SpeDecodeStats stats;
    decodeSpeRun(b.bytes, 0, recs, stats);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0].pc, 0x400100u);
    EXPECT_EQ(recs[0].timestamp, 0u);  // ended by END: no timestamp
    EXPECT_EQ(stats.droppedRecords, 1u);
    EXPECT_EQ(stats.gapBytes, 9u + 2u + 3u);
    // Cut inside a packet: that packet's bytes are a truncated-packet gap.
    b.bytes.resize(b.bytes.size() - 1);
    recs.clear();
    stats = {};
    decodeSpeRun(b.bytes, 0, recs, stats);
    std::map<std::string, uint64_t> gaps(stats.gaps.begin(), stats.gaps.end());
    EXPECT_EQ(gaps[kGapTruncatedPacket], 2u);
    EXPECT_EQ(gaps[kGapPartialRecord], 11u);
    EXPECT_EQ(recs.size(), 1u);
}

TEST(SpeRecords, FieldsOfEveryPacketKind) {
    SpeBytes b;
    b.pad(3).context(4321, 0).op(1, 0x02 | 0x04 | 0x01);  // an atomic store
    b.addr(0, 0x4000000000400100ull);                     // PC el2 ns=0: no top byte fill
    b.addr(4, 0x400080).addr(2, 0x5a00000000601000ull).addr(3, 0x4300000087654000ull);
    b.counter(0, 400).counter(1, 7).counter(2, 90).events(0x20a, 2).source(0xe, 2).ts(5000);
    std::vector<SpeRecord> recs;
    SpeDecodeStats stats;
    decodeSpeRun(b.bytes, 1, recs, stats);
    ASSERT_EQ(recs.size(), 1u);
    const SpeRecord& r = recs[0];
    EXPECT_TRUE(r.hasContext);
    EXPECT_EQ(r.context, 4321u);
    EXPECT_EQ(r.contextIndex, 0);
    EXPECT_TRUE(r.isStore && r.isAtomic);
    EXPECT_FALSE(r.isLoad);
    EXPECT_EQ(r.opPayload, 0x07);
    EXPECT_EQ(r.pc, 0x400100u);
    EXPECT_EQ(r.pcEl, 2);
    EXPECT_FALSE(r.pcNs);
    EXPECT_TRUE(r.hasPrevBranchTarget);
    EXPECT_EQ(r.prevBranchTarget, 0x400080u);
    EXPECT_EQ(r.dataVa, 0x601000u);
    EXPECT_EQ(r.dataVaTag, 0x5a);
    EXPECT_EQ(r.dataPa, 0x87654000u);
    EXPECT_FALSE(r.dataPaNs);
    EXPECT_TRUE(r.dataPaCh);
    EXPECT_EQ(r.dataPaPat, 3);
    EXPECT_EQ(r.totalLatency, 400);
    EXPECT_EQ(r.issueLatency, 7);
    EXPECT_EQ(r.translationLatency, 90);
    EXPECT_EQ(r.events, kEvRetired | kEvL1dRefill | kEvLlcMiss);
    EXPECT_EQ(r.dataSource, 0xe);
    EXPECT_EQ(r.timestamp, 5000u);
    EXPECT_EQ(stats.gapBytes, 0u);
    EXPECT_EQ(stats.packets, 3u + 12u);
}

TEST(SpeNames, DataSourcesByMidrAndEvents) {
    const uint64_t n1 = 0x410fd0c1, v2 = 0x410fd4f0, ampere = 0xc00fac30, unknown = 0x510f8000;
    EXPECT_EQ(dataSourceName(0x0, n1), "L1D");
    EXPECT_EQ(dataSourceName(0x8, n1), "L2");
    EXPECT_EQ(dataSourceName(0x9, v2), "peer core");
    EXPECT_EQ(dataSourceName(0xb, v2), "system cache");
    EXPECT_EQ(dataSourceName(0xd, n1), "remote");
    EXPECT_EQ(dataSourceName(0xe, n1), "DRAM");
    EXPECT_EQ(dataSourceName(0x3, n1), "0x3");
    EXPECT_EQ(dataSourceName(0x7, ampere), "DRAM");
    EXPECT_EQ(dataSourceName(0x8, ampere), "L1D");
    EXPECT_EQ(dataSourceName(0xe, unknown), "0xe");
    EXPECT_EQ(dataSourceName(0x0, 0), "0x0");
    EXPECT_EQ(eventNames(kEvL1dAccess | kEvL1dRefill | kEvTlbAccess), "L1D-access L1D-refill TLB-access");
    EXPECT_EQ(eventNames(kEvMispredicted | (uint64_t(1) << 40)), "mispredicted bit40");
    EXPECT_EQ(eventNames(0), "");
}

TEST(SpeInfo, Version1And2RoundTripAndErrors) {
    ArmSpeInfo v1;
    v1.pmuType = 11;
    v1.perCpuMmaps = 1;
    auto d1 = decodeArmSpeInfo(encodeArmSpeInfo(v1));
    ASSERT_TRUE(d1) << d1.error().message;
    EXPECT_EQ(*d1, v1);
    EXPECT_EQ(encodeArmSpeInfo(v1).size(), 2u);

    ArmSpeInfo v2;
    v2.version = 2;
    v2.pmuType = 11;
    v2.cpus = {{0, 0x410fd0c1, 11, 1024, 3, {}}, {3, 0x410fd4f0, 11, 512, 4, {77}}};
    const std::vector<uint64_t> words = encodeArmSpeInfo(v2);
    EXPECT_EQ(words.size(), 4u + 6u + 7u);
    EXPECT_EQ(words[4], kArmSpeCpuMagic);
    auto d2 = decodeArmSpeInfo(words);
    ASSERT_TRUE(d2) << d2.error().message;
    EXPECT_EQ(*d2, v2);
    EXPECT_EQ(d2->midrOf(3), 0x410fd4f0u);
    EXPECT_EQ(d2->midrOf(5), 0u);

    auto bad = [](std::vector<uint64_t> w) {
        auto r = decodeArmSpeInfo(w);
        return r ? std::string("ok") : r.error().message;
    };
    EXPECT_EQ(bad({1}),
              "Arm SPE AUXTRACE_INFO: word 1: block of 1 words is shorter than the 2-word version 1 block");
    std::vector<uint64_t> w = words;
    w[4 + 6] = 0x2020;
    EXPECT_EQ(bad(w),
              "Arm SPE AUXTRACE_INFO: word 10: cpu block 1 of 2: magic 0x2020, expected 0x1010101010101010");
    w = words;
    w[4 + 6 + 2] = 9;
    EXPECT_EQ(bad(w), "Arm SPE AUXTRACE_INFO: word 13: cpu block 1 of 2 (cpu 3): 9 parameters, 4 words left");
    w = words;
    w.push_back(0);
    EXPECT_EQ(bad(w), "Arm SPE AUXTRACE_INFO: word 17: 1 words left after the last of 2 cpu blocks");
    w = words;
    w[1] = 2;
    EXPECT_EQ(bad(w), "Arm SPE AUXTRACE_INFO: word 1: header size 2 words (block of 17, at least 4)");
}

std::string tempPath(const std::string& tag) {
    return (std::filesystem::temp_directory_path() /
            ("auxscope-spe-" + tag + "-" + std::to_string(::getpid()) + ".data"))
        .string();
}

// Two CPUs, three threads: records with a CONTEXT packet name their thread; the
// others get the thread the switch sideband has on their CPU at their time.
spetest::SpeTestFileSpec twoCpuSpec(int version) {
    spetest::SpeTestFileSpec spec;
    spec.infoVersion = version;
    spec.threads = {{100, 100, "main"}, {100, 101, "worker"}, {200, 200, "other"}};
    spec.switches = {{0, 1000, 100, 100}, {1, 1000, 200, 200}, {0, 5000, 100, 101}};
    SpeBytes c0a, c0b, c1;
    c0a.addr(0, 0x400100).op(1, 0).addr(2, 0x601000).counter(0, 10).source(0x8).ts(2000);
    c0a.addr(0, 0x400104).op(1, 1).addr(2, 0x601008).counter(0, 200).source(0xe).ts(6000);
    c0b.context(100).addr(0, 0x400108).op(2, 1).addr(1, 0x400100).counter(0, 2).ts(7000);
    c1.addr(0, 0x500000).op(0, 0).counter(0, 1).ts(3000);
    c1.addr(0, 0x500004).op(1, 0).addr(2, 0x7ffff000).counter(0, 5).source(0).ts(8000);
    c1.addr(0, 0x500008).op(1, 0).addr(2, 0x7ffff008);  // cut: no record end
    spec.buffers[0] = {c0a.bytes, c0b.bytes};
    spec.buffers[1] = {c1.bytes};
    return spec;
}

class SpeFile : public ::testing::TestWithParam<int> {};

TEST_P(SpeFile, RecordsByTimeWithThreadsFromContextAndSideband) {
    const std::string path = tempPath("file-v" + std::to_string(GetParam()));
    auto written = spetest::writeSpeTestFile(path, twoCpuSpec(GetParam()));
    ASSERT_TRUE(written) << written.error().message;
    auto file = PerfDataReader::open(path);
    ASSERT_TRUE(file) << file.error().message;
    auto sideband = Sideband::load(*file);
    ASSERT_TRUE(sideband) << sideband.error().message;
    auto recs = decodeSpeRecords(*file, *sideband);
    ASSERT_TRUE(recs) << recs.error().message;
    const std::vector<SpeRecord>& r = recs->records;
    ASSERT_EQ(r.size(), 5u);
    std::vector<uint64_t> times;
    for (const SpeRecord& x : r)
        times.push_back(x.time);
    EXPECT_EQ(times, (std::vector<uint64_t>{2000, 3000, 6000, 7000, 8000}));  // TIME_CONV: mult 1
    EXPECT_EQ(r[0].cpu, 0);
    EXPECT_EQ(r[0].tid, 100);  // switch sideband: main from 1000
    EXPECT_EQ(r[0].pid, 100);
    EXPECT_EQ(r[1].cpu, 1);
    EXPECT_EQ(r[1].tid, 200);
    EXPECT_EQ(r[1].pid, 200);
    EXPECT_EQ(r[2].tid, 101);  // worker from 5000
    EXPECT_EQ(r[2].pid, 100);
    EXPECT_EQ(r[3].tid, 100);  // the CONTEXT packet wins over the sideband (worker)
    EXPECT_TRUE(r[3].hasContext);
    EXPECT_EQ(r[3].pid, 100);
    EXPECT_EQ(r[4].dataVa, 0x7ffff000u);
    EXPECT_EQ(recs->stats.records, 5u);
    EXPECT_EQ(recs->stats.droppedRecords, 1u);
    // The cut record (and the PAD bytes after it: AUXTRACE payloads are padded to 8 bytes).
    ASSERT_EQ(recs->stats.gaps.size(), 1u);
    EXPECT_EQ(recs->stats.gaps[0].first, kGapPartialRecord);
    EXPECT_GE(recs->stats.gapBytes, 20u);
    EXPECT_LE(recs->stats.gapBytes, 27u);
    ASSERT_EQ(recs->buffers.size(), 3u);
    EXPECT_EQ(recs->buffers[0].records, 2u);
    EXPECT_EQ(recs->buffers[0].firstTime, 2000u);
    EXPECT_EQ(recs->buffers[0].lastTime, 6000u);
    EXPECT_EQ(recs->buffers[1].records, 1u);
    EXPECT_EQ(recs->buffers[2].records, 2u);
    if (GetParam() == 2) {
        EXPECT_EQ(recs->midrOf(0), 0x410fd0c1u);
        EXPECT_EQ(dataSourceName(r[0].dataSource, recs->midrOf(0)), "L2");
    } else {
        EXPECT_EQ(recs->midrOf(0), 0u);
    }

    // The session: kind, records, segments per buffer, no spans, the packet listing.
    auto session = AuxTraceSession::open(*file);
    ASSERT_TRUE(session) << session.error().message;
    EXPECT_EQ((*session)->kind(), AuxTraceKind::ArmSpe);
    EXPECT_STREQ(auxTraceKindName((*session)->kind()), "Arm SPE");
    EXPECT_TRUE(hasDecodableAuxTrace(*file));
    auto& spe = static_cast<SpeAuxTraceSession&>(**session);
    EXPECT_EQ(spe.records().records.size(), 5u);
    EXPECT_EQ(spe.segments().size(), 3u);
    EXPECT_TRUE(spe.decodeSpans({}, 1).threads.empty());
    std::ostringstream out, err;
    EXPECT_EQ(spe.listPackets(1, out, err), 0);
    const std::string pcLine =
        ".  00000000:  b0 00 00 50 00 00 00 00 00" + std::string(21, ' ') + " PC 0x500000 el0 ns=0\n";
    EXPECT_NE(out.str().find(pcLine), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("LAT 5 TOT"), std::string::npos);
    std::filesystem::remove(path);
}

TEST(SpeFileOrder, TimestampsOutOfOrderOnACpuAreSortedStably) {
    // A counter that goes back (corrupt, or a wrap): the CPU's records are put
    // in time order; an untimed record stays after the record before it.
    spetest::SpeTestFileSpec spec;
    SpeBytes b;
    b.addr(0, 0x1).op(0, 0).ts(3000);
    b.addr(0, 0x2).op(0, 0).end();  // no timestamp: goes with the 3000 record
    b.addr(0, 0x3).op(0, 0).ts(1000);
    b.addr(0, 0x4).op(0, 0).ts(2000);
    spec.buffers[0] = {b.bytes};
    SpeBytes c;
    c.addr(0, 0x5).op(0, 0).ts(2000);  // cpu 1 at the same time as cpu 0's: after it
    spec.buffers[1] = {c.bytes};
    const std::string path = tempPath("order");
    ASSERT_TRUE(spetest::writeSpeTestFile(path, spec));
    auto file = PerfDataReader::open(path);
    ASSERT_TRUE(file) << file.error().message;
    auto recs = decodeSpeRecords(*file, Sideband{});
    ASSERT_TRUE(recs) << recs.error().message;
    std::vector<uint64_t> pcs;
    for (const SpeRecord& r : recs->records)
        pcs.push_back(r.pc);
    EXPECT_EQ(pcs, (std::vector<uint64_t>{0x3, 0x4, 0x5, 0x1, 0x2}));
    std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(InfoVersions, SpeFile, ::testing::Values(1, 2));

TEST(SpeCsv, HeaderNamesEveryFieldAndRowsMatchIt) {
    const std::string header(speCsvHeader());
    SpeRecord r;
    r.timestamp = 7;
    r.cpu = 2;
    r.opClass = OpClass::Branch;
    r.isBranch = true;
    r.pc = 0xffffffff80001000ull;
    std::string row;
    appendSpeCsvRow(r, row);
    auto count = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
    EXPECT_EQ(count(header), count(row));
    EXPECT_EQ(count(header) + 1, 42);
    EXPECT_EQ(row.substr(0, 20), "7,0,2,-1,-1,0,0,0,2,");
    EXPECT_NE(row.find(",18446744071562072064,"), std::string::npos);
    EXPECT_EQ(row.back(), '\n');
}

}  // namespace
}  // namespace auxscope::spe

namespace auxscope::spe {
namespace {

// The packet lines (".  OFFSET: ...") of a `perf report -D` dump, per CPU in file order.
std::map<int, std::vector<std::string>> perfPacketLines(const std::string& dump) {
    std::map<int, std::vector<std::string>> out;
    std::istringstream in(dump);
    std::string line;
    int cpu = -1;
    while (std::getline(in, line)) {
        if (auto at = line.find("PERF_RECORD_AUXTRACE size:"); at != std::string::npos) {
            auto c = line.find(" cpu: ");
            cpu = c == std::string::npos ? -1 : std::stoi(line.substr(c + 6));
        } else if (line.rfind(".  ", 0) == 0 && line.size() > 12 && line[11] == ':') {
            out[cpu].push_back(line);
        }
    }
    return out;
}

// Every packet kind, PADs runs, extended headers, reserved bytes and a packet
// cut by the end of a buffer, as perf 6.1 lists them.
spetest::SpeTestFileSpec oracleSpec(int version) {
    spetest::SpeTestFileSpec spec = twoCpuSpec(version);
    SpeBytes b;
    b.pad(20).context(0x1234, 1).op(1, 0x1f).op(1, 0x04).op(1, 0x10).op(1, 0x30).op(1, 0xa8).op(0, 1).op(
        0, 0x3a);
    b.op(2, 2)
        .op(3, 9)
        .addr(0, 0xa000ffff00001000ull)
        .addr(1, 0x2000000000401000ull)
        .addr(2, 0xf1ffff0000002000ull);
    b.addr(3, 0xd600000000003000ull)
        .addr(4, 0x401000)
        .addr(9, 0x55)
        .counter(0, 65535)
        .counter(1, 1)
        .counter(2, 2);
    b.counter(6, 3).counter(12, 4).events(0xffffffff, 4).events(0x1ff, 8).events(0x3, 1).source(0x1234, 2);
    b.source(7, 1).source(0xdeadbeef, 4).raw({0x02, 0x03, 0x80, 0xff, 0x20, 0x40});
    b.ts(0x123456789a).end().pad(3).end();
    b.raw({0xb0, 1, 2, 3});  // cut by the end of the buffer
    spec.buffers[2] = {b.bytes};
    return spec;
}

TEST_P(SpeFile, PacketListingEqualsPerfReportD) {
    auto perf = writertest::perfBinary();
    if (!perf) GTEST_SKIP() << "perf is not installed (Debian linux-perf): no oracle to compare with";
    const std::string path = tempPath("oracle-v" + std::to_string(GetParam()));
    auto written = spetest::writeSpeTestFile(path, oracleSpec(GetParam()));
    ASSERT_TRUE(written) << written.error().message;
    auto r = writertest::runCommand({*perf, "report", "-D", "-i", path}, 60);
    ASSERT_TRUE(r.exitedZero()) << r.err;
    const auto want = perfPacketLines(r.out);
    ASSERT_EQ(want.size(), 3u) << r.out.substr(0, 4000);
    auto file = PerfDataReader::open(path);
    ASSERT_TRUE(file) << file.error().message;
    auto session = AuxTraceSession::open(*file);
    ASSERT_TRUE(session) << session.error().message;
    std::ostringstream out, err;
    ASSERT_EQ((*session)->listPackets(std::nullopt, out, err), 0);
    const auto got = perfPacketLines("PERF_RECORD_AUXTRACE size: cpu: 0\n" + out.str());
    // Ours has a "cpu N:" line before each CPU's buffers: regroup by it.
    std::map<int, std::vector<std::string>> ours;
    {
        std::istringstream in(out.str());
        std::string line;
        int cpu = -1;
        while (std::getline(in, line)) {
            if (line.rfind("cpu ", 0) == 0 && line.find(": AUXTRACE at ") != std::string::npos)
                cpu = std::stoi(line.substr(4));
            else if (line.rfind(".  ", 0) == 0)
                ours[cpu].push_back(line);
        }
    }
    for (const auto& [cpu, lines] : want) {
        ASSERT_TRUE(ours.count(cpu)) << "cpu " << cpu;
        const std::vector<std::string>& mine = ours[cpu];
        EXPECT_EQ(mine.size(), lines.size()) << "cpu " << cpu;
        for (size_t i = 0; i < std::min(mine.size(), lines.size()); ++i)
            EXPECT_EQ(mine[i], lines[i]) << "cpu " << cpu << " line " << i;
    }
    if (!std::getenv("AUXSCOPE_TEST_KEEP")) std::filesystem::remove(path);
}

}  // namespace
}  // namespace auxscope::spe
