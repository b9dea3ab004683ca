// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for the CoreSight path: the first byte picks what the rest is
//   0: one .ini file for the snapshot .ini parser;
//   1: a whole snapshot, its files separated by NUL bytes: snapshot.ini,
//      device1.ini, device2.ini, trace.ini, trace.bin (written to a folder in
//      /dev/shm, memory, where there is one, else the temp dir;
//      read, and decoded in both output formats);
//   2: trace bytes for a decoder with a fixed configuration (the second byte
//      picks ETMv4/ETMv3/PTM/ETE, formatted or raw), with a fixed code image.
// Errors must be values with a message; nothing may crash or hang. Built with
// clang and AddressSanitizer/UBSan by tests/fuzz/etm_fuzz.cmake.
//
// With AUXSCOPE_ETM_FUZZ_SNAPSHOT=DIR in the environment an input is not decoded:
// it is written as the OpenCSD snapshot folders that feed OpenCSD's own
// trc_pkt_lister the same bytes with the same configuration (DIR/a and DIR/b: for
// selector 2 the two halves the decoder is fed with a reset between, with the
// fixed configuration and code image; for selector 1 the snapshot itself in
// DIR/a, and in DIR/b with its trace.bin cut to whole frames).
// tests/fuzz/opencsd_reproduce.sh runs trc_pkt_lister on them, so that a crash
// inside libopencsd is called the library's only when the library's own tool
// crashes on the same trace without auxscope in the way.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "etm/EtmDecoder.h"
#include "etm/EtmMemory.h"
#include "etm/EtmSnapshot.h"
#include "etm/EtmSnapshotDecode.h"
#include "etm/SnapshotIni.h"

using namespace auxscope::etm;

namespace {

struct Sink : EtmElementSink, EtmPacketSink {
    uint64_t n = 0;
    void element(const EtmElement& e) override {
        n += e.instructions + (e.kind == EtmElementKind::InstrRange ? 1 : 0);
        if (e.kind == EtmElementKind::InstrRange && e.end < e.start) std::abort();
    }
    void decodeError(uint64_t, uint8_t, std::string_view m) override {
        if (m.empty()) std::abort();
    }
    void packet(uint8_t, uint64_t, std::string_view text) override { n += text.size(); }
};

void fuzzIni(const uint8_t* data, size_t size) {
    auto ini = parseIni(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.ini");
    if (!ini.ok() && ini.error().message.rfind("fuzz.ini", 0) != 0) std::abort();
}

const char* snapshotOut() {
    return std::getenv("AUXSCOPE_ETM_FUZZ_SNAPSHOT");
}

void writeFile(const std::filesystem::path& file, const uint8_t* data, size_t size) {
    std::ofstream(file, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// Where selector 1 writes its snapshot: /dev/shm (memory) where there is one,
// so that an input costs no disk writes; else the temp folder.
std::filesystem::path scratchDir() {
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/shm", ec)) return "/dev/shm";
    return std::filesystem::temp_directory_path();
}

// The scratch snapshot of this process, removed when it exits.
std::filesystem::path scratch;

void removeScratch() {
    std::error_code ec;
    std::filesystem::remove_all(scratch, ec);
}

void fuzzSnapshot(const uint8_t* data, size_t size) {
    static const std::filesystem::path dir = [] {
        if (snapshotOut()) return std::filesystem::path(snapshotOut()) / "a";
        scratch = scratchDir() / ("auxscope-etm-fuzz-" + std::to_string(getpid()));
        std::atexit(removeScratch);
        return scratch;
    }();
    std::filesystem::create_directories(dir);
    const char* names[] = {"snapshot.ini", "device1.ini", "device2.ini", "trace.ini", "trace.bin"};
    size_t part = 0, start = 0;
    for (size_t i = 0; i <= size && part < 5; ++i) {
        if (i == size || (data[i] == 0 && part < 4)) {
            std::ofstream(dir / names[part], std::ios::binary | std::ios::trunc)
                .write(reinterpret_cast<const char*>(data + start), static_cast<std::streamsize>(i - start));
            ++part;
            start = i + 1;
        }
    }
    for (; part < 5; ++part)
        std::filesystem::remove(dir / names[part]);
    if (snapshotOut()) {
        // DIR/b: the same snapshot with trace.bin cut to whole 16-byte frames.
        // EtmDecoder hands a frame-formatted buffer to OpenCSD in whole frames
        // (a partial last frame is kept back, never decoded), while
        // trc_pkt_lister hands it the file's blocks as they are and the
        // deformatter refuses a block that is not whole frames: a fatal error
        // that ends the lister's decode before it reaches what auxscope fed.
        const std::filesystem::path b = std::filesystem::path(snapshotOut()) / "b";
        std::error_code ec;
        std::filesystem::remove_all(b, ec);
        std::filesystem::copy(dir, b, ec);
        if (!ec && std::filesystem::exists(b / "trace.bin", ec)) {
            const auto n = std::filesystem::file_size(b / "trace.bin", ec);
            if (!ec && n % 16) std::filesystem::resize_file(b / "trace.bin", n - n % 16, ec);
        }
        return;
    }
    auto snap = EtmSnapshot::read(dir.string());
    if (!snap.ok()) {
        if (snap.error().message.empty()) std::abort();
        return;
    }
    for (const auto& b : snap->buffers()) {
        auto s = snap->sources(b.name);
        if (!s.ok() && s.error().message.empty()) std::abort();
        (void)snap->dumps(b.name);
    }
    for (auto format : {EtmOutputFormat::Ranges, EtmOutputFormat::Packets}) {
        std::ostringstream out;
        auto sum = decodeSnapshot(dir.string(), format, out);
        if (!sum.ok() && sum.error().message.empty()) std::abort();
    }
}

// Selector 2's input as two OpenCSD snapshot folders (see the top of this file):
// the same configuration registers, the same code at the same addresses, each half
// of the trace in a folder of its own (the decoder is reset between the halves).
void writeDecoderSnapshots(const EtmSourceConfig& c, bool raw, const std::vector<uint8_t>& page,
                           const std::vector<uint64_t>& bases, const uint8_t* data, size_t size) {
    auto reg = [](const char* name, uint32_t value) {
        char line[64];
        std::snprintf(line, sizeof line, "%s=0x%X\n", name, value);
        return std::string(line);
    };
    std::string regs;
    if (c.protocol == EtmProtocol::EtmV4 || c.protocol == EtmProtocol::Ete) {
        regs = reg("TRCCONFIGR(0x004)", c.trcconfigr) + reg("TRCTRACEIDR(0x010)", c.trctraceidr) +
               reg("TRCIDR0(0x078)", c.trcidr0) + reg("TRCIDR1(0x079)", c.trcidr1) +
               reg("TRCIDR2(0x07A)", c.trcidr2) + reg("TRCIDR8(0x060)", c.trcidr8);
        if (c.protocol == EtmProtocol::Ete) regs += reg("TRCDEVARCH(0x3EE)", c.trcdevarch);
    } else {
        regs = reg("ETMCR(0x000)", c.etmcr) + reg("ETMIDR(0x079)", c.etmidr) +
               reg("ETMCCER(0x07A)", c.etmccer) + reg("ETMTRACEIDR(0x080)", c.etmtraceidr);
    }
    const char* type = c.protocol == EtmProtocol::EtmV4   ? "ETM4"
                       : c.protocol == EtmProtocol::Ete   ? "ETE"
                       : c.protocol == EtmProtocol::EtmV3 ? "ETM3"
                                                          : "PTM1";
    const char* core = c.core.arch == EtmArch::V7     ? "ARMv7-A"
                       : c.core.arch == EtmArch::AA64 ? "ARM-AA64"
                                                      : "ARMv8-A";
    const size_t half = size / 2;
    const std::pair<const char*, std::pair<size_t, size_t>> parts[] = {{"a", {0, half}}, {"b", {half, size}}};
    for (const auto& [name, range] : parts) {
        const std::filesystem::path dir = std::filesystem::path(snapshotOut()) / name;
        std::filesystem::create_directories(dir);
        // The bytes the decoder is fed: formatted trace in whole 16-byte frames
        // (EtmDecoder keeps a partial frame back; trc_pkt_lister would hand it to
        // the deformatter, which rejects the whole last block it reads).
        size_t length = range.second - range.first;
        if (!raw) length -= length % 16;
        writeFile(dir / "trace.bin", data + range.first, length);
        // A file of its own per dump: OpenCSD maps a file only once.
        for (size_t i = 0; i < bases.size(); ++i)
            writeFile(dir / ("code" + std::to_string(i + 1) + ".bin"), page.data(), page.size());
        std::ofstream(dir / "etm.ini")
            << "[device]\nname=ETM_0\nclass=trace_source\ntype=" << type << "\n\n[regs]\n"
            << regs;
        std::ofstream cpu(dir / "cpu.ini");
        cpu << "[device]\nname=cpu_0\nclass=core\ntype=" << core << "\n\n[regs]\nPC(size:64)=0\n";
        for (size_t i = 0; i < bases.size(); ++i) {
            char dump[128];
            std::snprintf(dump, sizeof dump, "\n[dump%zu]\nfile=code%zu.bin\naddress=0x%llX\nlength=0x%zX\n",
                          i + 1, i + 1, static_cast<unsigned long long>(bases[i]), page.size());
            cpu << dump;
        }
        std::ofstream(dir / "snapshot.ini") << "[snapshot]\nversion=1.0\n\n[device_list]\ndevice0=cpu.ini\n"
                                               "device1=etm.ini\n\n[trace]\nmetadata=trace.ini\n";
        std::ofstream(dir / "trace.ini") << "[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=ETB_0\n"
                                            "file=trace.bin\nformat="
                                         << (raw ? "source_data" : "coresight")
                                         << "\n\n[source_buffers]\nETM_0=ETB_0\n\n[core_trace_sources]\n"
                                            "cpu_0=ETM_0\n";
    }
}

void fuzzDecoder(const uint8_t* data, size_t size) {
    if (size < 1) return;
    const uint8_t sel = data[0];
    ++data;
    --size;
    EtmSourceConfig c;  // juno_r1_1's ETM_0 (Cortex-A53)
    c.trcconfigr = 0xC1;
    c.trctraceidr = 0x10;
    c.trcidr0 = 0x28000EA1;
    c.trcidr1 = 0x4100F403;
    c.trcidr2 = 0x488;
    switch (sel & 3) {
        case 1:  // TC2's ETM_0 (Cortex-A7)
            c.protocol = EtmProtocol::EtmV3;
            c.core = {EtmArch::V7, EtmProfile::CortexA};
            c.etmcr = 0x10001860;
            c.etmidr = 0x410CF250;
            c.etmccer = 0x344008F2;
            c.etmtraceidr = 0x10;
            break;
        case 2:  // TC2's PTM_0 (Cortex-A15)
            c.protocol = EtmProtocol::Ptm;
            c.core = {EtmArch::V7, EtmProfile::CortexA};
            c.etmcr = 0x10001000;
            c.etmidr = 0x411CF312;
            c.etmccer = 0x34C01AC2;
            c.etmtraceidr = 0x10;
            break;
        case 3:
            c.protocol = EtmProtocol::Ete;
            c.core = {EtmArch::AA64, EtmProfile::CortexA};
            break;
        default:
            break;
    }
    // Code everywhere the trace may go: a page of branches and other instructions, repeated.
    static auto page = [] {
        auto v = std::make_shared<std::vector<uint8_t>>(1 << 16);
        uint32_t x = 1;
        for (size_t i = 0; i < v->size(); ++i) {
            x = x * 1103515245u + 12345u;
            (*v)[i] = static_cast<uint8_t>(x >> 16);
        }
        return v;
    }();
    static const std::vector<uint64_t> bases = {0, 0xffffffc000080000ull, 0xc0000000ull};
    if (snapshotOut()) {
        writeDecoderSnapshots(c, sel & 4, *page, bases, data, size);
        return;
    }
    EtmImageMemory image;
    (void)image.addBuffer(bases[0], page, 0, 0, kMemAny, "low");
    (void)image.addBuffer(bases[1], page, 0, 0, kMemAny, "kernel");
    (void)image.addBuffer(bases[2], page, 0, 0, kMemAny, "v7 kernel");
    EtmMemoryCache cache(image, 16);
    Sink sink;
    EtmDecoderOptions o;
    o.input = (sel & 4) ? EtmInput::Raw : EtmInput::Formatted;
    o.packetsOnly = sel & 8;
    auto d =
        EtmDecoder::create(std::vector<EtmSourceConfig>{c}, o, &cache, &sink, (sel & 16) ? &sink : nullptr);
    // OpenCSD 1.3.3's C API has no ETE packet printer: the decoder refuses that
    // combination with a message (auxscope decode --format packets says it).
    if (!d.ok() && c.protocol == EtmProtocol::Ete && (sel & 16) &&
        d.error().message.find("packet printer") != std::string::npos)
        return;
    if (!d.ok()) {
        std::fprintf(stderr, "EtmDecoder::create failed for a fixed configuration: %s\n",
                     d.error().message.c_str());
        std::abort();
    }
    // Two feeds with a reset between, the second half from a new offset.
    const size_t half = size / 2;
    auto r = (*d)->feed(0x1000, std::span<const uint8_t>(data, half));
    if (r.ok()) r = (*d)->flush();
    if (!r.ok() && r.error().message.find("offset 0x") == std::string::npos) std::abort();
    (void)(*d)->reset(0x100000);
    r = (*d)->feed(0x100000, std::span<const uint8_t>(data + half, size - half));
    if (r.ok()) r = (*d)->finish();
    if (!r.ok() && r.error().message.find("offset 0x") == std::string::npos) std::abort();
}

}  // namespace

// The snapshot decode runs OpenCSD in worker processes (spans/IsolatedDecode.h),
// where a crash would be a listed error, not a finding: the fuzzer decodes
// in-process to see them, as the perf.data fuzzers do (isolation.enabled = false).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    setenv("AUXSCOPE_DECODE_IN_PROCESS", "1", 1);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    switch (data[0] % 3) {
        case 0:
            fuzzIni(data + 1, size - 1);
            break;
        case 1:
            fuzzSnapshot(data + 1, size - 1);
            break;
        default:
            fuzzDecoder(data + 1, size - 1);
            break;
    }
    return 0;
}
