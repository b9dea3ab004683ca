// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for the ELF/image loader (decode/images, elfutils-based;
// issue 17).
// The input is one file (in /dev/shm, else the temp dir; rewritten per input) read every
// way auxscope reads a file someone else made:
//   - ElfSymbols::load as a user-space image, and as a kernel module (.ko)
//     placed at a module address; lookups by address, file offset and name;
//   - elfLoadSegments, elfSymbolValue, elfModuleSections, and buildIdFromNotes
//     over the bytes;
//   - ElfSymbols::loadKallsyms (the same bytes as a kallsyms listing);
//   - ImageResolver over a small fixed recording (made once, with the project's
//     perf.data writer) whose process maps the file and whose kernel comes from
//     it, as --vmlinux (even input sizes) or as --kcore with it as kallsyms too
//     (odd); prepare() and every query a decoder makes.
// Errors are fine; crashes, leaks, out-of-bounds reads and UB are not. Built
// with clang and ASan/UBSan by tests/fuzz/hardening_fuzz.cmake.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "images/ElfSymbols.h"
#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/PerfDataWriter.h"
#include "sideband/Sideband.h"
#include "spans/FunctionTable.h"

using namespace auxscope;

namespace {

constexpr int32_t kPid = 42;
constexpr uint64_t kUserBase = 0x400000, kUserLength = 0x200000;
constexpr uint64_t kKernelBase = 0xffffffff81000000ull, kKernelLength = 0x2000000;
constexpr uint64_t kModuleBase = 0xffffffffc0000000ull;

// The fuzzed file: one regular file in memory for the whole run (a
// /proc/self/fd path would take ImageResolver's /proc/kcore copy path instead
// of mapping it), rewritten per input, removed at exit (never destroyed: the
// atexit handler runs after static destructors registered later).
struct FuzzFile {
    int fd = -1;
    std::string path;
};

const FuzzFile& fuzzFile() {
    static const FuzzFile& f = *new FuzzFile([] {
        FuzzFile ff;
        // In /dev/shm (memory) where there is one: rewriting a file on disk
        // per input made the filesystem write it back (truncate, then write).
        std::error_code ec;
        const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm", ec)
                                              ? std::filesystem::path("/dev/shm")
                                              : std::filesystem::temp_directory_path();
        ff.path = (dir / ("auxscope-elf-fuzz-" + std::to_string(::getpid()) + ".elf")).string();
        ff.fd = ::open(ff.path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (ff.fd < 0) std::abort();
        std::atexit([] { ::unlink(fuzzFile().path.c_str()); });
        return ff;
    }());
    return f;
}

// A recording whose process kPid maps the fuzzed file and whose kernel map is
// the usual [kernel.kallsyms]_text, read back once.
struct Recording {
    std::optional<PerfDataReader> reader;
    std::optional<Sideband> sideband;
};

const Recording& recording() {
    static const Recording rec = [] {
        Recording r;
        const std::string path = (std::filesystem::temp_directory_path() /
                                  ("auxscope-elf-fuzz-" + std::to_string(::getpid()) + ".data"))
                                     .string();
        PerfDataEventAttr dummy;
        dummy.name = "dummy:u";
        dummy.attr.type = PERF_TYPE_SOFTWARE;
        dummy.attr.config = PERF_COUNT_SW_DUMMY;
        dummy.attr.size = sizeof(perf_event_attr);
        dummy.attr.sample_type =
            PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
        dummy.attr.sample_id_all = 1;
        dummy.ids = {1};
        auto w = PerfDataWriter::create(path, {dummy});
        if (!w) std::abort();
        const SampleIdSpec id{dummy.attr.sample_type, 1, 0};
        auto add = [&](RecordBuilder&& b) {
            if (!(*w)->writeRecord(b.finish())) std::abort();
        };
        add(std::move(RecordBuilder(PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL)
                          .u32(uint32_t(-1))
                          .u32(0)
                          .u64(kKernelBase)
                          .u64(kKernelLength)
                          .u64(kKernelBase)
                          .str("[kernel.kallsyms]_text")
                          .sampleId(id, -1, 0, 1)));
        add(std::move(
            RecordBuilder(PERF_RECORD_COMM).u32(kPid).u32(kPid).str("fuzz").sampleId(id, kPid, kPid, 2)));
        add(std::move(RecordBuilder(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER)
                          .u32(kPid)
                          .u32(kPid)
                          .u64(kUserBase)
                          .u64(kUserLength)
                          .u64(0)
                          .u32(0)
                          .u32(0)
                          .u64(0)
                          .u64(0)
                          .u32(PROT_READ | PROT_EXEC)
                          .u32(MAP_PRIVATE)
                          .str(fuzzFile().path)
                          .sampleId(id, kPid, kPid, 3)));
        if (!(*w)->finish()) std::abort();
        auto reader = PerfDataReader::open(path);
        std::filesystem::remove(path);
        if (!reader) std::abort();
        r.reader.emplace(std::move(reader.value()));
        auto sb = Sideband::load(*r.reader);
        if (!sb) std::abort();
        r.sideband.emplace(std::move(sb.value()));
        return r;
    }();
    return rec;
}

void queries(const ElfSymbols& s, uint64_t base, uint64_t& touched) {
    for (uint64_t a : {base, base + 1, base + 0x40, base + 0x1000, base + 0x10000, uint64_t(0), ~uint64_t(0)})
        touched += s.functionAtAddress(a);
    for (uint64_t off : {uint64_t(0), uint64_t(0x40), uint64_t(0x1000), uint64_t(0x10000), ~uint64_t(0)})
        touched += s.functionAtFileOffset(off);
    for (const char* name : {"main", "_start", "_text", "", "[plt]"})
        touched += s.symbolAddress(name).value_or(0);
    for (const auto& [mod, span] : s.moduleSpans())
        touched += mod.size() + span.first;
    touched += s.symbolCount() + s.unknownFunction();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const FuzzFile& file = fuzzFile();
    const Recording& rec = recording();
    if (::ftruncate(file.fd, 0) != 0) std::abort();
    if (size && ::pwrite(file.fd, data, size, 0) != ssize_t(size)) std::abort();
    uint64_t touched = 0;

    FunctionTable functions;
    if (auto s = ElfSymbols::load(file.path, functions, "fuzz.elf"); s) {
        queries(**s, kUserBase, touched);
    } else if (s.error().message.empty()) {
        std::abort();
    }
    if (auto s = ElfSymbols::load(file.path, functions, "fuzz.ko", 0, kModuleBase); s) {
        queries(**s, kModuleBase, touched);
    } else if (s.error().message.empty()) {
        std::abort();
    }
    if (auto seg = elfLoadSegments(file.path); seg) {
        for (const auto& g : *seg)
            touched += g.offset + g.vaddr + g.fileSize + g.executable;
    } else if (seg.error().message.empty()) {
        std::abort();
    }
    touched += elfSymbolValue(file.path, "_text").value_or(0);
    if (auto sec = elfModuleSections(file.path, kModuleBase); sec) {
        for (const auto& m : *sec)
            touched += m.offset + m.vaddr + m.size + m.hasBytes;
    } else if (sec.error().message.empty()) {
        std::abort();
    }
    if (auto id = buildIdFromNotes(std::span<const uint8_t>(data, size))) touched += id->size();
    if (auto k = ElfSymbols::loadKallsyms(file.path, functions, "[kernel.kallsyms]"); k) {
        queries(**k, kKernelBase, touched);
    } else if (k.error().message.empty()) {
        std::abort();
    }

    ImageOptions options;
    options.buildIdCache = "/nonexistent/auxscope-fuzz-buildid-cache";
    options.runningKernel = false;
    if (size % 2 == 0) {
        options.vmlinux = file.path;
    } else {
        options.kcore = file.path;
        options.kallsyms = file.path;
    }
    FunctionTable imageFunctions;
    ImageResolver images(*rec.sideband, imageFunctions, options);
    images.prepare();
    uint8_t code[64];
    for (int32_t pid : {kPid, int32_t(-1), int32_t(7)}) {
        for (const auto& c : images.codeSections(pid)) {
            touched += c.vaddr + c.size + c.offset;
            if (c.size) touched += images.read(pid, c.vaddr, code, std::min<uint64_t>(c.size, sizeof code));
            if (c.size) touched += images.readSome(pid, c.vaddr + c.size - 1, code, sizeof code);
        }
        for (uint64_t ip : {kUserBase, kUserBase + 0x1000, kKernelBase, kKernelBase + 0x1234, uint64_t(1)}) {
            touched += images.functionAt(pid, ip);
            touched += images.readSome(pid, ip, code, sizeof code);
            if (const std::string* m = images.missingFileAt(pid, ip)) touched += m->size();
            touched += images.missingHintAt(pid, ip).size() + images.mappingAt(pid, ip).size();
        }
    }
    for (const auto& f : images.files())
        touched += f.recorded.size() + f.resolved.size() + f.symbols + f.mappings;
    for (const auto& n : images.notes())
        touched += n.size();
    touched += images.kernel().codeBytes + images.missingFiles();
    return touched == 1 ? 1 : 0;
}
