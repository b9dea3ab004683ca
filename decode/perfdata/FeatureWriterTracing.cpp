// SPDX-License-Identifier: GPL-3.0-or-later
// HEADER_TRACING_DATA: what perf's tools need to decode tracepoint samples (the
// raw field layout of each event), in the layout perf's trace-event reader
// expects (Documentation/perf.data-file-format.txt points at it):
//
//   "\x17\x08\x44" "tracing" "0.6\0"   magic and version string
//   u8 big-endian, u8 sizeof(long), u32 page size
//   "header_page\0"  u64 size, tracefs events/header_page
//   "header_event\0" u64 size, tracefs events/header_event
//   u32 count of ftrace event formats (we store none), then u64 size + text each
//   u32 count of systems; per system: its name NUL-terminated, u32 count of
//       events, per event u64 size + the text of events/<system>/<event>/format
//   u32 size of kallsyms (0), u32 size of printk formats (0), u64 size of
//   saved cmdlines (0)
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>

#include "Tracefs.h"
#include "perfdata/FeatureWriter.h"

namespace auxscope {
namespace {

// tracefs files report size 0: read to the end.
std::optional<std::string> slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return std::nullopt;
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

Expected<std::vector<uint8_t>> FeatureWriter::tracingData(const std::vector<std::string>& tracepoints) {
    auto root = Tracefs::locate();
    if (!root) return root.error();
    const auto events = *root / "events";
    FeatureBlob b;
    const char magic[] = {0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
    b.raw(magic, sizeof magic).raw("0.6", 4);
    const uint8_t bigEndian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__, longSize = sizeof(long);
    b.raw(&bigEndian, 1).raw(&longSize, 1).u32(uint32_t(sysconf(_SC_PAGESIZE)));

    for (const char* name : {"header_page", "header_event"}) {
        auto text = slurp(events / name);
        if (!text) return makeError("cannot read " + (events / name).string());
        b.raw(name, std::char_traits<char>::length(name) + 1)
            .u64(text->size())
            .raw(text->data(), text->size());
    }
    b.u32(0);  // ftrace's own event formats: not needed for tracepoint samples

    std::map<std::string, std::vector<std::string>> bySystem;
    for (auto& tp : tracepoints) {
        auto colon = tp.find(':');
        if (colon == std::string::npos) continue;
        auto& v = bySystem[tp.substr(0, colon)];
        if (std::find(v.begin(), v.end(), tp.substr(colon + 1)) == v.end()) v.push_back(tp.substr(colon + 1));
    }
    b.u32(uint32_t(bySystem.size()));
    for (auto& [system, names] : bySystem) {
        b.raw(system.c_str(), system.size() + 1).u32(uint32_t(names.size()));
        for (auto& n : names) {
            auto p = events / system / n / "format";
            auto text = slurp(p);
            if (!text) return makeError("cannot read " + p.string());
            b.u64(text->size()).raw(text->data(), text->size());
        }
    }
    b.u32(0);  // kallsyms: perf resolves kernel symbols itself
    b.u32(0);  // printk formats
    b.u64(0);  // saved cmdlines
    return b.take();
}

}  // namespace auxscope
