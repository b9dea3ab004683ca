// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The GUI's end of the privileged capture helper (capture/HelperProtocol.h,
// app/helper/CaptureHelper.h). The GUI runs as the user; when a capture needs
// privileges it has, it asks this object, which starts auxscope-capture-helper
// through pkexec (once: the helper serves every later capture of the window
// too), creates the output file itself (so the user owns it), passes it over,
// and mirrors the helper's statistics into a local CaptureStats that the
// capture page reads exactly as it reads an in-process capture's.
//
// Nothing here blocks the GUI thread: pkexec may wait for the user to
// authenticate, so connecting and starting run on this object's thread and the
// page polls state() from its timer.
//
// AUXSCOPE_CAPTURE_HELPER_FD=N: the process inherited a socket already
// connected to a helper (a supervisor started the helper as root, as a test or
// a system service does); it is used instead of pkexec.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CaptureOptions.h"
#include "CaptureStats.h"
#include "HelperProtocol.h"
#include "TriggerSpec.h"

namespace auxscope {

class HelperCapture {
public:
    enum class State { Idle, Connecting, Starting, Running, Finished, Failed };

    HelperCapture();
    ~HelperCapture();  // closes the connection: the helper stops, completes the file and exits

    // The helper binary this GUI would start: beside the auxscope executable, or
    // the absolute path in AUXSCOPE_CAPTURE_HELPER (tests, packagers).
    static std::string helperPath();
    // Begins a capture into `path` (created here, by the user). Returns at once;
    // state() goes Connecting (pkexec), Starting, then Running or Failed.
    // `triggers` (their specs and settings) are resolved and armed by the helper
    // for this user (a binary the user may not read is refused).
    void begin(const CaptureOptions& options, const std::string& path, const TriggerSettings& triggers = {});
    void requestStop();
    void requestSnapshot();

    State state() const { return state_.load(std::memory_order_acquire); }
    bool finishedOrFailed() const {
        const State s = state();
        return s == State::Finished || s == State::Failed;
    }
    // Failed: why (with the remedy when the helper could not be started).
    std::string failure() const;
    // Refused requests and other notes from the helper since the last call.
    std::vector<std::string> takeNotes();
    // Running/Finished: the CPUs, whether they have AUX areas, flight-recorder mode.
    std::vector<int> cpus() const;
    bool hasAux() const { return hasAux_; }
    bool takesSnapshots() const { return snapshots_; }
    std::string target() const;
    // The helper's statistics, mirrored (null before Running).
    const CaptureStats* stats() const { return stats_.get(); }
    std::chrono::steady_clock::time_point startTime() const { return started_; }
    // Finished: the summary and the file figures.
    std::optional<helper::FinishedReport> report() const;
    // Whether the connection came from AUXSCOPE_CAPTURE_HELPER_FD or pkexec.
    bool inherited() const { return inherited_; }
    // Whom the helper serves, and as whom it runs (0: root).
    uid_t helperUid() const { return helperUid_; }
    uid_t helperEuid() const { return helperEuid_; }

private:
    void run(CaptureOptions options, std::string path, TriggerSettings triggers);
    Expected<void> connect();
    Expected<void> readUntil(helper::MsgType want, helper::Message* out, bool rejectedEnds = true);
    void readLoop();
    void handle(helper::Message& m);
    void fail(std::string why);

    int sock_ = -1;
    pid_t pkexec_ = -1;
    int pkexecErr_ = -1;  // pkexec's stderr, for why it failed
    bool inherited_ = false;
    uid_t helperUid_ = uid_t(-1), helperEuid_ = uid_t(-1);
    std::unique_ptr<helper::MessageReader> reader_;
    std::thread thread_;
    std::atomic<State> state_{State::Idle};
    std::atomic<bool> hasAux_{false}, snapshots_{false};
    std::unique_ptr<CaptureStats> stats_;
    std::chrono::steady_clock::time_point started_;
    mutable std::mutex mutex_;
    std::string failure_, target_;
    std::vector<std::string> notes_;
    std::vector<int> cpus_;
    std::optional<helper::FinishedReport> report_;
    std::mutex sendMutex_;
};

// What to do when capture needs privileges and the helper cannot give them.
std::string privilegeRemedy();

}  // namespace auxscope
