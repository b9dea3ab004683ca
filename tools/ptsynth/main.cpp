// SPDX-License-Identifier: GPL-3.0-or-later
// auxscope-ptsynth: Intel PT traces with a known ground truth, on machines
// without PT hardware. See --help and PtSynth*.h.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "PtSynthEncoder.h"
#include "PtSynthExample.h"
#include "PtSynthGenerator.h"
#include "PtSynthPerfData.h"
#include "PtSynthStepper.h"
#include "PtSynthTruth.h"

using namespace auxscope;
using namespace auxscope::ptsynth;

namespace {

const char* kUsage =
    "usage: auxscope-ptsynth [OPTIONS] -o OUT -- COMMAND [ARGS...]\n"
    "       auxscope-ptsynth --generate SIZE_MB [--seed N] [OPTIONS] -o OUT\n"
    "       auxscope-ptsynth --example [--seed N] [-q] -o OUT\n"
    "\n"
    "Writes a perf.data with an Intel PT trace (AUXTRACE) synthesized from a known\n"
    "execution, and OUT.truth with what really executed (format: PtSynthTruth.h).\n"
    "\n"
    "Step mode runs COMMAND under ptrace single-step (user space; ~15k instructions/s).\n"
    "Generate mode writes a random executable next to OUT (OUT without extension\n"
    "+ '-code.elf') and encodes its control flow at full speed until SIZE_MB of PT.\n"
    "Example mode writes a small recording to show auxscope on a machine without\n"
    "Intel PT: a generated program with recursion and named functions, run by four\n"
    "threads of one process on three CPUs (one thread sleeps now and then, two take\n"
    "turns on a CPU), as perf record -e intel_pt//u -e cpu-clock -g with context\n"
    "switches would write it: per-CPU Intel PT, sideband (COMM, FORK, MMAP2,\n"
    "ITRACE_START, SWITCH_CPU_WIDE, AUX, EXIT) and cpu-clock samples every 10 us of a\n"
    "thread's CPU time with their call chains; OUT.truth has each thread's counts.\n"
    "  auxscope-ptsynth --example -o /tmp/intel-pt-example.data\n"
    "  auxscope /tmp/intel-pt-example.data\n"
    "\n"
    "  -o, --output FILE    the perf.data (default ptsynth.data)\n"
    "  --max-insns N        stop after N instructions (step mode default 30000;\n"
    "                       generate mode: no limit unless given)\n"
    "  --start SYMBOL       step mode: run untraced up to this function of the\n"
    "                       executable (e.g. main), trace from there\n"
    "  --aslr               step mode: keep address-space randomization (default off)\n"
    "  --example            example mode (above); takes --seed, -o and -q only\n"
    "  --seed N             generate and example mode: program and path seed (default 1)\n"
    "  --functions N        generate mode: functions in the program (default 120)\n"
    "  --straight N         generate mode: straight-line runs N times as long (default 1;\n"
    "                       above 1 also without recursive calls: denser spans, ~60\n"
    "                       instructions a call at 4)\n"
    "  --truth-list         generate mode: list every IP and event in the truth\n"
    "                       (always on in step mode)\n"
    "  --noretcomp          no return compression (every RET is a TIP)\n"
    "  --no-mtc             no MTC/TMA timing packets (TSC in PSB+ only)\n"
    "  --fine-time          one TSC tick per crystal clock tick and an MTC at every\n"
    "                       tick (mtc_period 0): every branch packet carries the\n"
    "                       time to the instruction, as CYC would\n"
    "  --psb-period BYTES   PT bytes between PSB+ (default 4096)\n"
    "  --chunk BYTES        bytes per AUXTRACE record, cut at a PSB (default 4 MiB)\n"
    "  --raw FILE           also write the bare PT stream\n"
    "  -q, --quiet          no summary\n";

std::optional<uint64_t> number(const std::string& s) {
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const uint64_t v = std::strtoull(s.c_str(), &end, 0);
    if (errno || *end) return std::nullopt;
    return v;
}

int fail(const std::string& message) {
    std::fprintf(stderr, "auxscope-ptsynth: %s\n", message.c_str());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    std::string out = "ptsynth.data", rawPath, startSymbol;
    std::optional<uint64_t> maxInsns, generateMb;
    uint64_t seed = 1, functions = 120, straight = 1;
    bool aslr = false, quiet = false, truthList = false, example = false;
    PtEncoderOptions enc;
    std::vector<std::string> command;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> std::optional<std::string> {
            if (i + 1 >= args.size()) return std::nullopt;
            return args[++i];
        };
        auto numeric = [&](uint64_t& into) -> bool {
            auto v = value();
            auto n = v ? number(*v) : std::nullopt;
            if (!n) return false;
            into = *n;
            return true;
        };
        uint64_t n = 0;
        if (a == "--") {
            command.assign(args.begin() + long(i) + 1, args.end());
            break;
        } else if (a == "-h" || a == "--help") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (a == "-o" || a == "--output") {
            auto v = value();
            if (!v) return fail("-o needs a file name");
            out = *v;
        } else if (a == "--max-insns") {
            if (!numeric(n)) return fail("--max-insns needs a number");
            maxInsns = n;
        } else if (a == "--generate") {
            if (!numeric(n) || n == 0) return fail("--generate needs a size in MB");
            generateMb = n;
        } else if (a == "--example") {
            example = true;
        } else if (a == "--seed") {
            if (!numeric(seed)) return fail("--seed needs a number");
        } else if (a == "--functions") {
            if (!numeric(functions) || functions < 2) return fail("--functions needs a number >= 2");
        } else if (a == "--straight") {
            if (!numeric(straight) || straight < 1 || straight > 1000)
                return fail("--straight needs a number from 1 to 1000");
        } else if (a == "--start") {
            auto v = value();
            if (!v) return fail("--start needs a symbol");
            startSymbol = *v;
        } else if (a == "--aslr") {
            aslr = true;
        } else if (a == "--truth-list") {
            truthList = true;
        } else if (a == "--noretcomp") {
            enc.retCompression = false;
        } else if (a == "--no-mtc") {
            enc.mtc = false;
        } else if (a == "--fine-time") {
            enc.mtcFreq = 0;
            enc.ctcEax = enc.ctcEbx = 1;
        } else if (a == "--psb-period") {
            if (!numeric(enc.psbPeriod) || enc.psbPeriod < 64)
                return fail("--psb-period needs a number >= 64");
        } else if (a == "--chunk") {
            if (!numeric(enc.chunkBytes) || enc.chunkBytes < 256)
                return fail("--chunk needs a number >= 256");
        } else if (a == "--raw") {
            auto v = value();
            if (!v) return fail("--raw needs a file name");
            rawPath = *v;
        } else if (a == "-q" || a == "--quiet") {
            quiet = true;
        } else {
            return fail("unknown option '" + a + "' (see --help)");
        }
    }
    if (example) {
        for (const auto& a : args)
            if (a.rfind("-", 0) == 0 && a != "--example" && a != "--seed" && a != "-o" && a != "--output" &&
                a != "-q" && a != "--quiet")
                return fail("--example takes only --seed, -o and -q, not " + a);
        if (!command.empty()) return fail("--example takes no command");
        const auto t0 = std::chrono::steady_clock::now();
        ExampleOptions eo;
        eo.path = out;
        eo.seed = seed;
        eo.cmdline = {"auxscope-ptsynth"};
        eo.cmdline.insert(eo.cmdline.end(), args.begin(), args.end());
        auto r = writeExample(eo);
        if (!r) return fail(r.error().message);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!quiet) {
            std::printf("auxscope-ptsynth: %s: an Intel PT example, %u threads on %u CPUs, %.2f s\n",
                        out.c_str(), r->threads, r->cpus, secs);
            std::printf("  %" PRIu64 " instructions, %" PRIu64 " calls, %" PRIu64 " bytes of PT in %" PRIu64
                        " AUXTRACE records, %" PRIu64 " context switches, %" PRIu64
                        " cpu-clock samples,"
                        " %.2f ms\n",
                        r->instructions, r->calls, r->ptBytes, r->auxRecords, r->switches, r->samples,
                        double(r->lastTime - r->firstTime) / 1e6);
            std::printf("  program: %s\n  truth: %s\n  open it: auxscope %s\n", r->elfPath.c_str(),
                        r->truthPath.c_str(), out.c_str());
        }
        return 0;
    }
    if (!generateMb && command.empty())
        return fail("nothing to do: give -- COMMAND, --generate SIZE_MB or --example (see --help)");
    if (generateMb && !command.empty()) return fail("--generate takes no command");

    const auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<PtGenerator> generator;
    const std::filesystem::path outPath(out);
    const std::string elfPath = (outPath.parent_path() / (outPath.stem().string() + "-code.elf")).string();
    if (generateMb) {
        GeneratorOptions go;
        go.seed = seed;
        go.stopAtBytes = *generateMb << 20;
        go.maxInsns = maxInsns.value_or(0);
        go.functions = unsigned(functions);
        go.straight = unsigned(straight);
        go.elfPath = elfPath;
        auto g = PtGenerator::create(go);
        if (!g) return fail(g.error().message);
        generator = std::move(g.value());
    }

    PtSynthFileOptions fo;
    fo.path = out;
    fo.encoder = enc;
    fo.cmdline = {"auxscope-ptsynth"};
    fo.cmdline.insert(fo.cmdline.end(), args.begin(), args.end());
    // The stepper learns pid and comm only once the program runs: the file is
    // created then (sideband.started).
    std::unique_ptr<PtSynthPerfData> file;
    FILE* raw = nullptr;
    if (!rawPath.empty() && !(raw = std::fopen(rawPath.c_str(), "wb")))
        return fail(rawPath + ": cannot create: " + std::strerror(errno));
    PtFlowEncoder encoder(enc, [&](std::span<const uint8_t> chunk) -> Expected<void> {
        if (raw && std::fwrite(chunk.data(), 1, chunk.size(), raw) != chunk.size())
            return makeError(rawPath + ": cannot write: " + std::strerror(errno));
        if (!file) return makeError("trace produced before the perf.data was created");
        return file->auxtrace(chunk, encoder.tsc());
    });
    if (!encoder.ok()) return fail(encoder.error().message);

    Truth truth;
    encoder.setPsbObserver([&](uint64_t tsc) { truth.psb(tsc); });
    std::string summaryExtra;
    if (generator) {
        truth.mode = "generate";
        truth.command = "--generate " + std::to_string(*generateMb) + " --seed " + std::to_string(seed) +
                        " --functions " + std::to_string(functions) +
                        (straight > 1 ? " --straight " + std::to_string(straight) : std::string()) +
                        (maxInsns ? " --max-insns " + std::to_string(*maxInsns) : std::string());
        truth.keepLists = truthList;
        truth.pid = truth.tid = 4242;  // nothing ran: any id names the imaginary process
        fo.pid = fo.tid = 4242;
        fo.comm = std::filesystem::path(elfPath).filename().string();
        auto f = PtSynthPerfData::create(fo);
        if (!f) return fail(f.error().message);
        file = std::move(f.value());
        const uint64_t before = encoder.tsc() - 1;
        if (auto r = file->comm(before); !r) return fail(r.error().message);
        if (auto r = file->mmap2(generator->mapping(), before); !r) return fail(r.error().message);
        if (auto r = generator->run(encoder, truth); !r) return fail(r.error().message);
    } else {
        truth.mode = "step";
        for (const auto& c : command)
            truth.command += (truth.command.empty() ? "" : " ") + c;
        StepOptions so;
        so.argv = command;
        so.maxInsns = maxInsns.value_or(30000);
        so.startSymbol = startSymbol;
        so.disableAslr = !aslr;
        StepSideband sb;
        sb.started = [&](pid_t pid, const std::string& comm, uint64_t tsc) -> Expected<void> {
            fo.pid = fo.tid = pid;
            fo.comm = comm;
            auto f = PtSynthPerfData::create(fo);
            if (!f) return f.error();
            file = std::move(f.value());
            return file->comm(tsc);
        };
        sb.mapped = [&](const PtSynthMapping& m, uint64_t tsc) { return file->mmap2(m, tsc); };
        auto r = runStepped(so, encoder, truth, sb);
        if (!r) return fail(r.error().message);
        for (const auto& note : r->notes)
            std::fprintf(stderr, "auxscope-ptsynth: note: %s\n", note.c_str());
        summaryExtra = r->exited ? " (the program ended)" : " (cut at --max-insns)";
    }
    encoder.finish();
    if (raw) std::fclose(raw);
    if (!encoder.ok()) return fail(encoder.error().message);
    if (auto r = file->exit(encoder.tsc()); !r) return fail(r.error().message);
    if (auto r = file->finish(); !r) return fail(r.error().message);
    if (auto r = truth.write(out + ".truth"); !r) return fail(r.error().message);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!quiet) {
        const auto& s = encoder.stats();
        std::printf("auxscope-ptsynth: %s: %" PRIu64 " instructions%s, %" PRIu64 " bytes of PT in %" PRIu64
                    " AUXTRACE records, %.2f s (%.1f MB/s of PT)\n",
                    out.c_str(), truth.instructions, summaryExtra.c_str(), s.bytes, s.chunks, secs,
                    double(s.bytes) / 1e6 / std::max(secs, 1e-9));
        std::printf("  packets: psb %" PRIu64 " tnt %" PRIu64 " tip %" PRIu64 " tip.pge %" PRIu64
                    " tip.pgd %" PRIu64 " fup %" PRIu64 " mtc %" PRIu64 " tsc %" PRIu64
                    "; returns compressed %" PRIu64 ", as TIP %" PRIu64 "\n",
                    s.psb, s.tnt, s.tip, s.tipPge, s.tipPgd, s.fup, s.mtc, s.tsc, s.compressedReturns,
                    s.uncompressedReturns);
        std::printf("  truth: %s.truth (calls %" PRIu64 ", returns %" PRIu64 ", syscalls %" PRIu64
                    ", signals %" PRIu64 ", hash 0x%016" PRIx64 ")\n",
                    out.c_str(), truth.calls, truth.returns, truth.syscalls, truth.signals, truth.hash);
        if (generator)
            std::printf("  program: %s (%" PRIu64 " bytes of code)\n", elfPath.c_str(),
                        generator->stats().codeBytes);
    }
    return 0;
}
