// SPDX-License-Identifier: GPL-3.0-or-later
#include "OpenCsdCrashFile.h"

#include <cstdint>
#include <fstream>
#include <iterator>
#include <vector>

#include "EtmSnapPerfData.h"

namespace auxscope::isolationtest {

Expected<void> writeOpenCsdCrashPerfData(const std::string& input, const std::string& path) {
    std::ifstream in(input, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < 64 || bytes[0] % 3 != 2 || (bytes[1] & 3) != 3 || (bytes[1] & 4))
        return makeError(input + ": not an etm_fuzzer decoder input for formatted ETE");
    // EtmFuzzer.cpp's fixed configuration (juno_r1_1's ETM_0 registers, ETE) ...
    etm::EtmSourceConfig c;
    c.protocol = etm::EtmProtocol::Ete;
    c.core = {etm::EtmArch::AA64, etm::EtmProfile::CortexA};
    c.trcconfigr = 0xC1;
    c.trctraceidr = 0x10;
    c.trcidr0 = 0x28000EA1;
    c.trcidr1 = 0x4100F403;
    c.trcidr2 = 0x488;
    // ... and its code page, at the fuzzer's three addresses.
    std::vector<uint8_t> page(1 << 16);
    uint32_t x = 1;
    for (uint8_t& b : page) {
        x = x * 1103515245u + 12345u;
        b = uint8_t(x >> 16);
    }
    etmsnap::SnapshotTrace s;
    s.dir = path;
    s.bufferName = "ETB_0";
    s.input = etm::EtmInput::Formatted;
    etm::SnapshotSource source;
    source.name = "ETM_0";
    source.core = "cpu_0";
    source.config = c;
    s.sources.push_back(source);
    s.cpus.push_back(0);
    s.authStatus.push_back(0);
    for (uint64_t base : {uint64_t(0), uint64_t(0xc0000000ull), uint64_t(0xffffffc000080000ull)})
        s.dumps.push_back({base, page});
    const std::vector<uint8_t> trace(bytes.begin() + 2, bytes.end());
    const size_t half = trace.size() / 2;
    const std::vector<uint8_t> first(trace.begin(), trace.begin() + long(half));
    const std::vector<uint8_t> second(trace.begin() + long(half), trace.end());
    s.buffer = first;
    std::string prefix = path;
    if (prefix.size() > 5 && prefix.ends_with(".data")) prefix.resize(prefix.size() - 5);
    auto elfs = etmsnap::writeDumpElfs(s, prefix + "-dump");
    if (!elfs) return elfs.error();
    etmsnap::SnapPerfDataOptions o;
    // Enough copies of the first half on either side that the file is cut into
    // several segments (about 1 MiB each, auxscope's default) with the crash in
    // one of the middle ones.
    constexpr unsigned kAround = 160;
    o.copies = 2 * kAround + 1;
    o.copyBytes.assign(o.copies, first);
    o.copyBytes[kAround] = second;
    o.bufferNs = 1'000'000;
    return etmsnap::writeSnapshotPerfData(s, *elfs, o, path);
}

}  // namespace auxscope::isolationtest
