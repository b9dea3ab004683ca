// SPDX-License-Identifier: GPL-3.0-or-later
#include "record/ProcSynth.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace auxscope {
namespace {

// Reads a whole (procfs) file with plain read(): these files report size 0 and
// iostreams cost more than the rest of the work for thousands of small files.
bool readFile(const std::string& path, std::string& out) {
    out.clear();
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[16384];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, size_t(n));
    }
    close(fd);
    return true;
}

std::string trimNewline(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r'))
        s.pop_back();
    return s;
}

bool isNumber(const char* s) {
    if (!*s) return false;
    for (; *s; ++s)
        if (*s < '0' || *s > '9') return false;
    return true;
}

std::vector<pid_t> numericEntries(const std::string& dir) {
    std::vector<pid_t> out;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d))
            if (isNumber(e->d_name)) out.push_back(pid_t(std::atol(e->d_name)));
        closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

// "PPid:\t123" from /proc/PID/status.
pid_t statusField(const std::string& status, std::string_view key) {
    size_t at = 0;
    while (at < status.size()) {
        size_t end = status.find('\n', at);
        if (end == std::string::npos) end = status.size();
        std::string_view line(status.data() + at, end - at);
        if (line.substr(0, key.size()) == key)
            return pid_t(std::atol(std::string(line.substr(key.size())).c_str()));
        at = end + 1;
    }
    return -1;
}

uint64_t hex(std::string_view s) {
    uint64_t v = 0;
    for (char c : s) {
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) break;
        v = v * 16 + uint64_t(d);
    }
    return v;
}

}  // namespace

Expected<void> ProcSynth::comm(pid_t pid, pid_t tid, const std::string& name) {
    RecordBuilder b(PERF_RECORD_COMM);
    b.u32(uint32_t(pid)).u32(uint32_t(tid)).str(name.substr(0, 15)).sampleId(spec_, pid, tid, 0);
    ++counts_.comm;
    return emit_(b.finish());
}

Expected<void> ProcSynth::fork(pid_t pid, pid_t ppid, pid_t tid, pid_t ptid) {
    RecordBuilder b(PERF_RECORD_FORK);
    b.u32(uint32_t(pid)).u32(uint32_t(ppid)).u32(uint32_t(tid)).u32(uint32_t(ptid)).u64(0);
    b.sampleId(spec_, pid, tid, 0);
    ++counts_.fork;
    return emit_(b.finish());
}

Expected<bool> ProcSynth::kernelMmap(std::string* note) {
    std::string ks;
    if (!readFile(proc_ + "/kallsyms", ks)) {
        if (note) *note = "cannot read " + proc_ + "/kallsyms: no kernel map synthesized";
        return false;
    }
    uint64_t text = 0, stext = 0, etext = 0;
    size_t at = 0;
    // Lines look like "ffffffff81000000 T _text"; the core kernel comes first, sorted.
    while (at < ks.size()) {
        size_t end = ks.find('\n', at);
        if (end == std::string::npos) end = ks.size();
        std::string_view line(ks.data() + at, end - at);
        at = end + 1;
        auto sp2 = line.find(' ', line.find(' ') + 1);
        if (sp2 == std::string_view::npos) continue;
        std::string_view name = line.substr(sp2 + 1);
        if (name == "_text")
            text = hex(line);
        else if (name == "_stext")
            stext = hex(line);
        else if (name == "_etext") {
            etext = hex(line);
            break;
        }
    }
    const uint64_t start = text ? text : stext;
    if (!start) {
        if (note)
            *note =
                "/proc/kallsyms shows no _text/_stext address (kernel.kptr_restrict?): no kernel map "
                "synthesized, kernel samples will not resolve";
        return false;
    }
    const uint64_t len = etext > start ? etext - start : ~uint64_t(0) - start;
    const char* name = text ? "[kernel.kallsyms]_text" : "[kernel.kallsyms]_stext";
    RecordBuilder b(PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL);
    b.u32(uint32_t(-1)).u32(0).u64(start).u64(len).u64(start).str(name).sampleId(spec_, -1, 0, 0);
    ++counts_.mmap;
    if (auto r = emit_(b.finish()); !r) return r.error();
    return true;
}

Expected<void> ProcSynth::maps(pid_t pid) {
    if (!readFile(proc_ + "/" + std::to_string(pid) + "/maps", scratch_)) return {};
    const std::string maps = scratch_;
    size_t at = 0;
    while (at < maps.size()) {
        size_t end = maps.find('\n', at);
        if (end == std::string::npos) end = maps.size();
        std::string_view line(maps.data() + at, end - at);
        at = end + 1;
        // start-end perms offset maj:min inode [path]
        size_t p = 0;
        auto field = [&]() {
            while (p < line.size() && line[p] == ' ')
                ++p;
            size_t s = p;
            while (p < line.size() && line[p] != ' ')
                ++p;
            return line.substr(s, p - s);
        };
        std::string_view range = field(), perms = field(), offset = field(), dev = field(), inode = field();
        if (perms.size() < 4 || perms[2] != 'x') continue;
        while (p < line.size() && line[p] == ' ')
            ++p;
        std::string_view path = line.substr(p);
        auto dash = range.find('-');
        auto colon = dev.find(':');
        if (dash == std::string_view::npos || colon == std::string_view::npos) continue;
        const uint64_t start = hex(range.substr(0, dash)), stop = hex(range.substr(dash + 1));
        uint32_t prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
        uint32_t flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
        RecordBuilder b(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
        b.u32(uint32_t(pid)).u32(uint32_t(pid)).u64(start).u64(stop - start).u64(hex(offset));
        b.u32(uint32_t(hex(dev.substr(0, colon)))).u32(uint32_t(hex(dev.substr(colon + 1))));
        b.u64(std::strtoull(std::string(inode).c_str(), nullptr, 10)).u64(0).u32(prot).u32(flags);
        b.str(path.empty() ? std::string_view("//anon") : path).sampleId(spec_, pid, pid, 0);
        ++counts_.mmap2;
        if (auto r = emit_(b.finish()); !r) return r;
    }
    return {};
}

Expected<void> ProcSynth::process(pid_t pid, bool withMaps) {
    const std::string dir = proc_ + "/" + std::to_string(pid);
    std::string status;
    if (!readFile(dir + "/status", status) || status.empty()) return {};  // gone
    const pid_t ppid = std::max<pid_t>(0, statusField(status, "PPid:"));
    std::vector<pid_t> tids = numericEntries(dir + "/task");
    if (tids.empty()) tids.push_back(pid);
    // The main thread first: other threads fork from it.
    std::stable_partition(tids.begin(), tids.end(), [&](pid_t t) { return t == pid; });
    ++counts_.processes;
    std::string name;
    for (pid_t tid : tids) {
        if (!readFile(dir + "/task/" + std::to_string(tid) + "/comm", name)) continue;
        ++counts_.threads;
        if (auto r = tid == pid ? fork(pid, ppid, pid, ppid) : fork(pid, pid, tid, pid); !r) return r;
        if (auto r = comm(pid, tid, trimNewline(name)); !r) return r;
    }
    if (withMaps) return maps(pid);
    return {};
}

Expected<void> ProcSynth::commOnly(pid_t pid) {
    std::string name;
    if (!readFile(proc_ + "/" + std::to_string(pid) + "/comm", name)) return {};
    ++counts_.processes;
    ++counts_.threads;
    return comm(pid, pid, trimNewline(name));
}

Expected<void> ProcSynth::allProcesses() {
    for (pid_t pid : numericEntries(proc_))
        if (auto r = process(pid, true); !r) return r;
    return {};
}

}  // namespace auxscope
