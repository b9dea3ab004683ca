// SPDX-License-Identifier: GPL-3.0-or-later
// Sideband::Builder reads records in file order, which is not time order across
// CPUs: a child's exec and mappings, recorded on the CPU it ran on, may come
// before the FORK its parent's CPU recorded. Each process still ends with the
// mappings time says it has.
#include <gtest/gtest.h>

#include <linux/perf_event.h>

#include "sideband/Sideband.h"

using namespace auxscope;

namespace {

ParsedRecord fork(int32_t pid, int32_t ppid, uint64_t time) {
    ParsedRecord r;
    r.type = PERF_RECORD_FORK;
    r.pid = r.tid = pid;
    r.ppid = r.ptid = ppid;
    r.time = time;
    r.hasSampleId = true;
    return r;
}

ParsedRecord exec(int32_t pid, uint64_t time, std::string_view name) {
    ParsedRecord r;
    r.type = PERF_RECORD_COMM;
    r.misc = PERF_RECORD_MISC_COMM_EXEC;
    r.pid = r.tid = pid;
    r.comm = name;
    r.time = time;
    r.hasSampleId = true;
    return r;
}

ParsedRecord mmap(int32_t pid, uint64_t time, uint64_t start, std::string_view file) {
    ParsedRecord r;
    r.type = PERF_RECORD_MMAP;
    r.misc = PERF_RECORD_MISC_USER;
    r.pid = r.tid = pid;
    r.mapStart = start, r.mapLen = 0x1000, r.mapPgoff = 0;
    r.filename = file;
    r.time = time;
    r.hasSampleId = true;
    return r;
}

std::vector<std::string> files(const Sideband& sb, int32_t pid) {
    std::vector<std::string> out;
    if (const ProcessSideband* p = sb.process(pid))
        for (const Mapping& m : p->maps)
            out.push_back(m.file);
    return out;
}

Sideband build(const std::vector<ParsedRecord>& records) {
    Sideband::Builder b;
    for (const ParsedRecord& r : records)
        b.addRecord(0, r, {});
    return std::move(b).finish();
}

}  // namespace

TEST(SidebandOrder, ForkInTimeOrderCopiesTheParentsMappings) {
    const Sideband sb = build({mmap(10, 1, 0x1000, "/bin/g++"), fork(11, 10, 5), exec(11, 8, "cc1plus"),
                               mmap(11, 9, 0x2000, "/usr/lib/cc1plus")});
    EXPECT_EQ(files(sb, 11), std::vector<std::string>{"/usr/lib/cc1plus"});
}

// The child's exec and its new program's mapping come before the FORK in the
// file: the FORK must not put the parent's program back.
TEST(SidebandOrder, ExecReadBeforeItsForkKeepsTheNewProgramOnly) {
    const Sideband sb = build({mmap(10, 1, 0x1000, "/bin/g++"), exec(11, 8, "cc1plus"), fork(11, 10, 5),
                               mmap(11, 9, 0x2000, "/usr/lib/cc1plus")});
    EXPECT_EQ(files(sb, 11), std::vector<std::string>{"/usr/lib/cc1plus"});
    const Sideband sb2 = build({mmap(10, 1, 0x1000, "/bin/g++"), exec(11, 8, "cc1plus"),
                                mmap(11, 9, 0x2000, "/usr/lib/cc1plus"), fork(11, 10, 5)});
    EXPECT_EQ(files(sb2, 11), std::vector<std::string>{"/usr/lib/cc1plus"});
}

// A child that does not exec maps a library before its FORK is read: it has
// the parent's mappings and its own.
TEST(SidebandOrder, MappingReadBeforeItsForkJoinsTheParentsMappings) {
    const Sideband sb = build({mmap(10, 1, 0x1000, "/bin/server"), mmap(11, 9, 0x3000, "/usr/lib/plugin.so"),
                               fork(11, 10, 5), mmap(10, 7, 0x4000, "/usr/lib/later.so")});
    EXPECT_EQ(files(sb, 11), (std::vector<std::string>{"/bin/server", "/usr/lib/plugin.so"}));
}

// A mapping of the old program read after the exec (from another CPU's ring) is dropped.
TEST(SidebandOrder, OldProgramsMappingReadAfterTheExecIsDropped) {
    const Sideband sb = build({mmap(12, 2, 0x1000, "/bin/sh"), exec(12, 8, "ls"),
                               mmap(12, 9, 0x2000, "/bin/ls"), mmap(12, 3, 0x5000, "/lib/libsh-old.so")});
    EXPECT_EQ(files(sb, 12), std::vector<std::string>{"/bin/ls"});
}
