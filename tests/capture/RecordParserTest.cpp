// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <cstring>

#include "RecordParser.h"

using namespace auxscope;

namespace {

constexpr uint64_t kSt = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                         PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;

struct Builder {
    std::vector<uint8_t> b;
    Builder(uint32_t type, uint16_t misc) { put(perf_event_header{type, misc, 0}); }
    template <typename T>
    Builder& put(const T& v) {
        const size_t at = b.size();
        b.resize(at + sizeof v);
        std::memcpy(b.data() + at, &v, sizeof v);
        return *this;
    }
    Builder& u32(uint32_t v) { return put(v); }
    Builder& u64(uint64_t v) { return put(v); }
    // sample_id trailer for kSt: TID, TIME, CPU, IDENTIFIER
    Builder& trailer(uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu, uint64_t id) {
        return u64(uint64_t(tid) << 32 | pid).u64(time).u64(cpu).u64(id);
    }
    std::vector<uint8_t> done() {
        uint16_t size = uint16_t(b.size());
        std::memcpy(b.data() + 6, &size, 2);
        return b;
    }
};

IdTable table() {
    IdTable ids;
    ids.add(42, EventLayout{kSt, PERF_FORMAT_ID | PERF_FORMAT_LOST, 0, 1});
    return ids;
}

}  // namespace

TEST(RecordParser, SampleWithRawData) {
    const IdTable ids = table();  // r.event points into it: it must outlive r
    Builder bld(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
    bld.u64(42).u64(0x401000).u64(uint64_t(101) << 32 | 100).u64(123456789).u64(1).u64(1);
    bld.u32(12).u32(0xAAAAAAAA).u32(0xBBBBBBBB).u32(0xCCCCCCCC);
    auto rec = bld.done();
    ParsedRecord r;
    ASSERT_FALSE(parseRecord(rec, ids, r));
    EXPECT_EQ(r.type, uint32_t(PERF_RECORD_SAMPLE));
    EXPECT_EQ(r.id, 42u);
    ASSERT_NE(r.event, nullptr);
    EXPECT_EQ(r.event->descIndex, 0);
    EXPECT_EQ(r.ip, 0x401000u);
    EXPECT_EQ(r.pid, 100);
    EXPECT_EQ(r.tid, 101);
    EXPECT_EQ(r.time, 123456789u);
    EXPECT_EQ(r.cpu, 1u);
    EXPECT_EQ(r.period, 1u);
    ASSERT_EQ(r.raw.size(), 12u);
    EXPECT_EQ(r.raw[4], 0xBB);
}

TEST(RecordParser, SampleCutShortNamesTheField) {
    const IdTable ids = table();  // r.event points into it: it must outlive r
    Builder bld(PERF_RECORD_SAMPLE, 0);
    bld.u64(42).u64(0x401000).u64(0);
    auto rec = bld.done();
    ParsedRecord r;
    auto err = parseRecord(rec, ids, r);
    ASSERT_TRUE(err);
    EXPECT_NE(err->find("time"), std::string::npos) << *err;
}

TEST(RecordParser, SampleWithUnknownId) {
    const IdTable ids = table();  // r.event points into it: it must outlive r
    Builder bld(PERF_RECORD_SAMPLE, 0);
    bld.u64(7);
    auto rec = bld.done();
    ParsedRecord r;
    auto err = parseRecord(rec, ids, r);
    ASSERT_TRUE(err);
    EXPECT_NE(err->find("unknown event id 7"), std::string::npos);
}

TEST(RecordParser, SwitchCpuWideWithTrailer) {
    const IdTable ids = table();  // r.event points into it: it must outlive r
    Builder bld(PERF_RECORD_SWITCH_CPU_WIDE, PERF_RECORD_MISC_SWITCH_OUT);
    bld.u32(555).u32(556).trailer(100, 101, 999, 1, 42);
    auto rec = bld.done();
    ParsedRecord r;
    ASSERT_FALSE(parseRecord(rec, ids, r));
    EXPECT_TRUE(r.switchOut);
    EXPECT_EQ(r.nextPrevPid, 555);
    EXPECT_EQ(r.nextPrevTid, 556);
    EXPECT_EQ(r.pid, 100);
    EXPECT_EQ(r.tid, 101);
    EXPECT_EQ(r.time, 999u);
    EXPECT_EQ(r.cpu, 1u);
    EXPECT_TRUE(r.hasSampleId);
}

TEST(RecordParser, LostAndLostSamples) {
    const IdTable ids = table();  // r.event points into it: it must outlive r
    Builder lost(PERF_RECORD_LOST, 0);
    lost.u64(42).u64(8765).trailer(0, 0, 5, 1, 42);
    auto rec = lost.done();
    ParsedRecord r;
    ASSERT_FALSE(parseRecord(rec, ids, r));
    EXPECT_EQ(r.lost, 8765u);

    Builder ls(PERF_RECORD_LOST_SAMPLES, 0);
    ls.u64(33).trailer(0, 0, 5, 1, 42);
    rec = ls.done();
    ASSERT_FALSE(parseRecord(rec, ids, r));
    EXPECT_EQ(r.lost, 33u);
}

TEST(RecordParser, CommAndMmap2Strings) {
    const IdTable ids = table();  // r.event points into it: it must outlive r
    Builder comm(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
    comm.u32(300).u32(300);
    const char name[8] = "true";
    comm.put(name).trailer(300, 300, 1, 0, 42);
    auto rec = comm.done();
    ParsedRecord r;
    ASSERT_FALSE(parseRecord(rec, ids, r));
    EXPECT_EQ(r.comm, "true");
    EXPECT_EQ(r.pid, 300);

    Builder mm(PERF_RECORD_MMAP2, 0);
    mm.u32(300).u32(300).u64(0x400000).u64(0x1000).u64(0);
    mm.u32(8).u32(1).u64(1234).u64(0).u32(5).u32(2);  // maj, min, ino, ino_generation, prot, flags
    const char file[16] = "/usr/bin/true";
    mm.put(file).trailer(300, 300, 2, 0, 42);
    rec = mm.done();
    ASSERT_FALSE(parseRecord(rec, ids, r));
    EXPECT_EQ(r.filename, "/usr/bin/true");
    EXPECT_EQ(r.mapStart, 0x400000u);
    EXPECT_EQ(r.mapLen, 0x1000u);
}

TEST(RecordParser, TooShortForTypeIsReported) {
    const IdTable ids = table();  // r.event points into it: it must outlive r
    Builder bld(PERF_RECORD_SWITCH_CPU_WIDE, 0);
    bld.u32(1);
    auto rec = bld.done();
    ParsedRecord r;
    auto err = parseRecord(rec, ids, r);
    ASSERT_TRUE(err);
    EXPECT_NE(err->find("SWITCH_CPU_WIDE record too short"), std::string::npos) << *err;
}

TEST(RecordParser, TypeNames) {
    EXPECT_STREQ(recordTypeName(PERF_RECORD_LOST_SAMPLES), "LOST_SAMPLES");
    EXPECT_STREQ(recordTypeName(21), "AUX_OUTPUT_HW_ID");
    EXPECT_EQ(recordTypeName(200), nullptr);
}

// A --call-graph dwarf sample with a branch stack (LBR call stack): every
// later field is found where perf's layout puts it.
TEST(RecordParser, SampleWithCallStacks) {
    constexpr uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                            PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_BRANCH_STACK |
                            PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT |
                            PERF_SAMPLE_DATA_SRC;
    IdTable ids;
    EventLayout l{st, 0, 0, -1};
    l.sampleRegsUser = 0b1011;  // three registers
    l.branchSampleType =
        PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK | PERF_SAMPLE_BRANCH_HW_INDEX;
    ids.add(7, l);
    Builder bld(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
    bld.u64(7).u64(0x401000).u64(uint64_t(11) << 32 | 10).u64(555).u64(1000);
    bld.u64(3).u64(PERF_CONTEXT_USER).u64(0x401000).u64(0x400500);  // callchain
    bld.u64(2).u64(9);                                              // branch stack: nr, hw_idx
    bld.u64(0x1).u64(0x2).u64(0x3).u64(0x4).u64(0x5).u64(0x6);      // two entries
    bld.u64(PERF_SAMPLE_REGS_ABI_64).u64(0xA).u64(0xB).u64(0xC);    // regs
    bld.u64(16).u64(0x1111).u64(0x2222).u64(12);                    // stack: size 16, dyn_size 12
    bld.u64(77).u64(0x1234);                                        // weight, data_src
    auto rec = bld.done();
    ParsedRecord r;
    ASSERT_FALSE(parseRecord(rec, ids, r));
    EXPECT_EQ(r.period, 1000u);
    ASSERT_EQ(r.callchainSize(), 3u);
    EXPECT_EQ(r.callchainAt(0), uint64_t(PERF_CONTEXT_USER));
    EXPECT_EQ(r.callchainAt(2), 0x400500u);
    EXPECT_EQ(r.branchHwIndex, 9u);
    ASSERT_EQ(r.branchCount(), 2u);
    EXPECT_EQ(ParsedRecord::load64(r.branches, 5), 0x6u);
    EXPECT_EQ(r.regsUserAbi, uint64_t(PERF_SAMPLE_REGS_ABI_64));
    ASSERT_EQ(r.regsUserCount(), 3u);
    EXPECT_EQ(r.regUserAt(2), 0xCu);
    EXPECT_EQ(r.stackUserSize, 16u);
    EXPECT_EQ(r.stackUser.size(), 12u);
    EXPECT_EQ(r.weight, 77u);
    EXPECT_EQ(r.dataSrc, 0x1234u);

    // Cut inside the user stack: the error names the field, what came before stays.
    rec.resize(rec.size() - 40);
    const uint16_t size = uint16_t(rec.size());
    std::memcpy(rec.data() + 6, &size, 2);
    ParsedRecord cut;
    auto err = parseRecord(rec, ids, cut);
    ASSERT_TRUE(err);
    EXPECT_NE(err->find("stack_user"), std::string::npos) << *err;
    EXPECT_EQ(cut.callchainSize(), 3u);
    EXPECT_EQ(cut.regsUserCount(), 3u);
}

// A kernel thread's sample has no user registers: abi NONE and nothing after it.
TEST(RecordParser, SampleWithoutUserRegisters) {
    constexpr uint64_t st =
        PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    IdTable ids;
    EventLayout l{st, 0, 0, -1};
    l.sampleRegsUser = 0xff;
    ids.add(7, l);
    Builder bld(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
    bld.u64(7).u64(0xffffffff81000000ull).u64(PERF_SAMPLE_REGS_ABI_NONE).u64(0);
    auto rec = bld.done();
    ParsedRecord r;
    ASSERT_FALSE(parseRecord(rec, ids, r));
    EXPECT_EQ(r.regsUserAbi, 0u);
    EXPECT_TRUE(r.regsUser.empty());
    EXPECT_EQ(r.stackUserSize, 0u);
    EXPECT_TRUE(r.stackUser.empty());
}
