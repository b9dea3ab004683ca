// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for the capture control FIFO (capture/CaptureControl.cpp:
// perf record's `--control fifo:CTL[,ACK]`; issue 17). Real FIFOs in a temp
// dir (the run's current directory, so specs name them as "ctl" and "ack"):
//   - the first line of the input is a --control spec for ControlFifo::open
//     (refusals must say why; a refused one falls back to "fifo:ctl,ack");
//   - the rest is what a client writes to the control FIFO: it goes through
//     the FIFO in pieces (the first byte after the spec picks the piece size, so
//     lines are split across reads) and each piece is handled by onReadable()
//     with DrainActions that check what the parser asks of the capture and
//     answer as a capture with and without a flight recorder would;
//   - the ACK FIFO is drained after each piece: every answer is "ack" or
//     "error: ..." on its own line, one per command counted.
// Errors are fine; crashes, leaks, UB, a blocked read or a lost answer are not.
// Built with clang and ASan/UBSan by tests/fuzz/hardening_fuzz.cmake.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "CaptureControl.h"

using namespace auxscope;

namespace {

struct Actions : DrainActions {
    bool flightRecorder = true;
    bool enabled = true;
    uint64_t snapshots = 0, stops = 0, toggles = 0;
    bool snapshotNow() override {
        if (!flightRecorder) return false;
        ++snapshots;
        return true;
    }
    void stop() override { ++stops; }
    Expected<void> setEventsEnabled(bool on) override {
        ++toggles;
        if (on == enabled)
            return makeError(std::string("the events are already ") + (on ? "enabled" : "disabled"));
        enabled = on;
        return {};
    }
};

// The FIFOs, made once in a temp dir that becomes the current directory
// (never destroyed: the atexit handler that removes it runs after static
// destructors registered later).
const std::string& fifoDir() {
    static const std::string& dir = *new std::string([] {
        const auto d =
            std::filesystem::temp_directory_path() / ("auxscope-fifo-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        for (const char* name : {"ctl", "ack"}) {
            const std::string p = (d / name).string();
            ::unlink(p.c_str());
            if (::mkfifo(p.c_str(), 0600) != 0) std::abort();
        }
        std::filesystem::create_directories(d / "dir");
        if (::chdir(d.c_str()) != 0) std::abort();
        std::atexit([] { std::filesystem::remove_all(fifoDir()); });
        return d.string();
    }());
    return dir;
}

// Reads everything the ACK FIFO holds (non-blocking).
std::string drainAcks(int fd) {
    std::string out;
    if (fd < 0) return out;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, size_t(n));
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    (void)fifoDir();
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t eol = input.find('\n');
    // Specs name paths relative to the FIFO dir only ('/' becomes '_'), so the
    // fuzzer never opens someone else's FIFO on this machine; "dir" there is a
    // directory, anything else but "ctl" and "ack" does not exist.
    std::string spec(input.substr(0, eol));
    for (char& ch : spec)
        if (ch == '/') ch = '_';
    if (eol == std::string_view::npos) {
        auto c = ControlFifo::open(spec);
        if (!c && c.error().message.empty()) std::abort();
        return 0;
    }
    std::string_view rest = input.substr(eol + 1);
    auto opened = ControlFifo::open(spec);
    if (!opened) {
        if (opened.error().message.empty()) std::abort();
        // Fall back to the FIFOs made here, so every input drives the parser.
        opened = ControlFifo::open("fifo:ctl,ack");
        if (!opened) std::abort();
    }
    ControlFifo& fifo = **opened;
    Actions actions;
    size_t piece = 1;
    if (!rest.empty()) {
        actions.flightRecorder = (uint8_t(rest[0]) & 0x80) == 0;
        // At most ~1.5 KiB per piece: even two-byte commands each answered by a
        // ~75-byte error line then fit the ACK FIFO's 64 KiB.
        piece = 1 + (uint8_t(rest[0]) & 0x7f) * 12;
        rest.remove_prefix(1);
    }
    // The client's ends, on the paths the spec named: a FIFO holds nothing once
    // every end is closed, so nothing carries over to the next input.
    const int writer = ::open(fifo.controlPath().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (writer < 0) std::abort();
    const int reader =
        fifo.ackPath().empty() ? -1 : ::open(fifo.ackPath().c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (!fifo.ackPath().empty() && reader < 0) std::abort();
    std::string acks;
    while (!rest.empty()) {
        const size_t n = std::min(piece, rest.size());
        const ssize_t w = ::write(writer, rest.data(), n);
        if (w <= 0) std::abort();  // the FIFO was drained after the previous piece: there is room
        rest.remove_prefix(size_t(w));
        fifo.onReadable(actions);
        acks += drainAcks(reader);
    }
    ::close(writer);
    fifo.onReadable(actions);  // nothing more: must return at once (non-blocking)
    acks += drainAcks(reader);
    if (reader >= 0) ::close(reader);

    const ControlFifoStats st = fifo.stats();
    // Every handled command answered exactly once, on its own line.
    uint64_t lines = 0, ackLines = 0, errorLines = 0;
    for (size_t at = 0; at < acks.size();) {
        const size_t end = acks.find('\n', at);
        if (end == std::string::npos) std::abort();  // an answer is always a whole line
        const std::string_view line(acks.data() + at, end - at);
        ++lines;
        if (line == "ack")
            ++ackLines;
        else if (line.rfind("error: ", 0) == 0 && line.size() > 7)
            ++errorLines;
        else
            std::abort();
        at = end + 1;
    }
    if (st.ackFailures != 0) std::abort();  // we read the ACK FIFO after every piece
    if (fifo.ackPath().empty()) {
        if (!acks.empty()) std::abort();
    } else if (ackLines != st.acks || errorLines != st.errors || lines != st.commands) {
        std::abort();
    }
    if (st.snapshots != actions.snapshots) std::abort();
    for (const auto& m : fifo.messages())
        if (m.empty()) std::abort();
    return 0;
}
