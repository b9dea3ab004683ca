// SPDX-License-Identifier: GPL-3.0-or-later
#include "HelperProtocol.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace auxscope::helper {

const char* msgTypeName(MsgType t) {
    switch (t) {
        case MsgType::Hello:
            return "Hello";
        case MsgType::File:
            return "File";
        case MsgType::Start:
            return "Start";
        case MsgType::Snapshot:
            return "Snapshot";
        case MsgType::Stop:
            return "Stop";
        case MsgType::Ready:
            return "Ready";
        case MsgType::Started:
            return "Started";
        case MsgType::Stats:
            return "Stats";
        case MsgType::Rejected:
            return "Rejected";
        case MsgType::Failed:
            return "Failed";
        case MsgType::Finished:
            return "Finished";
    }
    return "?";
}

bool knownMsgType(uint8_t t) {
    return (t >= uint8_t(MsgType::Hello) && t <= uint8_t(MsgType::Stop)) ||
           (t >= uint8_t(MsgType::Ready) && t <= uint8_t(MsgType::Finished));
}

Expected<void> sendMessage(int sock, const Message& m) {
    if (m.payload.size() > kMaxPayload)
        return makeError(std::string(msgTypeName(m.type)) + " message of " +
                         std::to_string(m.payload.size()) + " bytes exceeds the protocol's " +
                         std::to_string(kMaxPayload));
    std::string frame(5, '\0');
    const uint32_t len = uint32_t(m.payload.size());
    for (int i = 0; i < 4; ++i)
        frame[size_t(i)] = char((len >> (8 * i)) & 0xff);
    frame[4] = char(m.type);
    frame += m.payload;
    size_t done = 0;
    bool fdSent = m.fd < 0;
    while (done < frame.size()) {
        iovec iov{frame.data() + done, frame.size() - done};
        msghdr mh{};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
        if (!fdSent) {
            mh.msg_control = control;
            mh.msg_controllen = sizeof control;
            cmsghdr* c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            std::memcpy(CMSG_DATA(c), &m.fd, sizeof(int));
        }
        ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return makeError(std::string("sending ") + msgTypeName(m.type) +
                             " to the capture helper's peer: " + std::strerror(errno));
        }
        fdSent = true;
        done += size_t(n);
    }
    return {};
}

MessageReader::~MessageReader() {
    for (int fd : fds_)
        close(fd);
}

bool MessageReader::fill(bool block) {
    if (ended_) return false;
    char data[16384];
    iovec iov{data, sizeof data};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof control;
    ssize_t n;
    do
        n = recvmsg(sock_, &mh, MSG_CMSG_CLOEXEC | (block ? 0 : MSG_DONTWAIT));
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
        error_ = std::string("reading the capture helper's socket: ") + std::strerror(errno);
        ended_ = true;
        return false;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            fds_.push_back(fd);
        }
    }
    if (mh.msg_flags & MSG_CTRUNC) {
        error_ = "the peer sent more than 4 descriptors at once";
        ended_ = true;
        return false;
    }
    if (fds_.size() > 4) {
        error_ = "the peer sent " + std::to_string(fds_.size()) + " descriptors no File message took";
        ended_ = true;
        return false;
    }
    if (n == 0) {
        ended_ = true;
        if (!buf_.empty())
            error_ = "the peer closed the socket inside a message (" + std::to_string(buf_.size()) +
                     " bytes of a frame)";
        return false;
    }
    buf_.append(data, size_t(n));
    return true;
}

std::optional<Message> MessageReader::next() {
    if (!error_.empty() && buf_.size() < 5) return std::nullopt;
    if (buf_.size() < 5) return std::nullopt;
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i)
        len |= uint32_t(uint8_t(buf_[size_t(i)])) << (8 * i);
    const uint8_t type = uint8_t(buf_[4]);
    if (len > kMaxPayload) {
        error_ = "a message of " + std::to_string(len) + " bytes (type " + std::to_string(type) +
                 ") exceeds the protocol's " + std::to_string(kMaxPayload);
        ended_ = true;
        buf_.clear();
        return std::nullopt;
    }
    if (!knownMsgType(type)) {
        error_ = "unknown message type " + std::to_string(type);
        ended_ = true;
        buf_.clear();
        return std::nullopt;
    }
    if (buf_.size() < 5 + size_t(len)) return std::nullopt;
    Message m;
    m.type = MsgType(type);
    m.payload = buf_.substr(5, len);
    buf_.erase(0, 5 + size_t(len));
    if (m.type == MsgType::File && !fds_.empty()) {
        m.fd = fds_.front();
        fds_.erase(fds_.begin());
    }
    return m;
}

namespace {

bool keyChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

bool valueChar(unsigned char c) {
    return c >= 0x20 && c != 0x7f;
}

template <typename T>
Expected<T> parseNumber(const std::string& key, const std::string& v, T lo, T hi) {
    T x{};
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || p != v.data() + v.size() || v.empty())
        return makeError(key + ": '" + v + "' is not a number");
    if (x < lo || x > hi)
        return makeError(key + ": " + v + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    return x;
}

Expected<bool> parseFlag(const std::string& key, const std::string& v) {
    if (v == "1") return true;
    if (v == "0") return false;
    return makeError(key + ": '" + v + "' is not 0 or 1");
}

// An event specification: the characters perf's -e syntax uses, nothing that
// walks out of a sysfs or tracefs folder.
Expected<void> checkEvent(const std::string& e, size_t maxLength) {
    if (e.empty()) return makeError("event: empty");
    if (e.size() > maxLength)
        return makeError("event: " + std::to_string(e.size()) + " characters, more than " +
                         std::to_string(maxLength));
    for (unsigned char c : e) {
        const bool ok = std::isalnum(c) || std::strchr("_:/,=.@*+-", int(c));
        if (!ok)
            return makeError("event '" + e + "': character '" + std::string(1, char(c)) + "' is not allowed");
    }
    if (e.find("..") != std::string::npos) return makeError("event '" + e + "': '..' is not allowed");
    return {};
}

}  // namespace

std::string encodeKeyValues(const KeyValues& kv) {
    std::string out;
    for (auto& [k, v] : kv)
        out += k + "=" + v + "\n";
    return out;
}

Expected<KeyValues> parseKeyValues(const std::string& payload) {
    KeyValues kv;
    size_t pos = 0, line = 0;
    while (pos < payload.size()) {
        ++line;
        size_t end = payload.find('\n', pos);
        if (end == std::string::npos) end = payload.size();
        const std::string l = payload.substr(pos, end - pos);
        pos = end + 1;
        const size_t eq = l.find('=');
        if (eq == std::string::npos) return makeError("line " + std::to_string(line) + ": no '=' in it");
        std::string key = l.substr(0, eq), value = l.substr(eq + 1);
        if (key.empty() || key.size() > 32)
            return makeError("line " + std::to_string(line) + ": a key of " + std::to_string(key.size()) +
                             " characters");
        for (char c : key)
            if (!keyChar(c))
                return makeError("line " + std::to_string(line) + ": key '" + key + "' has character " +
                                 std::to_string(int(uint8_t(c))));
        for (unsigned char c : value)
            if (!valueChar(c))
                return makeError("line " + std::to_string(line) + ": the value of " + key +
                                 " has control byte " + std::to_string(int(c)));
        kv.emplace_back(std::move(key), std::move(value));
    }
    return kv;
}

Expected<std::optional<std::string>> singleValue(const KeyValues& kv, const std::string& key) {
    std::optional<std::string> v;
    for (auto& [k, x] : kv) {
        if (k != key) continue;
        if (v) return makeError(key + " is given more than once");
        v = x;
    }
    return v;
}

StartLimits StartLimits::forThisMachine() {
    StartLimits l;
    l.cpuCount = int(sysconf(_SC_NPROCESSORS_CONF));
    return l;
}

std::string encodeStartRequest(const CaptureOptions& o) {
    KeyValues kv;
    switch (o.target) {
        case TargetKind::SystemWide:
            kv.emplace_back("target", "system");
            break;
        case TargetKind::CpuList: {
            kv.emplace_back("target", "cpus");
            std::string list;
            for (int c : o.cpus)
                list += (list.empty() ? "" : ",") + std::to_string(c);
            kv.emplace_back("cpus", list);
            break;
        }
        case TargetKind::Process:
            kv.emplace_back("target", "pid");
            kv.emplace_back("pid", std::to_string(o.pid));
            break;
        case TargetKind::Command:
            kv.emplace_back("target", "command");
            for (auto& a : o.command)
                kv.emplace_back("arg", a);
            if (!o.commandCwd.empty()) kv.emplace_back("cwd", o.commandCwd);
            break;
    }
    for (auto& e : o.events)
        kv.emplace_back("event", e);
    kv.emplace_back("data-pages", std::to_string(o.dataPages));
    kv.emplace_back("aux-pages", std::to_string(o.auxPages));
    kv.emplace_back("freq", std::to_string(o.sampleFreq));
    kv.emplace_back("switches", o.contextSwitches ? "1" : "0");
    if (o.durationSeconds > 0)
        kv.emplace_back("duration-ms", std::to_string(int64_t(o.durationSeconds * 1e3)));
    if (o.auxSnapshot) kv.emplace_back("aux-snapshot", "1");
    if (o.snapshotBytes) kv.emplace_back("snapshot-bytes", std::to_string(o.snapshotBytes));
    if (o.overwrite) kv.emplace_back("overwrite", "1");
    if (!o.auxFilter.empty()) kv.emplace_back("filter", o.auxFilter);
    if (o.callGraph.enabled()) kv.emplace_back("call-graph", formatCallGraph(o.callGraph));
    return encodeKeyValues(kv);
}

std::string encodeStartRequest(const CaptureOptions& o, const TriggerSettings& t) {
    KeyValues kv;
    for (const TriggerSpec& spec : t.specs)
        kv.emplace_back("trigger", spec.text);
    if (!t.specs.empty()) {
        if (t.postNs) kv.emplace_back("trigger-post-ns", std::to_string(t.postNs));
        if (t.max) kv.emplace_back("trigger-max", std::to_string(t.max));
        if (t.gapNs) kv.emplace_back("trigger-gap-ns", std::to_string(t.gapNs));
        for (pid_t tid : t.tids)
            kv.emplace_back("trigger-tid", std::to_string(tid));
        kv.emplace_back("trigger-mode", triggerModeName(t.mode));
    }
    return encodeStartRequest(o) + encodeKeyValues(kv);
}

Expected<TriggerSettings> parseStartTriggers(const std::string& payload, const StartLimits& limits) {
    auto kv = parseKeyValues(payload);
    if (!kv) return kv.error();
    TriggerSettings t;
    auto number = [](const std::string& key, const std::string& v, uint64_t lo,
                     uint64_t hi) -> Expected<uint64_t> {
        uint64_t n = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n < lo || n > hi)
            return makeError(key + "=" + v + ": expected a number from " + std::to_string(lo) + " to " +
                             std::to_string(hi));
        return n;
    };
    bool other = false;
    for (auto& [k, v] : *kv) {
        if (k == "trigger") {
            if (t.specs.size() == limits.maxTriggers)
                return makeError("more than " + std::to_string(limits.maxTriggers) + " triggers");
            if (v.size() > limits.maxTriggerLength)
                return makeError("trigger=: longer than " + std::to_string(limits.maxTriggerLength) +
                                 " bytes");
            auto spec = parseTriggerSpec(v);
            if (!spec) return makeError("trigger=: " + spec.error().message);
            t.specs.push_back(std::move(spec.value()));
            continue;
        }
        if (!k.starts_with("trigger-")) continue;
        other = true;
        constexpr uint64_t kHourNs = 3600ull * 1'000'000'000;
        if (k == "trigger-post-ns" || k == "trigger-gap-ns") {
            auto n = number(k, v, 0, kHourNs);
            if (!n) return n.error();
            (k == "trigger-post-ns" ? t.postNs : t.gapNs) = *n;
        } else if (k == "trigger-max") {
            auto n = number(k, v, 1, uint64_t(1) << 32);
            if (!n) return n.error();
            t.max = *n;
        } else if (k == "trigger-tid") {
            if (t.tids.size() == 4096) return makeError("more than 4096 trigger-tid values");
            auto n = number(k, v, 1, uint64_t(std::numeric_limits<pid_t>::max()));
            if (!n) return n.error();
            t.tids.push_back(pid_t(*n));
        } else if (k == "trigger-mode") {
            auto m = parseTriggerMode(v);
            if (!m) return makeError("trigger-mode=" + m.error().message);
            t.mode = *m;
        }
    }
    if (other && t.specs.empty()) return makeError("trigger settings without a trigger=");
    return t;
}

Expected<CaptureOptions> parseStartRequest(const std::string& payload, const StartLimits& limits) {
    auto kv = parseKeyValues(payload);
    if (!kv) return kv.error();
    static const char* const kKeys[] = {
        "target",         "cpus",           "pid",         "arg",         "cwd",         "event",
        "data-pages",     "aux-pages",      "freq",        "switches",    "duration-ms", "aux-snapshot",
        "snapshot-bytes", "overwrite",      "filter",      "call-graph",  "trigger",     "trigger-post-ns",
        "trigger-max",    "trigger-gap-ns", "trigger-tid", "trigger-mode"};
    for (auto& [k, v] : *kv) {
        bool known = false;
        for (const char* key : kKeys)
            known |= k == key;
        if (!known) return makeError("unknown key '" + k + "'");
    }
    CaptureOptions o;
    o.realtimeDrain = true;
    auto target = singleValue(*kv, "target");
    if (!target) return target.error();
    if (!*target) return makeError("target: missing");
    auto cpus = singleValue(*kv, "cpus");
    auto pid = singleValue(*kv, "pid");
    auto cwd = singleValue(*kv, "cwd");
    if (!cpus) return cpus.error();
    if (!pid) return pid.error();
    if (!cwd) return cwd.error();
    std::vector<std::string> args;
    for (auto& [k, v] : *kv)
        if (k == "arg") args.push_back(v);
    const std::string& t = **target;
    if (t != "cpus" && cpus->has_value()) return makeError("cpus: given for target " + t);
    if (t != "pid" && pid->has_value()) return makeError("pid: given for target " + t);
    if (t != "command" && (!args.empty() || cwd->has_value()))
        return makeError("arg/cwd: given for target " + t);
    if (t == "system") {
        o.target = TargetKind::SystemWide;
    } else if (t == "cpus") {
        o.target = TargetKind::CpuList;
        if (!*cpus || (*cpus)->empty()) return makeError("cpus: missing for target cpus");
        const std::string& list = **cpus;
        size_t pos = 0;
        while (pos <= list.size()) {
            size_t end = list.find(',', pos);
            if (end == std::string::npos) end = list.size();
            auto c =
                parseNumber<int>("cpus", list.substr(pos, end - pos), 0, std::max(0, limits.cpuCount - 1));
            if (!c) return c.error();
            for (int seen : o.cpus)
                if (seen == *c) return makeError("cpus: cpu " + std::to_string(*c) + " is listed twice");
            o.cpus.push_back(*c);
            pos = end + 1;
        }
    } else if (t == "pid") {
        o.target = TargetKind::Process;
        if (!*pid) return makeError("pid: missing for target pid");
        auto p = parseNumber<pid_t>("pid", **pid, 1, 4194304);
        if (!p) return p.error();
        o.pid = *p;
    } else if (t == "command") {
        o.target = TargetKind::Command;
        if (args.empty() || args[0].empty())
            return makeError("arg: a command needs its program as the first arg");
        if (args.size() > limits.maxArgs)
            return makeError("arg: " + std::to_string(args.size()) + " arguments, more than " +
                             std::to_string(limits.maxArgs));
        for (auto& a : args)
            if (a.size() > limits.maxArgLength)
                return makeError("arg: an argument of " + std::to_string(a.size()) +
                                 " characters, more than " + std::to_string(limits.maxArgLength));
        o.command = std::move(args);
        if (*cwd) {
            if ((*cwd)->empty() || (**cwd)[0] != '/')
                return makeError("cwd: '" + **cwd + "' is not an absolute path");
            if ((*cwd)->size() > 4096) return makeError("cwd: longer than 4096 characters");
            o.commandCwd = **cwd;
        }
    } else {
        return makeError("target: '" + t + "' is not system, cpus, pid or command");
    }
    for (auto& [k, v] : *kv) {
        if (k != "event") continue;
        if (o.events.size() == limits.maxEvents)
            return makeError("event: more than " + std::to_string(limits.maxEvents) + " events");
        if (auto r = checkEvent(v, limits.maxEventLength); !r) return r.error();
        o.events.push_back(v);
    }
    struct Num {
        const char* key;
        uint64_t lo, hi;
        uint64_t* out;
    };
    uint64_t dataPages = o.dataPages, auxPages = o.auxPages, freq = o.sampleFreq, durationMs = 0,
             snapBytes = 0;
    const Num nums[] = {
        {"data-pages", 1, limits.maxDataPages, &dataPages},
        {"aux-pages", 1, limits.maxAuxPages, &auxPages},
        {"freq", 1, limits.maxSampleFreq, &freq},
        {"duration-ms", 0, uint64_t(limits.maxDurationSeconds * 1e3), &durationMs},
        {"snapshot-bytes", 0, uint64_t(limits.maxAuxPages) * 4096, &snapBytes},
    };
    for (auto& n : nums) {
        auto v = singleValue(*kv, n.key);
        if (!v) return v.error();
        if (!*v) continue;
        auto x = parseNumber<uint64_t>(n.key, **v, n.lo, n.hi);
        if (!x) return x.error();
        *n.out = *x;
    }
    o.dataPages = size_t(dataPages);
    o.auxPages = size_t(auxPages);
    o.sampleFreq = freq;
    o.durationSeconds = double(durationMs) / 1e3;
    o.snapshotBytes = snapBytes;
    struct FlagKey {
        const char* key;
        bool* out;
    };
    const FlagKey flags[] = {
        {"switches", &o.contextSwitches}, {"aux-snapshot", &o.auxSnapshot}, {"overwrite", &o.overwrite}};
    for (auto& f : flags) {
        auto v = singleValue(*kv, f.key);
        if (!v) return v.error();
        if (!*v) continue;
        auto b = parseFlag(f.key, **v);
        if (!b) return b.error();
        *f.out = *b;
    }
    auto filter = singleValue(*kv, "filter");
    if (!filter) return filter.error();
    if (*filter) {
        if ((*filter)->size() > 4096) return makeError("filter: longer than 4096 characters");
        o.auxFilter = **filter;
    }
    // fp, dwarf,SIZE or lbr: the same parser as the command line's, so SIZE is
    // held to the kernel's range (a multiple of 8, 8..65528) before any attr is built.
    auto callGraph = singleValue(*kv, "call-graph");
    if (!callGraph) return callGraph.error();
    if (*callGraph) {
        auto cg = parseCallGraph(**callGraph, "call-graph");
        if (!cg) return cg.error();
        o.callGraph = *cg;
    }
    return o;
}

Expected<void> validateOutputFd(int fd, uid_t owner) {
    if (fd < 0) return makeError("no output file descriptor came with the File message");
    struct stat st {};
    if (fstat(fd, &st) != 0) return makeError(std::string("the output file: fstat: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return makeError("the output file is not a regular file");
    if (st.st_uid != owner)
        return makeError("the output file belongs to uid " + std::to_string(st.st_uid) + ", not to uid " +
                         std::to_string(owner) + " whom the helper serves");
    if (st.st_nlink != 1)
        return makeError("the output file has " + std::to_string(st.st_nlink) +
                         " links (a new file has one)");
    if (st.st_size != 0)
        return makeError("the output file is not empty (" + std::to_string(st.st_size) +
                         " bytes): the GUI passes a file it just created");
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return makeError(std::string("the output file: F_GETFL: ") + std::strerror(errno));
    const int mode = flags & O_ACCMODE;
    if (mode != O_WRONLY && mode != O_RDWR) return makeError("the output file is not open for writing");
    if (flags & O_APPEND)
        return makeError("the output file is open for appending (a perf.data is written in place)");
    if (flags & O_PATH) return makeError("the output file is an O_PATH descriptor");
    return {};
}

namespace {

void putU64(std::string& out, uint64_t v) {
    for (int i = 0; i < 8; ++i)
        out.push_back(char((v >> (8 * i)) & 0xff));
}

void putDouble(std::string& out, double d) {
    uint64_t v;
    std::memcpy(&v, &d, 8);
    putU64(out, v);
}

struct Cursor {
    const std::string& s;
    size_t pos = 0;
    bool bad = false;
    uint64_t u64() {
        if (pos + 8 > s.size()) {
            bad = true;
            return 0;
        }
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i)
            v |= uint64_t(uint8_t(s[pos + size_t(i)])) << (8 * i);
        pos += 8;
        return v;
    }
    double dbl() {
        uint64_t v = u64();
        double d;
        std::memcpy(&d, &v, 8);
        return std::isfinite(d) ? d : 0;
    }
};

constexpr size_t kCounterWords = sizeof(CpuCounters) / 8;
static_assert(sizeof(CpuCounters) % 8 == 0, "CpuCounters is all 64-bit counters");
constexpr size_t kStatsWords = kCounterWords + 11;  // the fields after the counters

}  // namespace

std::string encodeStats(const std::vector<CpuStatsSnapshot>& cpus) {
    std::string out;
    putU64(out, cpus.size());
    putU64(out, kStatsWords);
    for (auto& s : cpus) {
        putU64(out, uint64_t(int64_t(s.cpu)));
        uint64_t words[kCounterWords];
        std::memcpy(words, &s.totals, sizeof words);
        for (uint64_t w : words)
            putU64(out, w);
        putU64(out, s.ringBytes);
        putDouble(out, s.fillPercent);
        putDouble(out, s.fillPeakPercent);
        putDouble(out, s.fillMaxPercent);
        putDouble(out, s.bytesPerSecond);
        putDouble(out, s.recordsPerSecond);
        putU64(out, s.hasAux);
        putU64(out, s.auxRingBytes);
        putDouble(out, s.auxFillPercent);
        putU64(out, uint64_t(s.auxSnapshotMode) | uint64_t(s.kernelLostAvailable) << 1 |
                        uint64_t(s.backwardMode) << 2);
        putU64(out, s.backwardWrittenBytes);
    }
    return out;
}

Expected<std::vector<CpuStatsSnapshot>> decodeStats(const std::string& payload) {
    Cursor c{payload};
    const uint64_t n = c.u64(), words = c.u64();
    if (c.bad) return makeError("Stats: shorter than its header");
    if (words != kStatsWords)
        return makeError("Stats: " + std::to_string(words) + " words per CPU, this build reads " +
                         std::to_string(kStatsWords) + " (helper and GUI of different builds)");
    if (n > 65536 || payload.size() != 16 + n * (1 + words) * 8)
        return makeError("Stats: " + std::to_string(payload.size()) + " bytes do not hold " +
                         std::to_string(n) + " CPUs");
    std::vector<CpuStatsSnapshot> out(n);
    for (auto& s : out) {
        s.cpu = int(int64_t(c.u64()));
        uint64_t w[kCounterWords];
        for (auto& x : w)
            x = c.u64();
        std::memcpy(&s.totals, w, sizeof w);
        s.ringBytes = c.u64();
        s.fillPercent = c.dbl();
        s.fillPeakPercent = c.dbl();
        s.fillMaxPercent = c.dbl();
        s.bytesPerSecond = c.dbl();
        s.recordsPerSecond = c.dbl();
        s.hasAux = c.u64() != 0;
        s.auxRingBytes = c.u64();
        s.auxFillPercent = c.dbl();
        const uint64_t f = c.u64();
        s.auxSnapshotMode = f & 1, s.kernelLostAvailable = f & 2, s.backwardMode = f & 4;
        s.backwardWrittenBytes = c.u64();
    }
    if (c.bad) return makeError("Stats: truncated");
    return out;
}

namespace {
// Summary messages may hold anything a path or an error holds; newlines become spaces.
std::string oneLine(std::string s) {
    for (char& c : s)
        if (!valueChar(uint8_t(c))) c = ' ';
    return s;
}
}  // namespace

std::string encodeFinished(const FinishedReport& r) {
    KeyValues kv;
    const auto& s = r.summary;
    kv.emplace_back("target", oneLine(s.target));
    for (auto& e : s.events)
        kv.emplace_back("event", oneLine(e));
    kv.emplace_back("seconds-us", std::to_string(int64_t(s.seconds * 1e6)));
    kv.emplace_back("command-exited", s.commandExited ? "1" : "0");
    kv.emplace_back("command-status", std::to_string(s.commandStatus));
    for (auto& m : s.messages)
        kv.emplace_back("message", oneLine(m));
    for (auto& l : s.sinkLosses)
        kv.emplace_back("sink-loss",
                        std::to_string(l.cpu) + "," + std::to_string(l.records) + "," + oneLine(l.reason));
    kv.emplace_back("snapshots", std::to_string(s.snapshots));
    if (!s.failure.empty()) kv.emplace_back("failure", oneLine(s.failure));
    if (s.callGraph.enabled()) kv.emplace_back("call-graph", formatCallGraph(s.callGraph));
    kv.emplace_back("file-bytes", std::to_string(r.fileBytes));
    kv.emplace_back("aux-bytes", std::to_string(r.auxBytes));
    kv.emplace_back("records-held-back", std::to_string(r.recordsHeldBack));
    kv.emplace_back("aux-held-back", std::to_string(r.auxHeldBack));
    kv.emplace_back("writer-backlog-peak", std::to_string(r.maxBacklogBytes));
    kv.emplace_back("writer-backlog-budget", std::to_string(r.backlogBudget));
    if (!r.fileError.empty()) kv.emplace_back("file-error", oneLine(r.fileError));
    std::string text = encodeKeyValues(kv);
    // The per-CPU figures as a Stats block after a NUL.
    text.push_back('\0');
    text += encodeStats(s.cpus);
    if (text.size() > kMaxPayload) {
        // Messages are what may grow: keep the figures, cut the text.
        const std::string stats = encodeStats(s.cpus);
        kv.erase(std::remove_if(kv.begin(), kv.end(), [](auto& p) { return p.first == "message"; }),
                 kv.end());
        kv.emplace_back("message", "(the capture's messages did not fit in the helper's report)");
        text = encodeKeyValues(kv);
        text.push_back('\0');
        text += stats;
    }
    return text;
}

Expected<FinishedReport> decodeFinished(const std::string& payload) {
    const size_t nul = payload.find('\0');
    if (nul == std::string::npos) return makeError("Finished: no per-CPU figures");
    auto kv = parseKeyValues(payload.substr(0, nul));
    if (!kv) return makeError("Finished: " + kv.error().message);
    auto cpus = decodeStats(payload.substr(nul + 1));
    if (!cpus) return makeError("Finished: " + cpus.error().message);
    FinishedReport r;
    auto& s = r.summary;
    s.cpus = std::move(cpus.value());
    auto num = [](const std::string& v) {
        uint64_t x = 0;
        std::from_chars(v.data(), v.data() + v.size(), x);
        return x;
    };
    for (auto& [k, v] : *kv) {
        if (k == "target")
            s.target = v;
        else if (k == "event")
            s.events.push_back(v);
        else if (k == "seconds-us")
            s.seconds = double(num(v)) / 1e6;
        else if (k == "command-exited")
            s.commandExited = v == "1";
        else if (k == "command-status")
            s.commandStatus = std::atoi(v.c_str());
        else if (k == "message")
            s.messages.push_back(v);
        else if (k == "sink-loss") {
            SinkLoss l;
            const size_t a = v.find(','), b = v.find(',', a == std::string::npos ? a : a + 1);
            if (a == std::string::npos || b == std::string::npos)
                return makeError("Finished: sink-loss '" + v + "'");
            l.cpu = std::atoi(v.substr(0, a).c_str());
            l.records = num(v.substr(a + 1, b - a - 1));
            l.reason = v.substr(b + 1);
            s.sinkLosses.push_back(std::move(l));
        } else if (k == "snapshots")
            s.snapshots = num(v);
        else if (k == "call-graph") {
            auto cg = parseCallGraph(v, "call-graph");
            if (!cg) return makeError("Finished: " + cg.error().message);
            s.callGraph = *cg;
        } else if (k == "file-bytes")
            r.fileBytes = num(v);
        else if (k == "aux-bytes")
            r.auxBytes = num(v);
        else if (k == "records-held-back")
            r.recordsHeldBack = num(v);
        else if (k == "aux-held-back")
            r.auxHeldBack = num(v);
        else if (k == "writer-backlog-peak")
            r.maxBacklogBytes = num(v);
        else if (k == "writer-backlog-budget")
            r.backlogBudget = num(v);
        else if (k == "file-error")
            r.fileError = v;
        else if (k == "failure")
            s.failure = v;
    }
    return r;
}

}  // namespace auxscope::helper
