// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The privileged capture helper's protocol. The GUI runs as the user; when a
// capture needs privileges it starts `auxscope-capture-helper` through pkexec
// with one end of a UNIX socket pair as the helper's standard input (pkexec
// closes every other descriptor). Both sides speak only this protocol over it:
// nothing from the user reaches the helper's argv, a shell or a path.
//
// Framing: a message is a 4-byte little-endian payload length, a 1-byte type and
// the payload. A payload holds at most kMaxPayload bytes; a longer one, a type
// the receiver does not know or a truncated frame ends the connection (the
// helper answers Rejected with the reason first). One descriptor may ride along
// (SCM_RIGHTS): the output file, with File.
//
// GUI to helper (each answered by Rejected with a reason when it is refused):
//   Hello     "version=1"
//   File      no payload, the descriptor of a file the GUI created (empty,
//             regular, opened for writing, owned by the user the helper serves)
//   Start     key=value lines (encodeStartRequest), validated by parseStartRequest
//             (call-graph=fp|dwarf,SIZE|lbr: CaptureOptions::callGraph) and
//             parseStartTriggers (trigger=SPEC...: TriggerSettings)
//   Snapshot  take a flight-recorder snapshot now
//   Stop      end the capture; the helper completes the file and says Finished
// Helper to GUI:
//   Ready     "version=1\nuid=N\neuid=M": whom it serves, and as whom it runs
//   Started   "cpus=0,1,..\naux=0|1\ntarget=..."
//   Stats     every CPU's CpuStatsSnapshot (encodeStats), at >= 10 Hz
//   Rejected  "reason=...": a message that was refused (the capture goes on)
//   Failed    "reason=...": the capture could not start or the file could not
//             be completed
//   Finished  the summary and the file report (encodeFinished)
// The helper stops the capture, completes the file and exits when the GUI's end
// of the socket closes.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "CaptureOptions.h"
#include "CaptureSession.h"
#include "CaptureStats.h"
#include "Result.h"
#include "TriggerSpec.h"

namespace auxscope::helper {

constexpr int kProtocolVersion = 1;
constexpr uint32_t kMaxPayload = 64 * 1024;

enum class MsgType : uint8_t {
    Hello = 1,
    File = 2,
    Start = 3,
    Snapshot = 4,
    Stop = 5,
    Ready = 64,
    Started = 65,
    Stats = 66,
    Rejected = 67,
    Failed = 68,
    Finished = 69,
};
const char* msgTypeName(MsgType t);
bool knownMsgType(uint8_t t);

struct Message {
    MsgType type = MsgType::Hello;
    std::string payload;
    int fd = -1;  // received: owned by the receiver (close it); sent: not closed
};

// Sends one message (with `fd` as SCM_RIGHTS when >= 0). Never raises SIGPIPE.
Expected<void> sendMessage(int sock, const Message& m);

// Reads messages from a stream socket, whatever way the bytes arrive.
class MessageReader {
public:
    explicit MessageReader(int sock) : sock_(sock) {}
    ~MessageReader();
    // Reads what is there (blocking when `block`); the messages complete so far
    // are returned by next(). Returns false at end of stream or on an error
    // (error() says which; empty at a clean end).
    bool fill(bool block);
    std::optional<Message> next();
    const std::string& error() const { return error_; }
    bool ended() const { return ended_; }

private:
    int sock_;
    std::string buf_;
    std::vector<int> fds_;  // received, not yet attached to a message
    std::string error_;
    bool ended_ = false;
};

// key=value lines. Keys: [a-z0-9-]+; values: printable, no control bytes.
using KeyValues = std::vector<std::pair<std::string, std::string>>;
std::string encodeKeyValues(const KeyValues& kv);
Expected<KeyValues> parseKeyValues(const std::string& payload);
// The single value of `key` (an error when it is there more than once); nullopt when absent.
Expected<std::optional<std::string>> singleValue(const KeyValues& kv, const std::string& key);

// What a Start may ask for: the capture options the GUI's form gives, and no
// more. Limits keep a hostile peer from making the helper allocate or open
// without bound.
struct StartLimits {
    int cpuCount = 0;  // CPUs the machine has (configured): a CPU must be below it
    size_t maxEvents = 64;
    size_t maxEventLength = 512;
    size_t maxArgs = 256;
    size_t maxArgLength = 4096;
    size_t maxDataPages = size_t(1) << 18;  // 1 GiB of 4 KiB pages per CPU
    size_t maxAuxPages = size_t(1) << 20;   // 4 GiB per CPU
    uint64_t maxSampleFreq = 1'000'000;
    double maxDurationSeconds = 7 * 24 * 3600.0;
    size_t maxTriggers = 16;
    size_t maxTriggerLength = 1024;
    static StartLimits forThisMachine();
};
std::string encodeStartRequest(const CaptureOptions& o);
Expected<CaptureOptions> parseStartRequest(const std::string& payload, const StartLimits& limits);
// Snapshot triggers ride along in Start (trigger=SPEC repeated, trigger-post-ns,
// trigger-max, trigger-gap-ns, trigger-tid repeated, trigger-mode); the helper
// resolves them for the user it serves (a binary that user may not read is refused).
std::string encodeStartRequest(const CaptureOptions& o, const TriggerSettings& triggers);
Expected<TriggerSettings> parseStartTriggers(const std::string& payload, const StartLimits& limits);

// The output file: a regular, empty file opened for writing (not appending),
// owned by `owner`, with one link. The reason names what is wrong.
Expected<void> validateOutputFd(int fd, uid_t owner);

// Per-CPU statistics as sent in Stats.
std::string encodeStats(const std::vector<CpuStatsSnapshot>& cpus);
Expected<std::vector<CpuStatsSnapshot>> decodeStats(const std::string& payload);

// What a finished capture reports (CaptureSummary and the file writer's figures
// the GUI shows).
struct FinishedReport {
    CaptureSummary summary;
    uint64_t fileBytes = 0, auxBytes = 0, recordsHeldBack = 0, auxHeldBack = 0;
    uint64_t maxBacklogBytes = 0, backlogBudget = 0;  // the file writer's backlog: peak and budget
    std::string fileError;                            // empty: the file is complete
};
std::string encodeFinished(const FinishedReport& r);
Expected<FinishedReport> decodeFinished(const std::string& payload);

}  // namespace auxscope::helper
