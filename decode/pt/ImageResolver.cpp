// SPDX-License-Identifier: GPL-3.0-or-later
#include "ImageResolver.h"

#include <intel-pt.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "ElfSymbols.h"

namespace auxscope {

namespace {

bool isRegularFile(const std::string& path, uint64_t* size = nullptr) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (size) *size = uint64_t(st.st_size);
    return true;
}

std::string hexBytes(const std::vector<uint8_t>& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (uint8_t b : bytes)
        s += digits[b >> 4], s += digits[b & 15];
    return s;
}

// Names the kernel gives mappings that are not files.
bool isPseudoFile(const std::string& name) {
    return name.empty() || name[0] == '[' || name.rfind("//anon", 0) == 0 ||
           name.rfind("/dev/zero", 0) == 0 || name.rfind("anon_inode:", 0) == 0 ||
           name.find(" (deleted)") != std::string::npos;
}

}  // namespace

ImageResolver::ImageResolver(const Sideband& sideband, FunctionTable& functions, ImageOptions options)
    : sideband_(sideband), functions_(functions), options_(std::move(options)) {
    if (options_.buildIdCache.empty()) {
        const char* home = std::getenv("HOME");
        options_.buildIdCache = std::string(home ? home : "") + "/.debug";
    }
    cache_ = pt_iscache_alloc("auxscope");
}

ImageResolver::~ImageResolver() {
    for (auto& [pid, p] : processes_)
        pt_image_free(p.image);
    pt_image_free(kernelOnly_.image);
    pt_iscache_free(cache_);
}

int ImageResolver::resolveFile(const Mapping& m) {
    auto known = fileIndex_.find(m.file);
    if (known != fileIndex_.end()) return known->second;
    FileStatus status;
    status.recorded = m.file;
    std::vector<std::string> candidates;
    if (m.kernel) {
        // Not yet: placing a vmlinux needs its segments at the KASLR-shifted addresses.
        candidates.clear();
    } else if (!isPseudoFile(m.file)) {
        if (!options_.symfs.empty()) candidates.push_back(options_.symfs + m.file);
        candidates.push_back(m.file);
    }
    if (m.buildId.size() >= 2 && !m.kernel) {
        // perf's build-id cache: .build-id/<first byte>/<rest>/elf (vdso and vmlinux too).
        std::string hex = hexBytes(m.buildId);
        std::string dir = options_.buildIdCache + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2);
        candidates.push_back(dir + "/elf");
    }
    for (const std::string& c : candidates) {
        if (!isRegularFile(c)) continue;
        auto symbols = ElfSymbols::load(c, functions_, m.file);
        if (!symbols) continue;  // not an ELF (e.g. a kallsyms copy): keep looking
        status.resolved = c;
        status.symbols = (*symbols)->symbolCount();
        symbols_.push_back(std::move(*symbols));
        break;
    }
    if (status.resolved.empty()) symbols_.push_back(nullptr);
    files_.push_back(status);
    int index = int(files_.size() - 1);
    fileIndex_[m.file] = index;
    return index;
}

void ImageResolver::addRegions(ProcessImage& process, const std::vector<Mapping>& maps) {
    for (const Mapping& m : maps) {
        if (!m.length) continue;
        int file = resolveFile(m);
        ++files_[file].mappings;
        // A later mapping replaces whatever it overlaps, as in the address space.
        auto& regions = process.regions;
        std::vector<Region> kept;
        for (const Region& r : regions) {
            if (r.end <= m.start || r.start >= m.end()) {
                kept.push_back(r);
                continue;
            }
            if (r.start < m.start) kept.push_back({r.start, m.start, r.pgoff, r.file, r.kernel});
            if (r.end > m.end())
                kept.push_back({m.end(), r.end, r.pgoff + (m.end() - r.start), r.file, r.kernel});
        }
        kept.push_back({m.start, m.end(), m.pgoff, file, m.kernel});
        std::sort(kept.begin(), kept.end(),
                  [](const Region& a, const Region& b) { return a.start < b.start; });
        regions = std::move(kept);
    }
}

void ImageResolver::prepare() {
    auto build = [&](ProcessImage& p, const std::string& name) {
        p.image = pt_image_alloc(name.c_str());
        for (const Region& r : p.regions) {
            const FileStatus& f = files_[r.file];
            if (f.resolved.empty()) continue;
            uint64_t size = 0;
            isRegularFile(f.resolved, &size);
            uint64_t offset = r.pgoff, address = r.start, length = r.end - r.start;
            if (offset >= size) continue;
            length = std::min(length, size - offset);
            int isid = pt_iscache_add_file(cache_, f.resolved.c_str(), offset, length, address);
            if (isid >= 0) pt_image_add_cached(p.image, cache_, isid, nullptr);
        }
    };
    addRegions(kernelOnly_, sideband_.kernelMaps());
    build(kernelOnly_, "kernel");
    for (const auto& [pid, process] : sideband_.processes()) {
        ProcessImage& p = processes_[pid];
        addRegions(p, sideband_.kernelMaps());
        addRegions(p, process.maps);
        build(p, "pid " + std::to_string(pid));
    }
}

pt_image* ImageResolver::newImage(int32_t pid) const {
    auto it = processes_.find(pid);
    const ProcessImage& p = it == processes_.end() ? kernelOnly_ : it->second;
    pt_image* image = pt_image_alloc(nullptr);
    if (image && p.image) pt_image_copy(image, p.image);
    return image;
}

const ImageResolver::Region* ImageResolver::regionAt(int32_t pid, uint64_t ip) const {
    auto it = processes_.find(pid);
    const ProcessImage& p = it == processes_.end() ? kernelOnly_ : it->second;
    auto r = std::upper_bound(p.regions.begin(), p.regions.end(), ip,
                              [](uint64_t a, const Region& x) { return a < x.start; });
    if (r == p.regions.begin()) return nullptr;
    --r;
    return ip < r->end ? &*r : nullptr;
}

uint32_t ImageResolver::functionAt(int32_t pid, uint64_t ip) const {
    const Region* r = regionAt(pid, ip);
    if (!r) return FunctionTable::kUnknown;
    const ElfSymbols* symbols = symbols_[r->file].get();
    if (!symbols) return FunctionTable::kUnknown;
    if (r->kernel) return symbols->functionAtAddress(ip);
    return symbols->functionAtFileOffset(ip - r->start + r->pgoff);
}

const std::string* ImageResolver::missingFileAt(int32_t pid, uint64_t ip) const {
    const Region* r = regionAt(pid, ip);
    if (!r || !files_[r->file].resolved.empty()) return nullptr;
    return &files_[r->file].recorded;
}

std::string ImageResolver::mappingAt(int32_t pid, uint64_t ip) const {
    const Region* r = regionAt(pid, ip);
    return r ? files_[r->file].recorded : std::string();
}

size_t ImageResolver::missingFiles() const {
    return size_t(
        std::count_if(files_.begin(), files_.end(), [](const FileStatus& f) { return f.resolved.empty(); }));
}

}  // namespace auxscope
