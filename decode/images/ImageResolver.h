// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// decode/images/ owns code images and symbols for every decoder: ELF files,
// build-ids, symbol tables (ElfSymbols), kernel images (vmlinux, kcore,
// kallsyms, modules). It includes sideband/ (mappings), spans/ (the function
// table) and perfdata/ (build-ids); no trace decoder.
//
// The code a trace ran through, per process, from the mappings the sideband
// recorded: each mapped file is looked up, mapped once (read-only) for every
// process that maps it, and its ELF symbols (.symtab, else .dynsym; demangled)
// become FunctionTable entries. The look-up, as perf orders it:
//   code: perf's build-id cache (~/.debug/.build-id/xx/yyyy.../elf), the
//     recorded path under --symfs, the recorded path, each binaryDirs folder
//     as a sysroot (DIR + recorded path) and by name (DIR/basename), then
//     debuginfod's copy of the executable. Where the recording gave a build-id,
//     a candidate is taken only when its build-id equals it; the others are
//     rejected, counted (FileStatus::rejected) and named in notes().
//   names and source lines of a file without .symtab: its separate debug
//     file: the build-id cache's .../debug, /usr/lib/debug (under --symfs too)
//     and each debugDirs root by .build-id/xx/yyyy.debug, its .gnu_debuglink
//     name beside it, in .debug/ and under those roots; then debuginfod's
//     debug file (FileStatus::debugFile says which was used).
// debuginfod (DebuginfodClient) is asked only with a URL configured, only for
// user-space files with a recorded build-id whose code or names are missing
// here, one query at a time with ImageOptions::debuginfodProgress; once a
// server cannot be reached the rest are not asked (one note says so). A mapping whose file
// cannot be found stays out of the image: a decoder then fails there with "no
// memory mapped", which it turns into a "missing image" gap naming the file
// (see missingFileAt()).
//
// Decoder-neutral: a decoder reads code through read()/readSome() (CoreSight's
// memory accessor) or loads codeSections() into its own image format (libipt's
// section cache, pt/PtImages).
//
// Kernel code is shared by every process image (and the "no process" one), as
// perf does it:
//   - --vmlinux FILE: its executable PT_LOAD segments at their link addresses
//     plus the KASLR offset, which is the recorded kernel map's pgoff (perf
//     stores the runtime address of the map's reference symbol there, the name
//     after "[kernel.kallsyms]", e.g. _text) minus the vmlinux's own value of
//     that symbol; its symbols moved the same way.
//   - --kcore DIR|FILE: perf record --kcore's copy (DIR/kcore, DIR/kallsyms,
//     DIR/modules) or a kcore file such as /proc/kcore: its PT_LOAD segments
//     are at runtime addresses (the kernel text and the modules' ranges are
//     used; /proc/kcore's are copied to a private temporary file first since it
//     cannot be mapped); names from kallsyms (--kallsyms, the dir's copy, or
//     /proc/kallsyms beside /proc/kcore), module symbols with "[module]" as
//     their file.
//   - else perf's build-id cache by the kernel's build-id (a vmlinux "elf",
//     a kcore copy with its kallsyms, or kallsyms alone: names without code),
//   - else /proc/kcore and /proc/kallsyms when the running kernel has the
//     recording's build-id.
// What does not match the recording (build-id, _text address) is said in notes().
// Kernel code that is still missing is a missing image named by the recorded
// kernel map ("[kernel.kallsyms]_text"), with missingHint() saying what to pass
// ("kernel code: pass --kcore or --vmlinux").
//
// JIT code (images/JitCode.h): perf maps (/tmp/perf-<pid>.map, perf-<pid>.map
// in binaryDirs, ImageOptions::perfMaps) name code in mappings that have no
// file of their own (//anon, memfd); jitdumps (jit-<pid>.dump as the recording's
// marker mmap names it, found there or by name in binaryDirs, and
// ImageOptions::jitDumps) name it and hold its bytes, which codeSections() and
// readSome() hand to decoders as ranges of the dump file. Where two loads cover
// one address the later (by the dump's order) wins, for the whole recording: a
// look-up by time is not done yet, so code reloaded at an address is named (and
// decoded) as its last load everywhere; notes() says when a dump does that.
//
// prepare() does all loading up front on one thread; afterwards every method is
// const and safe to call from decoder threads.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "MappedRegion.h"
#include "images/JitCode.h"
#include "sideband/Sideband.h"
#include "spans/FunctionTable.h"

namespace auxscope {

class ElfSymbolCache;
class ElfSymbols;

struct ImageOptions {
    std::string symfs;          // prefix for recorded paths (a sysroot), tried first
    std::string buildIdCache;   // perf's ~/.debug; empty: $HOME/.debug
    std::string vmlinux;        // --vmlinux: the kernel's ELF
    std::string kcore;          // --kcore: perf's kcore_dir, or a kcore file (/proc/kcore)
    std::string kallsyms;       // --kallsyms: kernel symbols (with --kcore FILE, or names only)
    bool runningKernel = true;  // may use /proc/kcore when the build-ids say it is the recorded kernel
    // Where code and names come from beyond the recorded paths (issue 27).
    // Folders searched for mapped files (by name, and as a sysroot); the
    // opener adds the opened file's folder.
    std::vector<std::string> binaryDirs;
    // Debug roots laid out as /usr/lib/debug (.build-id/xx/rest.debug, paths).
    std::vector<std::string> debugDirs;
    // debuginfod servers; empty: $DEBUGINFOD_URLS when set. No request is ever made without a URL.
    std::vector<std::string> debuginfodUrls;
    bool debuginfod = true;  // false: never ask a server, even with DEBUGINFOD_URLS set
    // JIT code: jit-<pid>.dump files (perf's jitdump format) and perf-<pid>.map
    // files, beyond /tmp/perf-<pid>.map and those beside the opened file.
    std::vector<std::string> jitDumps;
    std::vector<std::string> perfMaps;
    // debuginfod in prepare()/update() (issue 27, look-up part): hears each
    // query's progress (`recorded`: the file asked for; bytes done of total, 0:
    // not known); returning false cancels that query and every later one.
    std::function<bool(const std::string& recorded, int64_t done, int64_t total)> debuginfodProgress;
    // Which files debuginfod may be asked for (by recorded name); unset: every
    // file whose code or names are missing here. A view passes the images it
    // shows (first opened without debuginfod, then again with those it needs).
    std::function<bool(const std::string& recorded)> debuginfodWanted;
    // Symbols of files read by earlier resolvers, shared (null, the default:
    // every resolver reads its files): for processes that open many recordings
    // of the same programs (the fuzzers). See ElfSymbolCache.
    std::shared_ptr<ElfSymbolCache> symbolCache;
};

class ImageResolver {
public:
    ImageResolver(const Sideband& sideband, FunctionTable& functions, ImageOptions options);
    ~ImageResolver();
    ImageResolver(const ImageResolver&) = delete;
    ImageResolver& operator=(const ImageResolver&) = delete;

    // Loads every executable mapping's file and symbols and builds one image per
    // process (its maps plus the kernel's) and one with the kernel's alone.
    void prepare();
    // Moves a prepared resolver onto `sideband` (which must outlive it), the
    // sideband of a later piece of the same recording (a live decoder's next
    // tick): every process image is built again from its mappings, but only
    // files no earlier mapping named are looked up and loaded; the kernel's code
    // and symbols stay as loaded (they are loaded now if the earlier sideband
    // had no kernel map). Function ids handed out so far stay valid. Says which
    // process images differ from before, for decoders that cache by code.
    struct Update {
        bool all = false;           // the kernel's code changed: every image did
        std::vector<int32_t> pids;  // processes whose image is new, gone or different
        size_t filesLoaded = 0;     // files looked up for the first time
    };
    Update update(const Sideband& sideband);

    // The code `pid` sees (the kernel's alone for an unknown pid): the kernel's
    // sections first, then the process's mapped file ranges, in the order a
    // decoder adds them to its image (later ones win where they overlap).
    struct CodeSection {
        uint64_t vaddr = 0, size = 0;
        const std::string* path = nullptr;  // the file holding the bytes
        uint64_t offset = 0;                // of vaddr in that file
    };
    std::vector<CodeSection> codeSections(int32_t pid) const;
    // The processes with an image of their own (codeSections(pid) for others is the kernel's).
    std::vector<int32_t> processIds() const;

    // The function at `ip` in `pid` (FunctionTable::kUnknown outside any mapping).
    uint32_t functionAt(int32_t pid, uint64_t ip) const;
    // The recorded file of the mapping at `ip` when that file could not be found
    // (kernel maps: when no kernel code covers `ip`; a kernel address outside any
    // recorded map: "[kernel.kallsyms] (kernel code: pass --kcore or --vmlinux)").
    const std::string* missingFileAt(int32_t pid, uint64_t ip) const;
    // How to provide what missingFileAt() names ("kernel code: pass --kcore or
    // --vmlinux"; "" when there is nothing to say), by address or by recorded name.
    std::string missingHintAt(int32_t pid, uint64_t ip) const;
    std::string missingHint(const std::string& recorded) const;
    // The recorded name of the mapping at `ip` ("" outside any).
    std::string mappingAt(int32_t pid, uint64_t ip) const;

    struct FileStatus {
        std::string recorded;  // as the mapping names it
        std::string resolved;  // where it was found ("" when missing)
        std::string hint;      // kernel maps: how to provide the code when it is missing
        size_t mappings = 0;
        size_t symbols = 0;
        std::string debugFile;  // where its names (and lines) come from when not `resolved` ("" : itself)
        size_t rejected = 0;    // candidates found with another build-id than the recorded one
    };
    const std::vector<FileStatus>& files() const { return files_; }
    size_t missingFiles() const;
    // The separate debug file the DWARF (source lines, inlined frames) of
    // `path` comes from ("" : none, the file's own). `searched` (optional):
    // whether the resolver looked for one (every file it resolved: then its
    // answer is the whole look-up, debuginfod included, and libdwfl readers
    // (CodeAnnotation, InlineFrames) search no further, so that libdwfl never
    // asks a debuginfod server on its own).
    std::string debugFileOf(const std::string& path, bool* searched = nullptr) const;

    // What debuginfod did in prepare()/update().
    struct DebuginfodStatus {
        std::string urls;        // the servers asked ("" : none configured, nothing asked)
        size_t asked = 0;        // queries made (each answered from libdebuginfod's cache or a server)
        size_t debugFiles = 0;   // debug files received (names, lines)
        size_t executables = 0;  // executables received (code)
        size_t failed = 0;       // not found, unreachable, timed out
        size_t notAsked = 0;     // left out after the server could not be reached or a cancel
        size_t notWanted = 0;    // left out by ImageOptions::debuginfodWanted
        bool cancelled = false;
    };
    const DebuginfodStatus& debuginfod() const { return debuginfodStatus_; }

    // The kernel's code and symbols as found.
    struct KernelStatus {
        std::string code;          // where its code comes from ("" when missing)
        std::string symbols;       // where its names come from ("" when none)
        bool fromVmlinux = false;  // an ELF vmlinux (else a kcore, or none)
        int64_t kaslrOffset = 0;   // vmlinux: runtime minus link address
        size_t sections = 0;       // code ranges placed
        uint64_t codeBytes = 0;
    };
    const KernelStatus& kernel() const { return kernelStatus_; }
    // Mismatches and choices worth telling the user (a vmlinux of another build, ...).
    const std::vector<std::string>& notes() const { return notes_; }
    // Reads `size` bytes of code at `ip` as `pid`'s image holds them (false when
    // any of them is outside it). Safe to call from any thread after prepare().
    bool read(int32_t pid, uint64_t ip, uint8_t* buffer, size_t size) const;
    // As read(), but reads as much as lies in one section from `ip` on: the bytes read (0 outside).
    size_t readSome(int32_t pid, uint64_t ip, uint8_t* buffer, size_t size) const;
    // The bytes readSome() would copy from, in place (the mapped file): valid as
    // long as the resolver lives. Empty outside any section.
    std::span<const uint8_t> bytesAt(int32_t pid, uint64_t ip) const;

    // The user-space mappings of `pid` with the whole file behind each, for
    // readers that need more of a file than its code bytes (DWARF unwinding and
    // inlined frames read .eh_frame, .debug_frame, .debug_info): by start, not
    // overlapping, kernel maps left out. A mapping whose file was not found
    // (or is no file: "//anon", "[heap]") is listed with empty `bytes`. Safe to
    // call from any thread after prepare(); the spans live as long as the
    // resolver (and, for `buildId`, the sideband it was last given).
    struct MappedModule {
        uint64_t start = 0, end = 0;       // the mapping's addresses (the part later mappings left)
        uint64_t pgoff = 0;                // file offset of `start`
        uint32_t file = 0;                 // index into files(): one per recorded name
        std::span<const uint8_t> bytes;    // the file as found, mapped read-only (empty: missing)
        std::span<const uint8_t> buildId;  // as the recording gives it for this mapping (empty: none)
    };
    std::vector<MappedModule> mappedModules(int32_t pid) const;

    // The JIT files read (perf maps and jitdumps) and what they gave.
    struct JitFileStatus {
        std::string path;
        int32_t pid = -1;      // the process it describes (-1: every process, a map without a pid)
        bool dump = false;     // a jitdump (code bytes), else a perf map (names)
        size_t functions = 0;  // code ranges named
        size_t malformed = 0;  // perf map lines not understood
        std::string error;     // why reading stopped early or failed ("" when it did not)
    };
    const std::vector<JitFileStatus>& jitFiles() const { return jitFiles_; }
    // JIT code from a jitdump at `ip`: the dump's ELF machine (its header's
    // elf_mach, e.g. 62 for x86-64) and the source line its debug info gives
    // (JIT_CODE_DEBUG_INFO: the entry at or before `ip`; line 0 when none).
    struct JitSource {
        std::string dump;
        unsigned machine = 0;
        std::string file;
        int line = 0;
    };
    std::optional<JitSource> jitSourceAt(int32_t pid, uint64_t ip) const;

private:
    struct Region {
        uint64_t start, end;
        uint64_t pgoff;
        int file;  // index into files_/symbols_
        bool kernel;
        // The recorded build-id of the mapping (in the sideband's Mapping): not
        // part of what makes two images the same code for update().
        const std::vector<uint8_t>* buildId = nullptr;
        bool operator==(const Region& o) const {
            return start == o.start && end == o.end && pgoff == o.pgoff && file == o.file &&
                   kernel == o.kernel;
        }
    };
    struct ProcessImage {
        std::vector<Region> regions;  // sorted by start, non-overlapping
    };
    // A code file mapped read-only, shared by every section that reads from it.
    struct MappedFile {
        std::string path;
        MappedRegion region;
        const uint8_t* data = nullptr;
        uint64_t size = 0;
    };
    int mapFile(const std::string& path);
    int resolveFile(const Mapping& m);
    // A candidate for `m`'s code: a regular ELF file whose build-id equals the
    // recorded one (when one was recorded); else counted in `status.rejected` with a note.
    bool acceptCandidate(const Mapping& m, const std::string& path, FileStatus& status);
    // The separate debug file of a found file without .symtab ("" : none here).
    // `forDwarf`: for the DWARF of a file that has .symtab too (elfSeparateDebugFile's).
    std::string localDebugFile(const std::string& path, const std::vector<uint8_t>& buildId,
                               bool forDwarf = false) const;
    // Asks debuginfod for the files added since `from` that need it.
    void fetchFromDebuginfod(size_t from);
    std::unique_ptr<ElfSymbols> loadModule(const Mapping& m, FileStatus& status);
    void loadKernel();
    bool useVmlinux(const std::string& path, const std::string& how);
    bool useKcore(const std::string& path, const std::string& kallsyms, const std::string& how);
    bool useKallsyms(const std::string& path);
    bool kernelCodeAt(uint64_t ip) const;
    const Mapping* kernelMap() const;
    void addRegions(ProcessImage& process, const std::vector<Mapping>& maps);
    // The kernel-only image and every process's, from the sideband's mappings.
    void buildImages(ProcessImage& kernelOnly, std::map<int32_t, ProcessImage>& processes);
    const Region* regionAt(int32_t pid, uint64_t ip) const;
    // JIT code of one process: named ranges by start, not overlapping; `mapped`
    // is the jitdump holding the bytes (mapped_; -1: a perf map's, names only).
    struct JitRange {
        uint64_t start, end;
        uint32_t function;
        int mapped = -1;
        uint64_t offset = 0;  // of `start`'s byte in the dump
        int dump = -1;        // jitDumps_ (-1: a perf map's)
        uint64_t loadOffset =
            0;  // of the first byte of the load it comes from (a cut range's may be before `offset`)
    };
    // What a jitdump says beyond names and code: its machine and line tables.
    struct JitDumpInfo {
        std::string path;
        unsigned machine = 0;
        std::map<uint64_t, std::vector<JitLine>> lines;  // code address -> its debug info (the latest)
    };
    std::vector<JitDumpInfo> jitDumps_;
    // Reads the JIT files of the sideband's processes not read before: the pids whose JIT code changed.
    std::vector<int32_t> loadJit();
    void addJitFile(const std::string& path, bool dump, int32_t pid, std::vector<int32_t>& changed);
    // Places `range` over what `pid` had there; true when it covered part of an
    // earlier jitdump range (code reloaded at an address).
    bool addJitRange(int32_t pid, const JitRange& range);
    const JitRange* jitAt(int32_t pid, uint64_t ip) const;

    const Sideband* sideband_;
    bool kernelMapSeen_ = false;  // prepare() or update() saw the recorded kernel map
    FunctionTable& functions_;
    ImageOptions options_;
    std::vector<FileStatus> files_;
    std::vector<int> mappedOf_;  // files_ -> mapped_ (-1: not mapped)
    std::vector<std::unique_ptr<ElfSymbols>> symbols_;
    std::map<std::string, int> fileIndex_;  // recorded name -> files_
    std::map<int32_t, ProcessImage> processes_;
    ProcessImage kernelOnly_;

    struct KernelSection {
        uint64_t vaddr, size;
        int mapped;  // index into mapped_
        uint64_t offset;
    };
    std::vector<MappedFile> mapped_;
    std::map<std::string, int> mappedIndex_;
    std::vector<KernelSection> kernelSections_;  // by vaddr
    std::unique_ptr<ElfSymbols> kernelSymbols_;
    KernelStatus kernelStatus_;
    std::string kernelMissing_;  // kernel code at an address no kernel code covers
    std::string tempKcore_;      // /proc/kcore's copy, removed with the resolver
    std::vector<std::string> notes_;
    std::map<int32_t, std::map<uint64_t, JitRange>> jit_;  // pid -> ranges by start
    std::vector<JitFileStatus> jitFiles_;
    std::map<std::string, int> jitRead_;  // path -> jitFiles_
    // How far each JIT file was read (it is read again, from there, when it grew).
    struct JitProgress {
        uint64_t size = 0;  // of the file when read
        size_t items = 0;   // perf map symbols / jitdump code loads taken
        size_t moves = 0;   // jitdump code moves taken
        int mapped = -1;    // the dump's newest mapping (mapped_)
        int dump = -1;      // jitDumps_
        std::map<uint64_t, std::pair<uint32_t, uint64_t>> byIndex;  // code_index -> function, code offset
    };
    std::map<std::string, JitProgress> jitProgress_;
    std::map<std::string, std::string>
        debugFiles_;  // resolved path -> its DWARF's debug file ("" : own / none)
    std::vector<std::vector<uint8_t>> recordedBuildId_;  // files_ -> the build-id its mapping recorded
    DebuginfodStatus debuginfodStatus_;
    bool debuginfodOffline_ = false;
};

}  // namespace auxscope
