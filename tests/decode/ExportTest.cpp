// SPDX-License-Identifier: GPL-3.0-or-later
// Export to Perfetto and CSV. Each Perfetto trace is checked two independent
// ways: protoc decodes it against Perfetto's field numbers (no unknown fields,
// no parse errors), and a small wire-format reader here checks the rules the
// Perfetto importer relies on: tracks are described before use, time never goes
// backwards, slices on a track nest, counters only on counter tracks.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "CaptureSession.h"
#include "KernelTestSupport.h"
#include "TestData.h"
#include "TestSupport.h"
#include "auxtrace/AuxTraceDecode.h"
#include "export/TraceExport.h"
#include "perfdata/PerfDataReader.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"
#include "sideband/TraceModel.h"
#include "sideband/TraceModelLoader.h"
#include "spe/SpeRecord.h"

using namespace auxscope;
namespace fs = std::filesystem;

namespace {

// --- an independent protobuf wire reader -------------------------------------
struct Field {
    uint32_t number;
    uint32_t wire;
    uint64_t value = 0;  // varint / fixed64
    std::string bytes;   // length-delimited
};

bool readVarint(const std::string& b, size_t& pos, uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (pos >= b.size()) return false;
        uint8_t c = uint8_t(b[pos++]);
        v |= uint64_t(c & 0x7f) << shift;
        if (!(c & 0x80)) return true;
    }
    return false;
}

std::vector<Field> fields(const std::string& b) {
    std::vector<Field> out;
    size_t pos = 0;
    while (pos < b.size()) {
        uint64_t key;
        if (!readVarint(b, pos, key)) throw std::runtime_error("bad key");
        Field f{uint32_t(key >> 3), uint32_t(key & 7)};
        if (f.wire == 0) {
            if (!readVarint(b, pos, f.value)) throw std::runtime_error("bad varint");
        } else if (f.wire == 1) {
            if (pos + 8 > b.size()) throw std::runtime_error("bad fixed64");
            std::memcpy(&f.value, b.data() + pos, 8);
            pos += 8;
        } else if (f.wire == 2) {
            uint64_t len;
            if (!readVarint(b, pos, len) || pos + len > b.size()) throw std::runtime_error("bad length");
            f.bytes = b.substr(pos, len);
            pos += len;
        } else {
            throw std::runtime_error("unexpected wire type " + std::to_string(f.wire));
        }
        out.push_back(std::move(f));
    }
    return out;
}

const Field* find(const std::vector<Field>& fs, uint32_t n) {
    for (auto& f : fs)
        if (f.number == n) return &f;
    return nullptr;
}

struct CheckResult {
    size_t packets = 0, descriptors = 0, begins = 0, ends = 0, instants = 0, counters = 0;
    std::map<uint64_t, std::string> trackNames;  // uuid -> name / thread name
    std::map<uint64_t, size_t> slicesPerTrack;
    // uuid -> slice name (inline or interned) -> count
    std::map<uint64_t, std::map<std::string, size_t>> sliceNames;
    std::map<uint64_t, uint64_t> parentOf;  // uuid -> parent_uuid
    std::vector<std::string> problems;

    // Perf samples, in file order, their stacks resolved through the interned
    // data of their sequence.
    struct PerfSample {
        uint64_t sequence = 0, ts = 0;
        std::optional<uint32_t> cpu;
        uint32_t pid = 0, tid = 0;
        uint64_t timebaseCount = 0;
        std::vector<std::string> frames;    // function names, as frame_ids list them (outermost first)
        std::vector<std::string> mappings;  // each frame's mapping path
    };
    std::vector<PerfSample> perfSamples;
    std::map<uint64_t, std::string> timebaseOf;  // sequence -> its defaults' timebase name
    std::map<uint64_t, std::map<std::string, std::string>>
        buildIds;  // sequence -> mapping path -> build-id (hex)
    // Slices named "off-CPU": their track, times and string args (interned ones resolved).
    struct ArgSlice {
        uint64_t track = 0, begin = 0, end = 0;
        std::map<std::string, std::string> args;
    };
    std::vector<ArgSlice> offCpuSlices;
};

// One packet sequence's interned data: per InternedData field, iid -> entry.
struct InternedTables {
    std::map<uint32_t, std::map<uint64_t, std::string>> byField;
    const std::string* find(uint32_t field, uint64_t iid) const {
        auto t = byField.find(field);
        if (t == byField.end()) return nullptr;
        auto e = t->second.find(iid);
        return e == t->second.end() ? nullptr : &e->second;
    }
};

// The string of an InternedString / EventName / DebugAnnotationName entry.
std::string internedText(const std::string& entry) {
    auto ef = fields(entry);
    const Field* f = find(ef, 2);
    return f ? f->bytes : std::string();
}

std::string hex(const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes)
        out += digits[c >> 4], out += digits[c & 15];
    return out;
}

CheckResult checkPerfettoRules(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), {});
    CheckResult r;
    std::map<uint64_t, bool> isCounter;         // uuid -> counter track
    std::map<uint64_t, std::vector<int>> open;  // uuid -> open slice depth marker
    std::map<uint64_t, uint64_t> lastTsOnTrack;
    std::map<uint64_t, InternedTables> interned;      // per sequence
    std::set<uint64_t> sequences;                     // those whose first packet was seen
    std::map<uint64_t, std::vector<int>> openOffCpu;  // uuid -> per open slice: its offCpuSlices index or -1
    uint64_t lastTs = 0;
    for (auto& p : fields(all)) {
        if (p.number != 1 || p.wire != 2) {
            r.problems.push_back("top-level field other than Trace.packet");
            continue;
        }
        ++r.packets;
        auto pf = fields(p.bytes);
        const Field* seq = find(pf, 10);
        if (!seq || seq->value == 0) r.problems.push_back("packet without trusted_packet_sequence_id");
        const uint64_t sequence = seq ? seq->value : 0;
        const Field* flags = find(pf, 13);
        // Every sequence starts by clearing its incremental state (interned data, defaults).
        if (sequences.insert(sequence).second && (!flags || !(flags->value & 1)))
            r.problems.push_back("first packet of sequence " + std::to_string(sequence) +
                                 " does not clear incremental state");
        InternedTables& tables = interned[sequence];
        if (const Field* data = find(pf, 12)) {
            if (!flags || !(flags->value & 2))
                r.problems.push_back("interned data on a packet that does not need incremental state");
            // Every entry of every table: an iid, defined once per sequence.
            std::vector<std::pair<uint32_t, std::string>> added;
            for (auto& entry : fields(data->bytes)) {
                auto ef = fields(entry.bytes);
                const Field* iid = find(ef, 1);
                if (!iid || iid->value == 0) {
                    r.problems.push_back("interned entry (field " + std::to_string(entry.number) +
                                         ") without an iid");
                    continue;
                }
                if (entry.number == 2 && !find(ef, 2))
                    r.problems.push_back("interned event name without iid or name");
                if (!tables.byField[entry.number].emplace(iid->value, entry.bytes).second)
                    r.problems.push_back(entry.number == 2 ? std::string("event name interned twice")
                                                           : "iid " + std::to_string(iid->value) +
                                                                 " interned twice in field " +
                                                                 std::to_string(entry.number));
                added.push_back({entry.number, entry.bytes});
            }
            // What the new entries refer to is defined: in this packet or before it on the sequence.
            auto need = [&](uint32_t field, uint64_t iid, const char* what) {
                if (!tables.find(field, iid))
                    r.problems.push_back(std::string(what) + " " + std::to_string(iid) +
                                         " used before defined");
            };
            for (auto& [field, bytes] : added) {
                auto ef = fields(bytes);
                if (field == 19) {  // Mapping: build_id, path_string_ids
                    for (auto& f : ef) {
                        if (f.number == 2) need(16, f.value, "build id");
                        if (f.number == 7) need(17, f.value, "mapping path");
                    }
                } else if (field == 6) {  // Frame: function_name_id, mapping_id
                    const Field *name = find(ef, 2), *mapping = find(ef, 3);
                    if (!name || !mapping) r.problems.push_back("frame without function name or mapping");
                    if (name) need(5, name->value, "function name");
                    if (mapping) need(19, mapping->value, "mapping");
                } else if (field == 7) {  // Callstack: frame_ids
                    size_t frames = 0;
                    for (auto& f : ef)
                        if (f.number == 2) {
                            if (f.wire != 0) r.problems.push_back("frame_ids written packed");
                            need(6, f.value, "frame");
                            ++frames;
                        }
                    if (frames == 0) r.problems.push_back("empty callstack");
                }
            }
        }
        if (const Field* defaults = find(pf, 59)) {
            if (!flags || !(flags->value & 2))
                r.problems.push_back(
                    "trace packet defaults on a packet that does not need incremental state");
            // perf_sample_defaults.timebase.name
            // (Each level's fields kept: find() points into them.)
            const auto df = fields(defaults->bytes);
            if (const Field* perf = find(df, 12)) {
                const auto pf2 = fields(perf->bytes);
                if (const Field* timebase = find(pf2, 1)) {
                    const auto tf = fields(timebase->bytes);
                    if (const Field* name = find(tf, 10)) r.timebaseOf[sequence] = name->bytes;
                }
            }
            if (!find(pf, 11) && !find(pf, 60) && !find(pf, 66)) continue;  // a defaults packet
        }
        if (const Field* perf = find(pf, 66)) {
            const Field* ts = find(pf, 8);
            if (!ts) r.problems.push_back("perf sample without timestamp");
            if (ts && ts->value < lastTs)
                r.problems.push_back("timestamp goes backwards at " + std::to_string(ts->value));
            if (ts) lastTs = ts->value;
            if (!flags || !(flags->value & 2))
                r.problems.push_back("perf sample on a packet that does not need incremental state");
            if (!r.timebaseOf.count(sequence))
                r.problems.push_back("perf sample on a sequence without perf sample defaults");
            CheckResult::PerfSample sample;
            sample.sequence = sequence;
            sample.ts = ts ? ts->value : 0;
            auto sf = fields(perf->bytes);
            if (const Field* f = find(sf, 1)) sample.cpu = uint32_t(f->value);
            if (const Field* f = find(sf, 2)) sample.pid = uint32_t(f->value);
            if (const Field* f = find(sf, 3)) sample.tid = uint32_t(f->value);
            if (const Field* f = find(sf, 6)) sample.timebaseCount = f->value;
            if (const Field* cs = find(sf, 4)) {
                const std::string* callstack = tables.find(7, cs->value);
                if (!callstack) {
                    r.problems.push_back("callstack " + std::to_string(cs->value) + " used before defined");
                } else {
                    for (auto& f : fields(*callstack)) {
                        if (f.number != 2) continue;
                        const std::string* frame = tables.find(6, f.value);
                        if (!frame) continue;  // said above
                        auto ff = fields(*frame);
                        const Field *name = find(ff, 2), *mapping = find(ff, 3);
                        const std::string* text = name ? tables.find(5, name->value) : nullptr;
                        sample.frames.push_back(text ? internedText(*text) : "?");
                        const std::string* m = mapping ? tables.find(19, mapping->value) : nullptr;
                        std::string path = "?";
                        if (m) {
                            auto mf = fields(*m);
                            if (const Field* pathId = find(mf, 7))
                                if (const std::string* t = tables.find(17, pathId->value))
                                    path = internedText(*t);
                            if (const Field* buildId = find(mf, 2))
                                if (const std::string* t = tables.find(16, buildId->value))
                                    r.buildIds[sequence][path] = hex(internedText(*t));
                        }
                        sample.mappings.push_back(path);
                    }
                }
            }
            r.perfSamples.push_back(std::move(sample));
            continue;
        }
        if (const Field* d = find(pf, 60)) {
            ++r.descriptors;
            auto df = fields(d->bytes);
            const Field* uuid = find(df, 1);
            if (!uuid) {
                r.problems.push_back("track descriptor without uuid");
                continue;
            }
            isCounter[uuid->value] = find(df, 8) != nullptr;
            if (const Field* parent = find(df, 5)) {
                if (!isCounter.count(parent->value)) r.problems.push_back("parent track not declared first");
                r.parentOf[uuid->value] = parent->value;
            }
            if (const Field* n = find(df, 2)) r.trackNames[uuid->value] = n->bytes;
            if (const Field* t = find(df, 4)) {
                const auto tf = fields(t->bytes);  // kept: find() points into it
                if (const Field* tn = find(tf, 5)) r.trackNames[uuid->value] = tn->bytes;
            }
            continue;
        }
        const Field* te = find(pf, 11);
        if (!te) {
            r.problems.push_back("packet with neither track_event nor track_descriptor");
            continue;
        }
        const Field* ts = find(pf, 8);
        if (!ts) r.problems.push_back("track event without timestamp");
        if (ts && ts->value < lastTs)
            r.problems.push_back("timestamp goes backwards at " + std::to_string(ts->value));
        if (ts) lastTs = ts->value;
        auto ef = fields(te->bytes);
        const Field* type = find(ef, 9);
        const Field* track = find(ef, 11);
        if (!type || !track) {
            r.problems.push_back("track event without type or track_uuid");
            continue;
        }
        if (!isCounter.count(track->value)) {
            r.problems.push_back("event on undeclared track " + std::to_string(track->value));
            continue;
        }
        const bool counterTrack = isCounter[track->value];
        if (ts) {
            uint64_t& last = lastTsOnTrack[track->value];
            if (ts->value < last)
                r.problems.push_back("timestamp goes backwards on track " + std::to_string(track->value));
            last = ts->value;
        }
        switch (type->value) {
            case 1: {
                ++r.begins;
                if (counterTrack) r.problems.push_back("slice on a counter track");
                std::string name;
                if (const Field* n = find(ef, 23)) {
                    name = n->bytes;
                } else if (const Field* iid = find(ef, 10)) {
                    const std::string* entry = tables.find(2, iid->value);
                    if (!entry)
                        r.problems.push_back("slice name iid " + std::to_string(iid->value) +
                                             " not interned");
                    else
                        name = internedText(*entry);
                } else {
                    r.problems.push_back("slice begin without a name");
                }
                int offCpuIndex = -1;
                if (name == "off-CPU") {
                    CheckResult::ArgSlice slice;
                    slice.track = track->value;
                    slice.begin = ts ? ts->value : 0;
                    for (auto& a : ef) {
                        if (a.number != 4) continue;
                        auto af = fields(a.bytes);
                        const Field *n = find(af, 10), *v = find(af, 6), *iid = find(af, 17),
                                    *i = find(af, 4);
                        if (!n) continue;
                        if (v) {
                            slice.args[n->bytes] = v->bytes;
                        } else if (iid) {
                            const std::string* text = tables.find(29, iid->value);
                            if (!text)
                                r.problems.push_back("annotation string " + std::to_string(iid->value) +
                                                     " used before defined");
                            slice.args[n->bytes] = text ? internedText(*text) : "?";
                        } else if (i) {
                            slice.args[n->bytes] = std::to_string(int64_t(i->value));
                        }
                    }
                    offCpuIndex = int(r.offCpuSlices.size());
                    r.offCpuSlices.push_back(std::move(slice));
                }
                openOffCpu[track->value].push_back(offCpuIndex);
                open[track->value].push_back(1);
                ++r.slicesPerTrack[track->value];
                ++r.sliceNames[track->value][name];
                break;
            }
            case 2:
                ++r.ends;
                if (open[track->value].empty()) {
                    r.problems.push_back("slice end without begin");
                } else {
                    open[track->value].pop_back();
                    const int offCpuIndex = openOffCpu[track->value].back();
                    openOffCpu[track->value].pop_back();
                    if (offCpuIndex >= 0) r.offCpuSlices[size_t(offCpuIndex)].end = ts ? ts->value : 0;
                }
                break;
            case 3:
                ++r.instants;
                if (counterTrack) r.problems.push_back("instant on a counter track");
                break;
            case 4:
                ++r.counters;
                if (!counterTrack) r.problems.push_back("counter value on a slice track");
                if (!find(ef, 30) && !find(ef, 44)) r.problems.push_back("counter event without value");
                break;
            default:
                r.problems.push_back("unknown track event type");
        }
    }
    for (auto& [uuid, stack] : open)
        if (!stack.empty()) r.problems.push_back("unterminated slice on track " + std::to_string(uuid));
    return r;
}

// protoc's text dump of the trace; unknown fields appear as bare field numbers.
std::string protocDecode(const std::string& path, int& status) {
    std::string cmd = std::string(AUXSCOPE_PROTOC) + " --proto_path=" + AUXSCOPE_PERFETTO_PROTO_DIR +
                      " --decode=perfetto.protos.Trace perfetto_trace_subset.proto < '" + path + "' 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        out.append(buf, n);
    status = pclose(p);
    return out;
}

std::string tempPath(const std::string& name) {
    return (fs::temp_directory_path() / ("auxscope-export-" + std::to_string(getpid()) + "-" + name))
        .string();
}

// Builders for hand-made records.
ParsedRecord switchRec(bool out, uint64_t t, int32_t pid, int32_t tid, int32_t otherPid, int32_t otherTid,
                       int cpu) {
    ParsedRecord r;
    r.type = PERF_RECORD_SWITCH_CPU_WIDE;
    r.switchOut = out;
    r.hasSampleId = true;
    r.time = t;
    r.pid = pid, r.tid = tid, r.nextPrevPid = otherPid, r.nextPrevTid = otherTid, r.cpu = uint32_t(cpu);
    return r;
}

ParsedRecord commRec(uint64_t t, int32_t pid, int32_t tid, const char* name) {
    ParsedRecord r;
    r.type = PERF_RECORD_COMM;
    r.hasSampleId = true;
    r.time = t;
    r.pid = pid, r.tid = tid;
    r.comm = name;
    return r;
}

TraceModel handMadeModel() {
    TraceModel m;
    m.addRecord(0, commRec(100, 10, 10, "editor"));
    m.addRecord(0, commRec(100, 10, 11, "editor-io"));
    // cpu 0: 10 runs 1000-2000, then 11 runs 2000-2500, then idle
    m.addRecord(0, switchRec(false, 1000, 10, 10, 0, 0, 0));
    m.addRecord(0, switchRec(true, 2000, 10, 10, 10, 11, 0));
    m.addRecord(0, switchRec(false, 2000, 10, 11, 10, 10, 0));
    m.addRecord(0, switchRec(true, 2500, 10, 11, 0, 0, 0));
    // cpu 1: 10 migrates here 2000-3000 (same instant it left cpu 0), left open at the end
    m.addRecord(1, switchRec(false, 2000, 10, 10, 0, 0, 1));
    ParsedRecord s;
    s.type = PERF_RECORD_SAMPLE;
    s.hasSampleId = true;
    s.time = 2100, s.pid = 10, s.tid = 10, s.ip = 0x401000;
    m.addRecord(1, s);
    ParsedRecord lost;
    lost.type = PERF_RECORD_LOST;
    lost.hasSampleId = true;
    lost.time = 2200, lost.lost = 77;
    m.addRecord(1, lost);
    m.addCounter("data ring fill %", 1, "%", 2300, 42.5);
    ParsedRecord late;
    late.type = PERF_RECORD_MMAP2;
    late.hasSampleId = true;
    late.time = 3000;
    m.addRecord(1, late);
    m.finish();
    return m;
}

}  // namespace

TEST(TraceModel, RunSlicesFromCpuWideSwitches) {
    TraceModel m = handMadeModel();
    const auto& s = m.runSlices();
    ASSERT_EQ(s.size(), 3u);
    EXPECT_EQ(s[0].cpu, 0);
    EXPECT_EQ(s[0].tid, 10);
    EXPECT_EQ(s[0].start, 1000u);
    EXPECT_EQ(s[0].end, 2000u);
    // At 2000 two slices start: 11 on cpu 0 and 10 on cpu 1.
    EXPECT_EQ(s[1].tid, 11);
    EXPECT_EQ(s[1].end, 2500u);
    EXPECT_EQ(s[2].cpu, 1);
    EXPECT_EQ(s[2].tid, 10);
    EXPECT_EQ(s[2].end, 3000u) << "a slice still running is closed at the last time seen";
    EXPECT_EQ(m.threadName(11), "editor-io");
    EXPECT_EQ(m.threadName(99), "tid 99");
    EXPECT_EQ(m.processOf().at(11), 10);
    ASSERT_EQ(m.losses().size(), 1u);
    EXPECT_EQ(m.losses()[0].count, 77u);
}

TEST(PerfettoExport, HandMadeTraceFollowsTheRulesAndDecodes) {
    TraceModel m = handMadeModel();
    const std::string path = tempPath("hand.pftrace");
    ASSERT_TRUE(exportPerfetto(m, path).ok());
    auto r = checkPerfettoRules(path);
    for (auto& p : r.problems)
        ADD_FAILURE() << p;
    EXPECT_EQ(r.begins, 6u);  // 3 runs, each on a CPU track and a thread track
    EXPECT_EQ(r.ends, 6u);
    EXPECT_EQ(r.instants, 2u);  // one sample, one loss marker
    EXPECT_EQ(r.counters, 2u);  // cumulative lost records, ring fill
    EXPECT_EQ(r.trackNames[perfettoCpuTrack(1)], "CPU 1");
    EXPECT_EQ(r.trackNames[perfettoThreadTrack(11)], "editor-io");
    EXPECT_EQ(r.slicesPerTrack[perfettoThreadTrack(10)], 2u);

    int status = 0;
    std::string text = protocDecode(path, status);
    ASSERT_EQ(status, 0) << text;
    EXPECT_FALSE(std::regex_search(text, std::regex("(^|\\n)\\s*[0-9]+: "))) << "unknown fields:\n" << text;
    EXPECT_NE(text.find("thread_name: \"editor-io\""), std::string::npos) << text;
    EXPECT_NE(text.find("type: TYPE_SLICE_BEGIN"), std::string::npos);
    EXPECT_NE(text.find("double_counter_value: 42.5"), std::string::npos);
    EXPECT_NE(text.find("name: \"LOST records: 77\""), std::string::npos);
    fs::remove(path);
}

TEST(PerfettoExport, UnwritablePathIsAnError) {
    TraceModel m = handMadeModel();
    auto r = exportPerfetto(m, "/nonexistent-dir/x.pftrace");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("/nonexistent-dir/x.pftrace"), std::string::npos);
}

TEST(CsvExport, RowsForEveryEvent) {
    TraceModel m;
    m.addRecord(0, commRec(1, 5, 5, "a,\"quoted\""));
    m.addRecord(0, switchRec(false, 10, 5, 5, 0, 0, 0));
    m.addRecord(0, switchRec(true, 20, 5, 5, 0, 0, 0));
    m.finish();
    const std::string path = tempPath("rows.csv");
    ASSERT_TRUE(exportCsv(m, path).ok());
    std::ifstream in(path);
    std::string header, row, extra;
    std::getline(in, header);
    std::getline(in, row);
    EXPECT_EQ(header, "kind,cpu,time_ns,end_ns,pid,tid,name,value,detail");
    EXPECT_EQ(row, "run,0,10,20,5,5,\"a,\"\"quoted\"\"\",,");
    EXPECT_FALSE(std::getline(in, extra));
    fs::remove(path);
}

namespace {

// Three SPE records of the hand-made trace's threads, and one of no known thread.
std::vector<spe::SpeRecord> handMadeSpe() {
    std::vector<spe::SpeRecord> v(4);
    v[0].time = 1100, v[0].cpu = 0, v[0].pid = 10, v[0].tid = 10;
    v[0].opClass = spe::OpClass::LoadStore, v[0].isLoad = true;
    v[0].pc = 0x401000, v[0].hasPc = true;
    v[0].dataVa = 0x601040, v[0].hasDataVa = true;
    v[0].totalLatency = 250, v[0].hasTotalLatency = true;
    v[0].dataSource = 0xe, v[0].hasDataSource = true;
    v[0].events = spe::kEvL1dAccess | spe::kEvL1dRefill, v[0].hasEvents = true;
    v[1].time = 2100, v[1].cpu = 0, v[1].pid = 10, v[1].tid = 11;
    v[1].opClass = spe::OpClass::Branch, v[1].isBranch = true, v[1].isConditional = true;
    v[1].pc = 0x401010, v[1].hasPc = true, v[1].branchTarget = 0x401000, v[1].hasBranchTarget = true;
    v[2].time = 2200, v[2].cpu = 1, v[2].pid = 10, v[2].tid = 10;
    v[2].opClass = spe::OpClass::LoadStore, v[2].isStore = true;
    v[3].time = 2900, v[3].cpu = 1;
    v[3].opClass = spe::OpClass::Other;
    return v;
}

ExportSpe speNames(const std::vector<spe::SpeRecord>& records) {
    ExportSpe e;
    e.records = &records;
    e.function = [](const spe::SpeRecord& r) {
        return r.pc == 0x401000 ? std::string("main, the loop") : "";
    };
    e.dataSymbol = [](const spe::SpeRecord& r) { return r.hasDataVa ? std::string("table+0x40") : ""; };
    e.source = [](const spe::SpeRecord&) { return std::string("DRAM"); };
    e.events = [](const spe::SpeRecord&) { return std::string("L1D-access L1D-refill"); };
    return e;
}

}  // namespace

// Each SPE record is an instant on an "SPE" track under its thread's, with
// every field it carries as an arg; a record of no known thread keeps a track too.
TEST(PerfettoExport, SpeRecordsAreInstantsUnderTheirThreads) {
    TraceModel m = handMadeModel();
    const auto records = handMadeSpe();
    const ExportSpe spe = speNames(records);
    ExportOptions o;
    o.spe = &spe;
    const std::string path = tempPath("spe.pftrace");
    ASSERT_TRUE(exportPerfetto(m, path, o).ok());
    auto r = checkPerfettoRules(path);
    for (auto& p : r.problems)
        ADD_FAILURE() << p;
    EXPECT_EQ(r.instants, 2u + 4u);  // the model's sample and loss, and the 4 records
    EXPECT_EQ(r.trackNames[perfettoThreadSpeTrack(10)], "SPE");
    EXPECT_EQ(r.parentOf[perfettoThreadSpeTrack(10)], perfettoThreadTrack(10));
    EXPECT_EQ(r.parentOf[perfettoThreadSpeTrack(11)], perfettoThreadTrack(11));
    int status = 0;
    std::string text = protocDecode(path, status);
    ASSERT_EQ(status, 0) << text;
    EXPECT_FALSE(std::regex_search(text, std::regex("(^|\\n)\\s*[0-9]+: "))) << "unknown fields:\n" << text;
    for (const char* want :
         {"name: \"load\"", "name: \"conditional branch\"", "name: \"store\"", "name: \"other\"",
          "string_value: \"main, the loop\"", "string_value: \"table+0x40\"", "string_value: \"DRAM\"",
          "int_value: 250", "name: \"SPE, thread unknown\""})
        EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
    // A range keeps the records inside it only.
    o.begin = 2000, o.end = 2300;
    ASSERT_TRUE(exportPerfetto(m, path, o).ok());
    r = checkPerfettoRules(path);
    EXPECT_EQ(r.trackNames.count(perfettoThreadSpeTrack(11)), 1u);
    text = protocDecode(path, status);
    EXPECT_EQ(text.find("name: \"load\""), std::string::npos);
    EXPECT_EQ(text.find("SPE, thread unknown"), std::string::npos);
    fs::remove(path);
}

TEST(CsvExport, SpeRecordsAreRowsAndATableOfEveryField) {
    TraceModel m = handMadeModel();
    const auto records = handMadeSpe();
    const ExportSpe spe = speNames(records);
    ExportOptions o;
    o.spe = &spe;
    const std::string path = tempPath("spe.csv");
    ASSERT_TRUE(exportCsv(m, path, o).ok());
    std::ifstream in(path);
    std::vector<std::string> speRows;
    for (std::string line; std::getline(in, line);)
        if (line.rfind("spe,", 0) == 0) speRows.push_back(line);
    ASSERT_EQ(speRows.size(), 4u);
    EXPECT_EQ(speRows[0], "spe,0,1100,,10,10,load,250,\"main, the loop\"");
    EXPECT_EQ(speRows[1], "spe,0,2100,,10,11,conditional branch,,");
    EXPECT_EQ(speRows[3], "spe,1,2900,,-1,-1,other,,");

    const std::string table = tempPath("spe-table.csv");
    ASSERT_TRUE(exportSpeCsv(spe, table, 2000, 3000).ok());
    std::ifstream t(table);
    std::string header, row;
    std::getline(t, header);
    // Every SpeRecord field by its name, then the names.
    EXPECT_EQ(header.rfind("timestamp,time,cpu,pid,tid,context,", 0), 0u) << header;
    EXPECT_NE(header.find(",dataSource,hasDataSource,operation,function,dataSymbol,sourceName,eventNames"),
              std::string::npos)
        << header;
    size_t rows = 0, columns = std::count(header.begin(), header.end(), ',');
    while (std::getline(t, row)) {
        ++rows;
        EXPECT_EQ(size_t(std::count(row.begin(), row.end(), ',')), columns) << row;
    }
    EXPECT_EQ(rows, 3u);  // 2100, 2200, 2900
    auto bad = exportSpeCsv(spe, "/nonexistent-dir/x.csv");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("/nonexistent-dir/x.csv"), std::string::npos);
    fs::remove(path);
    fs::remove(table);
}

namespace {
class ModelRecorder : public RecordConsumer {
public:
    explicit ModelRecorder(TraceModel& m) : model_(m) {}
    void onRecord(int cpu, std::span<const uint8_t>, const ParsedRecord& r) override {
        model_.addRecord(cpu, r);
    }

private:
    TraceModel& model_;
};
}  // namespace

TEST(PerfettoExport, RealCaptureExportsWellFormedTracks) {
    SKIP_WITHOUT_PERF();
    TraceModel model;
    ModelRecorder recorder(model);
    CaptureOptions o;
    o.target = TargetKind::SystemWide;
    o.durationSeconds = 0.4;
    auto session = CaptureSession::open(o, PmuRegistry::discover());
    ASSERT_TRUE(session) << session.error().message;
    (*session)->addConsumer(&recorder);
    ASSERT_TRUE((*session)->start().ok());
    std::thread sleeper([] {
        for (int i = 0; i < 40; ++i)
            usleep(2000);
    });
    sleeper.join();
    (*session)->wait();
    model.finish();
    ASSERT_GT(model.runSlices().size(), 20u);

    const std::string path = tempPath("real.pftrace");
    ASSERT_TRUE(exportPerfetto(model, path).ok());
    auto r = checkPerfettoRules(path);
    for (auto& p : r.problems)
        ADD_FAILURE() << p;
    EXPECT_GT(r.begins, 40u);
    EXPECT_EQ(r.begins, r.ends);
    for (int cpu : (*session)->cpus())
        EXPECT_TRUE(r.trackNames.count(perfettoCpuTrack(cpu))) << "cpu " << cpu;
    int status = 0;
    std::string text = protocDecode(path, status);
    ASSERT_EQ(status, 0) << text.substr(0, 2000);
    EXPECT_FALSE(std::regex_search(text, std::regex("(^|\\n)\\s*[0-9]+: "))) << "unknown fields";

    const std::string csv = tempPath("real.csv");
    ASSERT_TRUE(exportCsv(model, csv).ok());
    std::ifstream in(csv);
    size_t runs = 0, samples = 0;
    std::string line;
    while (std::getline(in, line)) {
        runs += line.rfind("run,", 0) == 0;
        samples += line.rfind("sample,", 0) == 0;
    }
    EXPECT_EQ(runs, model.runSlices().size());
    EXPECT_EQ(samples, model.samples().size());
    fs::remove(path);
    fs::remove(csv);
}

TEST(PerfettoExport, PerfWrittenFileExportsWellFormedTracks) {
    SKIP_WITHOUT_PERF();
    const std::string data = tempPath("perf-written.data");
    const std::string cmd = "perf record -q -e cpu-clock -a -o '" + data + "' -- sleep 0.2 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto file = PerfDataReader::open(data);
    ASSERT_TRUE(file) << file.error().message;
    TraceModel model;
    auto loaded = loadTraceModel(*file, model);
    ASSERT_TRUE(loaded) << loaded.error().message;
    EXPECT_EQ(model.samples().size(), file->summary().recordsByType.at(PERF_RECORD_SAMPLE));
    // perf's synthesized COMM/MMAP records name no CPU; everything else does.
    std::set<int> fileCpus;
    for (auto& [cpu, stats] : file->summary().cpus)
        if (cpu >= 0) fileCpus.insert(int(cpu));
    auto modelCpus = model.cpus();
    EXPECT_EQ(std::set<int>(modelCpus.begin(), modelCpus.end()), fileCpus);
    const std::string out = tempPath("perf-written.pftrace");
    ASSERT_TRUE(exportPerfetto(model, out).ok());
    auto r = checkPerfettoRules(out);
    for (auto& p : r.problems)
        ADD_FAILURE() << p;
    EXPECT_EQ(r.instants, model.samples().size() + model.losses().size());
    int status = 0;
    std::string text = protocDecode(out, status);
    ASSERT_EQ(status, 0) << text.substr(0, 2000);
    EXPECT_FALSE(std::regex_search(text, std::regex("(^|\\n)\\s*[0-9]+: "))) << "unknown fields";
    fs::remove(data);
    fs::remove(out);
}

// ------------------------------------------------------------ decoded Intel PT spans

namespace {

struct PtSynthFib {
    std::string data;
    uint64_t fibCalls = 0;    // the truth's calls into fib
    uint64_t fibAddress = 0;  // fib's entry
};

// fib(default) traced from main by auxscope-ptsynth; its truth counts every call.
PtSynthFib synthesizeFib(const std::string& name) {
    PtSynthFib out;
    out.data = tempPath(name);
    const std::string cmd = std::string("'") + AUXSCOPE_PTSYNTH + "' -q --start main -o '" + out.data +
                            "' -- '" + AUXSCOPE_PTSYNTH_FIB + "' 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    // The truth's events: "TSC call FROM TO" (hex addresses). fib is the most called target.
    std::ifstream truth(out.data + ".truth");
    EXPECT_TRUE(truth) << "no truth next to " << out.data;
    std::map<uint64_t, uint64_t> callsTo;
    std::string line;
    bool events = false;
    while (std::getline(truth, line)) {
        if (line.rfind("events ", 0) == 0) {
            events = true;
            continue;
        }
        if (!events) continue;
        std::istringstream in(line);
        std::string tsc, kind, from, to;
        if (in >> tsc >> kind >> from >> to && kind == "call") ++callsTo[std::stoull(to, nullptr, 16)];
    }
    for (auto& [to, n] : callsTo)
        if (n > out.fibCalls) out.fibCalls = n, out.fibAddress = to;
    return out;
}

// From the shared test data: the tests that read it start with AUXSCOPE_NEED_TEST_DATA().
const std::string kSkylake =
    test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");

}  // namespace

TEST(PerfettoExportSpans, PtSynthFibSlicesNestAndMatchTheTruth) {
    const PtSynthFib fib = synthesizeFib("fib.data");
    ASSERT_GT(fib.fibCalls, 100u) << "the truth should show fib's recursion";
    auto file = PerfDataReader::open(fib.data);
    ASSERT_TRUE(file) << file.error().message;
    ASSERT_TRUE(hasDecodableAuxTrace(*file));
    TraceModel model;
    ASSERT_TRUE(loadTraceModel(*file, model));
    size_t progressCalls = 0;
    auto decoded = decodeAuxTraceSpans(*file, {}, {}, 2, [&](size_t done, size_t total) {
        EXPECT_LE(done, total);
        ++progressCalls;
        return true;
    });
    ASSERT_TRUE(decoded) << decoded.error().message;
    EXPECT_GE(progressCalls, 2u);
    ASSERT_FALSE(decoded->result.threads.empty());
    ExportSpans spans = decoded->exportView();
    ExportOptions options;
    options.spans = &spans;
    const std::string path = tempPath("fib.pftrace");
    ASSERT_TRUE(exportPerfetto(model, path, options).ok());
    auto r = checkPerfettoRules(path);
    for (auto& p : r.problems)
        ADD_FAILURE() << p;
    EXPECT_EQ(r.begins, r.ends);

    const FunctionTable& functions = decoded->session->functions();
    uint64_t fibSpans = 0;
    for (const auto& [tid, store] : decoded->result.threads) {
        ASSERT_GT(tid, 0);
        const uint64_t track = perfettoThreadTrack(tid);
        EXPECT_EQ(r.slicesPerTrack[track], store.size()) << "tid " << tid;
        EXPECT_EQ(r.parentOf.count(perfettoThreadRunTrack(tid)), 1u) << "run intervals move under the thread";
        // The truth's fib calls, each one slice named fib.
        std::string fibName;
        for (size_t i = 0; i < store.size(); ++i) {
            Span span = store.at(i);
            if (!span.isGap() && functions[span.function].address == fib.fibAddress) {
                fibName = functions[span.function].name;
                ++fibSpans;
            }
        }
        EXPECT_EQ(fibName, "fib");
        EXPECT_EQ(r.sliceNames[track]["fib"], fib.fibCalls);
        EXPECT_EQ(r.sliceNames[track]["main"], 1u);
        EXPECT_EQ(r.sliceNames[track]["[gap: untraced]"], 1u) << "tracing stops at exit";
    }
    EXPECT_EQ(fibSpans, fib.fibCalls);

    int status = 0;
    std::string text = protocDecode(path, status);
    ASSERT_EQ(status, 0) << text.substr(0, 2000);
    EXPECT_FALSE(std::regex_search(text, std::regex("(^|\\n)\\s*[0-9]+: "))) << "unknown fields";
    EXPECT_NE(text.find("name: \"fib\""), std::string::npos);
    EXPECT_NE(text.find("name: \"instructions\""), std::string::npos);
    fs::remove(path);
    fs::remove(fib.data);
    fs::remove(fib.data + ".truth");
}

TEST(CsvExportSpans, PtSynthFibSpanRows) {
    const PtSynthFib fib = synthesizeFib("fib-csv.data");
    auto file = PerfDataReader::open(fib.data);
    ASSERT_TRUE(file) << file.error().message;
    TraceModel model;
    ASSERT_TRUE(loadTraceModel(*file, model));
    auto decoded = decodeAuxTraceSpans(*file);
    ASSERT_TRUE(decoded) << decoded.error().message;
    ExportSpans spans = decoded->exportView();
    ExportOptions options;
    options.spans = &spans;
    const std::string path = tempPath("fib.csv");
    ASSERT_TRUE(exportCsv(model, path, options).ok());
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "kind,cpu,time_ns,end_ns,pid,tid,name,value,detail");
    uint64_t spanRows = 0, gapRows = 0, fibRows = 0, mainRows = 0;
    const std::regex spanRow("span,,([0-9]+),([0-9]+),([0-9]+),([0-9]+),([^,]+),([0-9]+),([0-9]+)");
    while (std::getline(in, line)) {
        std::smatch m;
        if (line.rfind("span,", 0) == 0) {
            ++spanRows;
            ASSERT_TRUE(std::regex_match(line, m, spanRow)) << line;
            EXPECT_LE(std::stoull(m[1]), std::stoull(m[2])) << line;
            fibRows += m[5] == "fib";
            if (m[5] == "main") {
                ++mainRows;
                EXPECT_GT(std::stoull(m[6]), 0u) << "main runs instructions of its own: " << line;
            }
        } else if (line.rfind("gap,", 0) == 0) {
            ++gapRows;
            EXPECT_NE(line.find(",untraced,"), std::string::npos) << line;
        }
    }
    EXPECT_EQ(spanRows + gapRows, decoded->spanCount());
    EXPECT_EQ(fibRows, fib.fibCalls);
    EXPECT_EQ(mainRows, 1u);
    EXPECT_EQ(gapRows, 1u);
    fs::remove(path);
    fs::remove(fib.data);
    fs::remove(fib.data + ".truth");
}

// Span rows are formatted in chunks of 64 Ki spans on several threads and
// written in order: the same bytes with 1 and 4 threads; progress after each
// chunk, and a cancel there removes the file.
TEST(CsvExportSpans, ThreadsGiveTheSameRowsAndCancelStopsAtAChunk) {
    FunctionTable functions;
    const uint32_t f1 = functions.add({"alpha", "", 0, false});
    const uint32_t f2 = functions.add({"with,comma", "", 0, false});
    std::map<int32_t, SpanStore> threads;
    uint64_t total = 0;
    for (int32_t tid : {101, 102, 103}) {
        std::vector<Span> v;
        std::vector<Gap> gaps{{GapReason::LostAux, "lost \"here\"", 4096, 1}};
        const size_t n = 100000 + size_t(tid) * 1000;
        uint64_t t = 1000;
        for (size_t i = 0; i < n; ++i, t += 7) {
            Span s;
            s.start = t;
            s.end = t + 5;
            s.depth = int32_t(i % 5);
            s.function = i % 3 == 0 ? f1 : i % 3 == 1 ? f2 : FunctionTable::kUnknown;
            s.instructions = i * 31;
            s.outermost = s.depth == 0;
            if (i % 40000 == 39999) s.gap = 0, s.depth = 0;
            v.push_back(s);
        }
        threads[tid].append(v, gaps);
        total += n;
    }
    ExportSpans spans;
    spans.threads = &threads;
    spans.functions = &functions;
    TraceModel model;
    auto exported = [&](unsigned n, std::function<bool(uint64_t, uint64_t)> progress = {}) {
        ExportOptions options;
        options.spans = &spans;
        options.threads = n;
        options.progress = std::move(progress);
        const std::string path = tempPath("threads-" + std::to_string(n) + ".csv");
        auto done = exportCsv(model, path, options);
        std::ifstream in(path, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        fs::remove(path);
        return std::make_pair(done.ok() ? std::string() : done.error().message, text);
    };
    const auto [error1, one] = exported(1);
    ASSERT_EQ(error1, "");
    EXPECT_EQ(size_t(std::count(one.begin(), one.end(), '\n')), total + 1) << "a header and a row per span";
    EXPECT_NE(one.find("\nspan,,1000,1005,-1,101,alpha,0,0\n"), std::string::npos);
    EXPECT_NE(one.find(",\"with,comma\","), std::string::npos);
    EXPECT_NE(one.find(",lost AUX,4096,\"lost \"\"here\"\"\"\n"), std::string::npos) << one.substr(0, 300);
    const auto [error4, four] = exported(4);
    ASSERT_EQ(error4, "");
    EXPECT_TRUE(one == four) << "4 threads wrote other bytes than 1";

    std::vector<uint64_t> seen;
    const auto [cancelError, rest] = exported(4, [&](uint64_t done, uint64_t all) {
        EXPECT_EQ(all, total);
        seen.push_back(done);
        return seen.size() < 2;
    });
    EXPECT_NE(cancelError.find("export cancelled"), std::string::npos) << cancelError;
    EXPECT_EQ(rest, "") << "a cancelled export leaves no file";
    ASSERT_EQ(seen.size(), 2u) << "no progress after the cancel";
    EXPECT_EQ(seen[0], 65536u);
    EXPECT_EQ(seen[1], 131072u);
}

// perf's Skylake recording without its binaries: the code is unknown, so the
// threads' tracks carry gap slices saying which image is missing.
TEST(PerfettoExportSpans, SkylakeWithoutBinariesShowsMissingImageGaps) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_TRUE(fs::exists(kSkylake)) << kSkylake << " is missing";
    auto file = PerfDataReader::open(kSkylake);
    ASSERT_TRUE(file) << file.error().message;
    TraceModel model;
    auto loaded = loadTraceModel(*file, model);
    EXPECT_TRUE(loaded) << (loaded ? "" : loaded.error().message);
    auto decoded = decodeAuxTraceSpans(*file);
    ASSERT_TRUE(decoded) << decoded.error().message;
    ExportSpans spans = decoded->exportView();
    ExportOptions options;
    options.spans = &spans;
    const std::string path = tempPath("skylake.pftrace");
    ASSERT_TRUE(exportPerfetto(model, path, options).ok());
    auto r = checkPerfettoRules(path);
    for (auto& p : r.problems)
        ADD_FAILURE() << p;
    EXPECT_EQ(r.begins, r.ends);
    size_t missing = 0, spanSlices = 0;
    for (const auto& [tid, store] : decoded->result.threads) {
        const uint64_t track = tid > 0 ? perfettoThreadTrack(tid) : 0;
        if (!track) continue;
        spanSlices += store.size();
        missing += r.sliceNames[track]["[gap: missing image]"];
        // Run intervals sit on the child track, not among the spans.
        EXPECT_EQ(r.slicesPerTrack[track], store.size()) << "tid " << tid;
    }
    EXPECT_GT(spanSlices, 0u);
    EXPECT_GT(missing, 0u);
    int status = 0;
    std::string text = protocDecode(path, status);
    ASSERT_EQ(status, 0) << text.substr(0, 2000);
    EXPECT_FALSE(std::regex_search(text, std::regex("(^|\\n)\\s*[0-9]+: "))) << "unknown fields";
    EXPECT_NE(text.find("name: \"[gap: missing image]\""), std::string::npos);
    EXPECT_NE(text.find("string_value: \"missing image"), std::string::npos) << "gap detail as an arg";
    fs::remove(path);
}

// Slices that a decode cannot nest exactly (equal-time siblings, overlaps at
// segment cuts) still give one slice each, nested, time never going backwards.
TEST(PerfettoExportSpans, AwkwardSpansStillNest) {
    FunctionTable functions;
    uint32_t f = functions.add({"f", "", 0x1000}), g = functions.add({"g", "", 0x2000});
    std::map<int32_t, SpanStore> threads;
    std::vector<Span> spans = {
        {100, 100, f, 0, 1, -1},  // zero length, then a sibling at the same time
        {100, 300, f, 0, 2, -1}, {100, 100, g, 1, 3, -1}, {150, 400, g, 1, 4, -1},  // child outlives parent
        {200, 250, f, 1, 5, -1},                                                    // same depth, overlapping
        {500, 600, 0, 0, 0, 0},                                                     // a gap
    };
    std::vector<Gap> gaps = {{GapReason::LostAux, "lost AUX: offsets 0x0-0x10 missing", 0x40, 3}};
    threads[42].append(spans, gaps);
    ExportSpans view;
    view.threads = &threads;
    view.functions = &functions;
    ExportOptions options;
    options.spans = &view;
    TraceModel model;
    model.finish();
    const std::string path = tempPath("awkward.pftrace");
    ASSERT_TRUE(exportPerfetto(model, path, options).ok());
    auto r = checkPerfettoRules(path);
    for (auto& p : r.problems)
        ADD_FAILURE() << p;
    EXPECT_EQ(r.slicesPerTrack[perfettoThreadTrack(42)], spans.size());
    EXPECT_EQ(r.sliceNames[perfettoThreadTrack(42)]["[gap: lost AUX]"], 1u);
    EXPECT_EQ(r.trackNames[perfettoThreadTrack(42)], "tid 42");
    fs::remove(path);
}

// ------------------------------------------------------------ samples with call stacks

namespace {

// A CSV line's fields (quoted fields unquoted).
std::vector<std::string> csvFields(const std::string& line) {
    std::vector<std::string> out(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
                out.back() += '"', ++i;
            else if (c == '"')
                quoted = false;
            else
                out.back() += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            out.emplace_back();
        } else {
            out.back() += c;
        }
    }
    return out;
}

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> out;
    if (text.empty()) return out;
    std::string part;
    std::istringstream in(text);
    while (std::getline(in, part, sep))
        out.push_back(part);
    if (text.back() == sep) out.emplace_back();
    return out;
}

// A sample's functions as SampleProfile::stack() gives them (leaf first), reversed
// to the order Perfetto's Callstack.frame_ids and folded stacks list them.
std::vector<std::string> outermostFirst(const SampleProfile& profile, size_t i) {
    std::vector<std::string> names;
    for (const SampleProfile::Frame& f : profile.stack(i))
        names.push_back(profile.functions()[f.function].name);
    std::reverse(names.begin(), names.end());
    return names;
}

std::vector<std::string> nodeNames(const SampleProfile& profile, uint32_t node) {
    std::vector<std::string> names;
    for (uint32_t f : profile.tree().stack(node))
        names.push_back(profile.functions()[f].name);
    return names;
}

std::string join(const std::vector<std::string>& names, char sep) {
    std::string out;
    for (size_t k = 0; k < names.size(); ++k)
        out += (k ? std::string(1, sep) : std::string()) + names[k];
    return out;
}

// The test program recorded by perf with call stacks: cpu-clock every ms of CPU
// time and every sched_switch (the stacks threads block in), with switch
// records (their off-CPU time) and the CPU in every sample. Recorded once for
// the suite.
class ExportStacks : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (perfCaptureUnavailableReason()) return;
        dir_ = new test_support::TempDir("export-stacks");
        data_ = (dir_->path / "perf.data").string();
        std::string log;
        const int rc = test_support::runCommand(
            "perf record -q -e cpu-clock/period=1000000/ -e sched:sched_switch -g --switch-events "
            "--sample-cpu -o " +
                data_ + " -- " + AUXSCOPE_STACKS_PROG_FP + " 400",
            &log);
        if (rc != 0) {
            failure_ = "perf record -g failed (" + std::to_string(rc) + "): " + log;
            return;
        }
        auto file = PerfDataReader::open(data_);
        if (!file) {
            failure_ = file.error().message;
            return;
        }
        model_ = new TraceModel;
        if (auto loaded = loadTraceModel(*file, *model_); !loaded) failure_ = loaded.error().message;
        auto sideband = Sideband::load(*file);
        if (!sideband) {
            failure_ = sideband.error().message;
            return;
        }
        auto profile = SampleProfile::load(*file, std::make_shared<const Sideband>(std::move(*sideband)));
        if (!profile) {
            failure_ = profile.error().message;
            return;
        }
        profile_ = new std::shared_ptr<const SampleProfile>(*profile);
    }
    static void TearDownTestSuite() {
        delete profile_;
        delete model_;
        delete dir_;
        profile_ = nullptr, model_ = nullptr, dir_ = nullptr;
    }
    void SetUp() override {
        SKIP_WITHOUT_PERF();
        if (failure_.rfind("perf record", 0) == 0) GTEST_SKIP() << failure_;
        ASSERT_TRUE(failure_.empty()) << failure_;
        ASSERT_TRUE(profile_ && *profile_);
        ASSERT_GT(profile().size(), 100u) << "too few samples to compare";
        ASSERT_FALSE(profile().offCpu().empty()) << "the switch records give off-CPU time";
    }
    static const SampleProfile& profile() { return **profile_; }
    static const TraceModel& model() { return *model_; }
    static const std::string& data() { return data_; }

private:
    static inline test_support::TempDir* dir_ = nullptr;
    static inline std::string data_, failure_;
    static inline TraceModel* model_ = nullptr;
    static inline std::shared_ptr<const SampleProfile>* profile_ = nullptr;
};

}  // namespace

// Every sample is one perf sample on its event's sequence, with its thread, CPU
// and time, and its callstack's frames are the profile's stack of it, outermost
// first (Perfetto's Callstack.frame_ids order); every interned entry is defined
// once per sequence, before or in the packet that first uses it.
TEST_F(ExportStacks, PerfettoSamplesCarryTheProfilesStacks) {
    const SampleProfile& p = profile();
    ExportOptions options;
    options.samples = &p;
    const std::string path = tempPath("stacks.pftrace");
    ASSERT_TRUE(exportPerfetto(model(), path, options).ok());
    auto r = checkPerfettoRules(path);
    for (auto& problem : r.problems)
        ADD_FAILURE() << problem;
    ASSERT_EQ(r.perfSamples.size(), p.size()) << "one perf sample per sample";
    EXPECT_EQ(r.instants, model().losses().size()) << "no bare sample instants beside the perf samples";
    size_t differing = 0;
    std::map<std::pair<uint64_t, uint32_t>, uint64_t> periodSoFar;  // (sequence, cpu)
    bool programStack = false;
    for (size_t i = 0; i < p.size(); ++i) {
        const CheckResult::PerfSample& s = r.perfSamples[i];
        const std::vector<std::string> expected = outermostFirst(p, i);
        EXPECT_EQ(s.sequence, perfettoSampleSequence(p.event(i))) << i;
        EXPECT_EQ(s.ts, p.time(i)) << i;
        EXPECT_EQ(s.tid, uint32_t(p.tid(i))) << i;
        EXPECT_EQ(s.pid, uint32_t(p.pid(i) >= 0 ? p.pid(i) : p.tid(i))) << i;
        ASSERT_TRUE(s.cpu.has_value()) << "recorded with --sample-cpu";
        EXPECT_EQ(*s.cpu, uint32_t(p.cpu(i))) << i;
        uint64_t& soFar = periodSoFar[{s.sequence, *s.cpu}];
        soFar += p.period(i);
        EXPECT_EQ(s.timebaseCount, soFar) << "the event's period so far on the sample's CPU, sample " << i;
        if (s.frames != expected && ++differing <= 3)
            ADD_FAILURE() << "sample " << i << ": perf sample frames " << ::testing::PrintToString(s.frames)
                          << ", SampleProfile::stack " << ::testing::PrintToString(expected);
        const std::string folded = join(s.frames, ';');
        programStack |= folded.find("main;hot;mid") != std::string::npos;
        ASSERT_EQ(s.mappings.size(), s.frames.size());
        for (size_t k = 0; k < s.frames.size(); ++k)
            if (s.frames[k] == "hot") {
                EXPECT_NE(s.mappings[k].find("stacks_prog_fp"), std::string::npos);
            }
    }
    EXPECT_EQ(differing, 0u) << "of " << p.size() << " samples";
    EXPECT_TRUE(programStack) << "main -> hot -> mid in some stack";
    // Each sampled event is its own perf session, named by its sequence's defaults.
    for (size_t e = 0; e < p.events().size(); ++e)
        if (p.events()[e].samples > 0) {
            EXPECT_EQ(r.timebaseOf[perfettoSampleSequence(int(e))], p.events()[e].name);
        }
    // Build-ids as perf recorded them, for the program among others.
    std::string list;
    test_support::runCommand("perf buildid-list -i " + data(), &list, false);
    std::istringstream lines(list);
    std::string line;
    size_t compared = 0;
    while (std::getline(lines, line)) {
        std::istringstream f(line);
        std::string id, file;
        if (!(f >> id >> file)) continue;
        for (const auto& [sequence, ids] : r.buildIds)
            if (auto it = ids.find(file); it != ids.end()) {
                EXPECT_EQ(it->second, id) << file;
                compared += file.find("stacks_prog_fp") != std::string::npos;
            }
    }
    EXPECT_GT(compared, 0u) << "the program's build-id in its mapping:\n" << list;

    // Off-CPU time: a slice per stretch on the thread's "off CPU" track, with
    // the function it blocked in and its stack.
    size_t stretches = 0;
    for (const SampleProfile::OffCpu& o : p.offCpu())
        stretches += o.tid > 0;
    ASSERT_EQ(r.offCpuSlices.size(), stretches);
    bool blockedInRead = false;
    size_t k = 0;
    for (const SampleProfile::OffCpu& o : p.offCpu()) {
        if (o.tid <= 0) continue;
        const CheckResult::ArgSlice& slice = r.offCpuSlices[k++];
        EXPECT_EQ(slice.track, perfettoThreadOffCpuTrack(o.tid));
        EXPECT_EQ(r.parentOf[slice.track], perfettoThreadTrack(o.tid));
        EXPECT_EQ(r.trackNames[slice.track], "off CPU");
        EXPECT_EQ(slice.begin, o.start);
        EXPECT_EQ(slice.end, o.end);
        const std::vector<std::string> names = nodeNames(p, o.node);
        ASSERT_FALSE(names.empty());
        EXPECT_EQ(slice.args.at("blocked in"), names.back());
        EXPECT_EQ(slice.args.at("stack"), join(names, ';'));
        blockedInRead |= slice.args.at("stack").find("blocker_thread;read") != std::string::npos;
    }
    EXPECT_TRUE(blockedInRead) << "the blocking thread's time off CPU is under blocker_thread -> read";

    int status = 0;
    std::string text = protocDecode(path, status);
    ASSERT_EQ(status, 0) << text.substr(0, 2000);
    EXPECT_FALSE(std::regex_search(text, std::regex("(^|\\n)\\s*[0-9]+: "))) << "unknown fields";
    EXPECT_NE(text.find("perf_sample {"), std::string::npos);
    EXPECT_NE(text.find("name: \"cpu-clock/period=1000000/\""), std::string::npos);
    EXPECT_NE(text.find("counter: SW_CPU_CLOCK"), std::string::npos);
    EXPECT_NE(text.find("name: \"sched:sched_switch\""), std::string::npos);
    fs::remove(path);
}

// CSV: a row per sample with its stack folded in the tenth column, a row per
// off-CPU stretch; the other rows as before, with an empty tenth column.
TEST_F(ExportStacks, CsvRowsAreTheProfilesSamplesAndOffCpuStretches) {
    const SampleProfile& p = profile();
    ExportOptions options;
    options.samples = &p;
    const std::string path = tempPath("stacks.csv");
    ASSERT_TRUE(exportCsv(model(), path, options).ok());
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "kind,cpu,time_ns,end_ns,pid,tid,name,value,detail,stack");
    size_t samples = 0, offCpu = 0, runs = 0, differing = 0;
    while (std::getline(in, line)) {
        const std::vector<std::string> f = csvFields(line);
        ASSERT_EQ(f.size(), 10u) << line;
        if (f[0] == "sample") {
            const size_t i = samples++;
            ASSERT_LT(i, p.size());
            EXPECT_EQ(f[1], std::to_string(p.cpu(i)));
            EXPECT_EQ(f[2], std::to_string(p.time(i)));
            EXPECT_EQ(f[4], std::to_string(p.pid(i)));
            EXPECT_EQ(f[5], std::to_string(p.tid(i)));
            EXPECT_EQ(f[7], std::to_string(p.events()[size_t(p.event(i))].attr));
            char ip[32];
            std::snprintf(ip, sizeof ip, "0x%llx", (unsigned long long)p.ip(i));
            EXPECT_EQ(f[8], ip);
            const std::vector<std::string> expected = outermostFirst(p, i);
            if (split(f[9], ';') != expected && ++differing <= 3)
                ADD_FAILURE() << "sample " << i << ": csv stack " << f[9] << ", SampleProfile::stack "
                              << ::testing::PrintToString(expected);
        } else if (f[0] == "off-cpu") {
            const size_t k = offCpu++;
            ASSERT_LT(k, p.offCpu().size());
            const SampleProfile::OffCpu& o = p.offCpu()[k];
            EXPECT_EQ(f[2], std::to_string(o.start));
            EXPECT_EQ(f[3], std::to_string(o.end));
            EXPECT_EQ(f[5], std::to_string(o.tid));
            const std::vector<std::string> names = nodeNames(p, o.node);
            EXPECT_EQ(f[8], names.back());
            EXPECT_EQ(f[9], join(names, ';'));
        } else {
            runs += f[0] == "run";
            EXPECT_EQ(f[9], "") << line;
        }
    }
    EXPECT_EQ(samples, p.size());
    EXPECT_EQ(differing, 0u);
    EXPECT_EQ(offCpu, p.offCpu().size());
    EXPECT_EQ(runs, model().runSlices().size());
    fs::remove(path);
}

// --time: the middle third of the recording holds the samples of that third
// and the off-CPU time inside it, clipped to it.
TEST_F(ExportStacks, RangeAppliesToSamplesAndOffCpuTime) {
    const SampleProfile& p = profile();
    const uint64_t span = p.lastTime() - p.firstTime();
    ExportOptions options;
    options.samples = &p;
    options.begin = p.firstTime() + span / 3;
    options.end = p.firstTime() + 2 * span / 3;
    const size_t expected = p.lowerBound(options.end) - p.lowerBound(options.begin);
    ASSERT_GT(expected, 0u);
    ASSERT_LT(expected, p.size());
    const std::string path = tempPath("stacks-range.pftrace");
    ASSERT_TRUE(exportPerfetto(model(), path, options).ok());
    auto r = checkPerfettoRules(path);
    for (auto& problem : r.problems)
        ADD_FAILURE() << problem;
    EXPECT_EQ(r.perfSamples.size(), expected);
    for (const auto& s : r.perfSamples) {
        EXPECT_GE(s.ts, options.begin);
        EXPECT_LT(s.ts, options.end);
    }
    uint64_t offCpuTime = 0, exported = 0;
    for (const SampleProfile::OffCpu& o : p.offCpu())
        if (o.tid > 0 && o.end > options.begin && o.start < options.end)
            offCpuTime += std::min(o.end, options.end) - std::max(o.start, options.begin);
    for (const auto& slice : r.offCpuSlices) {
        EXPECT_GE(slice.begin, options.begin);
        EXPECT_LE(slice.end, options.end);
        exported += slice.end - slice.begin;
    }
    EXPECT_EQ(exported, offCpuTime);
    const std::string csv = tempPath("stacks-range.csv");
    ASSERT_TRUE(exportCsv(model(), csv, options).ok());
    std::ifstream in(csv);
    std::string line;
    size_t rows = 0;
    while (std::getline(in, line))
        rows += line.rfind("sample,", 0) == 0;
    EXPECT_EQ(rows, expected);
    fs::remove(path);
    fs::remove(csv);
}

// Without the profile the same file exports as a file without stacks always
// did: bare sample instants, nine CSV columns.
TEST_F(ExportStacks, WithoutTheProfileSamplesStayBare) {
    const std::string path = tempPath("bare.pftrace");
    ASSERT_TRUE(exportPerfetto(model(), path).ok());
    auto r = checkPerfettoRules(path);
    for (auto& problem : r.problems)
        ADD_FAILURE() << problem;
    EXPECT_TRUE(r.perfSamples.empty());
    EXPECT_TRUE(r.offCpuSlices.empty());
    EXPECT_EQ(r.instants, model().samples().size() + model().losses().size());
    const std::string csv = tempPath("bare.csv");
    ASSERT_TRUE(exportCsv(model(), csv).ok());
    std::ifstream in(csv);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "kind,cpu,time_ns,end_ns,pid,tid,name,value,detail");
    fs::remove(path);
    fs::remove(csv);
}
