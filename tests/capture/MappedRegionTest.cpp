// SPDX-License-Identifier: GPL-3.0-or-later
// MappedRegion: the RAII owner of one mmap'd region that the rings share.
#include "MappedRegion.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace auxscope {
namespace {

size_t page() {
    return size_t(sysconf(_SC_PAGESIZE));
}

// Whether [addr, addr + len) is mapped in this process (mincore fails with
// ENOMEM over an unmapped range).
bool isMapped(void* addr, size_t len) {
    std::vector<unsigned char> vec((len + page() - 1) / page());
    return mincore(addr, len, vec.data()) == 0;
}

MappedRegion anonymous(size_t len) {
    auto m = MappedRegion::map(-1, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
    return std::move(*m);
}

TEST(MappedRegion, EmptyByDefault) {
    MappedRegion m;
    EXPECT_FALSE(m.mapped());
    EXPECT_FALSE(m);
    EXPECT_EQ(m.data(), nullptr);
    EXPECT_EQ(m.size(), 0u);
    m.reset();  // nothing to unmap
    EXPECT_FALSE(m.mapped());
}

TEST(MappedRegion, MapsAndUnmapsInTheDestructor) {
    void* addr = nullptr;
    const size_t len = 3 * page();
    {
        MappedRegion m = anonymous(len);
        ASSERT_TRUE(m.mapped());
        EXPECT_EQ(m.size(), len);
        addr = m.data();
        EXPECT_TRUE(isMapped(addr, len));
        std::memset(m.bytes(), 0xab, len);  // writable
        EXPECT_EQ(m.bytes()[len - 1], 0xab);
    }
    EXPECT_FALSE(isMapped(addr, page()));
}

TEST(MappedRegion, MoveConstructionTransfersOwnership) {
    MappedRegion a = anonymous(page());
    void* addr = a.data();
    MappedRegion b(std::move(a));
    EXPECT_FALSE(a.mapped());
    EXPECT_EQ(a.size(), 0u);
    EXPECT_EQ(b.data(), addr);
    EXPECT_EQ(b.size(), page());
    EXPECT_TRUE(isMapped(addr, page()));
}

TEST(MappedRegion, MoveAssignmentUnmapsTheOldRegion) {
    MappedRegion a = anonymous(page());
    MappedRegion b = anonymous(2 * page());
    void* oldB = b.data();
    void* addrA = a.data();
    b = std::move(a);
    EXPECT_FALSE(isMapped(oldB, 2 * page()));
    EXPECT_EQ(b.data(), addrA);
    EXPECT_EQ(b.size(), page());
    EXPECT_FALSE(a.mapped());
    EXPECT_TRUE(isMapped(addrA, page()));
    // Assigning an empty MappedRegion unmaps too.
    b = MappedRegion();
    EXPECT_FALSE(b.mapped());
    EXPECT_FALSE(isMapped(addrA, page()));
}

TEST(MappedRegion, NoDoubleUnmap) {
    MappedRegion a = anonymous(page());
    void* addr = a.data();
    MappedRegion& self = a;
    a = std::move(self);  // self-move keeps the region
    EXPECT_EQ(a.data(), addr);
    EXPECT_TRUE(isMapped(addr, page()));
    a.reset();
    EXPECT_FALSE(a.mapped());
    EXPECT_FALSE(isMapped(addr, page()));
    // Put something else at that address: a second munmap of the old region
    // would take it away.
    void* other =
        mmap(addr, page(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    ASSERT_NE(other, MAP_FAILED) << std::strerror(errno);
    a.reset();
    { MappedRegion moved(std::move(a)); }  // a moved-from MappedRegion unmaps nothing either
    EXPECT_TRUE(isMapped(other, page()));
    munmap(other, page());
}

TEST(MappedRegion, ReleaseGivesUpOwnership) {
    void* addr = nullptr;
    size_t len = 0;
    {
        MappedRegion m = anonymous(page());
        std::tie(addr, len) = m.release();
        EXPECT_FALSE(m.mapped());
        EXPECT_EQ(m.size(), 0u);
    }
    EXPECT_EQ(len, page());
    EXPECT_TRUE(isMapped(addr, len));
    munmap(addr, len);
}

TEST(MappedRegion, MapsAFileAtAnOffset) {
    FILE* f = tmpfile();
    ASSERT_NE(f, nullptr);
    std::vector<uint8_t> bytes(2 * page());
    for (size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = uint8_t(i / page() + 1);
    ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    fflush(f);
    auto m = MappedRegion::map(fileno(f), page(), PROT_READ, MAP_SHARED, off_t(page()));
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->bytes()[0], 2);
    EXPECT_EQ(m->bytes()[page() - 1], 2);
    fclose(f);
}

TEST(MappedRegion, FailureNamesTheCause) {
    int err = 0;
    auto m = MappedRegion::map(-1, page(), PROT_READ, MAP_SHARED, 0, &err);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(err, EBADF);
    EXPECT_EQ(m.error().message,
              "mmap of " + std::to_string(page()) + " bytes at offset 0 failed: " + std::strerror(EBADF));

    auto zero = MappedRegion::map(-1, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, 0, &err);
    ASSERT_FALSE(zero.ok());
    EXPECT_EQ(err, EINVAL);
    EXPECT_NE(zero.error().message.find(std::strerror(EINVAL)), std::string::npos) << zero.error().message;

    // An unaligned offset: the offset is in the message.
    FILE* f = tmpfile();
    ASSERT_NE(f, nullptr);
    auto odd = MappedRegion::map(fileno(f), page(), PROT_READ, MAP_SHARED, 100, &err);
    ASSERT_FALSE(odd.ok());
    EXPECT_EQ(err, EINVAL);
    EXPECT_NE(odd.error().message.find("at offset 100 failed"), std::string::npos) << odd.error().message;
    fclose(f);
}

}  // namespace
}  // namespace auxscope
