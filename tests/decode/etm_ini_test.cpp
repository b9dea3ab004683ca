// SPDX-License-Identifier: GPL-3.0-or-later
// The snapshot .ini parser and the snapshot directory reader on hostile input:
// every error names file:line and the cause; nothing crashes. Self-contained
// (snapshots are written to a temp dir here), no shared data needed.
#include <gtest/gtest.h>

#include <malloc.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>

#include "etm/EtmDecoder.h"
#include "etm/EtmMemory.h"
#include "etm/EtmSnapshot.h"
#include "etm/EtmSnapshotDecode.h"
#include "etm/EtmTraceSource.h"
#include "etm/SnapshotIni.h"

namespace fs = std::filesystem;
using namespace auxscope::etm;

namespace {

TEST(EtmIni, ParsesSectionsKeysAndComments) {
    auto ini = parseIni(
        "; DS-5 snapshot\r\n"
        "[snapshot]\n"
        "version=1.0   # trailing comment\n"
        "  [ device_list ]  \n"
        "device1 = device1.ini\n"
        "\n"
        "[regs]\n"
        "TRCIDR0(id:0x78)=0x08000CA1\n"
        "key=\n",
        "snapshot.ini");
    ASSERT_TRUE(ini.ok()) << ini.error().message;
    ASSERT_EQ(ini->sections.size(), 3u);
    EXPECT_EQ(ini->sections[0].name, "snapshot");
    EXPECT_EQ(ini->sections[0].entries[0].value, "1.0");
    EXPECT_EQ(ini->sections[1].name, "device_list");
    EXPECT_EQ(ini->sections[1].line, 4);
    EXPECT_EQ(ini->sections[1].entries[0].key, "device1");
    EXPECT_EQ(ini->sections[1].entries[0].value, "device1.ini");
    EXPECT_EQ(ini->sections[1].entries[0].line, 5);
    EXPECT_EQ(ini->sections[2].entries[0].key, "TRCIDR0(id:0x78)");
    EXPECT_EQ(ini->sections[2].entries[1].value, "");
}

struct BadIni {
    const char* text;
    const char* where;  // "f.ini:N"
    const char* cause;
};

TEST(EtmIni, HostileInputsNameFileLineAndCause) {
    const BadIni cases[] = {
        {"key=value\n", "f.ini:1", "before any [section]"},
        {"[a]\nno equals sign\n", "f.ini:2", "expected [section] or key=value"},
        {"[a]\n=value\n", "f.ini:2", "empty key"},
        {"[a\nk=v\n", "f.ini:1", "without ']'"},
        {"[]\n", "f.ini:1", "empty section name"},
        {"[a] trailing\n", "f.ini:1", "text after the section header"},
        {"[a]\n[b]]\n", "f.ini:2", "text after"},
        {"[a]\nk=v\n\n\nx\0y=1\n", "f.ini:5", "NUL byte"},
        {"[a[b]\n", "f.ini:1", "bracket inside a section name"},
    };
    for (const auto& c : cases) {
        // The NUL case needs its real length.
        std::string text(c.text);
        if (std::string(c.cause) == "NUL byte") text = std::string("[a]\nk=v\n\n\nx\0y=1\n", 17);
        auto ini = parseIni(text, "f.ini");
        ASSERT_FALSE(ini.ok()) << c.text;
        EXPECT_NE(ini.error().message.find(std::string(c.where) + ":"), std::string::npos)
            << ini.error().message;
        EXPECT_NE(ini.error().message.find(c.cause), std::string::npos) << ini.error().message;
    }
    auto missing = readIniFile("/nonexistent/snapshot.ini");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("/nonexistent/snapshot.ini: cannot open"), std::string::npos);
    auto dir = readIniFile("/tmp");
    ASSERT_FALSE(dir.ok());
    EXPECT_NE(dir.error().message.find("not a regular file"), std::string::npos);
}

TEST(EtmIni, RandomBytesNeverCrash) {
    std::mt19937 rng(12);
    const std::string alphabet = "[]=;#\r\n \tabcXYZ019(x):,.'\"\0\xff";
    for (int i = 0; i < 20000; ++i) {
        std::string s(rng() % 64, ' ');
        for (char& ch : s)
            ch = alphabet[rng() % alphabet.size()];
        auto ini = parseIni(s, "r.ini");
        if (!ini.ok()) {
            EXPECT_EQ(ini.error().message.rfind("r.ini:", 0), 0u) << ini.error().message;
        }
    }
}

// A snapshot written to a temp dir, file by file.
class TempSnapshot {
public:
    TempSnapshot() {
        dir_ = fs::temp_directory_path() /
               ("auxscope-etm-ini-" + std::to_string(getpid()) + "-" + std::to_string(n_++));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        write("snapshot.ini",
              "[snapshot]\nversion=1.0\n\n[device_list]\ndevice0=cpu_0.ini\ndevice1=etm_0.ini\n\n[trace]"
              "\nmetadata=trace.ini\n");
        write("cpu_0.ini",
              "[device]\nname=cpu_0\nclass=core\ntype=Cortex-A53\n\n[regs]\nPC(size:64)=0x1000\n\n[dump1]"
              "\nfile=mem.bin\n"
              "address=0x1000\n");
        write("etm_0.ini",
              "[device]\nname=ETM_0\nclass=trace_source\ntype=ETM4\n\n[regs]\nTRCCONFIGR(0x004)=0x1\n"
              "TRCTRACEIDR(0x010)=0x10\nTRCIDR0(0x078)=0x28000EA1\nTRCIDR1(0x079)=0x4100F403\nTRCIDR2(0x07A)="
              "0x488\n");
        write(
            "trace.ini",
            "[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=ETB_0\nfile=trace.bin\nformat=coresight\n\n"
            "[source_buffers]\nETM_0=ETB_0\n\n[core_trace_sources]\ncpu_0=ETM_0\n");
        write("trace.bin", std::string(64, '\0'));
    }
    ~TempSnapshot() { fs::remove_all(dir_); }
    void write(const std::string& name, const std::string& text) {
        std::ofstream(dir_ / name, std::ios::binary) << text;
    }
    std::string dir() const { return dir_.string(); }

private:
    fs::path dir_;
    static inline int n_ = 0;
};

TEST(EtmSnapshotRead, AGoodOneReads) {
    TempSnapshot t;
    auto snap = EtmSnapshot::read(t.dir());
    ASSERT_TRUE(snap.ok()) << snap.error().message;
    ASSERT_EQ(snap->buffers().size(), 1u);
    auto sources = snap->sources("ETB_0");
    ASSERT_TRUE(sources.ok()) << sources.error().message;
    ASSERT_EQ(sources->size(), 1u);
    ASSERT_TRUE((*sources)[0].config.has_value());
    EXPECT_EQ((*sources)[0].config->traceId(), 0x10);
    EXPECT_EQ((*sources)[0].config->protocol, EtmProtocol::EtmV4);
    EXPECT_EQ((*sources)[0].config->core.arch, EtmArch::V8);
    ASSERT_EQ(snap->dumps("ETB_0").size(), 1u);
    EXPECT_EQ(snap->dumps("ETB_0")[0].address, 0x1000u);
    // The dump file is missing: decoding still works, the note names it.
    std::ostringstream out, err;
    EXPECT_EQ(decodeSnapshot(t.dir(), EtmOutputFormat::Ranges, out, err), 0) << err.str();
    EXPECT_NE(err.str().find("cpu_0.ini:9: memory dump not used"), std::string::npos) << err.str();
    EXPECT_NE(err.str().find("mem.bin"), std::string::npos) << err.str();
}

struct BadSnapshot {
    const char* file;
    const char* text;
    const char* expect;  // substring of the error: file:line and cause
};

TEST(EtmSnapshotRead, MalformedSnapshotsNameFileLineAndCause) {
    const BadSnapshot cases[] = {
        {"snapshot.ini", "[snapshot]\nversion=2.0\n", "snapshot.ini:2: snapshot version '2.0'"},
        {"snapshot.ini", "[snapshot]\nversion=1.0\nversion=1.0\n", "snapshot.ini:3: duplicate key 'version'"},
        {"snapshot.ini", "[snapshot]\nversion=1.0\n[device_list]\ndevice0=cpu_0.ini\n", "no trace metadata"},
        {"snapshot.ini", "[device_list]\ndevice0=nothere.ini\n[trace]\nmetadata=trace.ini\n",
         "snapshot.ini:2: device file nothere.ini is missing"},
        {"snapshot.ini", "[device_list]\ndevice0=cpu_0.ini\n[trace]\nmetadata=missing.ini\n",
         "snapshot.ini:4: trace metadata file missing.ini is missing"},
        {"cpu_0.ini", "[device]\nname=cpu_0\n[dump]\naddress=0x10\n", "cpu_0.ini:3: [dump] has no file="},
        {"cpu_0.ini", "[device]\nname=cpu_0\n[dump]\nfile=x.bin\n", "cpu_0.ini:3: [dump] has no address="},
        {"cpu_0.ini", "[device]\nname=cpu_0\n[dump]\nfile=x.bin\naddress=0xZZ\n",
         "cpu_0.ini:5: dump address '0xZZ' is not an unsigned 64-bit number"},
        {"cpu_0.ini", "[device]\nname=cpu_0\n[dump]\nfile=x.bin\naddress=0x10\nsize=4\n",
         "cpu_0.ini:6: unknown key 'size' in [dump]"},
        {"cpu_0.ini", "[device]\nname=cpu_0\n[dump]\nfile=x.bin\naddress=0x10\nspace=EL9\n",
         "cpu_0.ini:6: unknown memory space 'EL9'"},
        {"cpu_0.ini", "[device]\nname=cpu_0\n[dump]\nfile=x.bin\naddress=0x10\naddress=0x20\n",
         "cpu_0.ini:6: duplicate key 'address' in [dump] (first on line 5)"},
        {"cpu_0.ini", "[device]\nclass=core\n", "cpu_0.ini:1: [device] has no name"},
        {"cpu_0.ini", "[regs]\nPC=1\n", "cpu_0.ini: no [device] section"},
        {"etm_0.ini", "[device]\nname=ETM_0\ntype=ETM4\n[regs]\nTRCIDR0=0x1\nTRCIDR0(0x078)=0x2\n",
         "etm_0.ini:6: register TRCIDR0 again (first on line 5)"},
        {"etm_0.ini", "[device]\nname=ETM_0\ntype=ETM4\n[regs]\nTRCIDR0=banana\n",
         "etm_0.ini:5: register TRCIDR0: 'banana' is not an unsigned 64-bit number"},
        {"etm_0.ini", "[device]\nname=cpu_0\ntype=ETM4\n", "device name 'cpu_0' is also used by cpu_0.ini"},
        {"trace.ini", "[trace_buffers]\nbuffers=buffer0,buffer1\n[buffer0]\nname=ETB_0\nfile=trace.bin\n",
         "trace.ini:2: buffer section [buffer1] is listed but not defined"},
        {"trace.ini",
         "[trace_buffers]\nbuffers=buffer0\n[buffer0]\nname=ETB_0\nfile=trace.bin\nformat=weird\n",
         "trace.ini:6: unknown buffer format 'weird'"},
        {"trace.ini", "[trace_buffers]\nbuffers=buffer0\n[buffer0]\nfile=trace.bin\n",
         "trace.ini:3: [buffer0] has no buffer name="},
        {"trace.ini",
         "[trace_buffers]\nbuffers=buffer0\n[buffer0]\nname=ETB_0\nfile=trace.bin\n[source_buffers]\nETM_0="
         "ETB_9\n",
         "trace.ini:7: trace source ETM_0 writes to buffer 'ETB_9'"},
        {"trace.ini", "[trace_buffers]\nbuffers=\n", "trace.ini:2: empty name in the buffer list"},
        {"trace.ini", "[source_buffers]\nETM_0=ETB_0\n", "no [trace_buffers] buffers= list"},
        {"trace.ini", "buffers=buffer0\n", "trace.ini:1: 'buffers' is defined before any [section] header"},
    };
    for (const auto& c : cases) {
        TempSnapshot t;
        t.write(c.file, c.text);
        auto snap = EtmSnapshot::read(t.dir());
        ASSERT_FALSE(snap.ok()) << c.file << ":\n" << c.text;
        EXPECT_NE(snap.error().message.find(c.expect), std::string::npos)
            << "got:  " << snap.error().message << "\nwant: " << c.expect;
    }
}

TEST(EtmSnapshotRead, SourceConfigurationErrors) {
    {
        TempSnapshot t;  // a required register missing: the [regs] line and the register
        t.write("etm_0.ini",
                "[device]\nname=ETM_0\ntype=ETM4\n\n[regs]\nTRCCONFIGR=0x1\nTRCIDR0=0x1\nTRCIDR2=0x1\n");
        auto snap = EtmSnapshot::read(t.dir());
        ASSERT_TRUE(snap.ok()) << snap.error().message;
        auto s = snap->sources("ETB_0");
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message.find("etm_0.ini:5: ETM_0 (ETM4) lacks register TRCTRACEIDR"),
                  std::string::npos)
            << s.error().message;
        std::ostringstream out, err;
        EXPECT_EQ(decodeSnapshot(t.dir(), EtmOutputFormat::Ranges, out, err), 1);
        EXPECT_NE(err.str().find("lacks register TRCTRACEIDR"), std::string::npos) << err.str();
    }
    {
        TempSnapshot t;  // an unknown core
        t.write("cpu_0.ini", "[device]\nname=cpu_0\ntype=Pentium\n");
        auto snap = EtmSnapshot::read(t.dir());
        ASSERT_TRUE(snap.ok());
        auto s = snap->sources("ETB_0");
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message.find("core type 'Pentium'"), std::string::npos) << s.error().message;
    }
    {
        TempSnapshot t;  // trace ID 0 is reserved
        t.write(
            "etm_0.ini",
            "[device]\nname=ETM_0\ntype=ETM4\n[regs]\nTRCCONFIGR=0\nTRCTRACEIDR=0\nTRCIDR0=0\nTRCIDR2=0\n");
        auto snap = EtmSnapshot::read(t.dir());
        ASSERT_TRUE(snap.ok());
        auto s = snap->sources("ETB_0");
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.error().message.find("trace ID 0x0 is reserved"), std::string::npos) << s.error().message;
    }
    {
        TempSnapshot t;  // an ITM source: a note, not an error
        t.write("etm_0.ini", "[device]\nname=ETM_0\ntype=ITM\n[regs]\nITMTCR=0x00200006\n");
        auto snap = EtmSnapshot::read(t.dir());
        ASSERT_TRUE(snap.ok());
        auto s = snap->sources("ETB_0");
        ASSERT_TRUE(s.ok()) << s.error().message;
        EXPECT_FALSE((*s)[0].config.has_value());
        EXPECT_NE((*s)[0].note.find("ITM"), std::string::npos);
    }
    {
        TempSnapshot t;  // not a snapshot at all
        auto none = EtmSnapshot::read(t.dir() + "/nothere");
        ASSERT_FALSE(none.ok());
        EXPECT_NE(none.error().message.find("not a directory"), std::string::npos);
        fs::remove(t.dir() + "/snapshot.ini");
        auto noIni = EtmSnapshot::read(t.dir());
        ASSERT_FALSE(noIni.ok());
        EXPECT_NE(noIni.error().message.find("no snapshot.ini"), std::string::npos);
        EXPECT_FALSE(isEtmSnapshotDir(t.dir()));
    }
}

TEST(EtmCoreArch, NamesAndPatterns) {
    EXPECT_EQ(etmCoreArchFromName("Cortex-A57").arch, EtmArch::V8);
    EXPECT_EQ(etmCoreArchFromName("Cortex-A7").arch, EtmArch::V7);
    EXPECT_EQ(etmCoreArchFromName("Cortex-A55").arch, EtmArch::V8r3);
    EXPECT_EQ(etmCoreArchFromName("ARMv8.2-A").arch, EtmArch::V8);
    EXPECT_EQ(etmCoreArchFromName("ARMv8.4-A").arch, EtmArch::AA64);
    EXPECT_EQ(etmCoreArchFromName("ARMv7-R").profile, EtmProfile::CortexR);
    EXPECT_EQ(etmCoreArchFromName("ARM-AA64").arch, EtmArch::AA64);
    EXPECT_FALSE(etmCoreArchFromName("ARMv").known());
    EXPECT_FALSE(etmCoreArchFromName("ARMv8.").known());
    EXPECT_FALSE(etmCoreArchFromName("ARMv8-X").known());
    EXPECT_FALSE(etmCoreArchFromName("").known());
}

// A memory image that counts the reads reaching it.
struct CountingMemory : EtmMemory {
    EtmImageMemory inner;
    int reads = 0;
    size_t read(uint64_t a, uint8_t id, uint8_t sp, std::span<uint8_t> out) override {
        ++reads;
        return inner.read(a, id, sp, out);
    }
};

TEST(EtmMemoryCacheTest, ServesPagesAndRegionEdges) {
    CountingMemory mem;
    auto bytes = std::make_shared<std::vector<uint8_t>>(0x3000);
    for (size_t i = 0; i < bytes->size(); ++i)
        (*bytes)[i] = static_cast<uint8_t>(i * 7);
    // A region that starts and ends inside pages, and one for EL2 only.
    ASSERT_TRUE(mem.inner.addBuffer(0x10100, bytes, 0, 0x2e00, kMemAny, "a").ok());
    ASSERT_TRUE(mem.inner.addBuffer(0x80000, bytes, 0, 0x100, kMemEl2N, "el2").ok());
    EXPECT_FALSE(mem.inner.addBuffer(0x10200, bytes, 0, 0x10, kMemAny, "overlap").ok());
    EtmMemoryCache cache(mem, 8);
    uint8_t buf[8];
    for (uint64_t a = 0x10100; a < 0x10100 + 0x2e00; a += 4) {
        ASSERT_EQ(cache.read(a, 0x10, kMemEl1N, std::span<uint8_t>(buf, 4)), 4u) << std::hex << a;
        ASSERT_EQ(buf[0], (*bytes)[a - 0x10100]) << std::hex << a;
    }
    EXPECT_LE(mem.reads, 8);  // a few per page, not one per instruction
    // Across a page boundary, and past the end of the region.
    ASSERT_EQ(cache.read(0x10ffe, 0x10, kMemEl1N, std::span<uint8_t>(buf, 4)), 4u);
    EXPECT_EQ(buf[3], (*bytes)[0x10ffe + 3 - 0x10100]);
    EXPECT_EQ(cache.read(0x10100 + 0x2dfe, 0x10, kMemEl1N, std::span<uint8_t>(buf, 4)), 2u);
    EXPECT_EQ(cache.read(0x100, 0x10, kMemEl1N, std::span<uint8_t>(buf, 4)), 0u);
    // The memory space is respected.
    EXPECT_EQ(cache.read(0x80000, 0x10, kMemEl1N, std::span<uint8_t>(buf, 4)), 0u);
    EXPECT_EQ(cache.read(0x80000, 0x10, kMemEl2N, std::span<uint8_t>(buf, 4)), 4u);
    cache.invalidate(0x10);
    EXPECT_EQ(cache.read(0x80000, 0x10, kMemEl2N, std::span<uint8_t>(buf, 4)), 4u);
}

TEST(EtmDecoderCreate, RefusesBadConfigurations) {
    struct Null : EtmElementSink {
        void element(const EtmElement&) override {}
    } sink;
    EtmSourceConfig a;
    a.trctraceidr = 0x10;
    a.trcidr0 = 0x28000EA1;
    a.trcidr2 = 0x488;
    EXPECT_FALSE(EtmDecoder::create({}, {}, nullptr, &sink).ok());
    std::vector<EtmSourceConfig> two{a, a};
    auto dup = EtmDecoder::create(two, {}, nullptr, &sink);
    ASSERT_FALSE(dup.ok());
    EXPECT_NE(dup.error().message.find("two sources with trace ID 0x10"), std::string::npos);
    EtmDecoderOptions raw;
    raw.input = EtmInput::Raw;
    EXPECT_FALSE(EtmDecoder::create(two, raw, nullptr, &sink).ok());
    EXPECT_FALSE(EtmDecoder::create(std::vector<EtmSourceConfig>{a}, {}, nullptr, nullptr).ok());
    // Garbage in, elements out, no crash, in every protocol.
    std::mt19937 rng(3);
    std::vector<uint8_t> junk(1 << 16);
    for (auto& b : junk)
        b = static_cast<uint8_t>(rng());
    for (EtmProtocol p : {EtmProtocol::EtmV3, EtmProtocol::Ptm, EtmProtocol::EtmV4, EtmProtocol::Ete}) {
        EtmSourceConfig c = a;
        c.protocol = p;
        c.etmtraceidr = 0x10;
        c.etmidr = p == EtmProtocol::Ptm ? 0x411CF312 : 0x410CF250;
        c.core = {p == EtmProtocol::EtmV3 || p == EtmProtocol::Ptm ? EtmArch::V7 : EtmArch::AA64,
                  EtmProfile::CortexA};
        for (EtmInput in : {EtmInput::Formatted, EtmInput::Raw}) {
            EtmDecoderOptions o;
            o.input = in;
            auto d = EtmDecoder::create(std::vector<EtmSourceConfig>{c}, o, nullptr, &sink);
            ASSERT_TRUE(d.ok()) << d.error().message;
            auto r = (*d)->feed(0, junk);
            if (r.ok()) r = (*d)->finish();
            if (!r.ok()) {
                EXPECT_NE(r.error().message.find("offset 0x"), std::string::npos) << r.error().message;
            }
        }
    }
}

// The decoder flushed before its first whole frame in every way it can be:
// run in a child with the heap filled (see the test below); 0 when all went well.
int flushBeforeTheFirstWholeFrame() {
    mallopt(M_PERTURB, 0x41);  // every allocation holds 0xbe bytes, freed ones 0x41
    struct Count : EtmElementSink {
        int elements = 0, errors = 0;
        void element(const EtmElement& e) override { elements += e.kind != EtmElementKind::EndOfTrace; }
        void decodeError(uint64_t, uint8_t, std::string_view) override { ++errors; }
    } sink;
    EtmSourceConfig c;  // juno_r1_1's ETM_0
    c.trcconfigr = 0xC1;
    c.trctraceidr = 0x10;
    c.trcidr0 = 0x28000EA1;
    c.trcidr1 = 0x4100F403;
    c.trcidr2 = 0x488;
    const uint8_t partial[12] = {0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    int failures = 0;
    for (EtmInput in : {EtmInput::Formatted, EtmInput::FormattedFsync}) {
        EtmDecoderOptions o;
        o.input = in;
        for (size_t fed : {size_t(0), size_t(4), size_t(8), size_t(12)}) {
            // Frame-aligned: 4, 8 and 12 bytes wait for the rest of their frame.
            // (FSYNC-delimited bytes without an FSYNC are an error: OpenCSD
            // skips all but the last 3 while it looks for one, then refuses
            // those for not being 4 bytes.)
            if (in == EtmInput::FormattedFsync && fed) continue;
            auto d = EtmDecoder::create(std::vector<EtmSourceConfig>{c}, o, nullptr, &sink);
            if (!d.ok()) {
                std::fprintf(stderr, "create: %s\n", d.error().message.c_str());
                ++failures;
                continue;
            }
            auto r = (*d)->feed(0x1000, std::span<const uint8_t>(partial, fed));
            if (r.ok()) r = (*d)->flush();
            if (r.ok()) r = (*d)->reset(0x2000);
            if (r.ok()) r = (*d)->flush();
            if (r.ok()) r = (*d)->finish();
            if (!r.ok()) std::fprintf(stderr, "%zu bytes: %s\n", fed, r.error().message.c_str()), ++failures;
        }
    }
    // Packets only and no packet printer: nothing takes OpenCSD's output, yet the
    // tree is made (the frame of zeros goes in before any decoder is attached).
    EtmDecoderOptions packetsOnly;
    packetsOnly.packetsOnly = true;
    for (EtmProtocol p : {EtmProtocol::EtmV4, EtmProtocol::Ptm}) {
        EtmSourceConfig q = c;
        q.protocol = p;
        q.etmtraceidr = 0x10;
        q.etmcr = 0x10001000;  // TC2's PTM_0
        q.etmidr = 0x411CF312;
        q.etmccer = 0x34C01AC2;
        if (p == EtmProtocol::Ptm) q.core = {EtmArch::V7, EtmProfile::CortexA};
        auto d = EtmDecoder::create(std::vector<EtmSourceConfig>{q}, packetsOnly, nullptr, &sink, nullptr);
        if (!d.ok()) std::fprintf(stderr, "packets only: %s\n", d.error().message.c_str()), ++failures;
    }
    std::fprintf(stderr, "elements %d, errors %d, failures %d\n", sink.elements, sink.errors, failures);
    return sink.elements == 0 && sink.errors == 0 && failures == 0 ? 0 : 1;
}

// A flush before the frame deformatter has unpacked a frame (nothing fed, a
// partial frame kept back, right after a reset) flushes nothing (no element but
// the end of trace) and reads nothing stale. OpenCSD's deformatter leaves
// the counters of its output frame uninitialised until its first frame
// (EtmDecoder::create sets them with a frame of zeros): with the heap full of a
// non-zero byte (glibc's M_PERTURB fills every allocation), a flush without
// that frame indexed its 7-entry array with garbage and crashed or hung
// (etm_fuzzer, after thousands of inputs had left the heap dirty). In a child
// process: a crash there fails this test, not the suite.
TEST(EtmDecoderFlush, BeforeTheFirstWholeFrameFlushesNothingAndReadsNothingStale) {
    EXPECT_EXIT(std::exit(flushBeforeTheFirstWholeFrame()), ::testing::ExitedWithCode(0),
                "elements 0, errors 0, failures 0");
}

}  // namespace

// The decode's time cursor keeps the buffer and AUX record of the last offset:
// whatever order offsets come in, it gives what a fresh lookup gives, and that
// is the interpolation between the AUX records' times.
TEST(EtmTimeCursor, AgreesWithFreshLookupsInAnyOrder) {
    using auxscope::etm::EtmCpuTrace;
    EtmCpuTrace t;
    t.startTime = 1000;
    // Two AUXTRACE buffers: stream [0, 300) holds AUX [0, 300), stream [300, 500) holds AUX [600, 800).
    t.stream.places = {{0, 300, 0}, {300, 500, 600}};
    // AUX records: [0, 100) at 2000, [100, 300) at 4000, [300, 600) lost, [600, 800) at 9000.
    t.writes = {{0, 100, 2000}, {100, 200, 4000}, {300, 300, 5000}, {600, 200, 9000}};
    EXPECT_EQ(t.timeAt(0), 1000u);    // the first record's bytes: from the recording's start
    EXPECT_EQ(t.timeAt(50), 1500u);   // halfway through it
    EXPECT_EQ(t.timeAt(100), 2000u);  // the second record starts where the first ended
    EXPECT_EQ(t.timeAt(200), 3000u);
    EXPECT_EQ(t.timeAt(300), 5000u);  // the second buffer: AUX 600, the record after the lost one
    EXPECT_EQ(t.timeAt(400), 7000u);
    EXPECT_EQ(t.timeAt(10000), 9000u);  // past every record: the last one's time
    std::mt19937_64 rng(7);
    EtmCpuTrace::TimeCursor cursor(t);
    for (int i = 0; i < 20000; ++i) {
        const uint64_t offset = i % 3 ? rng() % 520 : uint64_t(i / 3 % 520);
        ASSERT_EQ(cursor.at(offset), EtmCpuTrace::TimeCursor(t).at(offset)) << "offset " << offset;
    }
    EtmCpuTrace none;
    none.startTime = 77;
    EXPECT_EQ(EtmCpuTrace::TimeCursor(none).at(5), 77u);  // no AUX records: the start
}
