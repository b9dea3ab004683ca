// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers shared by the perf.data writer tests: running a program (perf, the
// auxscope binary) with its output captured, reading perf's --stats text (as an
// oracle only), and walking a perf.data file's header and records.
// Declared at the top of each Writer*Test.cpp that uses them.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "WriterTestSupport.h"

#include "perfdata/PerfDataFormat.h"

namespace auxscope::writertest {

CommandResult runCommand(const std::vector<std::string>& argv, double timeoutSeconds) {
    CommandResult r;
    int outPipe[2], errPipe[2];
    if (pipe2(outPipe, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0) return r;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(outPipe[1], 1);
        dup2(errPipe[1], 2);
        std::vector<char*> args;
        for (auto& a : argv)
            args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        _exit(127);
    }
    close(outPipe[1]);
    close(errPipe[1]);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
    pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
    int open = 2;
    char buf[65536];
    while (open > 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                          std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            kill(pid, SIGKILL);
            r.err += "\n[timed out]";
            break;
        }
        if (poll(fds, 2, int(left.count())) <= 0) continue;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                (i ? r.err : r.out).append(buf, size_t(n));
            } else {
                close(fds[i].fd);
                fds[i].fd = -1;
                --open;
            }
        }
    }
    for (auto& f : fds)
        if (f.fd >= 0) close(f.fd);
    waitpid(pid, &r.status, 0);
    return r;
}

size_t countMatches(const std::string& text, const std::string& pattern) {
    const std::regex re(pattern);
    return size_t(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

std::optional<std::string> perfBinary() {
    for (const char* p : {"/usr/bin/perf", "/usr/local/bin/perf"}) {
        if (access(p, X_OK) != 0) continue;
        auto r = runCommand({p, "--version"}, 20);
        if (r.exitedZero()) return std::string(p);
    }
    return std::nullopt;
}

// "Aggregated stats:" of `perf report --stats`: record type name -> count.
std::map<std::string, uint64_t> parsePerfStats(const std::string& text) {
    std::map<std::string, uint64_t> out;
    std::istringstream in(text);
    std::string line;
    bool inAggregate = false;
    std::regex re(R"(^\s*([A-Z_0-9]+) events:\s+(\d+))");
    std::smatch m;
    while (std::getline(in, line)) {
        if (line.find("Aggregated stats:") != std::string::npos) {
            inAggregate = true;
            continue;
        }
        if (!inAggregate) continue;
        if (std::regex_search(line, m, re))
            out[m[1]] = std::stoull(m[2]);
        else if (!line.empty())
            break;  // the per-event sections follow
    }
    return out;
}

PerfDataFileView readPerfDataFile(const std::string& path) {
    PerfDataFileView v;
    std::ifstream in(path, std::ios::binary);
    v.file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (v.file.size() < sizeof v.header) {
        v.error = "file shorter than its header";
        return v;
    }
    std::memcpy(&v.header, v.file.data(), sizeof v.header);
    if (v.header.magic != perfdata::kMagic) {
        v.error = "bad magic";
        return v;
    }
    uint64_t pos = v.header.data.offset;
    const uint64_t end = v.header.data.size ? v.header.data.offset + v.header.data.size : v.file.size();
    if (end > v.file.size()) {
        v.error = "data section beyond the end of the file";
        return v;
    }
    while (pos + sizeof(perf_event_header) <= end) {
        FileRecord r;
        r.offset = pos;
        std::memcpy(&r.header, v.file.data() + pos, sizeof r.header);
        if (r.header.size < sizeof(perf_event_header) || pos + r.header.size > end) break;
        uint64_t size = r.header.size;
        if (r.header.type == perfdata::kRecordAuxtrace && pos + size <= end) {
            perfdata::AuxtraceRecord a;
            std::memcpy(&a, v.file.data() + pos + sizeof(perf_event_header), sizeof a);
            size += a.size;  // the payload follows, outside header.size
        }
        if (pos + size > end) break;
        r.bytes.assign(v.file.begin() + long(pos), v.file.begin() + long(pos + size));
        v.records.push_back(std::move(r));
        pos += size;
    }
    if (v.header.data.size) {
        uint64_t at = v.header.data.offset + v.header.data.size;
        for (unsigned bit = 0; bit < 256; ++bit) {
            if (!((v.header.features[bit / 64] >> (bit % 64)) & 1)) continue;
            if (at + sizeof(perfdata::FileSection) > v.file.size()) {
                v.error = "feature index cut";
                return v;
            }
            perfdata::FileSection s;
            std::memcpy(&s, v.file.data() + at, sizeof s);
            v.features[bit] = s;
            at += sizeof s;
        }
    }
    v.ok = true;
    return v;
}

// Temporary directories are removed when the test program ends, unless
// AUXSCOPE_KEEP_TEST_FILES is set (to look at the files).
struct TempDirs {
    std::vector<std::string> dirs;
    ~TempDirs() {
        if (std::getenv("AUXSCOPE_KEEP_TEST_FILES")) return;
        for (auto& d : dirs) {
            std::error_code ec;
            std::filesystem::remove_all(d, ec);
        }
    }
};

std::string makeTempDir(const std::string& tag) {
    static TempDirs all;
    std::string t = "/tmp/auxscope-writer-" + tag + "-XXXXXX";
    if (!mkdtemp(t.data())) return "/tmp";
    all.dirs.push_back(t);
    return t;
}

}  // namespace auxscope::writertest
