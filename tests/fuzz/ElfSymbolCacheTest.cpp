// SPDX-License-Identifier: GPL-3.0-or-later
// ElfSymbolCache (decode/images/ElfSymbols.h), the fuzzers' way of reading a
// file's symbols once per process: a second load of the same file comes from
// the cache and reads the same as a fresh load, into a table that already
// holds other functions (the ids move, the names at each address do not); a
// file that changed on disk is read again; without a cache nothing is kept.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "images/ElfSymbols.h"

using namespace auxscope;

namespace {

// A private copy of an ELF file (so that the test may change it).
struct TempElf {
    std::filesystem::path dir, path;
    explicit TempElf(const std::string& from) {
        static int made = 0;
        dir = std::filesystem::temp_directory_path() /
              ("auxscope-symcache-" + std::to_string(::getpid()) + "-" + std::to_string(made++));
        std::filesystem::create_directories(dir);
        path = dir / "image.elf";
        std::filesystem::copy_file(from, path, std::filesystem::copy_options::overwrite_existing);
    }
    ~TempElf() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

std::string nameAt(const ElfSymbols& s, const FunctionTable& t, uint64_t address) {
    return t[s.functionAtAddress(address)].name;
}

}  // namespace

TEST(ElfSymbolCache, SecondLoadComesFromTheCacheAndReadsTheSame) {
    TempElf elf("/proc/self/exe");
    auto cache = std::make_shared<ElfSymbolCache>(4);
    FunctionTable fresh;
    auto plain = ElfSymbols::load(elf.path.string(), fresh, "test");
    ASSERT_TRUE(plain.ok()) << plain.error().message;
    const auto mainAddress = (*plain)->symbolAddress("main");
    ASSERT_TRUE(mainAddress.has_value()) << "the test program has no symbol main";

    FunctionTable first;
    auto a = ElfSymbols::load(cache.get(), elf.path.string(), first, "test");
    ASSERT_TRUE(a.ok()) << a.error().message;
    EXPECT_EQ(cache->misses(), 1u);
    EXPECT_EQ(cache->hits(), 0u);

    // Another table that already holds functions: the cached symbols get new ids.
    FunctionTable second;
    for (int i = 0; i < 5; ++i)
        second.add({"other" + std::to_string(i), "elsewhere", uint64_t(i)});
    auto b = ElfSymbols::load(cache.get(), elf.path.string(), second, "test");
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(cache->hits(), 1u);
    EXPECT_EQ(cache->misses(), 1u);

    EXPECT_EQ((*b)->symbolCount(), (*plain)->symbolCount());
    EXPECT_EQ(second.size(), first.size() + 5);
    EXPECT_EQ(nameAt(**b, second, *mainAddress), "main");
    EXPECT_EQ(nameAt(**a, first, *mainAddress), "main");
    EXPECT_EQ(second[(*b)->unknownFunction()].name, fresh[(*plain)->unknownFunction()].name);
    EXPECT_EQ((*b)->symbolAddress("main"), mainAddress);
    // Every function the fresh load made reads the same from the cached one, at its address.
    size_t compared = 0;
    for (uint32_t id = 1; id < fresh.size(); ++id) {
        const FunctionInfo& f = fresh[id];
        if (f.address == 0) continue;
        EXPECT_EQ(nameAt(**b, second, f.address), nameAt(**plain, fresh, f.address)) << f.name;
        ++compared;
    }
    EXPECT_GT(compared, 10u);
    // The tables stay apart: nothing of `second` names the other table's functions.
    EXPECT_EQ(second[0].name, fresh[0].name);
    EXPECT_EQ(second[1].name, "other0");
}

TEST(ElfSymbolCache, ChangedFileIsReadAgain) {
    TempElf elf("/proc/self/exe");
    auto cache = std::make_shared<ElfSymbolCache>(4);
    FunctionTable t1;
    auto a = ElfSymbols::load(cache.get(), elf.path.string(), t1, "test");
    ASSERT_TRUE(a.ok()) << a.error().message;
    // Another program in its place (another size and inode).
    const char* other = std::filesystem::exists("/usr/bin/true") ? "/usr/bin/true" : "/bin/true";
    std::filesystem::remove(elf.path);
    std::filesystem::copy_file(other, elf.path);
    FunctionTable t2;
    auto b = ElfSymbols::load(cache.get(), elf.path.string(), t2, "test");
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(cache->misses(), 2u);
    EXPECT_EQ(cache->hits(), 0u);
    FunctionTable t3;
    auto fresh = ElfSymbols::load(elf.path.string(), t3, "test");
    ASSERT_TRUE(fresh.ok());
    EXPECT_EQ((*b)->symbolCount(), (*fresh)->symbolCount());
    EXPECT_NE((*b)->symbolCount(), (*a)->symbolCount());
}

TEST(ElfSymbolCache, NotAnElfIsAnErrorAndNotKept) {
    TempElf elf("/proc/self/exe");
    std::ofstream(elf.path, std::ios::trunc) << "not an ELF file\n";
    auto cache = std::make_shared<ElfSymbolCache>(2);
    FunctionTable t;
    for (int i = 0; i < 2; ++i) {
        auto s = ElfSymbols::load(cache.get(), elf.path.string(), t, "test");
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message.find("not an ELF"), std::string::npos) << s.error().message;
    }
    EXPECT_EQ(cache->hits(), 0u);
    EXPECT_EQ(t.size(), 1u);  // only "[unknown]"
}

TEST(ElfSymbolCache, KeepsAtMostItsCapacity) {
    TempElf one("/proc/self/exe");
    const char* other = std::filesystem::exists("/usr/bin/true") ? "/usr/bin/true" : "/bin/true";
    TempElf two(other);
    const std::string second = two.path.string();
    auto cache = std::make_shared<ElfSymbolCache>(1);
    FunctionTable t;
    ASSERT_TRUE(ElfSymbols::load(cache.get(), one.path.string(), t, "one").ok());
    ASSERT_TRUE(ElfSymbols::load(cache.get(), second, t, "two").ok());
    ASSERT_TRUE(ElfSymbols::load(cache.get(), one.path.string(), t, "one").ok());  // dropped: read again
    EXPECT_EQ(cache->misses(), 3u);
    ASSERT_TRUE(ElfSymbols::load(cache.get(), one.path.string(), t, "one").ok());
    EXPECT_EQ(cache->hits(), 1u);
}
