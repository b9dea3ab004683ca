// SPDX-License-Identifier: GPL-3.0-or-later
#include "StackCaptures.h"

#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

namespace auxscope::test_support {

std::string runShell(const std::string& command, int* status, bool mergeErrors) {
    const std::string full = command + (mergeErrors ? " 2>&1" : "");
    FILE* p = ::popen(full.c_str(), "r");
    if (!p) {
        if (status) *status = -1;
        return {};
    }
    std::string out;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
        out.append(buf, n);
    const int rc = ::pclose(p);
    if (status) *status = rc;
    return out;
}

std::string shellQuote(const std::string& s) {
    std::string q = "'";
    for (char c : s)
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

std::string perfRecordUnavailable() {
    int status = 0;
    runShell("command -v perf >/dev/null", &status);
    if (status != 0) return "perf is not installed";
    const std::string out = runShell("perf record -e cpu-clock -o /dev/null -q -- true", &status, true);
    if (status != 0) return "perf record -e cpu-clock fails here: " + out;
    return {};
}

std::string capturesDir() {
    const char* env = std::getenv("AUXSCOPE_SAMPLES_DIR");
    std::string dir = env && *env ? env : "/tmp/auxscope-samples-" + std::to_string(::getuid());
    std::filesystem::create_directories(dir);
    return dir;
}

std::string recordOnce(const std::string& name, const std::string& program, const std::string& args,
                       const std::string& perfOptions, std::string& error) {
    const std::string dir = capturesDir();
    const std::string file = dir + "/" + name + ".data";
    // ctest runs the tests of one binary as processes of their own, two at a
    // time: the first records, the others wait for it and read its file.
    const int lock = ::open((dir + "/" + name + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
        error = "cannot lock " + dir;
        if (lock >= 0) ::close(lock);
        return {};
    }
    // What was recorded: a recording of another program (another build tree's
    // copy) or other options is made again.
    const std::string what = program + " " + args + " | " + perfOptions + "\n";
    const std::string whatFile = dir + "/" + name + ".what";
    std::string recorded;
    if (FILE* f = std::fopen(whatFile.c_str(), "r")) {
        char line[4096];
        if (std::fgets(line, sizeof line, f)) recorded = line;
        std::fclose(f);
    }
    struct stat fileStat, programStat;
    const bool fresh = recorded == what && ::stat(file.c_str(), &fileStat) == 0 &&
                       ::stat(program.c_str(), &programStat) == 0 &&
                       fileStat.st_mtime > programStat.st_mtime && fileStat.st_size > 0;
    if (!fresh) {
        const std::string tmp = file + ".tmp";
        int status = 0;
        const std::string out = runShell("perf record -e cpu-clock " + perfOptions + " -o " +
                                             shellQuote(tmp) + " -- " + shellQuote(program) + " " + args,
                                         &status, true);
        if (status != 0 || std::rename(tmp.c_str(), file.c_str()) != 0) {
            error = "perf record failed: " + out;
            ::close(lock);
            return {};
        }
        if (FILE* f = std::fopen(whatFile.c_str(), "w")) {
            std::fputs(what.c_str(), f);
            std::fclose(f);
        }
    }
    ::close(lock);
    return file;
}

std::unique_ptr<StackCapture> StackCapture::load(const std::string& path, std::string& error,
                                                 ImageOptions options) {
    auto c = std::make_unique<StackCapture>();
    c->path = path;
    auto reader = PerfDataReader::open(path);
    if (!reader) {
        error = reader.error().message;
        return nullptr;
    }
    c->reader.emplace(std::move(*reader));
    auto sideband = Sideband::load(*c->reader);
    if (!sideband) {
        error = sideband.error().message;
        return nullptr;
    }
    c->sideband.emplace(std::move(*sideband));
    c->images = std::make_unique<ImageResolver>(*c->sideband, c->functions, std::move(options));
    c->images->prepare();
    c->machine = elfMachineOfArch(c->reader->features().arch.value_or(""));
    auto walked = c->reader->forEachRecord([&](const PerfRecord& rec) {
        const ParsedRecord& r = rec.parsed;
        if (r.type != PERF_RECORD_SAMPLE || !r.event || r.stackUserSize == 0) return true;
        StackSample s;
        s.pid = r.pid, s.tid = r.tid, s.time = r.time;
        s.abi = r.regsUserAbi, s.mask = r.event->sampleRegsUser;
        s.regs.assign(r.regsUser.begin(), r.regsUser.end());
        s.stack.assign(r.stackUser.begin(), r.stackUser.end());
        for (size_t i = 0; i < r.callchainSize(); ++i)
            s.callchain.push_back(r.callchainAt(i));
        c->samples.push_back(std::move(s));
        return true;
    });
    if (!walked) {
        error = walked.error().message;
        return nullptr;
    }
    return c;
}

std::string StackCapture::functionName(int32_t pid, uint64_t address) const {
    const uint32_t f = images->functionAt(pid, address);
    return f == FunctionTable::kUnknown ? std::string() : functions[f].name;
}

bool StackCapture::isSignalTrampoline(int32_t pid, uint64_t address) const {
    for (const ImageResolver::MappedModule& m : images->mappedModules(pid)) {
        if (address < m.start || address >= m.end || m.bytes.empty()) continue;
        elf_version(EV_CURRENT);
        Elf* elf =
            elf_memory(const_cast<char*>(reinterpret_cast<const char*>(m.bytes.data())), m.bytes.size());
        bool signal = false;
        size_t phnum = 0;
        if (elf && elf_getphdrnum(elf, &phnum) == 0) {
            for (size_t i = 0; i < phnum; ++i) {
                GElf_Phdr ph;
                if (!gelf_getphdr(elf, int(i), &ph) || ph.p_type != PT_LOAD || m.pgoff < ph.p_offset ||
                    m.pgoff - ph.p_offset >= ph.p_filesz)
                    continue;
                const uint64_t vaddr = address - m.start + m.pgoff - ph.p_offset + ph.p_vaddr;
                if (Dwarf_CFI* cfi = dwarf_getcfi_elf(elf)) {
                    Dwarf_Frame* frame = nullptr;
                    if (dwarf_cfi_addrframe(cfi, vaddr, &frame) == 0) {
                        dwarf_frame_info(frame, nullptr, nullptr, &signal);
                        std::free(frame);
                    }
                    dwarf_cfi_end(cfi);
                }
                break;
            }
        }
        if (elf) elf_end(elf);
        return signal;
    }
    return false;
}

uint64_t StackCapture::perfAddress(int32_t pid, uint64_t address) const {
    for (const ImageResolver::MappedModule& m : images->mappedModules(pid))
        if (address >= m.start && address < m.end) return address - m.start + m.pgoff;
    return address;
}

PerfCallchains perfScriptUserFrames(const std::string& path, std::string& error) {
    int status = 0;
    const std::string out = runShell(
        "perf script -i " + shellQuote(path) + " -F tid,time,ip --ns --no-inline 2>/dev/null", &status);
    PerfCallchains chains;
    if (status != 0) {
        error = "perf script failed";
        return chains;
    }
    std::istringstream in(out);
    std::string line;
    std::vector<uint64_t>* current = nullptr;
    while (std::getline(in, line)) {
        if (line.empty()) {
            current = nullptr;
            continue;
        }
        if (line[0] != '\t') {
            // "  TID  SECONDS.NANOSECONDS:"
            int32_t tid = 0;
            unsigned long long sec = 0, ns = 0;
            if (std::sscanf(line.c_str(), " %d %llu.%llu:", &tid, &sec, &ns) == 3)
                current = &chains[{tid, sec * 1000000000ull + ns}].emplace_back();
            continue;
        }
        if (!current) continue;
        const uint64_t address = std::strtoull(line.c_str() + 1, nullptr, 16);
        if (address >> 63) continue;  // a kernel frame (from PERF_SAMPLE_CALLCHAIN)
        current->push_back(address);
    }
    return chains;
}

PerfInlineFrames perfScriptInlineFrames(const std::string& path, std::string& error) {
    int status = 0;
    const std::string out = runShell(
        "perf script -i " + shellQuote(path) + " -F tid,time,ip,sym --ns --inline 2>/dev/null", &status);
    PerfInlineFrames samples;
    if (status != 0) {
        error = "perf script failed";
        return samples;
    }
    std::istringstream in(out);
    std::string line;
    std::vector<PerfInlineFrame>* current = nullptr;
    std::vector<PerfInlineFrame> scratch;  // a second sample with a key already seen
    std::set<std::pair<int32_t, uint64_t>> ambiguous;
    bool open = false;  // the last frame may take more lines (its address's inlined functions came first)
    while (std::getline(in, line)) {
        if (line.empty()) {
            current = nullptr;
            continue;
        }
        if (line[0] != '\t') {
            int32_t tid = 0;
            unsigned long long sec = 0, ns = 0;
            current = nullptr;
            if (std::sscanf(line.c_str(), " %d %llu.%llu:", &tid, &sec, &ns) == 3) {
                const auto key = std::make_pair(tid, sec * 1000000000ull + ns);
                if (samples.count(key)) {
                    ambiguous.insert(key);
                    current = &scratch;
                    scratch.clear();
                } else {
                    current = &samples[key];
                }
            }
            open = false;
            continue;
        }
        if (!current) continue;
        // "\t    ADDRESS NAME[ (inlined)]"
        char* end = nullptr;
        const uint64_t address = std::strtoull(line.c_str() + 1, &end, 16);
        if (address >> 63) continue;  // kernel
        std::string name = end ? std::string(end) : std::string();
        name.erase(0, name.find_first_not_of(' '));
        const std::string suffix = " (inlined)";
        const bool inlined = name.size() > suffix.size() &&
                             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
        if (inlined) name.resize(name.size() - suffix.size());
        // One frame per address: its inlined functions, then (unless perf leaves it out) the function.
        if (!open || current->back().address != address) current->push_back({address, {}});
        if (inlined) {
            current->back().inlined.push_back(name);
            open = true;
        } else {
            open = false;
        }
    }
    for (const auto& key : ambiguous)
        samples.erase(key);
    return samples;
}

}  // namespace auxscope::test_support
