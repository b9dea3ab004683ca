// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/DecodeOptions.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>

namespace auxscope {
namespace {

// Their help lives in each command's text (the commands word them for what
// they do); tests/app/CliParseTest checks that every option is in it.
constexpr OptionSpec kSelectionOptions[] = {
    {"cpu", 0, OptionArg::Required, "N", ""},
    {"tid", 0, OptionArg::Required, "T", ""},
    {"time", 0, OptionArg::Required, "A-B", ""},
    {"symfs", 0, OptionArg::Required, "DIR", ""},
    {"", 'j', OptionArg::Required, "N", ""},
    {"vmlinux", 0, OptionArg::Required, "FILE", ""},
    {"kcore", 0, OptionArg::Required, "DIR|FILE", ""},
    {"kallsyms", 0, OptionArg::Required, "FILE", ""},
    {"pt-decoder", 0, OptionArg::Required, "walk|block", ""},
    {"jit-dump", 0, OptionArg::Required, "FILE", ""},
    {"perf-map", 0, OptionArg::Required, "FILE", ""},
    {"binary-dir", 0, OptionArg::Required, "DIR", ""},
    {"debug-dir", 0, OptionArg::Required, "DIR", ""},
    {"debuginfod", 0, OptionArg::Required, "URL", ""},
    {"no-debuginfod", 0, OptionArg::None, "", ""},
};

}  // namespace

std::span<const OptionSpec> decodeSelectionOptions() {
    return kSelectionOptions;
}

std::vector<OptionSpec> withDecodeSelectionOptions(std::initializer_list<OptionSpec> own) {
    std::vector<OptionSpec> all(own);
    all.insert(all.end(), std::begin(kSelectionOptions), std::end(kSelectionOptions));
    return all;
}

bool isDecodeSelectionOption(const ParsedOption& o) {
    // By name: the commands' tables hold copies of these entries.
    return o.spec &&
           std::any_of(std::begin(kSelectionOptions), std::end(kSelectionOptions), [&](const OptionSpec& s) {
               return std::string_view(s.longName) == o.spec->longName && s.shortName == o.spec->shortName;
           });
}

const char* const kImageLookupHelp =
    R"(  --binary-dir DIR  also look for mapped files in DIR, as a sysroot (DIR + recorded
                    path) and by name (DIR/NAME); repeatable. A file is taken only
                    when its build-id is the recorded one (others: a note)
  --debug-dir DIR   a debug root laid out as /usr/lib/debug (.build-id/xx/rest.debug,
                    or by path / .gnu_debuglink name) for stripped files; repeatable
  --debuginfod URL  ask this debuginfod server for the debug files (names, source
                    lines) of stripped files and for missing files, by build-id;
                    repeatable (default: $DEBUGINFOD_URLS; without either no server
                    is asked). Fetched files stay in libdebuginfod's cache
                    ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client)
  --no-debuginfod   ask no server, even with DEBUGINFOD_URLS set
)";

std::string debuginfodSummary(const ImageResolver& images) {
    const ImageResolver::DebuginfodStatus& d = images.debuginfod();
    if (d.urls.empty()) return {};
    std::string line = "debuginfod " + d.urls + ": " + std::to_string(d.asked) + " asked, " +
                       std::to_string(d.debugFiles) + " debug files, " + std::to_string(d.executables) +
                       " executables received, " + std::to_string(d.failed) + " failed";
    if (d.notAsked) line += ", " + std::to_string(d.notAsked) + " not asked";
    if (d.cancelled) line += " (cancelled)";
    return line;
}

std::string withImageLookupHelp(const char* help) {
    std::string text = help;
    const size_t at = text.find("%LOOKUP%");
    if (at != std::string::npos) text.replace(at, 8, kImageLookupHelp);
    return text;
}

Expected<void> applyDecodeSelectionOption(const ParsedOption& o, DecodeSelection& out) {
    // The table's own entry (withDecodeSelectionOptions copies them): matched by name.
    const std::string& a = o.spelling;
    const std::string v = o.value.value_or(std::string());
    if (o.is("no-debuginfod")) {
        out.session.images.debuginfod = false;
    } else if (o.is("cpu")) {
        // perf numbers CPUs from 0; 65535 is far past any machine (and parseCpuList's limit).
        auto n = parseIntegerOption(a, v, 0, 65535);
        if (!n) return n.error();
        out.window.cpu = int(*n);
    } else if (o.is("tid")) {
        // Thread ids are positive pids (decimal, as perf reads them: 010 is ten).
        auto n = parseIntegerOption(a, v, 0, std::numeric_limits<int32_t>::max());
        if (!n) return n.error();
        out.window.tid = int32_t(*n);
    } else if (o.isShort('j')) {
        auto n = parseIntegerOption(a, v, 0, 4096);
        if (!n) return n.error();
        out.threads = unsigned(*n);
    } else if (o.is("time")) {
        auto t = parseTimeRangeOption(a, v);
        if (!t) return t.error();
        out.time = *t;
        out.window.begin = t->begin && !t->beginRelative ? *t->begin : 0;
        out.window.end = t->end && !t->endRelative ? *t->end : UINT64_MAX;
    } else if (o.is("pt-decoder")) {
        if (v != "walk" && v != "block") return makeError(a + " " + v + ": expected walk or block");
        out.session.ptFlowWalker = v == "walk";
    } else if (o.is("symfs")) {
        out.session.images.symfs = v;
    } else if (o.is("jit-dump") || o.is("perf-map")) {
        struct stat st;
        if (::stat(v.c_str(), &st) != 0) return makeError(a + " " + v + ": " + std::strerror(errno));
        if (!S_ISREG(st.st_mode)) return makeError(a + " " + v + ": not a file");
        (o.is("jit-dump") ? out.session.images.jitDumps : out.session.images.perfMaps).push_back(v);
    } else if (o.is("binary-dir") || o.is("debug-dir")) {
        struct stat st;
        if (::stat(v.c_str(), &st) != 0) return makeError(a + " " + v + ": " + std::strerror(errno));
        if (!S_ISDIR(st.st_mode)) return makeError(a + " " + v + ": not a folder");
        (o.is("binary-dir") ? out.session.images.binaryDirs : out.session.images.debugDirs).push_back(v);
    } else if (o.is("debuginfod")) {
        if (v.rfind("http://", 0) != 0 && v.rfind("https://", 0) != 0 && v.rfind("file://", 0) != 0)
            return makeError(a + " " + v + ": expected a URL (http://HOST:PORT, https://...)");
        out.session.images.debuginfodUrls.push_back(v);
    } else if (o.is("vmlinux") || o.is("kcore") || o.is("kallsyms")) {
        struct stat st;
        if (::stat(v.c_str(), &st) != 0) return makeError(a + " " + v + ": " + std::strerror(errno));
        if (o.is("vmlinux")) out.session.images.vmlinux = v;
        if (o.is("kcore")) out.session.images.kcore = v;
        if (o.is("kallsyms")) out.session.images.kallsyms = v;
    } else {
        return makeError("not a decode selection option: " + a);
    }
    return {};
}

Expected<void> resolveTime(DecodeSelection& selection, uint64_t recordingStart) {
    if (!selection.time) return {};
    const TimeRangeOption& t = *selection.time;
    auto side = [&](const std::optional<uint64_t>& v, bool relative,
                    uint64_t otherwise) -> Expected<uint64_t> {
        if (!v) return otherwise;
        if (!relative) return *v;
        if (*v > UINT64_MAX - recordingStart)
            return makeError("--time +" + std::to_string(*v) + ": past the end of perf time");
        return recordingStart + *v;
    };
    auto b = side(t.begin, t.beginRelative, 0);
    if (!b) return b.error();
    auto e = side(t.end, t.endRelative, UINT64_MAX);
    if (!e) return e.error();
    if (*e < *b)
        return makeError("--time: the range " + std::to_string(*b) + "-" + std::to_string(*e) +
                         " ends before it begins (the recording starts at " + std::to_string(recordingStart) +
                         ")");
    selection.window.begin = *b;
    selection.window.end = *e;
    return {};
}

void addOpenedFileFolder(const std::string& path, DecodeSelection& selection) {
    const size_t slash = path.rfind('/');
    const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    auto& dirs = selection.session.images.binaryDirs;
    if (std::find(dirs.begin(), dirs.end(), folder) == dirs.end()) dirs.push_back(folder);
}

}  // namespace auxscope
