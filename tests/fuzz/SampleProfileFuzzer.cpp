// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for sampled profiles (decode/samples/SampleProfile; issue
// 25): any bytes are read as a perf.data, its sideband loaded, every sample's
// stack read (callchains, LBR call stacks, user stack copies unwound) and
// symbolized, and the whole recording's statistics computed for every sampled
// event and for off-CPU time. Bad records must give counted notes, never a
// crash, a hang or statistics that do not add up.
//
// Seeds: small perf recordings of the sampled-stacks test program with -g and
// --call-graph dwarf (run_sample_profile_fuzzer.sh). Symbols come from the
// files the recording names (the test program, libc); the running kernel's
// symbols are not loaded per input (ImageOptions::runningKernel off), which
// keeps an input in milliseconds. The files' symbols are read once per process
// (ImageOptions::symbolCache): every input names the same program and libc, and
// reading libc's symbols again for each input was most of the time an input
// took (16 inputs a second); the cache keeps only what the files say, keyed by
// their identity on disk, so no state of one input reaches the next.
// Inlined frames are left out (SampleProfileOptions::inlineFrames off): libdwfl
// read and decompressed libc's separate debug info for every input to find
// them, most of what an input then cost, and their look-up reads the files'
// DWARF, not the input (the input only picks addresses).
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "images/ElfSymbols.h"
#include "perfdata/PerfDataReader.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"

using namespace auxscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto reader = PerfDataReader::fromBytes(std::vector<uint8_t>(data, data + size), "fuzz.data");
    if (!reader) return 0;
    auto sideband = Sideband::load(*reader);
    if (!sideband) return 0;
    SampleProfileOptions options;
    options.images.runningKernel = false;
    options.images.buildIdCache = "/nonexistent";
    static const auto symbols = std::make_shared<ElfSymbolCache>(8);
    options.images.symbolCache = symbols;
    options.threads = 1;
    options.inlineFrames = false;
    auto profile =
        SampleProfile::load(*reader, std::make_shared<const Sideband>(std::move(*sideband)), options);
    if (!profile) return 0;
    const SampleProfile& p = **profile;
    for (size_t i = 1; i < p.size(); ++i)
        if (p.time(i) < p.time(i - 1)) std::abort();  // by time
    for (size_t i = 0; i < p.size(); ++i) {
        if (p.node(i) >= p.tree().size()) std::abort();
        for (const SampleProfile::Frame& f : p.stack(i))
            if (f.function >= p.functions().size()) std::abort();
    }
    for (const StackNote& n : p.stackNotes())
        if (n.reason.empty() || n.samples == 0) std::abort();
    std::vector<int> sources{SampleQuery::kOffCpu};
    for (const SampledEvent& e : p.events())
        if (e.samples) sources.push_back(e.attr);
    for (int source : sources) {
        SampleQuery q;
        q.event = source;
        q.perThreadTrees = true;
        auto stats = computeSampleRangeStats(p, q);
        if (!stats) std::abort();
        // Every sample of the event counts once at the root; threads add up to it.
        uint64_t samples = 0;
        for (const auto& [tid, t] : stats->threads)
            samples += t.samples;
        if (samples != stats->tree.nodes[0].cost.totalSamples) std::abort();
        if (source != SampleQuery::kOffCpu && samples != p.events()[size_t(source)].samples) std::abort();
        (void)stats->bottomUp();
        (void)stats->flameStacks();
    }
    return 0;
}
