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
    struct stat st;
    const uint64_t size = ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
    // A file read before is read again only when it grew (a JIT appends as it
    // compiles; a live decoder's update() sees the new functions): what was read
    // stays, the records after it are added.
    auto known = jitRead_.find(key);
    if (known == jitRead_.end()) {
        JitFileStatus fresh;
        fresh.path = path;
        fresh.dump = dump;
        fresh.pid = pid;
        jitFiles_.push_back(std::move(fresh));
        known = jitRead_.emplace(key, int(jitFiles_.size() - 1)).first;
    } else if (jitProgress_[key].size == size) {
        return;
    }
    JitFileStatus& status = jitFiles_[known->second];
    JitProgress& progress = jitProgress_[key];
    progress.size = size;
    status.error.clear();
    auto note = [&](const std::string& text) {
        if (std::find(notes_.begin(), notes_.end(), text) == notes_.end()) notes_.push_back(text);
    };
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
    bool added = false;
    if (!dump) {
        auto map = loadPerfMap(path);
        if (!map) {
            status.error = map.error().message;
            note("perf map " + status.error);
        } else {
            if (status.pid < 0) status.pid = pidFromJitFileName(path);
            forPids(status.pid);
            status.malformed = map->malformed;
            for (const std::string& n : map->notes)
                note("perf map " + n);
            if (map->malformed > map->notes.size())
                note("perf map " + path + ": " + std::to_string(map->malformed - map->notes.size()) +
                     " more malformed lines");
            for (size_t i = progress.items; i < map->symbols.size(); ++i) {
                const PerfMapSymbol& s = map->symbols[i];
                const uint32_t function = functions_.add({s.name, path, s.start, false});
                for (int32_t p : pids)
                    addJitRange(p, {s.start, s.start + s.size, function, -1, 0});
                ++status.functions;
                added = true;
            }
            progress.items = std::max(progress.items, map->symbols.size());
        }
    } else {
        auto loaded = loadJitDump(path);
        if (!loaded) {
            status.error = loaded.error().message;
            note("jitdump " + status.error);
        } else {
            const JitDump& d = *loaded;
            status.pid = int32_t(d.pid);
            forPids(status.pid);
            if (d.error) {
                status.error = d.error->message;
                note("jitdump " + status.error + " (the " + std::to_string(d.loads.size()) +
                     " code loads before it are used)");
            }
            if (d.unknownRecords)
                note("jitdump " + path + ": " + std::to_string(d.unknownRecords) +
                     " records of unknown kinds skipped");
            // The dump holds the code bytes: decoders read them from it as from an
            // ELF file. A grown dump is mapped again (new entry; the earlier
            // mapping stays valid for the ranges and spans that point into it).
            if (d.loads.size() > progress.items) {
                if (progress.mapped >= 0) mappedIndex_.erase(path);
                const int again = mapFile(path);
                if (again < 0)
                    note("jitdump " + path + ": cannot map it: " + std::strerror(errno) +
                         " (names only, no code for decoders)");
                progress.mapped = again;
            }
            const int mapped = progress.mapped;
            if (progress.dump < 0) {
                jitDumps_.push_back({path, d.elfMach, {}});
                progress.dump = int(jitDumps_.size() - 1);
            }
            const int dumpIndex = progress.dump;
            for (const JitDebugInfo& info : d.debugInfo)
                jitDumps_[size_t(dumpIndex)].lines[info.codeAddress] = info.lines;
            // Loads and moves in the order they happened (each list is in file order).
            size_t move = progress.moves, reloads = 0;
            auto applyMove = [&](const JitCodeMove& m) {
                auto it = progress.byIndex.find(m.index);
                if (it == progress.byIndex.end()) return;  // a move of code this dump never loaded
                bool reloaded = false;
                for (int32_t p : pids)
                    reloaded |= addJitRange(p, {m.newAddress, m.newAddress + m.size, it->second.first, mapped,
                                                it->second.second, dumpIndex, it->second.second});
                reloads += reloaded;
                added = true;
            };
            for (size_t i = progress.items; i < d.loads.size(); ++i) {
                const JitCodeLoad& l = d.loads[i];
                while (move < d.moves.size() && d.moves[move].time < l.time)
                    applyMove(d.moves[move++]);
                if (!l.size) continue;
                const uint32_t function = functions_.add({l.name, path, l.address, false});
                progress.byIndex[l.index] = {function, l.codeOffset};
                bool reloaded = false;
                for (int32_t p : pids)
                    reloaded |= addJitRange(p, {l.address, l.address + l.size, function, mapped, l.codeOffset,
                                                dumpIndex, l.codeOffset});
                reloads += reloaded;
                ++status.functions;
                added = true;
            }
            while (move < d.moves.size())
                applyMove(d.moves[move++]);
            progress.items = std::max(progress.items, d.loads.size());
            progress.moves = move;
            if (reloads)
                note("jitdump " + path + ": " + std::to_string(reloads) +
                     " code loads or moves reuse addresses of earlier ones: there, names and code are "
                     "the last one's for the whole recording (no look-up by time yet)");
            // The marker mapping of the dump is no missing image: it is the dump, read here.
            for (const auto& [recorded, index] : fileIndex_)
                if (files_[index].resolved.empty() && baseName(recorded) == baseName(path))
                    files_[index].resolved = path;
        }
    }
    if (added)
        for (int32_t p : pids)
            changed.push_back(p);
}

std::optional<ImageResolver::JitSource> ImageResolver::jitSourceAt(int32_t pid, uint64_t ip) const {
    const JitRange* range = jitAt(pid, ip);
    if (!range || range->dump < 0) return std::nullopt;
    const JitDumpInfo& dump = jitDumps_[size_t(range->dump)];
    JitSource out;
    out.dump = dump.path;
    out.machine = dump.machine;
    // The line table of the load the range came from (by the address it was
    // loaded at; a moved one's lines move with it).
    const FunctionInfo& f = functions_[range->function];
    auto table = dump.lines.find(f.address);
    if (table == dump.lines.end()) return out;
    const uint64_t at = f.address + (range->offset - range->loadOffset) + (ip - range->start);
    const JitLine* best = nullptr;
    for (const JitLine& l : table->second)
        if (l.address <= at && (!best || l.address >= best->address)) best = &l;
    if (best) out.file = best->file, out.line = best->line;
    return out;
}

std::vector<int32_t> ImageResolver::loadJit() {
    std::vector<int32_t> changed;
    // Named by the user: a missing one is said.
    for (const std::string& path : options_.perfMaps)
        addJitFile(path, false, -1, changed);
    for (const std::string& path : options_.jitDumps)
        addJitFile(path, true, -1, changed);
    for (const auto& [processId, process] : sideband_->processes()) {
        const int32_t pid = processId;  // a lambda cannot capture a structured binding (clang 14)
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
