// SPDX-License-Identifier: GPL-3.0-or-later
// Kernel code in the Intel PT decode: a tiny "kernel" (PtKernelFixture.S, linked
// at kernel addresses) whose flow is encoded with libipt's encoder (ptsynth's
// PtFlowEncoder) into a perf.data with perf's kernel map record, then decoded
// with --vmlinux (at its link addresses, and moved by a KASLR offset), with a
// kcore_dir (kcore + kallsyms + modules, module symbols named by module), from
// perf's build-id cache, and without kernel code (a missing image that says
// what to pass). Also the running kernel's /proc/kallsyms (names of known
// functions and module symbols) and /proc/kcore (their bytes), skipped with
// the reason when this machine does not expose them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "PtSynthEncoder.h"
#include "PtSynthPerfData.h"
#include "images/ElfSymbols.h"
#include "perfdata/FeatureWriter.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PtSpanDecoder.h"
#include "sideband/Sideband.h"

namespace auxscope {
namespace {

namespace fs = std::filesystem;
using ptsynth::PtEncoderOptions;
using ptsynth::PtFlowEncoder;
using ptsynth::PtSynthFileOptions;
using ptsynth::PtSynthPerfData;

constexpr int32_t kPid = 4242;
const std::string kVmlinux = AUXSCOPE_KERNEL_VMLINUX;  // linked at 0xffffffff81000000
const std::string kShifted = AUXSCOPE_KERNEL_SHIFTED;  // the same, linked kShift higher
constexpr uint64_t kShift = AUXSCOPE_KERNEL_SHIFT;

const char* const kLabels[] = {"_text",        "_stext",       "_etext",     "kentry",
                               "kentry_ret1",  "kentry_ret2",  "kentry_end", "kfunc_a",
                               "kfunc_a_ret",  "kfunc_b",      "kfunc_b_jz", "kfunc_b_skip",
                               "kfunc_b_ret1", "kfunc_b_ret2", "mod_func",   "mod_func_ret"};

// The fixture's labels at link addresses.
std::map<std::string, uint64_t> labels() {
    std::map<std::string, uint64_t> out;
    for (const char* l : kLabels) {
        auto v = elfSymbolValue(kVmlinux, l);
        EXPECT_TRUE(v) << kVmlinux << ": no symbol " << l;
        out[l] = v.value_or(0);
    }
    return out;
}

struct TempDir {
    std::string path;
    TempDir() {
        static int n = 0;
        path = (fs::temp_directory_path() /
                ("auxscope-kernel-" + std::to_string(::getpid()) + "-" + std::to_string(n++)))
                   .string();
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
};

struct TraceOptions {
    uint64_t shift = 0;            // KASLR: where the kernel runs relative to its link addresses
    bool kernelMap = true;         // the file has perf's kernel map record
    std::vector<uint8_t> buildId;  // the recorded kernel's (HEADER_BUILD_ID)
};

// A perf.data whose trace runs through the fixture's kernel code at
// link address + shift: kentry calls kfunc_a, then kfunc_b, which takes its
// branch and calls kfunc_a and mod_func (the "module"); tracing stops at kentry_end.
std::string writeKernelTrace(const std::string& path, const TraceOptions& o) {
    auto at = labels();
    auto A = [&](const char* l) { return at[l] + o.shift; };
    PtSynthFileOptions fo;
    fo.path = path;
    fo.pid = kPid;
    fo.tid = kPid;
    fo.comm = "ktest";
    auto file = PtSynthPerfData::create(fo);
    EXPECT_TRUE(file) << file.error().message;
    if (!file) return {};
    PtSynthPerfData& f = **file;
    PtEncoderOptions eo;
    std::unique_ptr<PtFlowEncoder> enc;
    enc = std::make_unique<PtFlowEncoder>(
        eo, [&](std::span<const uint8_t> chunk) -> Expected<void> { return f.auxtrace(chunk, enc->tsc()); });
    EXPECT_TRUE(f.comm(eo.startTsc - 100));
    if (o.kernelMap) {
        EXPECT_TRUE(f.kernelMmap(A("_text"), ~uint64_t(0) - A("_text"), A("_text"), eo.startTsc - 50, "_text",
                                 o.buildId));
    }
    PtFlowEncoder& e = *enc;
    e.enable(A("kentry"), true);
    e.retire(1);
    e.directCall(A("kentry_ret1"), A("kfunc_a"));
    e.retire(2);
    e.ret(A("kentry_ret1"));
    e.retire(1);
    e.directCall(A("kentry_ret2"), A("kfunc_b"));
    e.retire(2);
    e.conditional(true, A("kfunc_b_skip"));
    e.retire(1);
    e.directCall(A("kfunc_b_ret1"), A("kfunc_a"));
    e.retire(2);
    e.ret(A("kfunc_b_ret1"));
    e.retire(1);
    e.directCall(A("kfunc_b_ret2"), A("mod_func"));
    e.retire(2);
    e.ret(A("kfunc_b_ret2"));
    e.retire(1);
    e.ret(A("kentry_ret2"));
    e.retire(1);
    e.asyncDisable(A("kentry_end"));
    e.finish();
    EXPECT_TRUE(e.ok()) << e.error().message;
    EXPECT_TRUE(f.exit(e.tsc() + 10));
    EXPECT_TRUE(f.finish());
    return path;
}

struct Decoded {
    std::vector<std::string> spans;  // "name depth N" of every span, in order; gaps "[reason: detail]"
    std::map<std::string, std::string> fileOf;
    std::map<std::string, uint64_t> addressOf;
    DecodeStats stats;
    std::vector<std::string> notes;
    ImageResolver::KernelStatus kernel;
    std::map<std::string, std::string> hints;  // missing image -> missingHint()
};

Decoded decode(const std::string& path, const ImageOptions& images) {
    Decoded d;
    auto file = PerfDataReader::open(path);
    EXPECT_TRUE(file) << file.error().message;
    if (!file) return d;
    PtSessionOptions so;
    so.images = images;
    auto session = PtSession::open(*file, so);
    EXPECT_TRUE(session) << session.error().message;
    if (!session) return d;
    PtSession& s = **session;
    DecodedSpans result = s.decodeSpans({}, 1);
    d.stats = result.stats;
    d.notes = s.images().notes();
    d.kernel = s.images().kernel();
    for (const auto& [name, n] : d.stats.missingImages)
        d.hints[name] = s.images().missingHint(name);
    for (const auto& [tid, store] : result.threads) {
        for (size_t i = 0; i < store.size(); ++i) {
            Span span = store.at(i);
            if (span.isGap()) {
                const Gap& gap = store.gaps()[size_t(span.gap)];
                d.spans.push_back(std::string("[") + gapReasonName(gap.reason) + ": " + gap.detail + "]");
                continue;
            }
            const FunctionInfo& fn = s.functions()[span.function];
            d.spans.push_back(fn.name + " depth " + std::to_string(span.depth));
            d.fileOf[fn.name] = fn.file;
            d.addressOf[fn.name] = fn.address;
        }
    }
    return d;
}

// What the flow must decode to, whatever supplied the code.
const std::vector<std::string> kExpectedSpans = {
    "kentry depth 0", "kfunc_a depth 1", "kfunc_b depth 1", "kfunc_a depth 2", "mod_func depth 2",
};
constexpr uint64_t kExpectedInstructions = 14;  // kentry 3, kfunc_a 2 + 2, kfunc_b 5, mod_func 2

std::vector<std::string> functionSpans(const Decoded& d) {
    std::vector<std::string> out;
    for (const std::string& s : d.spans)
        if (s[0] != '[') out.push_back(s);
    return out;
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v)
        s += "  " + x + "\n";
    return s;
}

void expectKernelFlow(const Decoded& d, uint64_t shift) {
    EXPECT_EQ(functionSpans(d), kExpectedSpans) << joined(d.spans);
    EXPECT_EQ(d.stats.instructions, kExpectedInstructions);
    EXPECT_EQ(d.stats.gaps.count(GapReason::MissingImage), 0u) << joined(d.spans);
    EXPECT_EQ(d.stats.gaps.count(GapReason::DecodeError), 0u) << joined(d.spans);
    auto at = labels();
    EXPECT_EQ(d.addressOf.at("kentry"), at["kentry"] + shift);
    EXPECT_EQ(d.addressOf.at("kfunc_b"), at["kfunc_b"] + shift);
    EXPECT_EQ(d.fileOf.at("kentry"), "[kernel.kallsyms]");
}

TEST(PtKernel, VmlinuxAtItsLinkAddresses) {
    TempDir dir;
    std::string path = writeKernelTrace(dir.path + "/k.data", {});
    ImageOptions io;
    io.vmlinux = kVmlinux;
    io.buildIdCache = dir.path + "/no-cache";
    io.runningKernel = false;
    Decoded d = decode(path, io);
    expectKernelFlow(d, 0);
    EXPECT_EQ(d.kernel.code, kVmlinux);
    EXPECT_EQ(d.kernel.kaslrOffset, 0);
    EXPECT_EQ(d.fileOf.at("mod_func"), "[kernel.kallsyms]");
}

TEST(PtKernel, VmlinuxMovedByTheKaslrOffsetOfTheKernelMap) {
    TempDir dir;
    TraceOptions to;
    to.shift = kShift;
    std::string path = writeKernelTrace(dir.path + "/k.data", to);
    ImageOptions io;
    io.vmlinux = kVmlinux;
    io.buildIdCache = dir.path + "/no-cache";
    io.runningKernel = false;
    Decoded d = decode(path, io);
    expectKernelFlow(d, kShift);
    EXPECT_EQ(d.kernel.kaslrOffset, int64_t(kShift));
    EXPECT_EQ(d.kernel.sections, 2u);  // .text and the "module" section
}

TEST(PtKernel, VmlinuxWithoutKernelMapStaysAtLinkAddressesAndSaysSo) {
    TempDir dir;
    TraceOptions to;
    to.kernelMap = false;
    std::string path = writeKernelTrace(dir.path + "/k.data", to);
    ImageOptions io;
    io.vmlinux = kVmlinux;
    io.buildIdCache = dir.path + "/no-cache";
    io.runningKernel = false;
    Decoded d = decode(path, io);
    expectKernelFlow(d, 0);
    ASSERT_FALSE(d.notes.empty());
    EXPECT_NE(d.notes[0].find("no kernel map recorded"), std::string::npos) << d.notes[0];
}

// perf record --kcore's directory: kcore (an ELF core with PT_LOAD at run-time
// addresses: here the fixture linked at the shifted address), kallsyms, modules.
std::string writeKcoreDir(const std::string& dir, uint64_t kallsymsShift, uint64_t shift) {
    fs::create_directories(dir);
    fs::copy_file(kShifted, dir + "/kcore", fs::copy_options::overwrite_existing);
    auto at = labels();
    std::ofstream ks(dir + "/kallsyms");
    char line[256];
    // Unsorted, with data symbols and a module's, as /proc/kallsyms is.
    const std::pair<const char*, char> symbols[] = {{"kfunc_b", 'T'}, {"_text", 'T'},   {"_stext", 'T'},
                                                    {"kentry", 'T'},  {"kfunc_a", 't'}, {"_etext", 'T'}};
    for (auto [name, type] : symbols) {
        std::snprintf(line, sizeof line, "%016llx %c %s\n", (unsigned long long)(at[name] + kallsymsShift),
                      type, name);
        ks << line;
    }
    std::snprintf(line, sizeof line, "%016llx d some_data\n",
                  (unsigned long long)(at["_etext"] + kallsymsShift));
    ks << line;
    std::snprintf(line, sizeof line, "%016llx t mod_func\t[fakemod]\n",
                  (unsigned long long)(at["mod_func"] + kallsymsShift));
    ks << line;
    std::ofstream mods(dir + "/modules");
    std::snprintf(line, sizeof line, "fakemod 4096 0 - Live 0x%016llx\n",
                  (unsigned long long)(at["mod_func"] + shift));
    mods << line;
    return dir;
}

TEST(PtKernel, KcoreDirGivesCodeAndKallsymsNamesWithModules) {
    TempDir dir;
    TraceOptions to;
    to.shift = kShift;
    std::string path = writeKernelTrace(dir.path + "/k.data", to);
    ImageOptions io;
    io.kcore = writeKcoreDir(dir.path + "/kcore_dir", kShift, kShift);
    io.buildIdCache = dir.path + "/no-cache";
    io.runningKernel = false;
    Decoded d = decode(path, io);
    expectKernelFlow(d, kShift);
    EXPECT_EQ(d.fileOf.at("mod_func"), "[fakemod]") << "module symbols name their module";
    EXPECT_EQ(d.kernel.code, io.kcore + "/kcore");
    EXPECT_EQ(d.kernel.symbols, io.kcore + "/kallsyms");
    EXPECT_EQ(d.kernel.sections, 2u);  // kernel text and the module, not kcore's header page
    EXPECT_TRUE(d.notes.empty()) << joined(d.notes);
}

TEST(PtKernel, KcoreFileWithKallsymsOption) {
    TempDir dir;
    TraceOptions to;
    to.shift = kShift;
    std::string path = writeKernelTrace(dir.path + "/k.data", to);
    std::string kd = writeKcoreDir(dir.path + "/kcore_dir", kShift, kShift);
    fs::rename(kd + "/kallsyms", dir.path + "/ksyms");
    ImageOptions io;
    io.kcore = kd + "/kcore";
    io.kallsyms = dir.path + "/ksyms";
    io.buildIdCache = dir.path + "/no-cache";
    io.runningKernel = false;
    Decoded d = decode(path, io);
    expectKernelFlow(d, kShift);
    EXPECT_EQ(d.kernel.symbols, io.kallsyms);
}

// A kcore that cannot be mapped (/proc/kcore) is read into a private copy of its
// text; a /proc path to the test's kcore takes that path.
TEST(PtKernel, KcoreUnderProcIsCopiedBeforeUse) {
    TempDir dir;
    TraceOptions to;
    to.shift = kShift;
    std::string path = writeKernelTrace(dir.path + "/k.data", to);
    std::string kd = writeKcoreDir(dir.path + "/kcore_dir", kShift, kShift);
    ImageOptions io;
    io.kcore = "/proc/self/root" + fs::absolute(kd).string() + "/kcore";
    io.kallsyms = kd + "/kallsyms";
    io.buildIdCache = dir.path + "/no-cache";
    io.runningKernel = false;
    Decoded d = decode(path, io);
    expectKernelFlow(d, kShift);
    EXPECT_EQ(d.kernel.code, io.kcore);
    EXPECT_EQ(d.kernel.sections, 2u);
}

// The command line: auxscope decode FILE --vmlinux F (and --kcore D, --kallsyms F).
std::string run(const std::string& command) {
    std::string out;
    FILE* p = ::popen((command + " 2>&1").c_str(), "r");
    if (!p) return out;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, p)) > 0)
        out.append(buffer, n);
    ::pclose(p);
    return out;
}

TEST(PtKernel, DecodeCommandTakesTheKernelOptions) {
    TempDir dir;
    TraceOptions to;
    to.shift = kShift;
    std::string path = writeKernelTrace(dir.path + "/k.data", to);
    const std::string bin = AUXSCOPE_BIN;
    std::string out = run("HOME=" + dir.path + " " + bin + " decode " + path + " --vmlinux " + kVmlinux);
    EXPECT_NE(out.find("  kfunc_b\n"), std::string::npos) << out;
    EXPECT_NE(out.find("    mod_func\n"), std::string::npos) << out;
    EXPECT_NE(out.find("kernel: code " + kVmlinux +
                       " (2 ranges, 34 bytes, KASLR offset 0x2a00000), symbols " + kVmlinux),
              std::string::npos)
        << out;
    std::string kd = writeKcoreDir(dir.path + "/kcore_dir", kShift, kShift);
    out = run("HOME=" + dir.path + " " + bin + " decode " + path + " --kcore " + kd + " --format insn");
    EXPECT_NE(out.find("mod_func"), std::string::npos) << out;
    EXPECT_NE(out.find("kernel: code " + kd + "/kcore"), std::string::npos) << out;
    out = run("HOME=" + dir.path + " " + bin + " decode " + path + " --kallsyms " + kd + "/kallsyms");
    EXPECT_NE(
        out.find("missing image: [kernel.kallsyms]_text (1 gaps; kernel code: pass --kcore or --vmlinux)"),
        std::string::npos)
        << out;
    out = run(bin + " decode " + path + " --vmlinux " + dir.path + "/nonexistent");
    EXPECT_NE(out.find("--vmlinux " + dir.path + "/nonexistent: No such file or directory"),
              std::string::npos)
        << out;
}

TEST(PtKernel, KallsymsOfAnotherBootIsNoted) {
    TempDir dir;
    TraceOptions to;
    to.shift = kShift;
    std::string path = writeKernelTrace(dir.path + "/k.data", to);
    ImageOptions io;
    io.kcore = writeKcoreDir(dir.path + "/kcore_dir", 0, kShift);  // kallsyms of an unshifted boot
    io.buildIdCache = dir.path + "/no-cache";
    io.runningKernel = false;
    Decoded d = decode(path, io);
    ASSERT_FALSE(d.notes.empty());
    EXPECT_NE(joined(d.notes).find("not the boot that recorded"), std::string::npos) << joined(d.notes);
}

TEST(PtKernel, MissingKernelCodeSaysWhatToPass) {
    TempDir dir;
    std::string path = writeKernelTrace(dir.path + "/k.data", {});
    ImageOptions io;
    io.buildIdCache = dir.path + "/no-cache";
    io.runningKernel = false;
    Decoded d = decode(path, io);
    EXPECT_TRUE(functionSpans(d).empty()) << joined(d.spans);
    // Named by the recorded kernel map (as the user-space files are) ...
    ASSERT_EQ(d.stats.missingImages.size(), 1u);
    EXPECT_EQ(d.stats.missingImages.begin()->first, "[kernel.kallsyms]_text");
    EXPECT_NE(
        joined(d.spans).find(
            "[missing image: missing image [kernel.kallsyms]_text (kernel code: pass --kcore or --vmlinux)]"),
        std::string::npos)
        << joined(d.spans);
    // ... with what to pass.
    EXPECT_EQ(d.hints.at("[kernel.kallsyms]_text"), "kernel code: pass --kcore or --vmlinux");
    // Without a kernel map record too: the address alone says it is kernel code.
    TraceOptions to;
    to.kernelMap = false;
    path = writeKernelTrace(dir.path + "/k2.data", to);
    d = decode(path, io);
    ASSERT_EQ(d.stats.missingImages.size(), 1u);
    EXPECT_EQ(d.stats.missingImages.begin()->first,
              "[kernel.kallsyms] (kernel code: pass --kcore or --vmlinux)");
}

std::string hexOf(const std::vector<uint8_t>& b) {
    std::string s;
    char x[3];
    for (uint8_t v : b)
        std::snprintf(x, sizeof x, "%02x", v), s += x;
    return s;
}

TEST(PtKernel, BuildIdCacheHoldsTheVmlinux) {
    TempDir dir;
    auto id = FeatureWriter::elfBuildId(kVmlinux);
    ASSERT_TRUE(id && id->size() == 20) << "the fixture is linked with --build-id";
    TraceOptions to;
    to.shift = kShift;
    to.buildId = *id;
    std::string path = writeKernelTrace(dir.path + "/k.data", to);
    // As perf buildid-cache -a keeps it: .build-id/xx/rest -> ../../[kernel.kallsyms]/<id>, holding elf.
    const std::string hex = hexOf(*id);
    const std::string store = dir.path + "/cache/[kernel.kallsyms]/" + hex;
    fs::create_directories(store);
    fs::copy_file(kVmlinux, store + "/elf");
    fs::create_directories(dir.path + "/cache/.build-id/" + hex.substr(0, 2));
    fs::create_directory_symlink("../../[kernel.kallsyms]/" + hex,
                                 dir.path + "/cache/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2));
    ImageOptions io;
    io.buildIdCache = dir.path + "/cache";
    io.runningKernel = false;
    Decoded d = decode(path, io);
    expectKernelFlow(d, kShift);
    EXPECT_NE(d.kernel.code.find(dir.path + "/cache/"), std::string::npos) << d.kernel.code;
    EXPECT_NE(joined(d.notes).find("perf's build-id cache"), std::string::npos) << joined(d.notes);

    // A kcore copy there (perf buildid-cache --kcore: a dated directory) works the same.
    fs::remove(store + "/elf");
    writeKcoreDir(store + "/2026112118000000", kShift, kShift);
    d = decode(path, io);
    expectKernelFlow(d, kShift);
    EXPECT_NE(d.kernel.code.find("/2026112118000000/kcore"), std::string::npos) << d.kernel.code;
}

TEST(PtKernel, VmlinuxOfAnotherBuildIsNoted) {
    TempDir dir;
    TraceOptions to;
    to.buildId = std::vector<uint8_t>(20, 0xab);
    std::string path = writeKernelTrace(dir.path + "/k.data", to);
    ImageOptions io;
    io.vmlinux = kVmlinux;
    io.buildIdCache = dir.path + "/no-cache";
    io.runningKernel = false;
    Decoded d = decode(path, io);
    expectKernelFlow(d, 0);
    EXPECT_NE(joined(d.notes).find("another build"), std::string::npos) << joined(d.notes);
}

// ------------------------------------------------------------- the running kernel

struct Kallsym {
    uint64_t address = 0;
    char type = 0;
    std::string module;
};

std::map<std::string, Kallsym> readKallsyms() {
    std::map<std::string, Kallsym> out;
    std::ifstream in("/proc/kallsyms");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string address, type, name, module;
        if (!(f >> address >> type >> name)) continue;
        f >> module;
        out.emplace(name, Kallsym{std::stoull(address, nullptr, 16), type[0], module});
    }
    return out;
}

// A perf.data with the running kernel's map (as perf record writes it here).
std::string writeRunningKernelMap(const std::string& path, uint64_t text) {
    PtSynthFileOptions fo;
    fo.path = path;
    fo.pid = kPid;
    fo.tid = kPid;
    fo.comm = "ktest";
    auto file = PtSynthPerfData::create(fo);
    EXPECT_TRUE(file) << file.error().message;
    if (!file) return {};
    EXPECT_TRUE((*file)->comm(100));
    EXPECT_TRUE((*file)->kernelMmap(text, ~uint64_t(0) - text, text, 200));
    EXPECT_TRUE((*file)->finish());
    return path;
}

// A recording with only the running kernel's map (at `text`, its _text), and an
// ImageResolver over it with `io` (no build-id cache, no automatic /proc/kcore).
struct RunningKernelImages {
    TempDir dir;
    std::unique_ptr<PerfDataReader> file;
    std::unique_ptr<Sideband> sideband;
    FunctionTable functions;
    std::unique_ptr<ImageResolver> images;
    std::string error;
    RunningKernelImages(uint64_t text, ImageOptions io) {
        auto f = PerfDataReader::open(writeRunningKernelMap(dir.path + "/k.data", text));
        if (!f) {
            error = f.error().message;
            return;
        }
        file = std::make_unique<PerfDataReader>(std::move(*f));
        auto sb = Sideband::load(*file);
        if (!sb) {
            error = sb.error().message;
            return;
        }
        sideband = std::make_unique<Sideband>(std::move(*sb));
        io.buildIdCache = dir.path + "/no-cache";
        io.runningKernel = false;
        images = std::make_unique<ImageResolver>(*sideband, functions, io);
        images->prepare();
    }
};

TEST(PtKernelRunning, KallsymsNamesKernelAndModuleFunctions) {
    auto syms = readKallsyms();
    if (syms.empty() || syms.count("_text") == 0 || syms["_text"].address == 0)
        GTEST_SKIP() << "/proc/kallsyms is unreadable or hides addresses (kptr_restrict): not root?";
    ImageOptions io;
    io.kallsyms = "/proc/kallsyms";
    RunningKernelImages k(syms["_text"].address, io);
    ASSERT_TRUE(k.images) << k.error;
    ImageResolver& images = *k.images;
    FunctionTable& functions = k.functions;
    EXPECT_EQ(images.kernel().symbols, "/proc/kallsyms");
    size_t checked = 0;
    for (const char* name : {"vfs_read", "schedule", "do_sys_open", "__x64_sys_read", "kfree"}) {
        auto it = syms.find(name);
        if (it == syms.end() || (it->second.type != 'T' && it->second.type != 't')) continue;
        const FunctionInfo& fn = functions[images.functionAt(kPid, it->second.address + 1)];
        EXPECT_EQ(fn.name, name);
        EXPECT_EQ(fn.file, "[kernel.kallsyms]");
        EXPECT_EQ(fn.address, it->second.address);
        ++checked;
    }
    EXPECT_GE(checked, 2u);
    // A module's function (when any module is loaded).
    for (const auto& [name, s] : syms) {
        if (s.module.empty() || (s.type != 't' && s.type != 'T') || s.module == "[bpf]") continue;
        const FunctionInfo& fn = functions[images.functionAt(-1, s.address)];
        EXPECT_EQ(fn.file, s.module) << name;
        break;
    }
    // Names but no code: still a missing image, saying what to pass.
    const std::string* missing = images.missingFileAt(kPid, syms["_text"].address);
    ASSERT_NE(missing, nullptr);
    EXPECT_EQ(*missing, "[kernel.kallsyms]_text");
    EXPECT_EQ(images.missingHintAt(kPid, syms["_text"].address), "kernel code: pass --kcore or --vmlinux");
}

TEST(PtKernelRunning, ProcKcoreGivesTheBytesOfKernelFunctions) {
    if (::access("/proc/kcore", R_OK) != 0)
        GTEST_SKIP() << "/proc/kcore is not readable here (" << std::strerror(errno)
                     << "): needs root and a kernel with CONFIG_PROC_KCORE";
    auto syms = readKallsyms();
    if (syms.count("_text") == 0 || syms["_text"].address == 0)
        GTEST_SKIP() << "/proc/kallsyms hides addresses (kptr_restrict)";
    ImageOptions io;
    io.kcore = "/proc/kcore";
    RunningKernelImages k(syms["_text"].address, io);
    ASSERT_TRUE(k.images) << k.error;
    ImageResolver& images = *k.images;
    FunctionTable& functions = k.functions;
    ASSERT_EQ(images.kernel().code, "/proc/kcore") << joined(images.notes());
    EXPECT_EQ(images.kernel().symbols, "/proc/kallsyms");
    // The oracle: the same bytes read from /proc/kcore through its own program headers.
    auto segments = elfLoadSegments("/proc/kcore");
    ASSERT_TRUE(segments) << segments.error().message;
    int fd = ::open("/proc/kcore", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    size_t checked = 0;
    for (const char* name : {"vfs_read", "schedule", "kfree", "__x64_sys_read"}) {
        auto it = syms.find(name);
        if (it == syms.end()) continue;
        const uint64_t ip = it->second.address;
        std::vector<uint8_t> expected(32), got(32);
        bool found = false;
        for (const ElfLoadSegment& s : *segments)
            if (ip >= s.vaddr && ip + 32 <= s.vaddr + s.fileSize)
                found = ::pread(fd, expected.data(), 32, off_t(s.offset + (ip - s.vaddr))) == 32;
        ASSERT_TRUE(found) << name;
        ASSERT_TRUE(images.read(kPid, ip, got.data(), got.size())) << name;
        EXPECT_EQ(got, expected) << name;
        EXPECT_EQ(functions[images.functionAt(kPid, ip + 1)].name, name);
        EXPECT_EQ(images.missingFileAt(kPid, ip), nullptr) << name;
        ++checked;
    }
    ::close(fd);
    EXPECT_GE(checked, 2u);
}

}  // namespace
}  // namespace auxscope
