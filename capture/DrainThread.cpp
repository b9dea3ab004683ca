// SPDX-License-Identifier: GPL-3.0-or-later
#include "DrainThread.h"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "DrainThreadTesting.h"

namespace auxscope {
namespace {
using Clock = std::chrono::steady_clock;

// Under sustained load (a pass finds at least this share of a ring) the drain
// thread polls on a short timer instead of waiting for ring wakeups.
constexpr uint64_t kPollFraction = 16;
constexpr auto kPollInterval = std::chrono::microseconds(200);
// Statistics samples kept before the history is thinned out (about 48 MiB).
constexpr size_t kMaxHistory = size_t(1) << 20;
constexpr uint64_t kTagStop = ~0ull, kTagChild = ~0ull - 1, kTagSnapshot = ~0ull - 2;
// Command source i is tagged kTagCommand + i.
constexpr uint64_t kTagCommand = ~0ull - 1024;
// A wait that fails (other than EINTR, ENOSYS) is tried again this many times,
// kWaitRetryDelay apart, before the capture ends with its error.
constexpr unsigned kMaxWaitErrors = 3;
constexpr auto kWaitRetryDelay = std::chrono::milliseconds(10);

int realPwait2(int epfd, epoll_event* events, int maxevents, const timespec* timeout,
               const sigset_t* sigmask) {
    // A kernel without it (< 5.11) says ENOSYS. A libc without the wrapper
    // (glibc < 2.35) builds too: the syscall itself where its timespec is the
    // kernel's (64-bit time_t), else ENOSYS, so that epoll_pwait is used.
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
    return ::epoll_pwait2(epfd, events, maxevents, timeout, sigmask);
#elif defined(SYS_epoll_pwait2) && defined(__LP64__)
    return int(syscall(SYS_epoll_pwait2, epfd, events, maxevents, timeout, sigmask, _NSIG / 8));
#else
    (void)epfd, (void)events, (void)maxevents, (void)timeout, (void)sigmask;
    errno = ENOSYS;
    return -1;
#endif
}

std::atomic<decltype(DrainEpollCalls::pwait2)> gPwait2{nullptr};
std::atomic<decltype(DrainEpollCalls::pwait)> gPwait{nullptr};
std::atomic<decltype(DrainEpollCalls::ctl)> gCtl{nullptr};

DrainEpollCalls currentEpoll() {
    DrainEpollCalls real = realDrainEpoll();
    DrainEpollCalls c;
    c.pwait2 = gPwait2.load(std::memory_order_acquire);
    c.pwait = gPwait.load(std::memory_order_acquire);
    c.ctl = gCtl.load(std::memory_order_acquire);
    if (!c.pwait2) c.pwait2 = real.pwait2;
    if (!c.pwait) c.pwait = real.pwait;
    if (!c.ctl) c.ctl = real.ctl;
    return c;
}

std::string errnoText(int e) {
    return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")";
}
}  // namespace

DrainEpollCalls realDrainEpoll() {
    DrainEpollCalls c;
    c.pwait2 = realPwait2;
    c.pwait = ::epoll_pwait;
    c.ctl = ::epoll_ctl;
    return c;
}

DrainEpollCalls setDrainEpollForTesting(DrainEpollCalls calls) {
    DrainEpollCalls old;
    old.pwait2 = gPwait2.exchange(calls.pwait2, std::memory_order_acq_rel);
    old.pwait = gPwait.exchange(calls.pwait, std::memory_order_acq_rel);
    old.ctl = gCtl.exchange(calls.ctl, std::memory_order_acq_rel);
    return old;
}

DrainThread::DrainThread(std::vector<RingSlot>& rings, const IdTable& ids, CaptureStats& stats,
                         DrainControl control, std::vector<RecordConsumer*> consumers)
    : rings_(rings), ids_(ids), stats_(stats), ctl_(std::move(control)), consumers_(std::move(consumers)) {}

DrainThread::~DrainThread() {
    if (thread_.joinable()) {
        requestStop();
        thread_.join();
    }
    if (epollFd_ >= 0) close(epollFd_);
    if (controlEpollFd_ >= 0) close(controlEpollFd_);
    if (stopFd_ >= 0) close(stopFd_);
    if (snapshotFd_ >= 0) close(snapshotFd_);
}

Expected<void> DrainThread::start() {
    epollFd_ = epoll_create1(EPOLL_CLOEXEC);
    controlEpollFd_ = epoll_create1(EPOLL_CLOEXEC);
    stopFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    snapshotFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epollFd_ < 0 || controlEpollFd_ < 0 || stopFd_ < 0 || snapshotFd_ < 0)
        return makeError(std::string("epoll/eventfd: ") + std::strerror(errno));
    // Both wait sets watch the stop and snapshot requests, the command sources and
    // the launched command; only the first also watches the rings. A watch that
    // cannot be added fails the start: a stop request nobody hears would leave
    // the capture running until its deadline, or forever.
    const DrainEpollCalls calls = currentEpoll();
    auto add = [&](int ep, int fd, uint64_t tag, uint32_t events, const std::string& what) -> Expected<void> {
        epoll_event ev{};
        ev.events = events;
        ev.data.u64 = tag;
        if (calls.ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
            return makeError("drain thread: cannot watch " + what + " (fd " + std::to_string(fd) +
                             ") with epoll_ctl: " + errnoText(errno));
        return {};
    };
    for (int ep : {epollFd_, controlEpollFd_}) {
        if (auto r = add(ep, stopFd_, kTagStop, EPOLLIN, "the stop request eventfd"); !r) return r;
        if (auto r = add(ep, snapshotFd_, kTagSnapshot, EPOLLIN, "the snapshot request eventfd"); !r)
            return r;
        if (ctl_.childPidFd >= 0)
            if (auto r = add(ep, ctl_.childPidFd, kTagChild, EPOLLIN, "the launched command's pidfd"); !r)
                return r;
        for (size_t i = 0; i < ctl_.commandSources.size(); ++i)
            if (auto r = add(ep, ctl_.commandSources[i]->fd(), kTagCommand + i, EPOLLIN, "a command source");
                !r)
                return r;
    }
    for (size_t i = 0; i < rings_.size(); ++i) {
        // A backward ring is read at snapshots only: no wakeups, but its hang-up
        // (EPOLLHUP is always reported) still tells that its task exited.
        if (auto r = add(epollFd_, rings_[i].ownerFd, i, rings_[i].backward.mapped() ? 0u : uint32_t(EPOLLIN),
                         "the cpu " + std::to_string(rings_[i].cpu) + " ring");
            !r)
            return r;
    }
    publishPeriod_ = std::chrono::microseconds(1'000'000 / std::max(10u, ctl_.publishHz));
    lastPublish_ = started_ = Clock::now();
    for (auto& r : rings_) {
        readKernelLost(r);
        if (r.aux.mapped()) r.auxPrevTail = r.aux.tail();
        // Not given the head now: records still in the data ring are older than
        // it, and would then look like a head going backwards.
        if (r.aux.mapped() && r.aux.mode() == AuxMode::Snapshot)
            r.auxTracker.emplace(r.aux.size(), r.auxFreeRunningHead, r.auxRecordSizesReliable);
    }
    publish(0);
    thread_ = std::thread([this] { run(); });
    return {};
}

void DrainThread::requestStop() {
    uint64_t one = 1;
    if (stopFd_ >= 0) (void)!write(stopFd_, &one, sizeof one);
}

void DrainThread::requestSnapshot() {
    uint64_t one = 1;
    if (snapshotFd_ >= 0) (void)!write(snapshotFd_, &one, sizeof one);
}

void DrainThread::join() {
    if (thread_.joinable()) thread_.join();
}

std::vector<std::string> DrainThread::messages() const {
    std::lock_guard lock(msgMutex_);
    return messages_;
}

void DrainThread::noteOnce(bool& noted, std::string msg) {
    // For conditions retried on every pass or snapshot (a failing ioctl fails
    // each time): the first occurrence is worth a line, the rest are not.
    if (noted) return;
    noted = true;
    note(std::move(msg));
}

void DrainThread::note(std::string msg) {
    std::lock_guard lock(msgMutex_);
    messages_.push_back(std::move(msg));
}

void DrainThread::handleRecord(RingSlot& r, const perf_event_header& h, std::span<const uint8_t> bytes,
                               ParsedRecord& rec, PassFlags& f, uint64_t offset, bool backward) {
    CpuCounters& c = r.counters;
    if (h.type < kRecordTypeSlots)
        ++c.byType[h.type];
    else
        ++c.unknownTypes;
    ++progress_;
    if (auto error = parseRecord(bytes, ids_, rec)) {
        // Kept and handed on (a consumer may still use its header); counted by
        // kind, the first one's message kept for the summary.
        ++c.parseErrors;
        if (error->starts_with(kUnknownEventIdError)) ++c.parseErrorsUnknownEvent;
        if (r.firstParseError.empty()) {
            const char* name = recordTypeName(h.type);
            r.firstParseError =
                (backward ? "byte " + std::to_string(offset) + " of a sideband flight recorder snapshot"
                          : "data ring offset " + std::to_string(offset)) +
                " (" + (name ? std::string(name) : "type " + std::to_string(h.type)) + ", " +
                std::to_string(h.size) + " bytes): " + *error;
        }
    }
    if (rec.hasSampleId && rec.time > newestRecordTime_) newestRecordTime_ = rec.time;
    switch (h.type) {
        case PERF_RECORD_SAMPLE:
            ++c.samples;
            break;
        case PERF_RECORD_LOST:
            c.lostRecords += rec.lost;
            f.sawLost = true;
            // The lost records may have been PERF_RECORD_AUX: their sizes are unknown.
            if (r.auxTracker) r.auxTracker->noteLost(), r.lostSinceSnapshot = true;
            break;
        case PERF_RECORD_LOST_SAMPLES:
            c.lostSamples += rec.lost;
            break;
        case PERF_RECORD_THROTTLE:
            ++c.throttles;
            break;
        case PERF_RECORD_UNTHROTTLE:
            ++c.unthrottles;
            break;
        case PERF_RECORD_AUX:
            if (rec.auxFlags & kAuxFlagTruncated) {
                ++c.auxTruncated;
                f.sawTruncated = true;
                const uint64_t end = rec.auxOffset + rec.auxSize;
                if (end > f.truncatedEnd) f.truncatedEnd = end;
            }
            if (rec.auxFlags & kAuxFlagOverwrite) ++c.auxOverwrite;
            if (rec.auxFlags & kAuxFlagPartial) ++c.auxPartial;
            if (rec.auxFlags & kAuxFlagCollision) ++c.auxCollision;
            if (r.auxTracker) r.auxTracker->observeRecord(rec.auxOffset, rec.auxSize);
            break;
        default:
            break;
    }
    if (r.triggerRing) {
        if (ctl_.trigger) ctl_.trigger->onTriggerRecord(rec);
        return;
    }
    if (backward && inSnapshot_ && rec.hasSampleId && rec.time) {
        if (!snapshotWindowStart_ || rec.time < snapshotWindowStart_) snapshotWindowStart_ = rec.time;
        if (rec.time > snapshotWindowEnd_) snapshotWindowEnd_ = rec.time;
    }
    for (auto* consumer : consumers_)
        consumer->onRecord(r.cpu, bytes, rec);
}

bool DrainThread::consumersHaveRoom(RingSlot& r, size_t bytes) {
    if (r.triggerRing) return true;
    for (auto* consumer : consumers_)
        if (!consumer->hasRoom(r.cpu, bytes)) return false;
    return true;
}

bool DrainThread::drainRing(RingSlot& r) {
    r.heldBack = false;
    if (r.backward.mapped()) {
        // What an earlier snapshot could not hand over yet goes first.
        if (r.backwardPending && !continueBackward(r)) return r.heldBack = true;
        // A flight recorder is read at snapshots only; its fill says how much
        // history it holds (full once the kernel has written a ring's worth).
        const uint64_t written = uint64_t(0) - r.backward.head();
        const double fill = 100.0 * double(std::min(written, r.backward.size())) / double(r.backward.size());
        r.fillPercent = fill;
        r.fillPeakPercent = std::max(r.fillPeakPercent, fill);
        r.fillMaxPercent = std::max(r.fillMaxPercent, fill);
        return false;
    }
    const uint64_t head = r.ring.head();
    const uint64_t tail = r.ring.tail();
    const uint64_t size = r.ring.size();
    bool busy = false;
    PassFlags flags;
    if (head == tail) {
        r.fillPercent = 0;
    } else {
        const double fill = 100.0 * double(head - tail) / double(size);
        r.fillPercent = fill;
        if (fill > r.fillPeakPercent) r.fillPeakPercent = fill;
        if (fill > r.fillMaxPercent) r.fillMaxPercent = fill;
        CpuCounters& c = r.counters;
        ParsedRecord rec;
        uint64_t pos = tail;
        auto result =
            reader_.walk(r.ring.data(), size, tail, head, [&](const perf_event_header& h, auto bytes) {
                if (!consumersHaveRoom(r, bytes.size())) return false;
                handleRecord(r, h, bytes, rec, flags, pos, false);
                pos += bytes.size();
                return true;
            });
        if (result.stopped) ++c.sinkHeldBack, r.heldBack = true;
        c.records += result.records;
        c.bytes += result.bytes;
        if (result.error) {
            c.corruptBytes += result.skippedBytes;
            note("cpu " + std::to_string(r.cpu) + " data ring: " + *result.error + "; skipped " +
                 std::to_string(result.skippedBytes) + " bytes up to data_head");
        }
        r.ring.setTail(result.newTail);
        // Records held back for a sink: poll until it has made room.
        busy = head - tail >= size / kPollFraction || result.stopped;
    }
    // The AUX bytes after the records: a PERF_RECORD_AUX is written before its
    // aux_head, so the bytes a record of this pass announces are there by now.
    if (r.aux.mapped() && r.aux.mode() == AuxMode::Full &&
        drainAux(r, flags.sawTruncated, flags.truncatedEnd, flags.sawLost))
        busy = true;
    // A snapshot copy a sink had no room for yet.
    if (r.snapshotPending && !deliverSnapshot(r)) busy = r.heldBack = true;
    if (r.auxTracker) {
        // How much of the flight recorder holds trace. The head is only read here,
        // not given to the tracker: records of transactions that ended after this
        // pass's data_head would then look like a head going backwards (a wrap).
        const uint64_t head = r.aux.head(), size = r.aux.size();
        const uint64_t held = r.auxTracker->wrapped() ? size
                              : r.auxFreeRunningHead  ? std::min(head, size)
                                                      : head & (size - 1);
        r.auxFillPercent = 100.0 * double(held) / double(size);
    }
    return busy;
}

bool DrainThread::drainAux(RingSlot& r, bool sawTruncated, uint64_t truncatedEnd, bool sawLost) {
    CpuCounters& c = r.counters;
    AuxRing& aux = r.aux;
    const uint64_t size = aux.size();
    const uint32_t ringIndex = uint32_t(&r - rings_.data());
    const uint64_t tailBefore = aux.tail();
    if (int64_t(r.auxHanded - tailBefore) < 0) r.auxHanded = tailBefore;
    AuxWindow w = aux.window(r.auxHanded);
    if (w.error) {
        ++c.auxErrors;
        noteOnce(r.auxErrorNoted, "cpu " + std::to_string(r.cpu) + " AUX area: " + *w.error);
        r.auxFillPercent = 0;
        return false;
    }
    // 1. The new bytes go to the sinks as views of the area, when all have room;
    // else they wait in the area for a later pass.
    bool heldBack = false;
    if (w.bytes()) {
        const AuxBytes bytes{w.from, w.first, w.second, nullptr};
        for (RecordSink* sink : ctl_.auxSinks)
            if (!sink->hasAuxRoom(ringIndex, bytes)) {
                heldBack = true;
                break;
            }
        if (heldBack) {
            ++c.auxSinkHeldBack;
            r.heldBack = true;
        } else {
            c.auxChunks += w.second.empty() ? 1 : 2;
            c.auxBytes += w.bytes();
            for (RecordSink* sink : ctl_.auxSinks)
                sink->onAux(r.cpu, ringIndex, bytes);
            r.auxHanded = w.to;
            progress_ += w.bytes();
        }
    }
    // 2. aux_tail moves past what every sink is done with: only then may the
    // hardware write there again.
    uint64_t release = r.auxHanded;
    for (RecordSink* sink : ctl_.auxSinks) {
        const uint64_t done = sink->auxReleased(ringIndex);
        if (done != RecordSink::kAuxAllReleased && int64_t(done - release) < 0) release = done;
    }
    const uint64_t head = w.to;
    // Full: the kernel leaves one byte free, so size - 1 bytes mean no room. A
    // transaction may have judged the room against aux_tail as it was before our
    // previous release of bytes, hence the second test.
    const bool full = head - tailBefore + 1 >= size || head - r.auxPrevTail == size - 1;
    uint64_t tail = tailBefore;
    if (int64_t(release - tailBefore) > 0) {
        progress_ += release - tailBefore;  // a sink is done with them: it is moving
        aux.setTail(release);
        tail = release;
        r.auxPrevTail = tailBefore;
    }
    const uint64_t used = head - tail;
    r.auxFillPercent = 100.0 * double(used) / double(size);
    const uint64_t resultTo = head;

    // The event stopped, or may have: TRUNCATED, a full area (no space at begin
    // disables with no record at all), or a LOST record (which may have been a
    // TRUNCATED one). Keep re-enabling until aux_head moves past that point.
    std::optional<uint64_t> stallAt;
    if (full) stallAt = resultTo;
    if (sawTruncated) stallAt = std::max(stallAt.value_or(0), truncatedEnd);
    if (sawLost) stallAt = std::max(stallAt.value_or(0), resultTo);
    if (stallAt && (!r.auxStalled || *stallAt != r.auxStallPos)) {
        r.auxStalled = true;
        r.auxStallPos = *stallAt;
        r.auxStallCounted = r.auxStallPos == r.auxLastCountedPos;
        r.auxRetryAt = {};
    }
    if (r.auxStalled) {
        if (int64_t(resultTo - r.auxStallPos) > 0)
            r.auxStalled = false;  // the hardware wrote past the stall: it runs again
        else
            reenableAux(r);
    }
    // Bytes waiting for a sink keep the area filled: poll until they are released.
    if (r.auxHanded != tail) r.heldBack = true;
    return used >= size / kPollFraction || heldBack || r.auxHanded != tail;
}

void DrainThread::reenableAux(RingSlot& r) {
    if (!r.auxControl || !auxReenableAllowed_ || eventsPaused_) return;
    // No room yet (a sink still holds the bytes): enabling now would only make the
    // kernel disable the event again at its next transaction.
    if (r.aux.head() - r.aux.tail() + 1 >= r.aux.size()) return;
    auto enableFailed = [&](const std::string& why) {
        noteOnce(r.auxEnableErrorNoted, "cpu " + std::to_string(r.cpu) +
                                            ": cannot re-enable the AUX event: " + why +
                                            "; its AUX trace stays stopped");
    };
    const std::optional<bool> known = r.auxControl->enabled();
    if (known) {
        // Exact: enable only a disabled event, and count each one. A disable the
        // kernel has still pending is caught by a later pass (the stall stays).
        if (*known) return;
        if (auto e = r.auxControl->enable(); !e) {
            enableFailed(e.error().message);
            return;
        }
        ++r.counters.auxReenables;
        r.auxLastCountedPos = r.auxStallPos;
        r.auxStallCounted = true;
        return;
    }
    // A perf fd: its state is not visible. Enable at once, then again once per
    // publish period while the stall lasts (the kernel disables from irq work,
    // possibly after our first enable); count one re-enable per stall.
    const auto now = Clock::now();
    if (now < r.auxRetryAt) return;
    r.auxRetryAt = now + publishPeriod_;
    if (auto e = r.auxControl->enable(); !e) {
        enableFailed(e.error().message);
        return;
    }
    if (!r.auxStallCounted) {
        ++r.counters.auxReenables;
        r.auxLastCountedPos = r.auxStallPos;
        r.auxStallCounted = true;
    }
}

void DrainThread::readKernelLost(RingSlot& r) {
    if (!(r.readFormat & PERF_FORMAT_LOST)) return;
    uint64_t total = 0;
    for (const PerfEventFd* fd : r.members) {
        auto reading = fd->read(r.readFormat);
        if (reading) total += reading->lost;
    }
    r.counters.kernelLost = total;
}

void DrainThread::publish(double seconds) {
    for (auto& r : rings_) {
        if (r.triggerRing) continue;
        CpuStatsSnapshot s;
        s.cpu = r.cpu;
        s.totals = r.counters;
        s.ringBytes = r.backward.mapped() ? r.backward.size() : r.ring.size();
        s.backwardMode = r.backward.mapped();
        s.backwardWrittenBytes = r.backward.mapped() ? uint64_t(0) - r.backward.head() : 0;
        s.fillPercent = r.fillPercent;
        s.fillPeakPercent = r.fillPeakPercent;
        s.fillMaxPercent = r.fillMaxPercent;
        s.kernelLostAvailable = (r.readFormat & PERF_FORMAT_LOST) != 0;
        s.hasAux = r.aux.mapped();
        s.auxRingBytes = r.aux.mapped() ? r.aux.size() : 0;
        s.auxFillPercent = r.auxFillPercent;
        s.auxSnapshotMode = r.auxTracker.has_value();
        if (seconds > 0) {
            s.bytesPerSecond = double(r.counters.bytes - r.publishedBytes) / seconds;
            s.recordsPerSecond = double(r.counters.records - r.publishedRecords) / seconds;
        }
        r.publishedBytes = r.counters.bytes;
        r.publishedRecords = r.counters.records;
        if (newestRecordTime_ != 0) {
            const auto& c = r.counters;
            StatsSample h;
            h.perfTime = newestRecordTime_;
            h.monotonicNs =
                uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
                             .count());
            h.cpu = r.cpu;
            h.fillPeakPercent = float(r.fillPeakPercent);
            h.bytes = c.bytes, h.records = c.records, h.lostRecords = c.lostRecords;
            h.lostSamples = c.lostSamples, h.kernelLost = c.kernelLost;
            h.hasAux = s.hasAux;
            h.auxFillPercent = float(r.auxFillPercent);
            h.auxBytes = c.auxBytes, h.auxTruncated = c.auxTruncated, h.auxPartial = c.auxPartial;
            h.auxCollision = c.auxCollision, h.auxReenables = c.auxReenables;
            h.auxSnapshots = c.auxSnapshots, h.auxSnapshotBytes = c.auxSnapshotBytes;
            history_.push_back(h);
        }
        r.fillPeakPercent = r.fillPercent;
        stats_.publish(r.statsIndex, s);
    }
    // Bound the history on very long captures: past the cap, keep every other
    // publish (per-CPU entries of one publish stay together).
    if (history_.size() >= kMaxHistory && !rings_.empty()) {
        const size_t group = size_t(
            std::count_if(rings_.begin(), rings_.end(), [](const RingSlot& r) { return !r.triggerRing; }));
        std::vector<StatsSample> thinned;
        if (group == 0) return;
        thinned.reserve(history_.size() / 2 + group);
        for (size_t i = 0; i < history_.size(); i += 2 * group)
            thinned.insert(thinned.end(), history_.begin() + long(i),
                           history_.begin() + long(std::min(i + group, history_.size())));
        history_ = std::move(thinned);
    }
    stats_.bumpGeneration();
}

void DrainThread::reapChild() {
    if (ctl_.childPid <= 0 || childExited_ || childGone_) return;
    int status = 0;
    pid_t p;
    do
        p = waitpid(ctl_.childPid, &status, WNOHANG);
    while (p < 0 && errno == EINTR);
    if (p == ctl_.childPid) {
        childExited_ = true;
        childStatus_ = status;
    } else if (p < 0) {
        // ECHILD: someone else reaped it (or it is not ours): nothing to wait for.
        childGone_ = true;
        note("the launched command (pid " + std::to_string(ctl_.childPid) +
             ") cannot be waited for: " + errnoText(errno) + "; its exit status is unknown");
    }
}

bool DrainThread::waitChildUntil(Clock::time_point until) {
    for (;;) {
        reapChild();
        if (childExited_ || childGone_) return true;
        const auto now = Clock::now();
        if (now >= until) return false;
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now);
        if (ctl_.childPidFd >= 0) {
            // The pidfd turns readable when the process exits; EINTR just loops.
            pollfd p{ctl_.childPidFd, POLLIN, 0};
            (void)poll(&p, 1, int(std::min<std::chrono::milliseconds::rep>(left.count(), 100)));
        } else {
            usleep(useconds_t(std::min<std::chrono::milliseconds::rep>(left.count(), 5) * 1000));
        }
    }
}

void DrainThread::endChild() {
    if (ctl_.childPid <= 0 || childExited_ || childGone_) return;
    reapChild();
    if (childExited_ || childGone_) return;
    kill(ctl_.childPid, SIGTERM);
    if (waitChildUntil(Clock::now() + kChildTermTimeout)) return;
    kill(ctl_.childPid, SIGKILL);
    childKilled_ = true;
    const std::string what = "the launched command (pid " + std::to_string(ctl_.childPid) +
                             ") did not exit within " + std::to_string(kChildTermTimeout.count()) +
                             " s of SIGTERM at the end of the capture";
    if (waitChildUntil(Clock::now() + kChildKillTimeout))
        note(what + ": it was killed (SIGKILL)");
    else
        note(what + ", nor within " + std::to_string(kChildKillTimeout.count()) +
             " s of SIGKILL (stuck in the kernel?): left running, not reaped");
}

int DrainThread::waitForEvents(int epfd, epoll_event* events, int max, const timespec& timeout) {
    const DrainEpollCalls calls = currentEpoll();
    int n;
    if (!epollPwait2Missing_) {
        n = calls.pwait2(epfd, events, max, &timeout, nullptr);
        if (n < 0 && errno == ENOSYS) {
            // Kernels before 5.11 (or a libc/seccomp that refuses it): the
            // millisecond wait from here on, rounded up so a short wait cannot
            // become a busy loop of zero timeouts.
            epollPwait2Missing_ = true;
            note("epoll_pwait2 is not available here (" + errnoText(ENOSYS) +
                 "): the drain thread waits with epoll_pwait (millisecond timeouts)");
        }
    }
    if (epollPwait2Missing_) {
        const int64_t ms = (int64_t(timeout.tv_sec) * 1'000'000'000 + timeout.tv_nsec + 999'999) / 1'000'000;
        n = calls.pwait(epfd, events, max, int(std::min<int64_t>(ms, 60'000)), nullptr);
    }
    if (n >= 0) {
        waitErrors_ = 0;
        return n;
    }
    const int e = errno;
    if (e == EINTR) return 0;  // a signal: the loop waits again
    if (++waitErrors_ < kMaxWaitErrors) {
        std::this_thread::sleep_for(kWaitRetryDelay);
        return 0;
    }
    failure_ = std::string(epollPwait2Missing_ ? "epoll_pwait" : "epoll_pwait2") + " failed " +
               std::to_string(waitErrors_) + " times in a row: " + errnoText(e) +
               "; the drain thread cannot wait for the rings any more, so the capture stopped";
    note(failure_);
    return -1;
}

void DrainThread::run() {
    if (ctl_.realtime) {
        // A ring fills in milliseconds under load. When the traced workload shares
        // this thread's CPU, a normal-priority wakeup can wait a whole scheduler
        // slice (measured: 4 ms, enough to overflow a 512 KiB ring at 140 MB/s).
        // SCHED_FIFO runs it at once; every pass is bounded and ends in a sleep.
        sched_param sp{};
        sp.sched_priority = 1;
        if (int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp); rc != 0)
            note(std::string("drain thread runs at normal priority (SCHED_FIFO: ") + std::strerror(rc) +
                 "); under heavy load it may wait behind the traced workload. Run as root or grant "
                 "CAP_SYS_NICE to avoid that");
    }
    const auto publishPeriod = publishPeriod_;
    epoll_event events[64];
    bool polling = false;
    bool stop = false;
    bool snapshotRequested = false;
    while (!stop) {
        auto now = Clock::now();
        auto wakeAt = lastPublish_ + publishPeriod;
        if (ctl_.deadline < wakeAt) wakeAt = ctl_.deadline;
        if (ctl_.trigger)
            wakeAt = std::min({wakeAt, ctl_.trigger->snapshotDue(), now + ctl_.trigger->pollInterval()});
        if (polling) wakeAt = std::min(wakeAt, now + kPollInterval);
        const auto wait = std::max(Clock::duration::zero(), wakeAt - now);
        timespec timeout{time_t(wait / std::chrono::seconds(1)),
                         long((wait % std::chrono::seconds(1)) / std::chrono::nanoseconds(1))};
        // While polling, the ring fds are left out of the wait: their wakeups come
        // from the traced CPUs and would pull this thread onto a busy CPU.
        const int n = waitForEvents(polling ? controlEpollFd_ : epollFd_, events, 64, timeout);
        if (n < 0) break;  // the capture ends with the error (failure_): finishCapture below
        for (int i = 0; i < n; ++i) {
            uint64_t tag = events[i].data.u64;
            if (tag == kTagStop) {
                stop = true;
            } else if (tag == kTagSnapshot) {
                uint64_t count;
                (void)!read(snapshotFd_, &count, sizeof count);  // re-arm; served after the pass below
                snapshotRequested = true;
            } else if (tag >= kTagCommand && tag - kTagCommand < ctl_.commandSources.size()) {
                ctl_.commandSources[tag - kTagCommand]->onReadable(*this);
            } else if (tag == kTagChild) {
                reapChild();
                if (childExited_ || childGone_) {
                    stop = true;
                    // A failed removal only leaves a watch that is not read again.
                    (void)epoll_ctl(epollFd_, EPOLL_CTL_DEL, ctl_.childPidFd, nullptr);
                    (void)epoll_ctl(controlEpollFd_, EPOLL_CTL_DEL, ctl_.childPidFd, nullptr);
                }
            } else if (tag < rings_.size() && rings_[tag].ownerFdIsEventfd && (events[i].events & EPOLLIN)) {
                uint64_t count;
                (void)!read(rings_[tag].ownerFd, &count, sizeof count);  // re-arm; the pass below drains
            } else if (tag < rings_.size() && (events[i].events & (EPOLLHUP | EPOLLERR))) {
                // The ring's task exited: drain what is left, then stop watching it.
                RingSlot& r = rings_[tag];
                if (!r.hungUp) {
                    r.hungUp = true;
                    (void)epoll_ctl(epollFd_, EPOLL_CTL_DEL, r.ownerFd, nullptr);
                }
            }
        }
        bool busy = false;
        bool allHungUp = !rings_.empty();
        for (auto& r : rings_) {
            busy |= drainRing(r);
            allHungUp &= r.hungUp;
        }
        // A triggered snapshot whose --trigger-post has passed (its firing was seen in the pass above).
        if (ctl_.trigger) {
            ctl_.trigger->onPassEnd();
            if (Clock::now() >= ctl_.trigger->snapshotDue()) snapshotRequested = true;
        }
        // After the pass: the data rings were just drained, so the disables that
        // start the snapshot find room for the records they flush.
        if (snapshotRequested || (snapshotDeferred_ && !sinksOwed())) {
            snapshotRequested = false;
            takeSnapshot(auxReenableAllowed_);
        }
        if (ctl_.afterPass) ctl_.afterPass();
        if (allHungUp && ctl_.stopWhenAllRingsHangUp) {
            note("every traced task has exited");
            stop = true;
        }
        polling = busy || snapshotDeferred_;
        now = Clock::now();
        if (now - lastPublish_ >= publishPeriod) {
            for (auto& r : rings_)
                readKernelLost(r);
            checkCpusOnline();
            publish(std::chrono::duration<double>(now - lastPublish_).count());
            lastPublish_ = now;
        }
        if (now >= ctl_.deadline) stop = true;
    }
    finishCapture();
    finished_.store(true, std::memory_order_release);
}

void DrainThread::finishCapture() {
    // 1. Stop the events that produce the bulk of the data, and drain. AUX events
    // stopped for want of space stay stopped from here on.
    // Everything taken from the rings reaches the sinks: the passes here wait for
    // a sink that has no room rather than drop anything.
    auxReenableAllowed_ = false;
    stopBegan_ = stopProgressAt_ = Clock::now();
    stopProgress_ = progress_;
    for (auto* fd : ctl_.primaryEvents)
        (void)fd->disable();
    drainUntilDelivered();
    // A snapshot asked for while the capture was stopping (or waiting for the
    // sinks) is still taken; then, with perf record --snapshot=e, the flight
    // recorders' last contents. The events stay disabled.
    uint64_t pending = 0;
    if ((read(snapshotFd_, &pending, sizeof pending) == ssize_t(sizeof pending) && pending) ||
        snapshotDeferred_) {
        takeSnapshot(false);
        drainUntilDelivered();
    }
    // A triggered snapshot still waiting for its --trigger-post: taken now.
    if (ctl_.trigger && ctl_.trigger->snapshotDue() != Clock::time_point::max()) {
        ctl_.trigger->makeDueNow();
        takeSnapshot(false);
        drainUntilDelivered();
    }
    if (ctl_.snapshotOnStop) {
        takeSnapshot(false);
        drainUntilDelivered();
    }
    for (auto& r : rings_)
        readKernelLost(r);

    // 2. The kernel reports lost records lazily: the count waits in the ring until
    // the next record fits. Where the kernel's own count (PERF_FORMAT_LOST) is
    // ahead of the LOST records seen, make the tracking event write a record on
    // that CPU (a context switch of this thread there), which flushes the LOST
    // record first. Then drain again.
    if (ctl_.canProvokeFlush) {
        cpu_set_t original;
        bool haveOriginal = sched_getaffinity(0, sizeof original, &original) == 0;
        for (int attempt = 0; attempt < 3; ++attempt) {
            bool pending = false;
            for (auto& r : rings_) {
                if (r.counters.kernelLost <= r.counters.lostRecords) continue;
                pending = true;
                cpu_set_t one;
                CPU_ZERO(&one);
                CPU_SET(r.cpu, &one);
                if (sched_setaffinity(0, sizeof one, &one) == 0) usleep(200);
            }
            if (!pending) break;
            if (haveOriginal) sched_setaffinity(0, sizeof original, &original);
            usleep(1000);
            drainUntilDelivered();
            for (auto& r : rings_)
                readKernelLost(r);
        }
        if (haveOriginal) sched_setaffinity(0, sizeof original, &original);
    }

    // 3. Stop the tracking events; a launched command that is still running ends
    // with the capture, as under perf record.
    for (auto* fd : ctl_.trackingEvents)
        (void)fd->disable();
    endChild();
    drainUntilDelivered();
    // The sideband flight recorders' tail: every event is stopped, so this is the
    // last of their history (records an earlier snapshot delivered are not repeated).
    if (snapshotBackwardRings()) snapshotsTaken_.fetch_add(1, std::memory_order_acq_rel);
    drainUntilDelivered();
    for (auto& r : rings_) {
        readKernelLost(r);
        // A backward ring's LOST records (output paused for a snapshot) may have been
        // overwritten themselves: its kernel count need not be matched.
        if (!r.backward.mapped() && r.counters.kernelLost > r.counters.lostRecords)
            note("cpu " + std::to_string(r.cpu) + ": the kernel counted " +
                 std::to_string(r.counters.kernelLost) +
                 " lost records (PERF_FORMAT_LOST) but reported only " +
                 std::to_string(r.counters.lostRecords) + " in LOST records; the remaining " +
                 std::to_string(r.counters.kernelLost - r.counters.lostRecords) +
                 " were still pending in the kernel when capture stopped");
    }
    if (!drainUntilDelivered()) countUndelivered();
    noteParseErrors();
    checkCpusOnline();
    auto now = Clock::now();
    publish(std::chrono::duration<double>(now - lastPublish_).count());
}

void DrainThread::countUndelivered() {
    for (auto& r : rings_) {
        CpuCounters& c = r.counters;
        uint64_t records = 0, bytes = 0, auxBytes = 0;
        if (r.ring.mapped() && !r.backward.mapped()) {
            const uint64_t head = r.ring.head(), tail = r.ring.tail();
            auto walked = reader_.walk(r.ring.data(), r.ring.size(), tail, head,
                                       [](const perf_event_header&, std::span<const uint8_t>) {});
            records += walked.records;
            bytes += walked.bytes + walked.skippedBytes;
            r.ring.setTail(head);  // given up: the kernel may have the space back
        }
        if (r.backwardPending) {
            const BackwardSnapshot& s = *r.backwardPending;
            for (size_t i = r.backwardNext; i < s.offsets.size(); ++i)
                ++records, bytes += s.record(i).size();
            r.backwardPending.reset();
        }
        if (r.aux.mapped() && r.aux.mode() == AuxMode::Full) {
            const uint64_t head = r.aux.head();
            if (int64_t(head - r.auxHanded) > 0) auxBytes += head - r.auxHanded;
        }
        if (r.snapshotPending) {
            auxBytes += r.snapshotCopy ? r.snapshotCopy->size() : 0;
            r.snapshotPending = false;
        }
        if (!records && !auxBytes) continue;
        c.undeliveredRecords += records, c.undeliveredBytes += bytes, c.undeliveredAuxBytes += auxBytes;
        std::string what;
        if (records) what = std::to_string(records) + " records (" + std::to_string(bytes) + " bytes)";
        if (auxBytes) what += (what.empty() ? "" : " and ") + std::to_string(auxBytes) + " AUX bytes";
        note("cpu " + std::to_string(r.cpu) + ": " + what + " not delivered: " +
             (stopHitLimit_ ? "the stop had waited " + std::to_string(kStopDeliveryLimit.count()) +
                                  " s for a sink (the file writer) slower than the records still arriving"
                            : "a sink (the file writer) took nothing for " +
                                  std::to_string(kStopDeliveryTimeout.count()) + " s during the stop"));
    }
}

void DrainThread::noteParseErrors() {
    for (auto& r : rings_) {
        const CpuCounters& c = r.counters;
        if (!c.parseErrors) continue;
        const uint64_t unknown = c.parseErrorsUnknownEvent, cut = c.parseErrors - unknown;
        std::string kinds;
        if (cut) kinds = std::to_string(cut) + " too short for their type";
        if (unknown)
            kinds +=
                (kinds.empty() ? "" : ", ") + std::to_string(unknown) + " samples of an unknown event id";
        note("cpu " + std::to_string(r.cpu) + ": " + std::to_string(c.parseErrors) +
             " records did not parse (" + kinds + "; kept and counted); the first, at " + r.firstParseError);
    }
}

namespace {

// The CPUs /sys/devices/system/cpu/online lists ("0-3,6"); nullopt when it
// cannot be read or parsed (nothing is said then).
std::optional<std::vector<bool>> onlineCpus() {
    const int fd = ::open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    char buf[1024];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return std::nullopt;
    std::vector<bool> online;
    const char* p = buf;
    const char* end = buf + n;
    while (p < end && *p != '\n') {
        char* next = nullptr;
        const unsigned long a = std::strtoul(p, &next, 10);
        if (next == p || a > 65535) return std::nullopt;
        unsigned long b = a;
        p = next;
        if (p < end && *p == '-') {
            b = std::strtoul(p + 1, &next, 10);
            if (next == p + 1 || b < a || b > 65535) return std::nullopt;
            p = next;
        }
        if (online.size() <= b) online.resize(b + 1, false);
        for (unsigned long c = a; c <= b; ++c)
            online[c] = true;
        if (p < end && *p == ',') ++p;
    }
    return online;
}

}  // namespace

void DrainThread::checkCpusOnline() {
    if (!ctl_.watchCpuHotplug) return;
    auto online = onlineCpus();
    if (!online) return;
    char at[32];
    std::snprintf(at, sizeof at, "%.1f s", std::chrono::duration<double>(Clock::now() - started_).count());
    for (const auto& r : rings_) {
        if (r.cpu < 0) continue;
        const bool on = size_t(r.cpu) < online->size() && (*online)[size_t(r.cpu)];
        auto it = cpusOffline_.find(r.cpu);
        if (!on && it == cpusOffline_.end()) {
            cpusOffline_[r.cpu] = false;
            note("cpu " + std::to_string(r.cpu) + " went offline " + at +
                 " into the capture: the kernel detached its events there, so it is not traced from then "
                 "on (the other CPUs are)");
        } else if (on && it != cpusOffline_.end() && !it->second) {
            it->second = true;
            note("cpu " + std::to_string(r.cpu) + " came back online by " + at +
                 " into the capture; its events stay detached (the kernel does not restart them): not "
                 "traced since it went offline");
        }
    }
}

bool DrainThread::takeSnapshot(bool reenable) {
    bool anyAux = false, anyBackward = false;
    for (auto& r : rings_) {
        anyAux |= r.auxTracker.has_value();
        anyBackward |= r.backward.mapped();
    }
    if (!anyAux && !anyBackward) {
        // Nothing to copy: a trigger's request is served (and not asked again every pass).
        if (ctl_.trigger) ctl_.trigger->onSnapshotStart(), ctl_.trigger->onSnapshotEnd(0, 0);
        return false;
    }
    // The previous snapshot is not in the sinks yet (they had no room): this one
    // waits for it rather than replacing it. The run loop takes it once it is.
    if (sinksOwed()) {
        snapshotDeferred_ = true;
        return true;
    }
    snapshotDeferred_ = false;
    if (ctl_.trigger) ctl_.trigger->onSnapshotStart();
    inSnapshot_ = true;
    snapshotWindowStart_ = snapshotWindowEnd_ = 0;
    if (anyAux) snapshotAuxAreas(reenable);
    if (anyBackward) snapshotBackwardRings();
    inSnapshot_ = false;
    if (ctl_.trigger) ctl_.trigger->onSnapshotEnd(snapshotWindowStart_, snapshotWindowEnd_);
    snapshotsTaken_.fetch_add(1, std::memory_order_acq_rel);
    return true;
}

void DrainThread::snapshotAuxAreas(bool reenable) {
    // 1. Stop the hardware of every flight recorder first (perf's snapshot_start
    // does the same), so that all CPUs' copies end at about the same moment. The
    // disable returns once the hardware stopped and its transaction ended.
    for (auto& r : rings_) {
        if (!r.auxTracker) continue;
        r.snapshotDisabled = false;
        if (!r.auxControl) continue;  // nothing to stop it with: copied while running (may be torn)
        const std::optional<bool> known = r.auxControl->enabled();
        r.snapshotWasEnabled = known.value_or(!eventsPaused_);
        if (auto e = r.auxControl->disable(); !e) {
            noteOnce(r.snapshotErrorNoted, "cpu " + std::to_string(r.cpu) +
                                               " AUX snapshot: cannot disable the AUX event (" +
                                               e.error().message + "); its snapshots are skipped");
            continue;
        }
        r.snapshotDisabled = true;
    }
    // 2. The PERF_RECORD_AUX records that ending those transactions wrote: the
    // tracker must see them before it decides about the wrap.
    for (auto& r : rings_)
        drainRing(r);
    // 3. Copy the newest bytes of every stopped area.
    for (auto& r : rings_)
        if (r.auxTracker && (r.snapshotDisabled || !r.auxControl)) copySnapshot(r);
    // 4. Let the hardware run again before the copies go anywhere.
    for (auto& r : rings_) {
        if (!r.snapshotDisabled) continue;
        r.snapshotDisabled = false;
        if (!reenable || eventsPaused_ || !r.snapshotWasEnabled) continue;
        if (auto e = r.auxControl->enable(); !e)
            noteOnce(r.snapshotErrorNoted,
                     "cpu " + std::to_string(r.cpu) +
                         " AUX snapshot: cannot re-enable the AUX event after a snapshot (" +
                         e.error().message + "); its trace stays stopped");
    }
    // 5. One AUX chunk per CPU and snapshot, handed over by reference to the copy
    // (a sink without room gets it on a later pass).
    for (auto& r : rings_)
        if (r.snapshotPending) deliverSnapshot(r);
}

bool DrainThread::deliverSnapshot(RingSlot& r) {
    if (!r.snapshotPending) return true;
    const uint32_t ringIndex = uint32_t(&r - rings_.data());
    const AuxBytes bytes{r.snapshotOffset, *r.snapshotCopy, {}, r.snapshotCopy};
    for (RecordSink* sink : ctl_.auxSinks)
        if (!sink->hasAuxRoom(ringIndex, bytes)) {
            ++r.counters.auxSinkHeldBack;
            return false;
        }
    r.snapshotPending = false;
    ++progress_;
    for (RecordSink* sink : ctl_.auxSinks)
        sink->onAux(r.cpu, ringIndex, bytes);
    return true;
}

bool DrainThread::sinksOwed() const {
    for (const auto& r : rings_)
        if (r.snapshotPending || r.backwardPending) return true;
    return false;
}

bool DrainThread::drainUntilDelivered() {
    for (;;) {
        bool owed = false;
        for (auto& r : rings_) {
            drainRing(r);
            owed |= r.heldBack;
        }
        if (ctl_.trigger) ctl_.trigger->onPassEnd();
        if (ctl_.afterPass) ctl_.afterPass();
        if (!owed) return true;
        // The bounds hold for the whole stop: once it gave up, each later call
        // makes one pass (what the sinks can still take goes) and returns.
        const auto now = Clock::now();
        if (progress_ != stopProgress_) stopProgress_ = progress_, stopProgressAt_ = now;
        if (stopGaveUp_) return false;
        if (now - stopProgressAt_ >= kStopDeliveryTimeout) return stopGaveUp_ = true, false;
        if (now - stopBegan_ >= kStopDeliveryLimit) return stopGaveUp_ = stopHitLimit_ = true, false;
        usleep(500);
    }
}

bool DrainThread::snapshotBackwardRings() {
    // 1. Pause every backward ring first, so that all CPUs' histories end at about
    // the same moment and share one RCU grace period (perf_output_begin..end is a
    // read-side section: after it no writer that saw a ring unpaused is in flight).
    bool any = false, paused = false;
    for (auto& r : rings_) {
        r.backwardPaused = false;
        if (!r.backward.mapped()) continue;
        any = true;
        if (auto e = r.backward.pauseOutput(true); !e) {
            noteOnce(r.backwardErrorNoted, "cpu " + std::to_string(r.cpu) + " sideband flight recorder: " +
                                               e.error().message + "; its snapshots are skipped");
            continue;
        }
        r.backwardPaused = paused = true;
    }
    if (!paused) return any;
    const bool quiesced = syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0;
    // 2. Copy each ring (which resumes its output) and hand its new records out at once:
    // holding every copy until all are taken would cost a ring's size per CPU.
    for (auto& r : rings_) {
        if (!r.backwardPaused) continue;
        r.backwardPaused = false;
        auto snap =
            r.backward.snapshot(quiesced ? BackwardRing::Quiesce::Caller : BackwardRing::Quiesce::None);
        if (!snap) {
            (void)r.backward.pauseOutput(false);
            noteOnce(r.backwardErrorNoted,
                     "cpu " + std::to_string(r.cpu) + " sideband flight recorder: " + snap.error().message);
            continue;
        }
        deliverBackward(r, std::move(*snap));
    }
    return true;
}

void DrainThread::deliverBackward(RingSlot& r, BackwardSnapshot s) {
    CpuCounters& c = r.counters;
    ++c.backwardSnapshots;
    // What the kernel wrote since the previous snapshot (data_head runs down): the
    // newest `fresh` bytes of the ring. A LOST record and the record it came with
    // are one chunk, so the boundary never splits a pair, and the fresh records are
    // a suffix of the oldest-first list: those that end within the newest bytes.
    const uint64_t fresh = r.backwardPrevHead - s.head;
    r.backwardPrevHead = s.head;
    size_t first = s.offsets.size();
    while (first > 0 && s.bytes - s.offsets[first - 1] <= fresh)
        --first;
    const uint64_t delivered = first < s.offsets.size() ? s.bytes - s.offsets[first] : 0;
    // The fresh bytes not delivered are gone: overwritten before this snapshot
    // (the flight recorder's expected loss), or past a corrupt header. A corrupt
    // header among records already delivered before does not matter any more.
    const uint64_t missing = fresh - delivered;
    const uint64_t corrupt = s.error ? std::min(s.skippedBytes, missing) : 0;
    if (corrupt) {
        ++c.backwardErrors;
        c.corruptBytes += corrupt;
        if (c.backwardErrors <= 3)
            note("cpu " + std::to_string(r.cpu) + " sideband flight recorder: " + *s.error);
    }
    const uint64_t overwritten = missing - corrupt;
    c.backwardOverwrittenBytes += overwritten;
    c.backwardTornBytes += std::min(overwritten, s.tornBytes + s.racedBytes);
    // The fresh records go to the consumers as far as they have room; the rest
    // are kept, in memory, for the next passes.
    r.backwardPending = std::move(s);
    r.backwardNext = first;
    continueBackward(r);
}

bool DrainThread::continueBackward(RingSlot& r) {
    if (!r.backwardPending) return true;
    const BackwardSnapshot& s = *r.backwardPending;
    CpuCounters& c = r.counters;
    ParsedRecord rec;
    PassFlags flags;
    for (; r.backwardNext < s.offsets.size(); ++r.backwardNext) {
        const std::span<const uint8_t> bytes = s.record(r.backwardNext);
        if (!consumersHaveRoom(r, bytes.size())) {
            ++c.sinkHeldBack;
            return false;
        }
        perf_event_header h;
        std::memcpy(&h, bytes.data(), sizeof h);
        handleRecord(r, h, bytes, rec, flags, s.offsets[r.backwardNext], true);
        ++c.records, c.bytes += bytes.size();
        ++c.backwardRecords, c.backwardBytes += bytes.size();
    }
    r.backwardPending.reset();
    return true;
}

void DrainThread::copySnapshot(RingSlot& r) {
    AuxSnapshotTracker& t = *r.auxTracker;
    const AuxRing& aux = r.aux;
    const uint64_t size = aux.size();
    // Every record up to this head has been parsed (the kernel writes a
    // transaction's record before its aux_head): the reading is consistent.
    const uint64_t head = aux.head();
    t.observeHead(head);
    // Nothing written since the previous snapshot: no copy (perf skips it too).
    if (r.snapshotTakenBefore && head == r.snapshotLastHead && t.bytesReported() == r.snapshotLastReported &&
        !r.lostSinceSnapshot)
        return;
    r.snapshotTakenBefore = true;
    r.snapshotLastHead = head;
    r.snapshotLastReported = t.bytesReported();
    r.lostSinceSnapshot = false;
    const uint64_t headOffset = head & (size - 1);
    const bool tracked = t.certain();
    const bool wrapped = tracked ? t.wrapped() : AuxRing::wrappedByZeroScan(aux.data(), size, headOffset);
    const uint64_t want = ctl_.snapshotBytes ? std::min(ctl_.snapshotBytes, size) : size;
    // A new buffer unless the sinks are done with the previous one: they may still
    // be writing it.
    if (!r.snapshotCopy || r.snapshotCopy.use_count() > 1)
        r.snapshotCopy = std::make_shared<std::vector<uint8_t>>();
    AuxRing::copyNewest(aux.data(), size, headOffset, wrapped, want, *r.snapshotCopy);
    const uint64_t n = r.snapshotCopy->size();
    if (n == 0) return;  // nothing written yet
    // The AUXTRACE offset perf writes for a snapshot: the end of the copy minus
    // its size, the end being the free-running head (CoreSight), or for a head
    // that wraps inside the area (Intel PT, SPE) its offset, plus the area's size
    // once the area has wrapped.
    const uint64_t end = r.auxFreeRunningHead ? head : headOffset + (wrapped ? size : 0);
    r.snapshotOffset = end >= n ? end - n : 0;
    r.snapshotPending = true;
    CpuCounters& c = r.counters;
    ++c.auxSnapshots;
    c.auxSnapshotBytes += n;
    ++(tracked ? c.auxSnapshotsTracked : c.auxSnapshotsZeroScan);
}

Expected<void> DrainThread::setEventsEnabled(bool enabled) {
    eventsPaused_ = !enabled;
    std::string errors;
    auto check = [&](Expected<void> r, const std::string& what) {
        if (!r) errors += (errors.empty() ? "" : "; ") + what + ": " + r.error().message;
    };
    for (const PerfEventFd* fd : ctl_.primaryEvents)
        check(enabled ? fd->enable() : fd->disable(), "event fd " + std::to_string(fd->fd()));
    // The AUX events (simulated ones have no fd among the primary events).
    for (auto& r : rings_)
        if (r.auxControl)
            check(enabled ? r.auxControl->enable() : r.auxControl->disable(), "cpu " + std::to_string(r.cpu));
    if (!errors.empty()) return makeError(std::string(enabled ? "enable" : "disable") + ": " + errors);
    return {};
}

}  // namespace auxscope
