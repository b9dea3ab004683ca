// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Ways to steer a running capture from outside the program, as perf record has
// them (the GUI's button and hotkey call CaptureSession::requestSnapshot() directly):
//
// - SnapshotSignal: SIGUSR2 takes a snapshot of the flight-recorder AUX areas and
//   sideband rings (--overwrite)
//   (perf record -S: `kill -USR2 PID`). The handler only writes an eventfd.
//
// - ControlFifo: perf record's `--control fifo:CTL[,ACK]`. One command per line
//   (a NUL also ends one) written to the CTL FIFO; after each handled command
//   "ack\n" is written to the ACK FIFO, if one was given. Commands:
//     snapshot   take a snapshot now (acked once it is taken, as perf does)
//     stop       end the capture (acked at once; the capture then finishes)
//     enable     PERF_EVENT_IOC_ENABLE the capture's events
//     disable    PERF_EVENT_IOC_DISABLE them (the sideband keeps running)
//     ping       just the ack (is the capture alive?)
//   Anything else (perf's "evlist" and per-event "enable NAME" included) gets a
//   line "error: ..." on the ACK FIFO instead of the ack (perf answers nothing,
//   leaving a client waiting), and a line in messages().
//   It runs on the drain thread (a DrainCommandSource in its epoll set), so there
//   is no thread of its own. Both FIFOs are opened O_RDWR|O_NONBLOCK like perf
//   does: opening never waits for the other end, the control FIFO never reports
//   a hangup when a writer closes (each `echo snapshot > CTL` opens and closes
//   it), and writing an ack never blocks or raises SIGPIPE. An ack that does not
//   fit (nobody reads the ACK FIFO and its 64 KiB are full) is dropped and counted.
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "CaptureSession.h"
#include "DrainThread.h"
#include "Result.h"

namespace auxscope {

// While it lives, `signo` (SIGUSR2) makes `session` take a snapshot. Destruction
// restores the previous disposition. One at a time per process. Install it once
// session.start() has returned (the handler reads the session's drain thread).
// The signal goes to whichever thread the kernel picks; the snapshot follows at
// the drain thread's next wake, so a signal sent just before the capture ends
// may find it already finishing (a request that reaches it then is still served).
class SnapshotSignal {
public:
    static Expected<std::unique_ptr<SnapshotSignal>> install(CaptureSession& session, int signo = SIGUSR2);
    ~SnapshotSignal();
    SnapshotSignal(const SnapshotSignal&) = delete;
    SnapshotSignal& operator=(const SnapshotSignal&) = delete;

    int signal() const { return signo_; }
    // Signals received while installed (any thread).
    uint64_t received() const;

private:
    SnapshotSignal() = default;
    int signo_ = SIGUSR2;
    struct sigaction previous_ {};
};

struct ControlFifoStats {
    uint64_t commands = 0;     // lines read (not counting empty ones)
    uint64_t acks = 0;         // "ack\n" written
    uint64_t errors = 0;       // commands answered with an error line
    uint64_t ackFailures = 0;  // acks or error lines that could not be written (ACK FIFO full)
    uint64_t snapshots = 0;    // snapshot commands served
};

class ControlFifo : public DrainCommandSource {
public:
    // `spec`: "fifo:CTL[,ACK]" as perf record's --control takes it. Both FIFOs
    // must exist (mkfifo). Errors name the path and the cause.
    static Expected<std::unique_ptr<ControlFifo>> open(std::string_view spec);
    ~ControlFifo() override;
    ControlFifo(const ControlFifo&) = delete;
    ControlFifo& operator=(const ControlFifo&) = delete;

    const std::string& controlPath() const { return ctlPath_; }
    const std::string& ackPath() const { return ackPath_; }  // empty: no ACK FIFO

    // DrainCommandSource (drain thread).
    int fd() const override { return ctlFd_; }
    void onReadable(DrainActions& actions) override;

    // Any thread.
    ControlFifoStats stats() const;
    // Problems worth a line in the summary: rejected commands, acks that could not be written.
    std::vector<std::string> messages() const;

    static constexpr size_t kMaxCommandLength = 256;
    // Bytes read from the control FIFO per onReadable() at most.
    static constexpr size_t kMaxBytesPerWake = 64 << 10;

private:
    ControlFifo() = default;
    void handle(std::string_view line, DrainActions& actions);
    void ack();
    void reject(const std::string& why);
    bool answer(std::string_view text);
    void note(std::string msg);

    std::string ctlPath_, ackPath_;
    int ctlFd_ = -1, ackFd_ = -1;
    // Drain-thread state: the partial line read so far.
    std::string pending_;
    bool discarding_ = false;  // the current line is too long: skip to its end
    std::atomic<uint64_t> commands_{0}, acks_{0}, errors_{0}, ackFailures_{0}, snapshots_{0};
    mutable std::mutex msgMutex_;
    std::vector<std::string> messages_;
    uint64_t messagesDropped_ = 0;
};

}  // namespace auxscope
