// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/DecodeOptions.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace auxscope {
namespace {

std::optional<uint64_t> number(const std::string& s) {
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (errno || *end) return std::nullopt;
    return v;
}

}  // namespace

bool isDecodeSelectionOption(const std::string& o) {
    return o == "--cpu" || o == "--tid" || o == "--time" || o == "--symfs" || o == "-j" || o == "--vmlinux" ||
           o == "--kcore" || o == "--kallsyms" || o == "--pt-decoder" || o == "--jit-dump" ||
           o == "--perf-map" || o == "--binary-dir" || o == "--debug-dir" || o == "--debuginfod";
}

bool isDecodeSelectionFlag(const std::string& o) {
    return o == "--no-debuginfod";
}

void applyDecodeSelectionFlag(const std::string& o, DecodeSelection& out) {
    if (o == "--no-debuginfod") out.session.images.debuginfod = false;
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

Expected<void> applyDecodeSelectionOption(const std::string& a, const std::string& v, DecodeSelection& out) {
    if (a == "--cpu" || a == "--tid" || a == "-j") {
        auto n = number(v);
        if (!n) return makeError(a + " " + v + ": not a number");
        if (a == "--cpu") out.window.cpu = int(*n);
        if (a == "--tid") out.window.tid = int32_t(*n);
        if (a == "-j") out.threads = unsigned(*n);
    } else if (a == "--time") {
        const size_t dash = v.find('-');
        if (dash == std::string::npos) return makeError("--time " + v + ": expected A-B");
        const std::string from = v.substr(0, dash), to = v.substr(dash + 1);
        auto b = number(from), e = number(to);
        if ((!from.empty() && !b) || (!to.empty() && !e))
            return makeError("--time " + v + ": expected A-B in ns");
        if (b) out.window.begin = *b;
        if (e) out.window.end = *e;
    } else if (a == "--pt-decoder") {
        if (v != "walk" && v != "block") return makeError("--pt-decoder " + v + ": expected walk or block");
        out.session.ptFlowWalker = v == "walk";
    } else if (a == "--symfs") {
        out.session.images.symfs = v;
    } else if (a == "--jit-dump" || a == "--perf-map") {
        struct stat st;
        if (::stat(v.c_str(), &st) != 0) return makeError(a + " " + v + ": " + std::strerror(errno));
        if (!S_ISREG(st.st_mode)) return makeError(a + " " + v + ": not a file");
        (a == "--jit-dump" ? out.session.images.jitDumps : out.session.images.perfMaps).push_back(v);
    } else if (a == "--binary-dir" || a == "--debug-dir") {
        struct stat st;
        if (::stat(v.c_str(), &st) != 0) return makeError(a + " " + v + ": " + std::strerror(errno));
        if (!S_ISDIR(st.st_mode)) return makeError(a + " " + v + ": not a folder");
        (a == "--binary-dir" ? out.session.images.binaryDirs : out.session.images.debugDirs).push_back(v);
    } else if (a == "--debuginfod") {
        if (v.rfind("http://", 0) != 0 && v.rfind("https://", 0) != 0 && v.rfind("file://", 0) != 0)
            return makeError("--debuginfod " + v + ": expected a URL (http://HOST:PORT, https://...)");
        out.session.images.debuginfodUrls.push_back(v);
    } else if (a == "--vmlinux" || a == "--kcore" || a == "--kallsyms") {
        struct stat st;
        if (::stat(v.c_str(), &st) != 0) return makeError(a + " " + v + ": " + std::strerror(errno));
        if (a == "--vmlinux") out.session.images.vmlinux = v;
        if (a == "--kcore") out.session.images.kcore = v;
        if (a == "--kallsyms") out.session.images.kallsyms = v;
    } else {
        return makeError("not a decode selection option: " + a);
    }
    return {};
}

void addOpenedFileFolder(const std::string& path, DecodeSelection& selection) {
    const size_t slash = path.rfind('/');
    const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    auto& dirs = selection.session.images.binaryDirs;
    if (std::find(dirs.begin(), dirs.end(), folder) == dirs.end()) dirs.push_back(folder);
}

}  // namespace auxscope
