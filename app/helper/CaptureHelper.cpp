// SPDX-License-Identifier: GPL-3.0-or-later
#include "CaptureHelper.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "AddressFilter.h"
#include "CaptureSession.h"
#include "Pmu.h"
#include "record/PerfDataWriterCapture.h"

#ifndef AUXSCOPE_VERSION
#define AUXSCOPE_VERSION "(unversioned build)"
#endif

namespace auxscope::helper {

Expected<uid_t> invokingUser() {
    if (const char* v = std::getenv("PKEXEC_UID")) {
        unsigned long uid = 0;
        const char* end = v + std::strlen(v);
        auto [p, ec] = std::from_chars(v, end, uid);
        if (ec != std::errc() || p != end || *v == '\0' || uid > 0xfffffffeul)
            return makeError(std::string("PKEXEC_UID '") + v + "' is not a user id");
        return uid_t(uid);
    }
    return getuid();
}

namespace {

using Clock = std::chrono::steady_clock;

// Whether `user` may read `path` by its mode bits (the filter's binaries are
// read by the helper as root: only what the user could read is accepted).
Expected<void> userMayRead(const std::string& path, uid_t user) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return makeError(path + ": " + std::strerror(errno));
    if (user == 0) return {};
    const bool readable = (st.st_uid == user && (st.st_mode & S_IRUSR)) || (st.st_mode & S_IROTH);
    if (!readable)
        return makeError(path + ": the user the helper serves (uid " + std::to_string(user) +
                         ") may not read it");
    return {};
}

class Helper {
public:
    Helper(int sock, const HelperConfig& c) : sock_(sock), config_(c), reader_(sock) {}
    ~Helper() {
        if (outFd_ >= 0) close(outFd_);
    }

    int run() {
        send(MsgType::Ready, encodeKeyValues({{"version", std::to_string(kProtocolVersion)},
                                              {"uid", std::to_string(config_.user)},
                                              {"euid", std::to_string(geteuid())}}));
        const auto statsEvery = std::chrono::milliseconds(1000 / std::max(10u, config_.statsHz));
        auto lastStats = Clock::now();
        int status = 0;
        while (true) {
            pollfd p{sock_, POLLIN, 0};
            const int n = poll(&p, 1, int(statsEvery.count()));
            if (n > 0) reader_.fill(false);
            while (auto m = reader_.next())
                if (!handle(*m)) return finishAndExit(2);
            if (reader_.ended()) {
                if (!reader_.error().empty()) {
                    reject(reader_.error());
                    status = 2;
                }
                return finishAndExit(status);
            }
            if (session_ && Clock::now() - lastStats >= statsEvery) {
                lastStats = Clock::now();
                if (session_->stats().generation() != lastGeneration_) {
                    lastGeneration_ = session_->stats().generation();
                    send(MsgType::Stats, encodeStats(session_->stats().snapshotAll()));
                }
            }
            if (session_ && session_->finished()) complete();
        }
    }

private:
    void send(MsgType t, std::string payload) {
        if (peerGone_) return;
        if (!sendMessage(sock_, Message{t, std::move(payload), -1})) peerGone_ = true;
    }
    void reject(const std::string& reason) { send(MsgType::Rejected, encodeKeyValues({{"reason", reason}})); }
    void fail(const std::string& reason) { send(MsgType::Failed, encodeKeyValues({{"reason", reason}})); }

    // False: the peer broke the protocol, the connection ends.
    bool handle(Message& m) {
        const int fd = m.fd;
        m.fd = -1;
        if (fd >= 0 && m.type != MsgType::File) close(fd);
        if (!hello_ && m.type != MsgType::Hello) {
            if (fd >= 0) close(fd);
            reject(std::string(msgTypeName(m.type)) + " before Hello: the protocol starts with Hello");
            return false;
        }
        switch (m.type) {
            case MsgType::Hello: {
                auto kv = parseKeyValues(m.payload);
                std::optional<std::string> v;
                if (kv) {
                    auto s = singleValue(*kv, "version");
                    if (s) v = *s;
                }
                if (!v || *v != std::to_string(kProtocolVersion)) {
                    reject("Hello: protocol version " + (v ? *v : std::string("missing")) +
                           ", this helper speaks " + std::to_string(kProtocolVersion));
                    return false;
                }
                hello_ = true;
                return true;
            }
            case MsgType::File: {
                if (session_) {
                    if (fd >= 0) close(fd);
                    reject("File: a capture is running");
                    return true;
                }
                if (auto r = validateOutputFd(fd, config_.user); !r) {
                    if (fd >= 0) close(fd);
                    reject("File: " + r.error().message);
                    return true;
                }
                if (outFd_ >= 0) close(outFd_);
                outFd_ = fd;
                return true;
            }
            case MsgType::Start:
                start(m.payload);
                return true;
            case MsgType::Snapshot:
                if (!session_)
                    reject("Snapshot: no capture is running");
                else if (!session_->options().takesSnapshots())
                    reject("Snapshot: this capture is no flight recorder (snapshot AUX mode or --overwrite)");
                else
                    session_->requestSnapshot();
                return true;
            case MsgType::Stop:
                if (!session_)
                    reject("Stop: no capture is running");
                else
                    session_->requestStop();
                return true;
            default:
                reject(std::string(msgTypeName(m.type)) + ": a message the helper sends, not one it takes");
                return false;
        }
    }

    void start(const std::string& payload) {
        if (session_) return reject("Start: a capture is running");
        if (outFd_ < 0) return reject("Start: no output file: send File (with the file's descriptor) first");
        auto opts = parseStartRequest(payload, config_.limits);
        if (!opts) return reject("Start: " + opts.error().message);
        if (opts->target == TargetKind::Command) opts->commandUser = config_.user;
        if (!opts->auxFilter.empty()) {
            auto specs = parseAddrFilters(opts->auxFilter);
            if (!specs) return reject("Start: filter: " + specs.error().message);
            for (const auto& spec : *specs)
                if (!spec.file.empty())
                    if (auto r = userMayRead(spec.file, config_.user); !r)
                        return reject("Start: filter: " + r.error().message);
        }
        if (pmus_.pmus().empty()) pmus_ = PmuRegistry::discover();
        // Snapshot triggers, resolved for the user served: a binary they may not
        // read is refused before its symbols are read, and before anything starts.
        auto triggers = parseStartTriggers(payload, config_.limits);
        if (!triggers) return reject("Start: " + triggers.error().message);
        std::vector<ResolvedTrigger> resolved;
        if (!triggers->specs.empty()) {
            TriggerResolveOptions ro;
            ro.readableBy = config_.user;
            if (opts->target == TargetKind::Command)
                ro.defaultBinary = opts->command.front();
            else if (opts->target == TargetKind::Process)
                ro.defaultBinary = "/proc/" + std::to_string(opts->pid) + "/exe";
            for (const TriggerSpec& spec : triggers->specs) {
                auto r = resolveTrigger(spec, ro);
                if (!r) return reject("Start: " + r.error().message);
                resolved.push_back(std::move(r.value()));
            }
            if (triggers->mode == TriggerMode::Pause) {
                auto pmu = checkAuxPauseHere(pmus_);
                if (!pmu) return reject("Start: trigger-mode pause: " + pmu.error().message);
                opts->auxStartPaused = true;
            }
        }
        auto session = CaptureSession::open(*opts, pmus_);
        if (!session) return fail(session.error().message);
        if (!resolved.empty())
            if (auto armed = (*session)->armTriggers(std::move(resolved), *triggers); !armed)
                return fail(armed.error().message);
        PerfDataWriterCaptureOptions fo;
        fo.path = "the GUI's capture file";
        fo.fd = outFd_;
        outFd_ = -1;  // the writer owns it now
        fo.version = std::string("auxscope ") + AUXSCOPE_VERSION;
        fo.cmdline = {"auxscope", "(GUI capture through auxscope-capture-helper)", describeTarget(*opts)};
        auto file = PerfDataWriterCapture::open(**session, fo);
        if (!file) return fail(file.error().message);
        if (auto r = (*session)->start(); !r) {
            (void)(*file)->finish();
            return fail(r.error().message);
        }
        session_ = std::move(session.value());
        file_ = std::move(file.value());
        lastGeneration_ = 0;
        std::string cpus;
        for (int c : session_->cpus())
            cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
        send(MsgType::Started,
             encodeKeyValues({{"cpus", cpus},
                              {"aux", session_->auxPlan() ? "1" : "0"},
                              {"snapshots", session_->options().takesSnapshots() ? "1" : "0"},
                              {"target", describeTarget(*opts)}}));
    }

    // The capture ended (stopped, its duration passed, or its command exited):
    // complete the file and report.
    void complete() {
        session_->wait();
        FinishedReport r;
        r.summary = session_->summary();
        auto done = file_->finish();
        if (!done) r.fileError = done.error().message;
        const auto rep = file_->report();
        r.fileBytes = rep.fileBytes;
        r.auxBytes = rep.auxBytes;
        r.recordsHeldBack = rep.recordsHeldBack;
        r.auxHeldBack = rep.auxHeldBack;
        r.maxBacklogBytes = rep.maxBacklogBytes;
        r.backlogBudget = rep.backlogBudget;
        send(MsgType::Stats, encodeStats(session_->stats().snapshotAll()));
        send(MsgType::Finished, encodeFinished(r));
        file_.reset();
        session_.reset();
    }

    int finishAndExit(int status) {
        if (session_) {
            session_->requestStop();
            complete();
        }
        return status;
    }

    int sock_;
    HelperConfig config_;
    MessageReader reader_;
    PmuRegistry pmus_;
    bool hello_ = false, peerGone_ = false;
    int outFd_ = -1;
    std::unique_ptr<CaptureSession> session_;
    std::unique_ptr<PerfDataWriterCapture> file_;
    uint64_t lastGeneration_ = 0;
};

}  // namespace

int serveCaptureHelper(int sock, const HelperConfig& config) {
    Helper h(sock, config);
    return h.run();
}

}  // namespace auxscope::helper
