// SPDX-License-Identifier: GPL-3.0-or-later
// ImageResolver's JIT code: perf maps and jitdumps (images/JitCode.h) found for
// the recording's processes, their functions named and, for a jitdump, their
// code bytes placed where the JIT put them (kept apart from the file search).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "images/ImageResolver.h"
#include "images/JitCode.h"

namespace auxscope {

namespace {

bool isRegular(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string baseName(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// One key per file however it was reached (a folder with or without a trailing slash, a link).
std::string fileKey(const std::string& path) {
    std::error_code ec;
    auto canonical = std::filesystem::weakly_canonical(path, ec);
    return ec ? path : canonical.string();
}

}  // namespace

bool ImageResolver::addJitRange(int32_t pid, const JitRange& range) {
    if (range.end <= range.start) return false;
    bool reloaded = false;
    std::map<uint64_t, JitRange>& ranges = jit_[pid];
    // What the new range covers of older ones goes; their parts outside it stay.
    auto cutTail = [&](const JitRange& r) {
        JitRange tail = r;
        tail.start = range.end;
        tail.offset = r.offset + (range.end - r.start);
        return tail;
    };
    std::vector<JitRange> tails;
    auto it = ranges.lower_bound(range.start);
    if (it != ranges.begin()) {
        auto before = std::prev(it);
        if (before->second.end > range.start) {
            reloaded = reloaded || before->second.mapped >= 0;
            if (before->second.end > range.end) tails.push_back(cutTail(before->second));
            before->second.end = range.start;
        }
    }
    while (it != ranges.end() && it->first < range.end) {
        reloaded = reloaded || it->second.mapped >= 0;
        if (it->second.end > range.end) tails.push_back(cutTail(it->second));
        it = ranges.erase(it);
    }
    ranges[range.start] = range;
    for (const JitRange& t : tails)
        ranges[t.start] = t;
    return reloaded;
}

const ImageResolver::JitRange* ImageResolver::jitAt(int32_t pid, uint64_t ip) const {
    auto p = jit_.find(pid);
    if (p == jit_.end()) return nullptr;
    auto it = p->second.upper_bound(ip);
    if (it == p->second.begin()) return nullptr;
    --it;
    return ip < it->second.end ? &it->second : nullptr;
}

void ImageResolver::addJitFile(const std::string& path, bool dump, int32_t pid,
                               std::vector<int32_t>& changed) {
    const std::string key = fileKey(path);
    if (jitRead_.count(key)) return;
    JitFileStatus status;
    status.path = path;
    status.dump = dump;
    status.pid = pid;
    std::vector<int32_t> pids;  // the processes it applies to
    auto forPids = [&](int32_t which) {
        pids.clear();
        if (which >= 0) {
            pids.push_back(which);
        } else {
            for (const auto& [p, process] : sideband_->processes())
                pids.push_back(p);
        }
    };
    if (!dump) {
        auto map = loadPerfMap(path);
        if (!map) {
            status.error = map.error().message;
            notes_.push_back("perf map " + status.error);
        } else {
            if (status.pid < 0) status.pid = pidFromJitFileName(path);
            forPids(status.pid);
            status.malformed = map->malformed;
            for (const std::string& n : map->notes)
                notes_.push_back("perf map " + n);
            if (map->malformed > map->notes.size())
                notes_.push_back("perf map " + path + ": " +
                                 std::to_string(map->malformed - map->notes.size()) +
                                 " more malformed lines");
            for (const PerfMapSymbol& s : map->symbols) {
                const uint32_t function = functions_.add({s.name, path, s.start, false});
                for (int32_t p : pids)
                    addJitRange(p, {s.start, s.start + s.size, function, -1, 0});
                ++status.functions;
            }
        }
    } else {
        auto loaded = loadJitDump(path);
        if (!loaded) {
            status.error = loaded.error().message;
            notes_.push_back("jitdump " + status.error);
        } else {
            const JitDump& d = *loaded;
            status.pid = int32_t(d.pid);
            forPids(status.pid);
            if (d.error) {
                status.error = d.error->message;
                notes_.push_back("jitdump " + status.error + " (the " + std::to_string(d.loads.size()) +
                                 " code loads before it are used)");
            }
            if (d.unknownRecords)
                notes_.push_back("jitdump " + path + ": " + std::to_string(d.unknownRecords) +
                                 " records of unknown kinds skipped");
            // The dump holds the code bytes: decoders read them from it as from an ELF file.
            const int mapped = d.loads.empty() ? -1 : mapFile(path);
            if (!d.loads.empty() && mapped < 0)
                notes_.push_back("jitdump " + path + ": cannot map it: " + std::strerror(errno) +
                                 " (names only, no code for decoders)");
            // Loads and moves in the order they happened (each list is in file order).
            struct Placed {
                uint32_t function;
                uint64_t offset;
            };
            std::map<uint64_t, Placed> byIndex;  // code_index -> its load
            size_t move = 0, reloads = 0;
            auto applyMove = [&](const JitCodeMove& m) {
                auto it = byIndex.find(m.index);
                if (it == byIndex.end()) return;  // a move of code this dump never loaded
                bool reloaded = false;
                for (int32_t p : pids)
                    reloaded |= addJitRange(p, {m.newAddress, m.newAddress + m.size, it->second.function,
                                                mapped, it->second.offset});
                reloads += reloaded;
            };
            for (const JitCodeLoad& l : d.loads) {
                while (move < d.moves.size() && d.moves[move].time < l.time)
                    applyMove(d.moves[move++]);
                if (!l.size) continue;
                const uint32_t function = functions_.add({l.name, path, l.address, false});
                byIndex[l.index] = {function, l.codeOffset};
                bool reloaded = false;
                for (int32_t p : pids)
                    reloaded |=
                        addJitRange(p, {l.address, l.address + l.size, function, mapped, l.codeOffset});
                reloads += reloaded;
                ++status.functions;
            }
            while (move < d.moves.size())
                applyMove(d.moves[move++]);
            if (reloads)
                notes_.push_back(
                    "jitdump " + path + ": " + std::to_string(reloads) +
                    " code loads or moves reuse addresses of earlier ones: there, names and code are "
                    "the last one's for the whole recording (no look-up by time yet)");
            // The marker mapping of the dump is no missing image: it is the dump, read here.
            for (const auto& [recorded, index] : fileIndex_)
                if (files_[index].resolved.empty() && baseName(recorded) == baseName(path))
                    files_[index].resolved = path;
        }
    }
    for (int32_t p : pids)
        changed.push_back(p);
    jitFiles_.push_back(std::move(status));
    jitRead_[key] = int(jitFiles_.size() - 1);
}

std::vector<int32_t> ImageResolver::loadJit() {
    std::vector<int32_t> changed;
    // Named by the user: a missing one is said.
    for (const std::string& path : options_.perfMaps)
        addJitFile(path, false, -1, changed);
    for (const std::string& path : options_.jitDumps)
        addJitFile(path, true, -1, changed);
    for (const auto& [pid, process] : sideband_->processes()) {
        const std::string id = std::to_string(pid);
        auto found = [&](const std::string& path, bool dump) {
            if (isRegular(path)) addJitFile(path, dump, dump ? -1 : pid, changed);
        };
        found("/tmp/perf-" + id + ".map", false);
        for (const std::string& dir : options_.binaryDirs) {
            found(dir + "/perf-" + id + ".map", false);
            found(dir + "/jit-" + id + ".dump", true);
        }
        // perf's marker mmap: the JIT maps its dump executable, so the recording names it.
        for (const Mapping& m : process.maps) {
            const std::string name = baseName(m.file);
            if (name.rfind("jit-", 0) != 0 || pidFromJitFileName(name) < 0) continue;
            if (jitRead_.count(fileKey(m.file))) continue;
            bool seen = isRegular(m.file);
            if (seen) addJitFile(m.file, true, -1, changed);
            for (const std::string& dir : options_.binaryDirs)
                if (!seen && isRegular(dir + "/" + name)) {
                    addJitFile(dir + "/" + name, true, -1, changed);
                    seen = true;
                }
            if (!seen) {
                const std::string note = "jitdump " + m.file + " (mapped by pid " + id +
                                         ") not found: pass --jit-dump FILE for names and code of its JIT";
                if (std::find(notes_.begin(), notes_.end(), note) == notes_.end()) notes_.push_back(note);
            }
        }
    }
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    return changed;
}

}  // namespace auxscope
