// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Hand-built Arm SPE packets and a minimal arm_spe perf.data around them, for
// the SPE tests: packets encoded from their fields (Arm ARM layouts), and a file
// with the AUXTRACE_INFO (v1 or v2), TIME_CONV (perf time == the SPE counter),
// COMM and SWITCH_CPU_WIDE sideband, and AUXTRACE buffers per CPU.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope::spetest {

// Packet encoders: each appends one packet to `out`.
struct SpeBytes {
    std::vector<uint8_t> bytes;
    SpeBytes& pad(size_t n = 1);
    SpeBytes& end();
    SpeBytes& ts(uint64_t v);
    SpeBytes& events(uint64_t v, unsigned payloadBytes = 2);
    SpeBytes& source(uint64_t v, unsigned payloadBytes = 2);
    SpeBytes& context(uint32_t v, unsigned index = 0);
    SpeBytes& op(unsigned cls, uint8_t payload);
    SpeBytes& addr(unsigned index, uint64_t payload);  // index >= 8: the extended header
    SpeBytes& counter(unsigned index, uint16_t v);     // index >= 8: the extended header
    SpeBytes& raw(std::initializer_list<uint8_t> b);
    // "b0 d0 c2 ..." hex bytes.
    SpeBytes& hex(const std::string& text);
};

struct SpeTestThread {
    int32_t pid = 0, tid = 0;
    std::string comm;
};
// The thread `tid` (of `pid`) comes onto `cpu` at `time` (a SWITCH_CPU_WIDE out of the idle task).
struct SpeTestSwitch {
    int cpu = 0;
    uint64_t time = 0;
    int32_t pid = 0, tid = 0;
};

struct SpeTestFileSpec {
    int infoVersion = 1;
    uint64_t pmuType = 10;
    uint64_t midr = 0x410fd0c1;  // Neoverse N1 r0p1 (version 2 info only)
    bool timeConv = true;        // TIME_CONV shift 0, mult 1, zero 0
    std::vector<SpeTestThread> threads;
    std::vector<SpeTestSwitch> switches;
    std::map<int, std::vector<std::vector<uint8_t>>> buffers;  // per CPU, its AUXTRACE buffers in order
};

Expected<void> writeSpeTestFile(const std::string& path, const SpeTestFileSpec& spec);

}  // namespace auxscope::spetest
