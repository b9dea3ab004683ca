// SPDX-License-Identifier: GPL-3.0-or-later
#include "CaptureControl.h"
#include "TextTrim.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace auxscope {
namespace {

// The session the installed SnapshotSignal serves. A lock-free atomic: loading
// it in the handler is async-signal-safe.
std::atomic<CaptureSession*> gSnapshotSession{nullptr};
std::atomic<uint64_t> gSnapshotSignals{0};
static_assert(std::atomic<CaptureSession*>::is_always_lock_free);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

void onSnapshotSignal(int) {
    const int savedErrno = errno;  // the eventfd write may change it under the interrupted code
    gSnapshotSignals.fetch_add(1, std::memory_order_relaxed);
    if (CaptureSession* s = gSnapshotSession.load(std::memory_order_acquire)) s->requestSnapshot();
    errno = savedErrno;
}

// Opens an existing FIFO the way perf's --control does (see the header).
Expected<int> openFifo(const std::string& path, const char* role) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
        const int err = errno;
        return makeError(std::string("--control: ") + role + " FIFO '" + path + "': " + std::strerror(err) +
                         (err == ENOENT ? " (create it first: mkfifo " + path + ")" : std::string()));
    }
    if (!S_ISFIFO(st.st_mode))
        return makeError(std::string("--control: ") + role + " FIFO '" + path + "' is not a FIFO (it is " +
                         (S_ISDIR(st.st_mode)   ? "a directory"
                          : S_ISREG(st.st_mode) ? "a regular file"
                                                : "not a pipe") +
                         "; create one with mkfifo)");
    const int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return makeError(std::string("--control: cannot open ") + role + " FIFO '" + path +
                         "': " + std::strerror(errno));
    return fd;
}

}  // namespace

// ---------------------------------------------------------------- SnapshotSignal

Expected<std::unique_ptr<SnapshotSignal>> SnapshotSignal::install(CaptureSession& session, int signo) {
    CaptureSession* expected = nullptr;
    if (!gSnapshotSession.compare_exchange_strong(expected, &session, std::memory_order_acq_rel))
        return makeError("a snapshot signal handler is already installed for another capture");
    std::unique_ptr<SnapshotSignal> s(new SnapshotSignal);
    s->signo_ = signo;
    struct sigaction sa {};
    sa.sa_handler = onSnapshotSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // the interrupted code (a wait, a read) just goes on
    if (sigaction(signo, &sa, &s->previous_) != 0) {
        const int err = errno;
        gSnapshotSession.store(nullptr, std::memory_order_release);
        return makeError("cannot install the handler of signal " + std::to_string(signo) + ": " +
                         std::strerror(err));
    }
    gSnapshotSignals.store(0, std::memory_order_relaxed);
    return s;
}

SnapshotSignal::~SnapshotSignal() {
    sigaction(signo_, &previous_, nullptr);
    gSnapshotSession.store(nullptr, std::memory_order_release);
}

uint64_t SnapshotSignal::received() const {
    return gSnapshotSignals.load(std::memory_order_relaxed);
}

// ---------------------------------------------------------------- ControlFifo

Expected<std::unique_ptr<ControlFifo>> ControlFifo::open(std::string_view spec) {
    const std::string_view usage = " (expected fifo:CTL[,ACK], e.g. fifo:/tmp/ctl,/tmp/ack)";
    if (spec.rfind("fd:", 0) == 0)
        return makeError("--control '" + std::string(spec) +
                         "': inherited descriptors (fd:) are not supported; use FIFOs: fifo:CTL[,ACK]");
    if (spec.rfind("fifo:", 0) != 0)
        return makeError("--control '" + std::string(spec) + "': unknown kind" + std::string(usage));
    std::string_view rest = spec.substr(5);
    const size_t comma = rest.find(',');
    std::unique_ptr<ControlFifo> c(new ControlFifo);
    c->ctlPath_ = std::string(rest.substr(0, comma));
    if (comma != std::string_view::npos) c->ackPath_ = std::string(rest.substr(comma + 1));
    if (c->ctlPath_.empty())
        return makeError("--control '" + std::string(spec) + "': no control FIFO given" + std::string(usage));
    if (comma != std::string_view::npos && c->ackPath_.empty())
        return makeError("--control '" + std::string(spec) + "': empty ACK FIFO after the comma" +
                         std::string(usage));
    auto ctl = openFifo(c->ctlPath_, "control");
    if (!ctl) return ctl.error();
    c->ctlFd_ = *ctl;
    if (!c->ackPath_.empty()) {
        auto ack = openFifo(c->ackPath_, "ack");
        if (!ack) return ack.error();  // c's destructor closes the control FIFO
        c->ackFd_ = *ack;
        // One FIFO for both (the same path, a link to it): every answer would be
        // read back as a command, answered again, and so on without end.
        struct stat ctlSt {};
        struct stat ackSt {};
        if (fstat(c->ctlFd_, &ctlSt) == 0 && fstat(c->ackFd_, &ackSt) == 0 && ctlSt.st_dev == ackSt.st_dev &&
            ctlSt.st_ino == ackSt.st_ino)
            return makeError("--control '" + std::string(spec) + "': the control FIFO '" + c->ctlPath_ +
                             "' and the ack FIFO '" + c->ackPath_ +
                             "' are the same FIFO: answers would be read back as commands (use two FIFOs)");
    }
    return c;
}

ControlFifo::~ControlFifo() {
    if (ctlFd_ >= 0) close(ctlFd_);
    if (ackFd_ >= 0) close(ackFd_);
}

void ControlFifo::onReadable(DrainActions& actions) {
    char buf[4096];
    // At most kMaxBytesPerWake per call: a client that never stops writing must
    // not hold the drain thread here (the fd stays readable: the next wake goes on).
    for (size_t taken = 0; taken < kMaxBytesPerWake;) {
        const ssize_t n = read(ctlFd_, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            // EAGAIN: all read. 0 cannot happen while we hold the FIFO open for
            // writing too; any other error would repeat on every wake: say it once.
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
                note("reading the control FIFO '" + ctlPath_ + "': " + std::strerror(errno));
            return;
        }
        taken += size_t(n);
        for (ssize_t i = 0; i < n; ++i) {
            const char ch = buf[i];
            if (ch == '\n' || ch == '\0') {
                if (!discarding_) handle(pending_, actions);
                pending_.clear();
                discarding_ = false;
            } else if (!discarding_) {
                pending_ += ch;
                if (pending_.size() > kMaxCommandLength) {
                    commands_.fetch_add(1, std::memory_order_relaxed);
                    reject("command longer than " + std::to_string(kMaxCommandLength) + " bytes ('" +
                           pending_.substr(0, 32) + "...')");
                    pending_.clear();
                    discarding_ = true;
                }
            }
        }
    }
}

void ControlFifo::handle(std::string_view raw, DrainActions& actions) {
    const std::string_view line = trimBlanks(raw);
    if (line.empty()) return;  // a bare newline is no command (perf ignores it too)
    commands_.fetch_add(1, std::memory_order_relaxed);
    const size_t space = line.find_first_of(" \t");
    const std::string_view cmd = line.substr(0, space);
    const std::string_view arg =
        space == std::string_view::npos ? std::string_view{} : trimBlanks(line.substr(space));
    const std::string known = " (known: snapshot, stop, enable, disable, ping)";
    if (!arg.empty() && (cmd == "snapshot" || cmd == "stop" || cmd == "ping")) {
        reject("'" + std::string(cmd) + "' takes no argument, got '" + std::string(arg) + "'");
    } else if (cmd == "snapshot") {
        if (actions.snapshotNow()) {
            snapshots_.fetch_add(1, std::memory_order_relaxed);
            ack();
        } else {
            reject(
                "snapshot: no AUX area is in snapshot mode and no sideband flight recorder (record an AUX "
                "event with -S, or use --overwrite)");
        }
    } else if (cmd == "stop") {
        actions.stop();
        ack();
    } else if (cmd == "enable" || cmd == "disable") {
        if (!arg.empty()) {
            reject("'" + std::string(cmd) + " " + std::string(arg) +
                   "': enabling or disabling single events is not supported; '" + std::string(cmd) +
                   "' alone applies to all of them");
        } else if (auto r = actions.setEventsEnabled(cmd == "enable"); !r) {
            reject(r.error().message);
        } else {
            ack();
        }
    } else if (cmd == "ping") {
        ack();
    } else if (cmd == "evlist") {
        reject("'evlist' is not supported by auxscope" + known);
    } else {
        reject("unknown command '" + std::string(line.substr(0, 64)) + "'" + known);
    }
}

bool ControlFifo::answer(std::string_view text) {
    if (ackFd_ < 0) return true;
    // At most PIPE_BUF bytes: the write is atomic, all or nothing (EAGAIN when full).
    ssize_t n;
    do {
        n = write(ackFd_, text.data(), text.size());
    } while (n < 0 && errno == EINTR);
    if (n == ssize_t(text.size())) return true;
    const uint64_t failures = ackFailures_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (failures == 1)
        note("cannot write to the ack FIFO '" + ackPath_ +
             "': " + (n < 0 ? std::string(std::strerror(errno)) : "short write") +
             (n < 0 && errno == EAGAIN ? " (it is full: nobody reads it)" : "") +
             "; answers that do not fit are dropped and counted");
    return false;
}

void ControlFifo::ack() {
    if (ackFd_ < 0) return;
    if (answer("ack\n")) acks_.fetch_add(1, std::memory_order_relaxed);
}

void ControlFifo::reject(const std::string& why) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    note("control FIFO: " + why);
    std::string line = "error: " + why;
    if (line.size() > 500) line.resize(500);
    answer(line + "\n");
}

void ControlFifo::note(std::string msg) {
    std::lock_guard lock(msgMutex_);
    // A client looping on bad commands must not grow this without bound.
    if (messages_.size() >= 100) {
        ++messagesDropped_;
        return;
    }
    messages_.push_back(std::move(msg));
}

ControlFifoStats ControlFifo::stats() const {
    ControlFifoStats s;
    s.commands = commands_.load(std::memory_order_relaxed);
    s.acks = acks_.load(std::memory_order_relaxed);
    s.errors = errors_.load(std::memory_order_relaxed);
    s.ackFailures = ackFailures_.load(std::memory_order_relaxed);
    s.snapshots = snapshots_.load(std::memory_order_relaxed);
    return s;
}

std::vector<std::string> ControlFifo::messages() const {
    std::lock_guard lock(msgMutex_);
    std::vector<std::string> out = messages_;
    if (messagesDropped_)
        out.push_back("control FIFO: " + std::to_string(messagesDropped_) + " more problems not listed");
    return out;
}

}  // namespace auxscope
