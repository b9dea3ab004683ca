// SPDX-License-Identifier: GPL-3.0-or-later
#include "images/ImageResolver.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "images/DebuginfodClient.h"
#include "images/ElfSymbols.h"
#include "perfdata/FeatureWriter.h"

namespace auxscope {

namespace {

bool isRegularFile(const std::string& path, uint64_t* size = nullptr) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (size) *size = uint64_t(st.st_size);
    return true;
}

bool isDirectory(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string hexBytes(const std::vector<uint8_t>& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (uint8_t b : bytes)
        s += digits[b >> 4], s += digits[b & 15];
    return s;
}

std::string hex(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%" PRIx64, v);
    return b;
}

// Names the kernel gives mappings that are not files.
bool isPseudoFile(const std::string& name) {
    return name.empty() || name[0] == '[' || name.rfind("//anon", 0) == 0 ||
           name.rfind("/dev/zero", 0) == 0 || name.rfind("anon_inode:", 0) == 0 ||
           name.find(" (deleted)") != std::string::npos;
}

constexpr const char* kKernelName = "[kernel.kallsyms]";

bool isKernelMapName(const std::string& name) {
    return name.rfind(kKernelName, 0) == 0;
}

// Build-ids as perf compares them: a recording's HEADER_BUILD_ID holds 20
// bytes, a shorter id (16: MD5, simpleperf's) padded with zeros.
bool sameBuildId(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    const std::vector<uint8_t>& shorter = a.size() <= b.size() ? a : b;
    const std::vector<uint8_t>& longer = a.size() <= b.size() ? b : a;
    if (shorter.empty() || !std::equal(shorter.begin(), shorter.end(), longer.begin())) return false;
    return std::all_of(longer.begin() + long(shorter.size()), longer.end(), [](uint8_t x) { return x == 0; });
}

bool isKernelAddress(uint64_t ip) {
    return ip >> 63;
}

// The running kernel's build-id (/sys/kernel/notes), as perf reads it.
std::optional<std::vector<uint8_t>> runningKernelBuildId() {
    std::ifstream in("/sys/kernel/notes", std::ios::binary);
    if (!in) return std::nullopt;
    std::vector<uint8_t> notes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return buildIdFromNotes(notes);
}

// perf's modules listing (/proc/modules, a kcore_dir's copy): name -> [start, end).
std::vector<std::pair<uint64_t, uint64_t>> moduleRanges(const std::string& path) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        // name size refcount deps state address [taint]
        std::istringstream fields(line);
        std::string name, size, refs, deps, state, address;
        if (!(fields >> name >> size >> refs >> deps >> state >> address)) continue;
        uint64_t start = std::strtoull(address.c_str(), nullptr, 16);
        uint64_t length = std::strtoull(size.c_str(), nullptr, 10);
        if (start && length) out.push_back({start, start + length});
    }
    return out;
}

}  // namespace

ImageResolver::ImageResolver(const Sideband& sideband, FunctionTable& functions, ImageOptions options)
    : sideband_(&sideband), functions_(functions), options_(std::move(options)) {
    if (options_.buildIdCache.empty()) {
        const char* home = std::getenv("HOME");
        options_.buildIdCache = std::string(home ? home : "") + "/.debug";
    }
}

ImageResolver::~ImageResolver() {
    if (!tempKcore_.empty()) ::unlink(tempKcore_.c_str());
}

int ImageResolver::mapFile(const std::string& path) {
    auto known = mappedIndex_.find(path);
    if (known != mappedIndex_.end()) return known->second;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    MappedFile f;
    f.path = path;
    int saved = EINVAL;  // an empty file has no code
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
        auto region = MappedRegion::map(fd, size_t(st.st_size), PROT_READ, MAP_PRIVATE, 0, &saved);
        if (region) {
            f.region = std::move(*region);
            f.data = f.region.bytes(), f.size = f.region.size();
        }
    }
    ::close(fd);
    if (!f.data) {
        errno = saved;
        return -1;
    }
    mapped_.push_back(std::move(f));
    return mappedIndex_[path] = int(mapped_.size() - 1);
}

const Mapping* ImageResolver::kernelMap() const {
    for (const Mapping& m : sideband_->kernelMaps())
        if (isKernelMapName(m.file)) return &m;
    return nullptr;
}

bool ImageResolver::useKallsyms(const std::string& path) {
    auto symbols = ElfSymbols::loadKallsyms(path, functions_, kKernelName);
    if (!symbols) {
        notes_.push_back("kernel symbols: " + symbols.error().message);
        return false;
    }
    kernelSymbols_ = std::move(*symbols);
    kernelStatus_.symbols = path;
    // kallsyms holds the addresses of one boot: they must be the recording's.
    if (const Mapping* m = kernelMap()) {
        std::string ref = m->file.substr(std::strlen(kKernelName));
        if (ref.empty()) ref = "_text";
        auto at = kernelSymbols_->symbolAddress(ref);
        if (at && *at != m->pgoff)
            notes_.push_back(path + " puts " + ref + " at " + hex(*at) +
                             " but the recording's kernel map at " + hex(m->pgoff) +
                             ": not the boot that recorded (KASLR), kernel code and names "
                             "will not match the trace");
    }
    return true;
}

bool ImageResolver::useVmlinux(const std::string& path, const std::string& how) {
    auto segments = elfLoadSegments(path);
    if (!segments) {
        notes_.push_back("vmlinux " + path + ": " + segments.error().message);
        return false;
    }
    int64_t shift = 0;
    const Mapping* m = kernelMap();
    if (m) {
        std::string ref = m->file.substr(std::strlen(kKernelName));
        if (ref.empty()) ref = "_text";
        auto link = elfSymbolValue(path, ref);
        if (!link && ref == "_text") link = elfSymbolValue(path, "_stext");
        if (link) {
            shift = int64_t(m->pgoff - *link);
        } else {
            notes_.push_back("vmlinux " + path + " has no symbol " + ref +
                             ": placed at its link addresses (no KASLR offset)");
        }
        if (!m->buildId.empty()) {
            auto id = FeatureWriter::elfBuildId(path);
            if (id && *id != m->buildId)
                notes_.push_back("vmlinux " + path + " has build-id " + hexBytes(*id) +
                                 " but the recorded kernel " + hexBytes(m->buildId) +
                                 ": another build, its code may not match the trace");
        }
    } else {
        notes_.push_back("no kernel map recorded: vmlinux " + path +
                         " placed at its link addresses (no KASLR offset)");
    }
    const int file = mapFile(path);
    if (file < 0) {
        notes_.push_back("vmlinux " + path + ": cannot map: " + std::strerror(errno));
        return false;
    }
    for (const ElfLoadSegment& s : *segments) {
        if (!s.executable || !s.fileSize) continue;
        const uint64_t vaddr = s.vaddr + uint64_t(shift);
        if (s.offset > mapped_[file].size || s.fileSize > mapped_[file].size - s.offset) {
            notes_.push_back("vmlinux " + path + ": the segment at " + hex(vaddr) +
                             " lies beyond the file's end");
            continue;
        }
        kernelSections_.push_back({vaddr, s.fileSize, file, s.offset});
        kernelStatus_.codeBytes += s.fileSize;
    }
    if (kernelSections_.empty()) {
        notes_.push_back("vmlinux " + path + ": no executable PT_LOAD segment");
        return false;
    }
    kernelStatus_.code = path;
    kernelStatus_.fromVmlinux = true;
    kernelStatus_.kaslrOffset = shift;
    if (!how.empty()) notes_.push_back("kernel code from " + path + " (" + how + ")");
    auto symbols = ElfSymbols::load(path, functions_, kKernelName, shift);
    if (symbols && (*symbols)->symbolCount()) {
        kernelSymbols_ = std::move(*symbols);
        kernelStatus_.symbols = path;
    } else if (!options_.kallsyms.empty()) {
        useKallsyms(options_.kallsyms);
    } else {
        notes_.push_back("vmlinux " + path + " has no function symbols: pass --kallsyms for names");
    }
    return true;
}

bool ImageResolver::useKcore(const std::string& path, const std::string& kallsymsPath,
                             const std::string& how) {
    std::string kcore = path, kallsyms = kallsymsPath, modules;
    if (isDirectory(path)) {
        kcore = path + "/kcore";
        if (kallsyms.empty()) kallsyms = path + "/kallsyms";
        modules = path + "/modules";
    } else {
        size_t slash = path.rfind('/');
        std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
        if (kallsyms.empty()) kallsyms = dir + "/kallsyms";
        modules = dir + "/modules";
    }
    if (::access(kcore.c_str(), R_OK) != 0) {
        notes_.push_back("kcore " + kcore + ": cannot read: " + std::strerror(errno));
        return false;
    }
    auto segments = elfLoadSegments(kcore);
    if (!segments) {
        notes_.push_back("kcore " + kcore + ": " + segments.error().message);
        return false;
    }
    if (!useKallsyms(kallsyms))
        notes_.push_back("kcore " + kcore + ": no kernel names (kallsyms " + kallsyms + " unusable)");
    // Which of kcore's ranges hold code: the kernel's text and the modules.
    // /proc/kcore also maps all of RAM, vmalloc space and the whole module area.
    std::vector<std::pair<uint64_t, uint64_t>> wanted;
    if (kernelSymbols_) {
        auto text = kernelSymbols_->symbolAddress("_stext");
        if (!text) text = kernelSymbols_->symbolAddress("_text");
        auto etext = kernelSymbols_->symbolAddress("_etext");
        if (text && etext && *etext > *text) wanted.push_back({*text, *etext});
        // Modules as the modules listing sizes them, and whatever else kallsyms
        // lists with a [name] (BPF programs, ftrace trampolines) from its symbols.
        auto mods = moduleRanges(modules);
        wanted.insert(wanted.end(), mods.begin(), mods.end());
        for (const auto& [name, span] : kernelSymbols_->moduleSpans())
            wanted.push_back({span.first, span.second + 4096});
    }
    // No text bounds: the kernel's half above the direct map (x86-64: text and modules).
    if (wanted.empty()) wanted.push_back({0xffffffff80000000ull, ~0ull});
    std::sort(wanted.begin(), wanted.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (auto [from, to] : wanted) {
        if (!merged.empty() && from <= merged.back().second)
            merged.back().second = std::max(merged.back().second, to);
        else
            merged.push_back({from, to});
    }
    wanted = std::move(merged);
    struct Piece {
        uint64_t offset, vaddr, size;
    };
    std::vector<Piece> pieces;
    for (const ElfLoadSegment& s : *segments) {
        if (!s.fileSize) continue;
        for (auto [from, to] : wanted) {
            uint64_t b = std::max(from, s.vaddr), e = std::min(to, s.vaddr + s.fileSize);
            if (b < e) pieces.push_back({s.offset + (b - s.vaddr), b, e - b});
        }
    }
    std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.vaddr < b.vaddr; });
    std::string file = kcore;
    uint64_t fileSize = 0;
    if (kcore.rfind("/proc/", 0) == 0 || !isRegularFile(kcore, &fileSize)) {
        // /proc/kcore cannot be mapped (libipt maps its files): copy what is needed.
        const char* tmp = std::getenv("TMPDIR");
        std::string name = std::string(tmp && *tmp ? tmp : "/tmp") + "/auxscope-kcore-XXXXXX";
        int out = ::mkstemp(name.data());
        int in = ::open(kcore.c_str(), O_RDONLY | O_CLOEXEC);
        if (out < 0 || in < 0) {
            notes_.push_back("kcore " + kcore + ": cannot copy its text: " + std::strerror(errno));
            if (out >= 0) ::close(out), ::unlink(name.c_str());
            if (in >= 0) ::close(in);
            return false;
        }
        tempKcore_ = name;
        std::vector<uint8_t> buffer(1 << 20);
        uint64_t at = 0;
        for (Piece& p : pieces) {
            uint64_t copied = 0;
            while (copied < p.size) {
                size_t n = size_t(std::min<uint64_t>(buffer.size(), p.size - copied));
                ssize_t got = ::pread(in, buffer.data(), n, off_t(p.offset + copied));
                if (got <= 0) break;
                if (::write(out, buffer.data(), size_t(got)) != got) break;
                copied += uint64_t(got);
            }
            p.offset = at;
            p.size = copied;
            at += copied;
        }
        ::close(in);
        ::close(out);
        file = name;
    }
    const int mappedFile = mapFile(file);
    for (const Piece& p : pieces) {
        if (!p.size || mappedFile < 0) continue;
        if (p.offset > mapped_[mappedFile].size || p.size > mapped_[mappedFile].size - p.offset) continue;
        kernelSections_.push_back({p.vaddr, p.size, mappedFile, p.offset});
        kernelStatus_.codeBytes += p.size;
    }
    if (kernelSections_.empty()) {
        notes_.push_back("kcore " + kcore + ": no kernel text in it");
        return false;
    }
    kernelStatus_.code = kcore;
    if (!how.empty()) notes_.push_back("kernel code from " + kcore + " (" + how + ")");
    // The running kernel's kcore: is it the kernel that recorded?
    if (kcore == "/proc/kcore") {
        const Mapping* m = kernelMap();
        auto running = runningKernelBuildId();
        if (m && !m->buildId.empty() && running && *running != m->buildId)
            notes_.push_back("/proc/kcore is the running kernel, build-id " + hexBytes(*running) +
                             ", but the recorded kernel's is " + hexBytes(m->buildId) +
                             ": its code will not match the trace");
    }
    return true;
}

void ImageResolver::loadKernel() {
    if (!options_.vmlinux.empty() && useVmlinux(options_.vmlinux, "")) return;
    kernelSections_.clear();
    if (!options_.kcore.empty() && useKcore(options_.kcore, options_.kallsyms, "")) return;
    kernelSections_.clear();
    const Mapping* m = kernelMap();
    // perf's build-id cache: .build-id/xx/rest links to [kernel.kallsyms]/<id>,
    // holding a vmlinux ("elf"), kallsyms, and kcore copies (in dated subdirectories).
    if (m && m->buildId.size() >= 2 && options_.vmlinux.empty() && options_.kcore.empty()) {
        std::string id = hexBytes(m->buildId);
        std::vector<std::string> dirs = {
            options_.buildIdCache + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2),
            options_.buildIdCache + "/" + kKernelName + "/" + id};
        for (const std::string& dir : dirs) {
            for (const char* elf : {"/elf", "/vmlinux"})
                if (isRegularFile(dir + elf) && elfSymbolValue(dir + elf, "_stext") &&
                    useVmlinux(dir + elf, "perf's build-id cache"))
                    return;
            if (isRegularFile(dir + "/kcore") && useKcore(dir, options_.kallsyms, "perf's build-id cache"))
                return;
            if (DIR* d = ::opendir(dir.c_str())) {
                std::vector<std::string> subdirs;
                while (dirent* e = ::readdir(d))
                    if (e->d_name[0] != '.' && isRegularFile(dir + "/" + e->d_name + "/kcore"))
                        subdirs.push_back(dir + "/" + e->d_name);
                ::closedir(d);
                std::sort(subdirs.rbegin(), subdirs.rend());  // newest copy first (dated names)
                for (const std::string& sub : subdirs)
                    if (useKcore(sub, options_.kallsyms, "perf's build-id cache")) return;
            }
        }
        // The running kernel, when it is the one that recorded (perf uses /proc/kcore then too).
        auto running = runningKernelBuildId();
        if (options_.runningKernel && running && *running == m->buildId) {
            if (::access("/proc/kcore", R_OK) == 0 &&
                useKcore("/proc/kcore", options_.kallsyms.empty() ? "/proc/kallsyms" : options_.kallsyms,
                         "the running kernel has the recorded build-id"))
                return;
        }
        if (!kernelSymbols_) {
            for (const std::string& dir : dirs)
                if (isRegularFile(dir + "/kallsyms") && useKallsyms(dir + "/kallsyms")) break;
            if (!kernelSymbols_ && options_.runningKernel && running && *running == m->buildId)
                useKallsyms("/proc/kallsyms");
        }
    }
    if (!kernelSymbols_ && !options_.kallsyms.empty()) useKallsyms(options_.kallsyms);
}

bool ImageResolver::kernelCodeAt(uint64_t ip) const {
    auto it = std::upper_bound(kernelSections_.begin(), kernelSections_.end(), ip,
                               [](uint64_t a, const KernelSection& s) { return a < s.vaddr; });
    if (it == kernelSections_.begin()) return false;
    --it;
    return ip - it->vaddr < it->size;
}

int ImageResolver::resolveFile(const Mapping& m) {
    auto known = fileIndex_.find(m.file);
    if (known != fileIndex_.end()) return known->second;
    FileStatus status;
    status.recorded = m.file;
    std::vector<std::string> candidates;
    if (m.kernel) {
        // Kernel code comes from loadKernel(), for every process.
        if (isKernelMapName(m.file)) {
            status.resolved = kernelStatus_.code;
            status.hint = "kernel code: pass --kcore or --vmlinux";
        } else {
            status.resolved = kernelStatus_.fromVmlinux ? std::string() : kernelStatus_.code;
            status.hint = "kernel module code: pass --kcore, or --symfs with the module's .ko";
        }
        std::unique_ptr<ElfSymbols> module;
        if (!isKernelMapName(m.file) && !kernelCodeAt(m.start)) module = loadModule(m, status);
        if (!module) status.symbols = kernelSymbols_ ? kernelSymbols_->symbolCount() : 0;
        symbols_.push_back(std::move(module));
        files_.push_back(status);
        recordedBuildId_.emplace_back();
        mappedOf_.push_back(-1);
        fileIndex_[m.file] = int(files_.size() - 1);
        return int(files_.size() - 1);
    }
    if (m.buildId.size() >= 2) {
        // perf's build-id cache first, as perf looks: .build-id/<first byte>/<rest>/elf (vdso too).
        std::string hex = hexBytes(m.buildId);
        std::string dir = options_.buildIdCache + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2);
        // perf names the copy by its kind (build_id_cache__basename): vdso, else elf.
        candidates.push_back(dir + (m.file == "[vdso]" ? "/vdso" : "/elf"));
    }
    if (!isPseudoFile(m.file)) {
        if (!options_.symfs.empty()) candidates.push_back(options_.symfs + m.file);
        candidates.push_back(m.file);
        // The binary folders: as a sysroot (DIR + recorded path), then by name.
        const size_t slash = m.file.rfind('/');
        const std::string base = slash == std::string::npos ? m.file : m.file.substr(slash + 1);
        for (const std::string& dir : options_.binaryDirs) {
            if (dir.empty()) continue;
            if (m.file[0] == '/') candidates.push_back(dir + m.file);
            if (!base.empty()) candidates.push_back(dir + "/" + base);
        }
    }
    std::vector<std::string> tried;
    for (const std::string& c : candidates) {
        if (std::find(tried.begin(), tried.end(), c) != tried.end()) continue;
        tried.push_back(c);
        if (!isRegularFile(c) || !acceptCandidate(m, c, status)) continue;
        // A stripped file's names come from its separate debug file (same layout), its code from itself.
        const std::string debug = localDebugFile(c, m.buildId);
        auto symbols = ElfSymbols::load(options_.symbolCache.get(), c, functions_, m.file, 0, {}, debug);
        if (!symbols) continue;  // not an ELF (e.g. a kallsyms copy): keep looking
        const int mapped = mapFile(c);
        if (mapped < 0) continue;
        mappedOf_.push_back(mapped);
        status.resolved = c;
        status.debugFile = debug;
        // DWARF readers: the names' debug file, else one for the DWARF of a file that kept .symtab.
        debugFiles_[c] = debug.empty() ? localDebugFile(c, m.buildId, true) : debug;
        status.symbols = (*symbols)->symbolCount();
        symbols_.push_back(std::move(*symbols));
        break;
    }
    if (status.resolved.empty()) symbols_.push_back(nullptr), mappedOf_.push_back(-1);
    files_.push_back(status);
    recordedBuildId_.resize(files_.size());
    recordedBuildId_.back() = m.buildId;
    int index = int(files_.size() - 1);
    fileIndex_[m.file] = index;
    return index;
}

bool ImageResolver::acceptCandidate(const Mapping& m, const std::string& path, FileStatus& status) {
    if (m.buildId.empty()) return true;  // nothing recorded to compare with: the path decides, as before
    auto id = elfBuildId(path);
    if (id && sameBuildId(*id, m.buildId)) return true;
    // perf's build-id cache also holds kallsyms/kcore copies under the same
    // layout: only an ELF file counts as a candidate to reject.
    if (!id && !elfLoadSegments(path)) return false;
    ++status.rejected;
    notes_.push_back(path + ": rejected for " + m.file + ": its build-id is " +
                     (id ? hexBytes(*id) : std::string("missing")) + ", the recording's " +
                     hexBytes(m.buildId) + " (another build: its code and names would not match the trace)");
    return false;
}

std::string ImageResolver::localDebugFile(const std::string& path, const std::vector<uint8_t>& buildId,
                                          bool forDwarf) const {
    if (!forDwarf && elfHasSymtab(path)) return {};
    // perf's build-id cache keeps a debug file beside the copy (.../debug).
    if (buildId.size() >= 2) {
        const std::string hex = hexBytes(buildId);
        const std::string cached =
            options_.buildIdCache + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + "/debug";
        if (isRegularFile(cached)) {
            auto id = elfBuildId(cached);
            if (!id || sameBuildId(*id, buildId)) return cached;
        }
    }
    std::vector<std::string> roots;
    if (!options_.symfs.empty()) roots.push_back(options_.symfs + "/usr/lib/debug");
    roots.push_back("/usr/lib/debug");
    for (const std::string& d : options_.debugDirs)
        if (!d.empty()) roots.push_back(d);
    return elfSeparateDebugFile(path, roots, forDwarf);
}

std::string ImageResolver::debugFileOf(const std::string& path, bool* searched) const {
    auto it = debugFiles_.find(path);
    if (searched) *searched = it != debugFiles_.end();
    return it == debugFiles_.end() ? std::string() : it->second;
}

void ImageResolver::fetchFromDebuginfod(size_t from) {
    const DebuginfodClient client = DebuginfodClient::fromOptions(options_);
    debuginfodStatus_.urls = client.urls();
    if (!client.configured()) return;  // never a request without a URL
    for (size_t i = from; i < files_.size(); ++i) {
        FileStatus& f = files_[i];
        std::vector<uint8_t> id = recordedBuildId_[i];
        // A 16-byte id padded to perf's 20: the server knows it by its 16.
        if (id.size() == 20 && std::all_of(id.begin() + 16, id.end(), [](uint8_t x) { return x == 0; }))
            id.resize(16);
        // User-space files with a recorded build-id whose code, or names, are missing here.
        if (id.size() < 2 || isPseudoFile(f.recorded) || isKernelMapName(f.recorded)) continue;
        const bool needCode = f.resolved.empty();
        const bool needNames = !needCode && f.debugFile.empty() && !elfHasSymtab(f.resolved);
        if (!needCode && !needNames) continue;
        if (options_.debuginfodWanted && !options_.debuginfodWanted(f.recorded)) {
            ++debuginfodStatus_.notWanted;
            continue;
        }
        if (debuginfodOffline_ || debuginfodStatus_.cancelled) {
            ++debuginfodStatus_.notAsked;
            continue;
        }
        DebuginfodClient::Progress progress;
        if (options_.debuginfodProgress)
            progress = [&](int64_t done, int64_t total) {
                return options_.debuginfodProgress(f.recorded, done, total);
            };
        auto failed = [&](const Error& e) {
            ++debuginfodStatus_.failed;
            notes_.push_back(f.recorded + ": " + e.message);
            if (e.message.find("cannot reach") != std::string::npos ||
                e.message.find("timed out") != std::string::npos)
                debuginfodOffline_ = true;
            if (e.message.find("cancelled") != std::string::npos) debuginfodStatus_.cancelled = true;
        };
        std::string code = f.resolved;
        if (needCode) {
            ++debuginfodStatus_.asked;
            auto got = client.find(DebuginfodClient::Kind::Executable, id, progress);
            if (!got) {
                failed(got.error());
                continue;
            }
            code = *got;
        }
        // Names (and lines): the code's own .symtab, else a local debug file, else debuginfod's.
        std::string debug = needCode ? localDebugFile(code, id) : std::string();
        if (debug.empty() && !elfHasSymtab(code) && !debuginfodOffline_ && !debuginfodStatus_.cancelled) {
            ++debuginfodStatus_.asked;
            auto got = client.find(DebuginfodClient::Kind::Debuginfo, id, progress);
            if (got) {
                debug = *got;
                ++debuginfodStatus_.debugFiles;
            } else if (got.error().message.find("not found") == std::string::npos || needCode) {
                failed(got.error());
            } else {
                ++debuginfodStatus_.failed;  // no debug file on the server: .dynsym's names stay
                notes_.push_back(f.recorded + ": " + got.error().message);
            }
        }
        auto symbols =
            ElfSymbols::load(options_.symbolCache.get(), code, functions_, f.recorded, 0, {}, debug);
        if (!symbols) {
            notes_.push_back(f.recorded + ": debuginfod's " + code + ": " + symbols.error().message);
            continue;
        }
        if (needCode) {
            const int mapped = mapFile(code);
            if (mapped < 0) {
                notes_.push_back(f.recorded + ": debuginfod's " + code +
                                 ": cannot map: " + std::strerror(errno));
                continue;
            }
            mappedOf_[i] = mapped;
            f.resolved = code;
            ++debuginfodStatus_.executables;
        }
        f.debugFile = debug;
        if (!debug.empty() || !debugFiles_.count(code)) debugFiles_[code] = debug;
        f.symbols = (*symbols)->symbolCount();
        symbols_[i] = std::move(*symbols);
    }
    if (debuginfodStatus_.notAsked)
        notes_.push_back("debuginfod " + client.urls() + ": " + std::to_string(debuginfodStatus_.notAsked) +
                         " file(s) not asked for (" +
                         (debuginfodStatus_.cancelled ? "cancelled" : "the server could not be reached") +
                         ")");
}

std::unique_ptr<ElfSymbols> ImageResolver::loadModule(const Mapping& m, FileStatus& status) {
    // The module's .ko (no kcore covers it): --symfs first, the recorded path,
    // perf's build-id cache; its code sections laid out from the map's start as
    // the kernel lays out a module, its symbols placed the same way.
    std::vector<std::string> candidates;
    if (!options_.symfs.empty()) candidates.push_back(options_.symfs + m.file);
    candidates.push_back(m.file);
    if (m.buildId.size() >= 2) {
        std::string id = hexBytes(m.buildId);
        candidates.push_back(options_.buildIdCache + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) +
                             "/elf");
    }
    for (const std::string& c : candidates) {
        if (!isRegularFile(c)) continue;
        auto sections = elfModuleSections(c, m.start);
        if (!sections) continue;
        const int mapped = mapFile(c);
        if (mapped < 0) continue;
        auto symbols = ElfSymbols::load(options_.symbolCache.get(), c, functions_, m.file, 0, m.start);
        if (!symbols) continue;
        for (const ElfModuleSection& sec : *sections) {
            if (!sec.hasBytes || !sec.size || sec.vaddr + sec.size > m.end()) continue;
            if (sec.offset > mapped_[mapped].size || sec.size > mapped_[mapped].size - sec.offset) continue;
            KernelSection k{sec.vaddr, sec.size, mapped, sec.offset};
            auto at = std::upper_bound(kernelSections_.begin(), kernelSections_.end(), k.vaddr,
                                       [](uint64_t a, const KernelSection& x) { return a < x.vaddr; });
            kernelSections_.insert(at, k);
        }
        status.resolved = c;
        status.symbols = (*symbols)->symbolCount();
        return std::move(*symbols);
    }
    return nullptr;
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
            if (r.start < m.start) kept.push_back({r.start, m.start, r.pgoff, r.file, r.kernel, r.buildId});
            if (r.end > m.end())
                kept.push_back({m.end(), r.end, r.pgoff + (m.end() - r.start), r.file, r.kernel, r.buildId});
        }
        kept.push_back({m.start, m.end(), m.pgoff, file, m.kernel, &m.buildId});
        std::sort(kept.begin(), kept.end(),
                  [](const Region& a, const Region& b) { return a.start < b.start; });
        regions = std::move(kept);
    }
}

void ImageResolver::prepare() {
    loadKernel();
    kernelStatus_.sections = kernelSections_.size();
    // Kernel code at an address no recorded map covers (a file without perf's kernel map).
    kernelMissing_ = kernelStatus_.code.empty()
                         ? std::string(kKernelName) + " (kernel code: pass --kcore or --vmlinux)"
                         : std::string(kKernelName) + " (kernel code outside " + kernelStatus_.code +
                               (kernelStatus_.fromVmlinux ? ", e.g. modules: pass --kcore)" : ")");
    kernelMapSeen_ = kernelMap() != nullptr;
    buildImages(kernelOnly_, processes_);
    loadJit();
    fetchFromDebuginfod(0);
}

void ImageResolver::buildImages(ProcessImage& kernelOnly, std::map<int32_t, ProcessImage>& processes) {
    addRegions(kernelOnly, sideband_->kernelMaps());
    for (const auto& [pid, process] : sideband_->processes()) {
        ProcessImage& p = processes[pid];
        addRegions(p, sideband_->kernelMaps());
        addRegions(p, process.maps);
    }
}

ImageResolver::Update ImageResolver::update(const Sideband& sideband) {
    Update u;
    sideband_ = &sideband;
    const size_t filesBefore = files_.size(), kernelSectionsBefore = kernelSections_.size();
    if (!kernelMapSeen_ && kernelMap()) {
        // The kernel's code is found through its recorded map (build-id): the
        // earlier sideband had none. Symbols loaded without it are kept.
        kernelMapSeen_ = true;
        if (kernelSections_.empty() && !kernelSymbols_) {
            loadKernel();
            kernelStatus_.sections = kernelSections_.size();
        }
    }
    for (FileStatus& f : files_)
        f.mappings = 0;
    ProcessImage kernelOnly;
    std::map<int32_t, ProcessImage> processes;
    buildImages(kernelOnly, processes);
    fetchFromDebuginfod(filesBefore);
    u.filesLoaded = files_.size() - filesBefore;
    u.all = kernelSections_.size() != kernelSectionsBefore || kernelOnly.regions != kernelOnly_.regions;
    for (const auto& [pid, p] : processes) {
        auto it = processes_.find(pid);
        if (u.all || it == processes_.end() || it->second.regions != p.regions) u.pids.push_back(pid);
    }
    for (const auto& [pid, p] : processes_)
        if (!processes.count(pid)) u.pids.push_back(pid);
    kernelOnly_ = std::move(kernelOnly);
    processes_ = std::move(processes);
    // JIT files of processes the new sideband adds (those read before are kept).
    for (int32_t pid : loadJit())
        if (processes_.count(pid)) u.pids.push_back(pid);
    std::sort(u.pids.begin(), u.pids.end());
    u.pids.erase(std::unique(u.pids.begin(), u.pids.end()), u.pids.end());
    return u;
}

std::vector<ImageResolver::CodeSection> ImageResolver::codeSections(int32_t pid) const {
    auto it = processes_.find(pid);
    const ProcessImage& p = it == processes_.end() ? kernelOnly_ : it->second;
    std::vector<CodeSection> out;
    for (const KernelSection& k : kernelSections_)
        out.push_back({k.vaddr, k.size, &mapped_[k.mapped].path, k.offset});
    for (const Region& r : p.regions) {
        if (r.kernel || mappedOf_[r.file] < 0) continue;
        const MappedFile& f = mapped_[mappedOf_[r.file]];
        if (r.pgoff >= f.size) continue;
        out.push_back({r.start, std::min(r.end - r.start, f.size - r.pgoff), &f.path, r.pgoff});
    }
    // JIT code from jitdumps last: it wins over whatever mapping it lies in.
    if (auto j = jit_.find(pid); j != jit_.end())
        for (const auto& [start, range] : j->second)
            if (range.mapped >= 0)
                out.push_back(
                    {range.start, range.end - range.start, &mapped_[range.mapped].path, range.offset});
    return out;
}

std::vector<int32_t> ImageResolver::processIds() const {
    std::vector<int32_t> pids;
    for (const auto& [pid, p] : processes_)
        pids.push_back(pid);
    return pids;
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
    // Kernel code: the kernel's symbols, whether or not a kernel map was recorded
    // (a module whose .ko was found: its own).
    if (r && r->kernel && symbols_[r->file]) return symbols_[r->file]->functionAtAddress(ip);
    if ((r && r->kernel) || (!r && isKernelAddress(ip)))
        return kernelSymbols_ ? kernelSymbols_->functionAtAddress(ip) : FunctionTable::kUnknown;
    // JIT code: in a mapping without a file of its own (//anon, memfd) or outside any.
    if (!r || !symbols_[r->file])
        if (const JitRange* j = jitAt(pid, ip)) return j->function;
    if (!r) return FunctionTable::kUnknown;
    const ElfSymbols* symbols = symbols_[r->file].get();
    if (!symbols) return FunctionTable::kUnknown;
    return symbols->functionAtFileOffset(ip - r->start + r->pgoff);
}

const std::string* ImageResolver::missingFileAt(int32_t pid, uint64_t ip) const {
    const Region* r = regionAt(pid, ip);
    if ((r && r->kernel) || (!r && isKernelAddress(ip))) {
        if (kernelCodeAt(ip)) return nullptr;
        // The recorded kernel (or module) map names it; without one, the address says it is the kernel's.
        return r ? &files_[r->file].recorded : &kernelMissing_;
    }
    if (!r || !files_[r->file].resolved.empty()) return nullptr;
    if (const JitRange* j = jitAt(pid, ip); j && j->mapped >= 0) return nullptr;  // a jitdump's code
    return &files_[r->file].recorded;
}

std::string ImageResolver::missingHintAt(int32_t pid, uint64_t ip) const {
    const Region* r = regionAt(pid, ip);
    if (!((r && r->kernel) || (!r && isKernelAddress(ip))) || kernelCodeAt(ip) || !r) return {};
    if (!files_[r->file].resolved.empty())
        return "kernel code outside " + kernelStatus_.code +
               (kernelStatus_.fromVmlinux ? " (module code: pass --kcore)" : "");
    return files_[r->file].hint;
}

std::string ImageResolver::missingHint(const std::string& recorded) const {
    auto it = fileIndex_.find(recorded);
    return it == fileIndex_.end() ? std::string() : files_[it->second].hint;
}

bool ImageResolver::read(int32_t pid, uint64_t ip, uint8_t* buffer, size_t size) const {
    return readSome(pid, ip, buffer, size) == size;
}

size_t ImageResolver::readSome(int32_t pid, uint64_t ip, uint8_t* buffer, size_t size) const {
    const std::span<const uint8_t> from = bytesAt(pid, ip);
    const size_t n = std::min(from.size(), size);
    if (n) std::memcpy(buffer, from.data(), n);
    return n;
}

std::span<const uint8_t> ImageResolver::bytesAt(int32_t pid, uint64_t ip) const {
    const uint8_t* from = nullptr;
    uint64_t available = 0;
    if (kernelCodeAt(ip)) {
        auto it = std::upper_bound(kernelSections_.begin(), kernelSections_.end(), ip,
                                   [](uint64_t a, const KernelSection& s) { return a < s.vaddr; });
        --it;
        from = mapped_[it->mapped].data + it->offset + (ip - it->vaddr);
        available = it->size - (ip - it->vaddr);
    } else if (const Region* r = regionAt(pid, ip); r && !r->kernel && mappedOf_[r->file] >= 0) {
        const MappedFile& f = mapped_[mappedOf_[r->file]];
        const uint64_t offset = r->pgoff + (ip - r->start);
        if (offset >= f.size) return {};
        from = f.data + offset;
        available = std::min(r->end - ip, f.size - offset);
    }
    // JIT code from a jitdump (it wins over the mapping it lies in, as in codeSections()).
    if (const JitRange* j = isKernelAddress(ip) ? nullptr : jitAt(pid, ip); j && j->mapped >= 0) {
        const MappedFile& f = mapped_[j->mapped];
        const uint64_t offset = j->offset + (ip - j->start);
        if (offset >= f.size) return {};
        from = f.data + offset;
        available = std::min(j->end - ip, f.size - offset);
    }
    if (!from) return {};
    return {from, size_t(available)};
}

std::vector<ImageResolver::MappedModule> ImageResolver::mappedModules(int32_t pid) const {
    std::vector<MappedModule> out;
    auto it = processes_.find(pid);
    if (it == processes_.end()) return out;
    for (const Region& r : it->second.regions) {
        if (r.kernel) continue;
        MappedModule m;
        m.start = r.start, m.end = r.end, m.pgoff = r.pgoff, m.file = uint32_t(r.file);
        if (mappedOf_[r.file] >= 0) {
            const MappedFile& f = mapped_[mappedOf_[r.file]];
            m.bytes = {f.data, size_t(f.size)};
        }
        if (r.buildId) m.buildId = {r.buildId->data(), r.buildId->size()};
        out.push_back(m);
    }
    return out;
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
