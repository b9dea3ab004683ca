// SPDX-License-Identifier: GPL-3.0-or-later
#include "SpeTestFile.h"

#include <linux/perf_event.h>

#include <cstring>
#include <sstream>

#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataFormat.h"
#include "perfdata/PerfDataWriter.h"

namespace auxscope::spetest {

namespace {

void le(std::vector<uint8_t>& out, uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; ++i)
        out.push_back(uint8_t(v >> (8 * i)));
}

unsigned sizeCode(unsigned bytes) {
    return bytes == 1 ? 0 : bytes == 2 ? 1 : bytes == 4 ? 2 : 3;
}

}  // namespace

SpeBytes& SpeBytes::pad(size_t n) {
    bytes.insert(bytes.end(), n, 0x00);
    return *this;
}
SpeBytes& SpeBytes::end() {
    bytes.push_back(0x01);
    return *this;
}
SpeBytes& SpeBytes::ts(uint64_t v) {
    bytes.push_back(0x71);
    le(bytes, v, 8);
    return *this;
}
SpeBytes& SpeBytes::events(uint64_t v, unsigned n) {
    bytes.push_back(uint8_t(0x42 | sizeCode(n) << 4));
    le(bytes, v, n);
    return *this;
}
SpeBytes& SpeBytes::source(uint64_t v, unsigned n) {
    bytes.push_back(uint8_t(0x43 | sizeCode(n) << 4));
    le(bytes, v, n);
    return *this;
}
SpeBytes& SpeBytes::context(uint32_t v, unsigned index) {
    bytes.push_back(uint8_t(0x64 | (index & 3)));
    le(bytes, v, 4);
    return *this;
}
SpeBytes& SpeBytes::op(unsigned cls, uint8_t payload) {
    bytes.push_back(uint8_t(0x48 | (cls & 3)));
    bytes.push_back(payload);
    return *this;
}
SpeBytes& SpeBytes::addr(unsigned index, uint64_t payload) {
    if (index >= 8) bytes.push_back(uint8_t(0x20 | ((index >> 3) & 3)));
    bytes.push_back(uint8_t(0xb0 | (index & 7)));
    le(bytes, payload, 8);
    return *this;
}
SpeBytes& SpeBytes::counter(unsigned index, uint16_t v) {
    if (index >= 8) bytes.push_back(uint8_t(0x20 | ((index >> 3) & 3)));
    bytes.push_back(uint8_t(0x98 | (index & 7)));
    le(bytes, v, 2);
    return *this;
}
SpeBytes& SpeBytes::raw(std::initializer_list<uint8_t> b) {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return *this;
}
SpeBytes& SpeBytes::hex(const std::string& text) {
    std::istringstream in(text);
    std::string byte;
    while (in >> byte)
        bytes.push_back(uint8_t(std::stoul(byte, nullptr, 16)));
    return *this;
}

Expected<void> writeSpeTestFile(const std::string& path, const SpeTestFileSpec& spec) {
    PerfDataEventAttr spe;
    spe.name = "arm_spe_0//";
    spe.attr.type = uint32_t(spec.pmuType);
    spe.attr.size = sizeof(perf_event_attr);
    spe.attr.sample_type =
        PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
    spe.attr.sample_id_all = 1;
    spe.ids = {1};
    PerfDataEventAttr tracking = spe;
    tracking.name = "dummy:u";
    tracking.attr.type = PERF_TYPE_SOFTWARE;
    tracking.attr.config = PERF_COUNT_SW_DUMMY;
    tracking.attr.context_switch = 1;
    tracking.attr.comm = 1;
    tracking.ids = {2};
    auto writer = PerfDataWriter::create(path, {spe, tracking});
    if (!writer) return writer.error();
    PerfDataWriter& w = **writer;
    auto add = [&](RecordBuilder&& b) { return w.writeRecord(b.finish()); };
    if (spec.timeConv) {
        perf_event_mmap_page page{};
        page.cap_user_time_zero = 1;
        page.time_shift = 0;
        page.time_mult = 1;
        page.time_zero = 0;
        if (auto r = w.writeTimeConv(page); !r) return r.error();
    }
    ArmSpeInfo info;
    info.version = uint64_t(spec.infoVersion);
    info.pmuType = spec.pmuType;
    info.perCpuMmaps = 1;
    if (spec.infoVersion >= 2)
        for (const auto& [cpu, bufs] : spec.buffers)
            info.cpus.push_back({uint64_t(cpu), spec.midr, spec.pmuType, 1024, 3, {}});
    if (auto r = w.writeAuxtraceInfo(auxtrace::kTypeArmSpe, encodeArmSpeInfo(info)); !r) return r.error();
    for (const SpeTestThread& t : spec.threads)
        if (auto r = add(std::move(RecordBuilder(PERF_RECORD_COMM)
                                       .u32(uint32_t(t.pid))
                                       .u32(uint32_t(t.tid))
                                       .str(t.comm)
                                       .sampleId({tracking.attr.sample_type, 2, 0}, t.pid, t.tid, 1)));
            !r)
            return r.error();
    for (const SpeTestSwitch& s : spec.switches)
        if (auto r = add(std::move(
                RecordBuilder(PERF_RECORD_SWITCH_CPU_WIDE)
                    .u32(0)
                    .u32(0)
                    .sampleId({tracking.attr.sample_type, 2, uint32_t(s.cpu)}, s.pid, s.tid, s.time)));
            !r)
            return r.error();
    for (const auto& [cpu, bufs] : spec.buffers) {
        uint64_t offset = 0;
        for (const std::vector<uint8_t>& b : bufs) {
            perfdata::AuxtraceRecord head{};
            head.offset = offset;
            head.idx = uint32_t(cpu);
            head.tid = uint32_t(-1);
            head.cpu = uint32_t(cpu);
            if (auto r = w.writeAuxtrace(head, b); !r) return r.error();
            offset += b.size();
        }
    }
    return w.finish();
}

}  // namespace auxscope::spetest
