// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/capture/HelperCapture.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <csignal>
#include <cstring>

namespace auxscope {

using namespace helper;

std::string privilegeRemedy() {
    return "To capture as this user, either install polkit's pkexec (apt-get install pkexec) with a running "
           "polkit and an authentication agent, so that auxscope asks for permission; or let users capture "
           "system-wide: sudo sysctl kernel.perf_event_paranoid=-1 (put it into /etc/sysctl.d/ to keep it); "
           "or "
           "give the program the capabilities: sudo setcap cap_perfmon,cap_sys_ptrace,cap_syslog+ep " +
           HelperCapture::helperPath().substr(0, HelperCapture::helperPath().rfind('/')) + "/auxscope";
}

HelperCapture::HelperCapture() = default;

HelperCapture::~HelperCapture() {
    if (sock_ >= 0) shutdown(sock_, SHUT_WR);  // the helper stops, completes the file, says Finished, exits
    if (thread_.joinable()) thread_.join();
    if (sock_ >= 0) close(sock_);
    if (pkexecErr_ >= 0) close(pkexecErr_);
    if (pkexec_ > 0) {
        int status;
        waitpid(pkexec_, &status, 0);
    }
}

std::string HelperCapture::helperPath() {
    if (const char* p = std::getenv("AUXSCOPE_CAPTURE_HELPER"); p && *p == '/') return p;
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    std::string dir = n > 0 ? std::string(self, size_t(n)) : std::string("/usr/local/lib/auxscope/auxscope");
    dir = dir.substr(0, dir.rfind('/'));
    return dir + "/auxscope-capture-helper";
}

std::string HelperCapture::failure() const {
    std::lock_guard lock(mutex_);
    return failure_;
}

std::vector<std::string> HelperCapture::takeNotes() {
    std::lock_guard lock(mutex_);
    return std::exchange(notes_, {});
}

std::vector<int> HelperCapture::cpus() const {
    std::lock_guard lock(mutex_);
    return cpus_;
}

std::string HelperCapture::target() const {
    std::lock_guard lock(mutex_);
    return target_;
}

std::optional<FinishedReport> HelperCapture::report() const {
    std::lock_guard lock(mutex_);
    return report_;
}

void HelperCapture::fail(std::string why) {
    {
        std::lock_guard lock(mutex_);
        failure_ = std::move(why);
    }
    state_.store(State::Failed, std::memory_order_release);
}

void HelperCapture::begin(const CaptureOptions& options, const std::string& path,
                          const TriggerSettings& triggers) {
    if (thread_.joinable()) thread_.join();
    {
        std::lock_guard lock(mutex_);
        failure_.clear();
        notes_.clear();
        cpus_.clear();
        report_.reset();
    }
    stats_.reset();
    state_.store(sock_ >= 0 ? State::Starting : State::Connecting, std::memory_order_release);
    thread_ = std::thread([this, options, path, triggers] { run(options, path, triggers); });
}

void HelperCapture::requestStop() {
    std::lock_guard lock(sendMutex_);
    if (sock_ >= 0) (void)sendMessage(sock_, Message{MsgType::Stop, {}, -1});
}

void HelperCapture::requestSnapshot() {
    std::lock_guard lock(sendMutex_);
    if (sock_ >= 0) (void)sendMessage(sock_, Message{MsgType::Snapshot, {}, -1});
}

Expected<void> HelperCapture::connect() {
    if (const char* v = std::getenv("AUXSCOPE_CAPTURE_HELPER_FD")) {
        int fd = -1;
        auto [p, ec] = std::from_chars(v, v + std::strlen(v), fd);
        if (ec != std::errc() || fd < 0 || fcntl(fd, F_GETFD) < 0)
            return makeError(std::string("AUXSCOPE_CAPTURE_HELPER_FD=") + v + " is not an open descriptor");
        int type = 0;
        socklen_t len = sizeof type;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
            return makeError(std::string("AUXSCOPE_CAPTURE_HELPER_FD=") + v + " is not a stream socket");
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        unsetenv("AUXSCOPE_CAPTURE_HELPER_FD");  // one helper, one connection
        sock_ = fd;
        inherited_ = true;
    } else {
        const std::string helper = helperPath();
        if (access(helper.c_str(), X_OK) != 0)
            return makeError("the capture helper " + helper + " is missing: " + std::strerror(errno));
        int sv[2], err[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
            return makeError(std::string("socketpair: ") + std::strerror(errno));
        if (pipe2(err, O_CLOEXEC) != 0) {
            close(sv[0]), close(sv[1]);
            return makeError(std::string("pipe: ") + std::strerror(errno));
        }
        const char* argv[] = {"pkexec", helper.c_str(), nullptr};
        const pid_t pid = fork();
        if (pid < 0) {
            const int e = errno;
            close(sv[0]), close(sv[1]), close(err[0]), close(err[1]);
            return makeError(std::string("fork: ") + std::strerror(e));
        }
        if (pid == 0) {
            // The helper's standard input is its socket; pkexec keeps 0-2 only.
            dup2(sv[1], 0);
            dup2(err[1], 2);
            execvp("pkexec", const_cast<char* const*>(argv));
            const char msg[] = "pkexec is not installed (apt-get install pkexec)\n";
            (void)!write(2, msg, sizeof msg - 1);
            _exit(127);
        }
        close(sv[1]);
        close(err[1]);
        sock_ = sv[0];
        pkexec_ = pid;
        pkexecErr_ = err[0];
    }
    reader_ = std::make_unique<MessageReader>(sock_);
    Message ready;
    if (auto r = readUntil(MsgType::Ready, &ready); !r) {
        std::string why = r.error().message;
        if (pkexec_ > 0) {
            // Why pkexec gave up (not authorized, no polkit, dismissed): its stderr and status.
            std::string text;
            char buf[1024];
            ssize_t n;
            fcntl(pkexecErr_, F_SETFL, O_NONBLOCK);
            while ((n = read(pkexecErr_, buf, sizeof buf)) > 0 && text.size() < 4096)
                text.append(buf, size_t(n));
            while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
                text.pop_back();
            int status = 0;
            if (waitpid(pkexec_, &status, 0) == pkexec_) {
                pkexec_ = -1;
                if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
                    why = "authorization was refused or dismissed (pkexec exit 126)";
                else if (WIFEXITED(status))
                    why = "pkexec exited with status " + std::to_string(WEXITSTATUS(status));
            }
            if (!text.empty()) why += ": " + text;
        }
        close(sock_);
        sock_ = -1;
        reader_.reset();
        return makeError("the capture helper did not start: " + why);
    }
    if (auto kv = parseKeyValues(ready.payload)) {
        if (auto uid = singleValue(*kv, "uid"); uid && *uid)
            helperUid_ = uid_t(std::strtoul((*uid)->c_str(), nullptr, 10));
        if (auto e = singleValue(*kv, "euid"); e && *e)
            helperEuid_ = uid_t(std::strtoul((*e)->c_str(), nullptr, 10));
    }
    std::lock_guard lock(sendMutex_);
    return sendMessage(
        sock_, Message{MsgType::Hello, encodeKeyValues({{"version", std::to_string(kProtocolVersion)}}), -1});
}

// Reads until a message of type `want`; Failed (and Rejected when `rejectedEnds`)
// on the way ends it with their reason; a Rejected otherwise becomes a note.
Expected<void> HelperCapture::readUntil(MsgType want, Message* out, bool rejectedEnds) {
    while (true) {
        while (auto m = reader_->next()) {
            if (m->fd >= 0) close(m->fd);
            if (m->type == want) {
                if (out) *out = std::move(*m);
                return {};
            }
            if ((rejectedEnds && m->type == MsgType::Rejected) || m->type == MsgType::Failed) {
                std::string reason = m->payload;
                if (auto kv = parseKeyValues(m->payload))
                    if (auto r = singleValue(*kv, "reason"); r && *r) reason = **r;
                return makeError(reason);
            }
            handle(*m);
        }
        if (!reader_->fill(true))
            return makeError(reader_->error().empty() ? std::string("the helper closed the connection")
                                                      : reader_->error());
    }
}

void HelperCapture::handle(Message& m) {
    switch (m.type) {
        case MsgType::Stats: {
            auto snaps = decodeStats(m.payload);
            if (!snaps) {
                std::lock_guard lock(mutex_);
                notes_.push_back("the helper's statistics could not be read: " + snaps.error().message);
                return;
            }
            if (!stats_) return;
            for (size_t i = 0; i < snaps->size() && i < stats_->cpuCount(); ++i)
                stats_->publish(i, (*snaps)[i]);
            stats_->bumpGeneration();
            return;
        }
        case MsgType::Rejected: {
            std::string reason = m.payload;
            if (auto kv = parseKeyValues(m.payload))
                if (auto r = singleValue(*kv, "reason"); r && *r) reason = **r;
            std::lock_guard lock(mutex_);
            notes_.push_back("the capture helper refused: " + reason);
            return;
        }
        default:
            return;
    }
}

void HelperCapture::run(CaptureOptions options, std::string path, TriggerSettings triggers) {
    if (sock_ < 0) {
        if (auto r = connect(); !r) return fail(r.error().message + "\n" + privilegeRemedy());
    }
    state_.store(State::Starting, std::memory_order_release);
    // The user creates the file: the user owns it, the helper only writes into it.
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return fail("cannot create " + path + ": " + std::strerror(errno));
    {
        std::lock_guard lock(sendMutex_);
        auto r = sendMessage(sock_, Message{MsgType::File, {}, fd});
        close(fd);
        if (r) r = sendMessage(sock_, Message{MsgType::Start, encodeStartRequest(options, triggers), -1});
        if (!r) return fail(r.error().message);
    }
    Message started;
    if (auto r = readUntil(MsgType::Started, &started); !r) return fail(r.error().message);
    std::vector<int> cpus;
    if (auto kv = parseKeyValues(started.payload)) {
        for (auto& [k, v] : *kv) {
            if (k == "cpus") {
                size_t pos = 0;
                while (pos < v.size()) {
                    size_t end = v.find(',', pos);
                    if (end == std::string::npos) end = v.size();
                    cpus.push_back(std::atoi(v.substr(pos, end - pos).c_str()));
                    pos = end + 1;
                }
            } else if (k == "aux") {
                hasAux_ = v == "1";
            } else if (k == "snapshots") {
                snapshots_ = v == "1";
            } else if (k == "target") {
                std::lock_guard lock(mutex_);
                target_ = v;
            }
        }
    }
    stats_ = std::make_unique<CaptureStats>(cpus);
    {
        std::lock_guard lock(mutex_);
        cpus_ = cpus;
    }
    started_ = std::chrono::steady_clock::now();
    state_.store(State::Running, std::memory_order_release);
    Message finished;
    if (auto r = readUntil(MsgType::Finished, &finished, false); !r)
        return fail("the capture helper ended the capture: " + r.error().message);
    auto rep = decodeFinished(finished.payload);
    if (!rep) return fail(rep.error().message);
    {
        std::lock_guard lock(mutex_);
        report_ = std::move(rep.value());
    }
    state_.store(State::Finished, std::memory_order_release);
}

}  // namespace auxscope
