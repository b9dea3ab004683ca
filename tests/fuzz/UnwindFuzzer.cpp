// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for DWARF unwinding (decode/samples/DwarfUnwinder; issue
// 25): the unwinder's inputs are what a --call-graph dwarf sample carries (the
// user registers and the stack copy) and the process it names; the code, CFI
// and mappings come from a real recording of the test program
// (AUXSCOPE_UNWIND_FUZZ_CAPTURE, made by run_unwind_fuzzer.sh with perf).
//
// Input: [process index][flags][max frames, u16][registers: 8 bytes per bit of
// the recording's sample_regs_user][stack copy...]; flags bit 0 says the
// 32-bit ABI. Each input is unwound by both engines (CFI rows and libdwfl),
// with workers kept across inputs as a profile keeps them: a crash, a hang,
// more frames than asked, or any difference between the engines' frames or
// stop reasons is a finding.
//
// With AUXSCOPE_UNWIND_FUZZ_SEEDS=DIR it writes the recording's samples as
// inputs into DIR and exits (the run script's seeds).
#include <elf.h>
#include <linux/perf_event.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"
#include "samples/DwarfUnwinder.h"
#include "sideband/Sideband.h"
#include "spans/FunctionTable.h"

using namespace auxscope;

namespace {

struct Capture {
    std::optional<PerfDataReader> reader;
    std::optional<Sideband> sideband;
    FunctionTable functions;
    std::unique_ptr<ImageResolver> images;
    uint16_t machine = EM_X86_64;
    uint64_t mask = 0;
    std::vector<int32_t> pids;
    std::unique_ptr<DwarfUnwinder> rows, dwfl;
    std::unique_ptr<DwarfUnwinder::Worker> rowsWorker, dwflWorker;
};

Capture* gCapture = nullptr;

void writeSeeds(const Capture& c, const std::string& dir) {
    size_t written = 0, seen = 0;
    (void)c.reader->forEachRecord([&](const PerfRecord& rec) {
        const ParsedRecord& p = rec.parsed;
        if (p.type != PERF_RECORD_SAMPLE || !p.event || !p.stackUserSize) return true;
        if (seen++ % 8) return true;  // every 8th sample, up to 48
        std::vector<uint8_t> input;
        size_t index = 0;
        while (index < c.pids.size() && c.pids[index] != p.pid)
            ++index;
        input.push_back(uint8_t(index));
        input.push_back(p.regsUserAbi == PERF_SAMPLE_REGS_ABI_32 ? 1 : 0);
        input.push_back(127), input.push_back(0);
        input.insert(input.end(), p.regsUser.begin(), p.regsUser.end());
        input.insert(input.end(), p.stackUser.begin(), p.stackUser.end());
        const std::string path = dir + "/seed-sample-" + std::to_string(written);
        if (FILE* f = std::fopen(path.c_str(), "wb")) {
            std::fwrite(input.data(), 1, input.size(), f);
            std::fclose(f);
        }
        return ++written < 48;
    });
    std::printf("wrote %zu seeds to %s\n", written, dir.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const char* path = std::getenv("AUXSCOPE_UNWIND_FUZZ_CAPTURE");
    if (!path) {
        std::fprintf(stderr, "AUXSCOPE_UNWIND_FUZZ_CAPTURE: set it to a perf --call-graph dwarf recording\n");
        std::exit(2);
    }
    auto* c = new Capture;  // for the whole run (never destroyed: the fuzzer exits from anywhere)
    auto reader = PerfDataReader::open(path);
    if (!reader) {
        std::fprintf(stderr, "%s\n", reader.error().message.c_str());
        std::exit(2);
    }
    c->reader.emplace(std::move(*reader));
    auto sideband = Sideband::load(*c->reader);
    if (!sideband) std::exit(2);
    c->sideband.emplace(std::move(*sideband));
    c->images = std::make_unique<ImageResolver>(*c->sideband, c->functions, ImageOptions{});
    c->images->prepare();
    c->machine = elfMachineOfArch(c->reader->features().arch.value_or("x86_64"));
    (void)c->reader->forEachRecord([&](const PerfRecord& rec) {
        const ParsedRecord& p = rec.parsed;
        if (p.type != PERF_RECORD_SAMPLE || !p.event || !p.stackUserSize) return true;
        c->mask = p.event->sampleRegsUser;
        bool known = false;
        for (int32_t pid : c->pids)
            known |= pid == p.pid;
        if (!known) c->pids.push_back(p.pid);
        return true;
    });
    if (c->pids.empty()) c->pids.push_back(-1);
    if (const char* seeds = std::getenv("AUXSCOPE_UNWIND_FUZZ_SEEDS")) {
        writeSeeds(*c, seeds);
        std::exit(0);
    }
    c->rows = std::make_unique<DwarfUnwinder>(*c->images, c->machine,
                                              DwarfUnwinder::Options{DwarfUnwinder::Engine::CfiRows});
    c->dwfl = std::make_unique<DwarfUnwinder>(*c->images, c->machine,
                                              DwarfUnwinder::Options{DwarfUnwinder::Engine::Libdwfl});
    c->rowsWorker = c->rows->worker();
    c->dwflWorker = c->dwfl->worker();
    gCapture = c;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Capture& c = *gCapture;
    if (size < 4) return 0;
    const int32_t pid = c.pids[data[0] % c.pids.size()];
    UserStackCopy copy;
    copy.abi = data[1] & 1 ? PERF_SAMPLE_REGS_ABI_32 : PERF_SAMPLE_REGS_ABI_64;
    copy.regsMask = c.mask;
    size_t maxFrames = size_t(data[2]) | size_t(data[3]) << 8;
    maxFrames = maxFrames % 1024;
    const size_t regBytes = 8 * size_t(__builtin_popcountll(c.mask));
    const size_t available = size - 4;
    copy.regs = {data + 4, std::min(regBytes, available)};
    if (available > regBytes) copy.stack = {data + 4 + regBytes, available - regBytes};
    std::vector<uint64_t> rows, dwfl;
    const UnwindStop rowsStop = c.rows->unwind(*c.rowsWorker, pid, copy, rows, maxFrames);
    const UnwindStop dwflStop = c.dwfl->unwind(*c.dwflWorker, pid, copy, dwfl, maxFrames);
    if (rows.size() > maxFrames) {
        std::fprintf(stderr, "%zu frames listed, %zu asked for\n", rows.size(), maxFrames);
        std::abort();
    }
    if (rows != dwfl || rowsStop != dwflStop) {
        std::fprintf(stderr, "the engines differ: CFI rows (%s):", unwindStopName(rowsStop));
        for (uint64_t a : rows)
            std::fprintf(stderr, " %llx", (unsigned long long)a);
        std::fprintf(stderr, "\n  libdwfl (%s):", unwindStopName(dwflStop));
        for (uint64_t a : dwfl)
            std::fprintf(stderr, " %llx", (unsigned long long)a);
        std::fprintf(stderr, "\n");
        std::abort();
    }
    return 0;
}
