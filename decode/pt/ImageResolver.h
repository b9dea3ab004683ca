// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The code a trace ran through, per process, from the mappings the sideband
// recorded: each mapped file is looked up (--symfs prefix, then the recorded path,
// then perf's build-id cache ~/.debug/.build-id/xx/yyyy.../elf), added once to a
// libipt image section cache shared by every process, and its ELF symbols
// (.symtab, else .dynsym; demangled) become FunctionTable entries. A mapping
// whose file cannot be found stays out of the image: the decoder then fails
// there with "no memory mapped", which the driver turns into a "missing image"
// gap naming the file (see missingFileAt()).
//
// Kernel code (vmlinux, kcore) is not loaded yet: kernel mappings count as
// missing images.
//
// prepare() does all loading up front on one thread; afterwards every method is
// const and safe to call from decoder threads.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "FunctionTable.h"
#include "Sideband.h"

struct pt_image;
struct pt_image_section_cache;

namespace auxscope {

struct ImageOptions {
    std::string symfs;         // prefix for recorded paths (a sysroot), tried first
    std::string buildIdCache;  // perf's ~/.debug; empty: $HOME/.debug
};

class ElfSymbols;

class ImageResolver {
public:
    ImageResolver(const Sideband& sideband, FunctionTable& functions, ImageOptions options);
    ~ImageResolver();
    ImageResolver(const ImageResolver&) = delete;
    ImageResolver& operator=(const ImageResolver&) = delete;

    // Loads every executable mapping's file and symbols and builds one image per
    // process (its maps plus the kernel's) and one with the kernel's alone.
    void prepare();

    // A new libipt image for `pid` (the kernel-only one for an unknown pid),
    // owned by the caller (pt_image_free). Images are cheap copies sharing the
    // cache's sections; each decoder thread gets its own because libipt's
    // images are not safe to share between threads.
    pt_image* newImage(int32_t pid) const;
    pt_image_section_cache* cache() const { return cache_; }

    // The function at `ip` in `pid` (FunctionTable::kUnknown outside any mapping).
    uint32_t functionAt(int32_t pid, uint64_t ip) const;
    // The recorded file of the mapping at `ip` when that file could not be found.
    const std::string* missingFileAt(int32_t pid, uint64_t ip) const;
    // The recorded name of the mapping at `ip` ("" outside any).
    std::string mappingAt(int32_t pid, uint64_t ip) const;

    struct FileStatus {
        std::string recorded;  // as the mapping names it
        std::string resolved;  // where it was found ("" when missing)
        size_t mappings = 0;
        size_t symbols = 0;
    };
    const std::vector<FileStatus>& files() const { return files_; }
    size_t missingFiles() const;

private:
    struct Region {
        uint64_t start, end;
        uint64_t pgoff;
        int file;  // index into files_/symbols_
        bool kernel;
    };
    struct ProcessImage {
        std::vector<Region> regions;  // sorted by start, non-overlapping
        pt_image* image = nullptr;
    };
    int resolveFile(const Mapping& m);
    void addRegions(ProcessImage& process, const std::vector<Mapping>& maps);
    const Region* regionAt(int32_t pid, uint64_t ip) const;

    const Sideband& sideband_;
    FunctionTable& functions_;
    ImageOptions options_;
    pt_image_section_cache* cache_ = nullptr;
    std::vector<FileStatus> files_;
    std::vector<std::unique_ptr<ElfSymbols>> symbols_;
    std::map<std::string, int> fileIndex_;  // recorded name -> files_
    std::map<int32_t, ProcessImage> processes_;
    ProcessImage kernelOnly_;
};

}  // namespace auxscope
