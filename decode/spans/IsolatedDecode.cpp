// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/IsolatedDecode.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <new>
#include <optional>

#include "spans/SegmentedDecode.h"

namespace auxscope {

namespace {

// ------------------------------------------------------------------ arena

// A worker's span arrays (SpanStore::ArraySource): a memfd mapped once at a
// reserved size and grown as arrays are taken from it. The worker's records name
// where each store's array lies in it; the parent maps the same memfd and its
// stores refer to the arrays where they lie: a span is written once, by the
// worker, and never copied (with the parent's copy, a 1-thread decode in a
// worker took 28 % longer than in-process on a 32 MB ptsynth trace; 9 % now).
// No lock: a worker runs one thread (fork() copies only the caller, and a
// segment decodes on the thread that asks for it).
class WorkerArena final : public SpanStore::ArraySource {
public:
    explicit WorkerArena(int fd) : fd_(fd) {
        if (fd < 0) return;
        void* m = ::mmap(nullptr, kReserve, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
        base_ = m == MAP_FAILED ? nullptr : static_cast<char*>(m);
    }
    bool ok() const { return base_ != nullptr; }
    void* allocate(size_t bytes) override {
        const size_t at = (used_ + 63) & ~size_t(63);
        if (!base_ || bytes > kReserve - at) return nullptr;
        if (at + bytes > size_) {
            size_t want = std::max(at + bytes, size_ + std::max(size_, kGrow));
            want = std::min(kReserve, (want + kGrow - 1) / kGrow * kGrow);
            if (::ftruncate(fd_, off_t(want)) != 0) return nullptr;
            size_ = want;
        }
        used_ = at + bytes;
        return base_ + at;
    }
    bool release(void* p, size_t bytes) noexcept override {
        char* c = static_cast<char*>(p);
        if (!base_ || c < base_ || c >= base_ + kReserve) return false;
        // The last array, not yet named to the parent: its room is taken again
        // (a store growing); an array the parent may read is never reused.
        const size_t at = size_t(c - base_);
        if (at < published_) return true;
        if (c + bytes == base_ + used_) {
            used_ = at;
        } else {
            // Its whole pages go back to the system (their room is not reused).
            const size_t page = 4096, from = (at + page - 1) / page * page, to = (at + bytes) / page * page;
            if (to > from)
                (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(from),
                                  off_t(to - from));
        }
        return true;
    }
    // Where [p, p + bytes) lies in the memfd, when it is in this arena; from then
    // on the parent may read it.
    std::optional<uint64_t> publish(const void* p, size_t bytes) {
        const char* c = static_cast<const char*>(p);
        if (!base_ || c < base_ || size_t(c - base_) > used_ || bytes > used_ - size_t(c - base_))
            return std::nullopt;
        published_ = std::max(published_, size_t(c - base_) + bytes);
        return uint64_t(c - base_);
    }

private:
    static constexpr size_t kReserve = size_t(64) << 30;  // address space only
    static constexpr size_t kGrow = size_t(64) << 20;
    int fd_ = -1;
    char* base_ = nullptr;
    size_t size_ = 0, used_ = 0, published_ = 0;
};

// The parent's view of a worker's arena (mapped read-only); `owner` unmaps it
// when the last store that refers to it goes.
struct ArenaView {
    const uint8_t* base = nullptr;
    size_t size = 0;
    std::shared_ptr<const void> owner;
};

// ------------------------------------------------------------------ bytes

// Collects a record: small values in owned buffers, large arrays (the packed
// spans) by pointer, so a worker writes its spans to the memfd without copying
// them first.
class ByteWriter {
public:
    void raw(const void* p, size_t n) {
        if (!n) return;
        if (n >= kBig) {
            pieces_.push_back({p, 0, n});
        } else {
            if (pieces_.empty() || pieces_.back().external) {
                small_.emplace_back();
                pieces_.push_back({nullptr, small_.size() - 1, 0});
            }
            small_.back().append(static_cast<const char*>(p), n);
            pieces_.back().size += n;
        }
        size_ += n;
    }
    template <typename T>
    void pod(const T& v) {
        raw(&v, sizeof v);
    }
    void str(const std::string& s) {
        pod(uint64_t(s.size()));
        raw(s.data(), s.size());
    }
    // A large array: where it lies in the worker's arena (2: the parent refers to
    // it there), or its bytes (0), or (remote, 1) only where it lies in this
    // process, for the parent to copy straight into its own store (process_vm_readv).
    void array(const void* p, size_t n) {
        if (arena && n)
            if (std::optional<uint64_t> at = arena->publish(p, n)) {
                pod(uint8_t(2));
                pod(*at);
                return;
            }
        const bool far = remote && n >= kBig;
        usedRemote = usedRemote || far;
        pod(uint8_t(far));
        if (far)
            pod(uint64_t(reinterpret_cast<uintptr_t>(p)));
        else
            raw(p, n);
    }
    bool remote = false;
    bool usedRemote = false;  // an array went as its address (the worker must wait to be read)
    WorkerArena* arena = nullptr;
    size_t size() const { return size_; }
    void appendTo(std::string& out) const {
        for (const Piece& p : pieces_)
            out.append(p.external ? static_cast<const char*>(p.external) : small_[p.small].data(), p.size);
    }
    // Everything to `fd`; false on a write error.
    bool writeTo(int fd) const {
        std::vector<iovec> iov;
        iov.reserve(pieces_.size());
        for (const Piece& p : pieces_)
            iov.push_back({const_cast<void*>(p.external ? p.external : small_[p.small].data()), p.size});
        size_t i = 0;
        while (i < iov.size()) {
            const int n = int(std::min<size_t>(iov.size() - i, 512));
            const ssize_t w = ::writev(fd, iov.data() + i, n);
            if (w < 0) {
                if (errno == EINTR) continue;
                return false;
            }
            size_t left = size_t(w);
            while (i < iov.size() && left >= iov[i].iov_len)
                left -= iov[i++].iov_len;
            if (left) {
                iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + left;
                iov[i].iov_len -= left;
            }
        }
        return true;
    }

private:
    static constexpr size_t kBig = 4096;
    struct Piece {
        const void* external;
        size_t small;
        size_t size;
    };
    std::deque<std::string> small_;
    std::vector<Piece> pieces_;
    size_t size_ = 0;
};

struct ByteReader {
    const uint8_t* p;
    const uint8_t* end;
    pid_t from = -1;                   // the worker whose memory remote arrays are in
    const ArenaView* arena = nullptr;  // the worker's arena, for arrays that lie in it
    // An array of `n` bytes in the arena (its mark, 2, next), checked to lie in it:
    // null when the next array is not in the arena; false when it cannot be read.
    bool arenaArray(size_t n, size_t align, const uint8_t*& at) {
        at = nullptr;
        if (p == end || *p != 2) return true;
        ++p;
        uint64_t offset = 0;
        if (!pod(offset) || !arena || offset % align || offset > arena->size || n > arena->size - offset)
            return false;
        at = arena->base + offset;
        return true;
    }
    bool array(void* dst, size_t n) {
        uint8_t far = 0;
        if (!pod(far)) return false;
        if (far > 1) return false;  // in the arena: arenaArray() reads those
        if (!far) return raw(dst, n);
        uint64_t address = 0;
        if (!pod(address) || from <= 0) return false;
        size_t done = 0;
        while (done < n) {
            iovec local{static_cast<char*>(dst) + done, n - done};
            iovec remote{reinterpret_cast<void*>(uintptr_t(address + done)), n - done};
            const ssize_t got = ::process_vm_readv(from, &local, 1, &remote, 1, 0);
            if (got <= 0) return false;
            done += size_t(got);
        }
        return true;
    }
    bool raw(void* dst, size_t n) {
        if (size_t(end - p) < n) return false;
        if (n) std::memcpy(dst, p, n);
        p += n;
        return true;
    }
    template <typename T>
    bool pod(T& v) {
        return raw(&v, sizeof v);
    }
    // A count of items of at least `itemBytes` each that the rest can hold.
    bool count(uint64_t& n, size_t itemBytes) {
        return pod(n) && n <= uint64_t(end - p) / std::max<size_t>(itemBytes, 1);
    }
    bool str(std::string& s) {
        uint64_t n = 0;
        if (!count(n, 1)) return false;
        s.assign(reinterpret_cast<const char*>(p), size_t(n));
        p += n;
        return true;
    }
    template <typename T>
    bool vec(std::vector<T>& v) {
        uint64_t n = 0;
        if (!count(n, sizeof(T))) return false;
        v.resize(size_t(n));
        return raw(v.data(), size_t(n) * sizeof(T));
    }
};

template <typename T>
void writeVec(ByteWriter& w, const std::vector<T>& v) {
    w.pod(uint64_t(v.size()));
    w.raw(v.data(), v.size() * sizeof(T));
}

}  // namespace

struct SpanStoreCodec {
    static void write(ByteWriter& w, const SpanStore& s) {
        if (s.refSpans_) return write(w, s.flattened());
        w.pod(uint64_t(s.spans_.size()));
        w.array(s.spans_.data(), s.spans_.size() * sizeof(PackedSpan));
        w.pod(uint64_t(s.chunks_.size()));  // base and first of each: the rest is its own
        for (const SpanStore::Chunk& c : s.chunks_) {
            w.pod(c.base);
            w.pod(c.first);
        }
        w.pod(uint64_t(s.wide_.size()));
        for (const auto& [index, v] : s.wide_) {
            w.pod(index);
            w.pod(v.duration);
            w.pod(v.instructions);
            w.pod(v.depth);
        }
        w.pod(uint64_t(s.gaps_.size()));
        for (const Gap& g : s.gaps_) {
            w.pod(uint8_t(g.reason));
            w.str(g.detail);
            w.pod(g.traceOffset);
            w.pod(int32_t(g.cpu));
        }
        w.pod(s.lastStart_);
    }
    static bool read(ByteReader& r, SpanStore& s) {
        uint64_t n = 0;
        if (!r.pod(n) || n > (uint64_t(1) << 40) / sizeof(PackedSpan)) return false;
        // In the worker's arena: referred to where it lies (the arena's mapping kept).
        const uint8_t* inArena = nullptr;
        if (!r.arenaArray(size_t(n) * sizeof(PackedSpan), alignof(PackedSpan), inArena)) return false;
        const auto* shared = reinterpret_cast<const PackedSpan*>(inArena);
        if (shared) {
            s.refSpans_ = size_t(n);
            s.owners_.push_back(r.arena->owner);
        } else {
            s.spans_.resize(size_t(n));
            if (!r.array(s.spans_.data(), size_t(n) * sizeof(PackedSpan))) return false;
        }
        s.size_ = size_t(n);
        if (!r.count(n, 12)) return false;
        s.chunks_.resize(size_t(n));
        for (size_t k = 0; k < s.chunks_.size(); ++k) {
            SpanStore::Chunk& c = s.chunks_[k];
            if (!r.pod(c.base) || !r.pod(c.first)) return false;
            // Ascending from 0, inside the array: what reading a span relies on.
            if (c.first >= s.size_ || (k == 0 ? c.first != 0 : c.first <= s.chunks_[k - 1].first))
                return false;
            c.own = shared ? 0 : c.first;
            if (shared) c.data = shared + c.first;
        }
        if (s.size_ && s.chunks_.empty()) return false;
        if (!r.count(n, 24)) return false;
        s.wide_.reserve(size_t(n));
        for (uint64_t i = 0; i < n; ++i) {
            uint32_t index = 0;
            SpanStore::WideValues v{};
            if (!r.pod(index) || !r.pod(v.duration) || !r.pod(v.instructions) || !r.pod(v.depth))
                return false;
            s.wide_[index] = v;
        }
        if (!r.count(n, 21)) return false;
        s.gaps_.resize(size_t(n));
        for (Gap& g : s.gaps_) {
            uint8_t reason = 0;
            int32_t cpu = 0;
            if (!r.pod(reason) || !r.str(g.detail) || !r.pod(g.traceOffset) || !r.pod(cpu)) return false;
            g.reason = GapReason(reason);
            g.cpu = cpu;
        }
        return r.pod(s.lastStart_);
    }
};

namespace {

void writeStats(ByteWriter& w, const DecodeStats& s) {
    w.pod(s.segments), w.pod(s.traceBytes), w.pod(s.blocks), w.pod(s.instructions);
    w.pod(s.decodeErrors), w.pod(s.segmentsRedecoded);
    w.pod(uint64_t(s.gaps.size()));
    for (const auto& [reason, n] : s.gaps)
        w.pod(uint8_t(reason)), w.pod(n);
    w.pod(uint64_t(s.missingImages.size()));
    for (const auto& [file, n] : s.missingImages)
        w.str(file), w.pod(n);
}

bool readStats(ByteReader& r, DecodeStats& s) {
    if (!r.pod(s.segments) || !r.pod(s.traceBytes) || !r.pod(s.blocks) || !r.pod(s.instructions) ||
        !r.pod(s.decodeErrors) || !r.pod(s.segmentsRedecoded))
        return false;
    uint64_t n = 0;
    if (!r.count(n, 9)) return false;
    for (uint64_t i = 0; i < n; ++i) {
        uint8_t reason = 0;
        uint64_t count = 0;
        if (!r.pod(reason) || !r.pod(count)) return false;
        s.gaps[GapReason(reason)] = count;
    }
    if (!r.count(n, 16)) return false;
    for (uint64_t i = 0; i < n; ++i) {
        std::string file;
        uint64_t count = 0;
        if (!r.str(file) || !r.pod(count)) return false;
        s.missingImages[file] = count;
    }
    return true;
}

void writeSegment(ByteWriter& w, const SegmentSpans& s) {
    w.pod(uint64_t(s.threads.size()));
    for (const auto& [tid, store] : s.threads) {
        w.pod(tid);
        SpanStoreCodec::write(w, store);
    }
    writeStats(w, s.stats);
    w.pod(uint64_t(s.stackEnds.size()));
    for (const auto& [tid, e] : s.stackEnds) {
        w.pod(tid);
        writeVec(w, e.entry);
        w.pod(uint8_t(e.entryBroken));
        w.pod(e.firstStretchEnd), w.pod(e.firstStretchEndTime), w.pod(e.lastStretchBegin);
        writeVec(w, e.exit);
        w.pod(uint8_t(e.exitBranch));
        w.pod(e.finishTime);
    }
    w.pod(int32_t(s.cpu));
    w.pod(uint8_t(s.resumesPrevious));
}

bool readSegment(ByteReader& r, SegmentSpans& s) {
    uint64_t n = 0;
    if (!r.count(n, 4)) return false;
    for (uint64_t i = 0; i < n; ++i) {
        int32_t tid = 0;
        if (!r.pod(tid) || !SpanStoreCodec::read(r, s.threads[tid])) return false;
    }
    if (!readStats(r, s.stats)) return false;
    if (!r.count(n, 4)) return false;
    for (uint64_t i = 0; i < n; ++i) {
        int32_t tid = 0;
        if (!r.pod(tid)) return false;
        FlowToSpans::StackEnds& e = s.stackEnds[tid];
        uint8_t broken = 0, branch = 0;
        if (!r.vec(e.entry) || !r.pod(broken) || !r.pod(e.firstStretchEnd) || !r.pod(e.firstStretchEndTime) ||
            !r.pod(e.lastStretchBegin) || !r.vec(e.exit) || !r.pod(branch) || !r.pod(e.finishTime))
            return false;
        e.entryBroken = broken != 0;
        e.exitBranch = BranchClass(branch);
    }
    int32_t cpu = 0;
    uint8_t resumes = 0;
    if (!r.pod(cpu) || !r.pod(resumes)) return false;
    s.cpu = cpu;
    s.resumesPrevious = resumes != 0;
    return r.p == r.end;
}

// ------------------------------------------------------------------ workers

constexpr uint64_t kRecordMagic = 0x5053474553585541ull;  // "AUXSEGSP"

struct RecordHeader {
    uint64_t magic;
    uint64_t index;  // into the call's segments
    uint64_t bytes;  // payload after the header
};

// Shared between the parent and its workers (MAP_SHARED | MAP_ANONYMOUS).
struct Control {
    std::atomic<uint64_t> next;  // the next unclaimed index
    // Whether the parent can read the workers' memory (process_vm_readv): 0 not
    // known yet, 1 yes (records name where their spans lie, and the worker waits
    // to be read), 2 no (records carry the spans).
    std::atomic<int> remote;
};
struct WorkerSlot {
    std::atomic<int64_t> current;  // the index being decoded, -1: none
    std::atomic<uint64_t> beats;   // bumped as segments start and end
    std::atomic<int> waiting;      // 1: done, waiting for the parent to read its spans
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free,
              "the workers' counters live in shared memory");

long envLong(const char* name, long fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return end && !*end ? n : fallback;
}

// First thing in every worker (decodeIsolated's and streamIsolated's).
void enterWorker(pid_t parent) {
    // The parent's crash handlers (a sanitizer's, a desktop's) are not this
    // worker's: a fault ends it with the signal, which the parent reports.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS})
        ::signal(sig, SIG_DFL);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(5);
}

// The test doubles: the worker that takes segment `id` hangs or crashes.
void testDoubles(const DecoderIsolation& isolation, size_t id) {
    if (long(id) == isolation.testHangSegment)
        for (;;)
            ::pause();
    if (long(id) == isolation.testCrashSegment) ::raise(SIGSEGV);
}

// Why a worker ended: `status` from waitpid (`known`: waitpid said), or killed
// by the watchdog (`hung`).
DecoderFailure failureOf(const std::string& library, const DecoderIsolation& isolation, bool hung, bool known,
                         int status) {
    if (hung) {
        char secs[32];
        std::snprintf(secs, sizeof secs, "%g", isolation.hangSeconds);
        return {GapReason::DecoderHung, "decoder hung (" + library + ", no progress for " + secs + " s)"};
    }
    if (known && WIFSIGNALED(status))
        return {GapReason::DecoderCrashed,
                "decoder crashed (" + library + ", " + signalName(WTERMSIG(status)) + ")"};
    return {GapReason::DecoderCrashed,
            "decoder crashed (" + library + ", worker " +
                (known ? "exit status " + std::to_string(WEXITSTATUS(status)) : "status unknown") + ")"};
}

[[noreturn]] void runWorker(Control* control, WorkerSlot* slot, int fd, int arenaFd, int wakeFd, pid_t parent,
                            const std::vector<size_t>& segments, const DecoderIsolation& isolation,
                            const DecodeOneFn& decodeOne) {
    enterWorker(parent);
    // Span arrays in the arena (no copy to the parent); the heap where it failed.
    WorkerArena arena(isolation.spansInSharedMemory ? arenaFd : -1);
    if (arena.ok()) SpanStore::setArraySource(&arena);
    // Results whose spans the parent copies out of this process: kept until then.
    std::deque<SegmentSpans> kept;
    bool anyRemote = false;
    try {
        for (;;) {
            const uint64_t k = control->next.fetch_add(1);
            if (k >= segments.size()) break;
            slot->current.store(int64_t(k));
            slot->beats.fetch_add(1);
            testDoubles(isolation, segments[k]);
            kept.push_back(decodeOne(segments[k]));
            const SegmentSpans& result = kept.back();
            slot->beats.fetch_add(1);
            ByteWriter w;
            w.remote = control->remote.load() == 1;
            w.arena = arena.ok() ? &arena : nullptr;
            writeSegment(w, result);
            anyRemote = anyRemote || w.usedRemote;
            ByteWriter head;
            const RecordHeader h{kRecordMagic, k, w.size()};
            head.pod(h);
            if (!head.writeTo(fd) || !w.writeTo(fd)) ::_exit(4);
            if (!w.usedRemote) kept.pop_back();
            slot->current.store(-1);
            slot->beats.fetch_add(1);
        }
    } catch (...) {
        ::_exit(3);
    }
    if (anyRemote) {
        // The parent reads the spans from here, then ends this process.
        slot->waiting.store(1);
        const char c = 'w';
        while (::write(wakeFd, &c, 1) < 0 && errno == EINTR) {
        }
        for (;;)
            ::pause();
    }
    ::_exit(0);
}

struct Child {
    pid_t pid = -1;
    int pidfd = -1;
    int memfd = -1;
    int arenaFd = -1;
    size_t slot = 0;
    uint64_t beats = 0;
    std::chrono::steady_clock::time_point lastChange;
    bool hung = false;
};

// A worker's memfd, and the worker when it is alive (waiting to be read).
struct ResultFile {
    int fd;
    pid_t pid;    // -1: the worker has ended
    int arenaFd;  // its span arrays (-1: none)
};

int openPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
    return int(::syscall(SYS_pidfd_open, pid, 0));
#else
    (void)pid;
    return -1;
#endif
}

}  // namespace

std::string signalName(int signal) {
    switch (signal) {
        case SIGSEGV:
            return "SIGSEGV";
        case SIGBUS:
            return "SIGBUS";
        case SIGILL:
            return "SIGILL";
        case SIGFPE:
            return "SIGFPE";
        case SIGABRT:
            return "SIGABRT";
        case SIGKILL:
            return "SIGKILL";
        case SIGTRAP:
            return "SIGTRAP";
        case SIGSYS:
            return "SIGSYS";
        case SIGTERM:
            return "SIGTERM";
        default:
            return "signal " + std::to_string(signal);
    }
}

std::string failedPieceText(int cpu, uint64_t traceOffset, const std::string& detail) {
    char where[96];
    std::snprintf(where, sizeof where, "cpu %d, trace offset 0x%llx: ", cpu,
                  static_cast<unsigned long long>(traceOffset));
    return where + detail;
}

DecoderIsolation DecoderIsolation::fromEnvironment() {
    DecoderIsolation d;
    d.enabled = envLong("AUXSCOPE_DECODE_IN_PROCESS", 0) == 0;
    d.hangSeconds = double(std::max(1L, envLong("AUXSCOPE_DECODER_HANG_SECONDS", 30)));
    d.testHangSegment = envLong("AUXSCOPE_TEST_DECODER_HANG_SEGMENT", -1);
    d.testCrashSegment = envLong("AUXSCOPE_TEST_DECODER_CRASH_SEGMENT", -1);
    return d;
}

void serializeSegmentSpans(const SegmentSpans& s, std::string& out) {
    ByteWriter w;
    writeSegment(w, s);
    w.appendTo(out);
}

bool deserializeSegmentSpans(const uint8_t* data, size_t size, SegmentSpans& out) {
    ByteReader r{data, data + size};
    return readSegment(r, out);
}

void serializeDecodeStats(const DecodeStats& s, std::string& out) {
    ByteWriter w;
    writeStats(w, s);
    w.appendTo(out);
}

bool deserializeDecodeStats(const uint8_t* data, size_t size, DecodeStats& out) {
    ByteReader r{data, data + size};
    return readStats(r, out) && r.p == r.end;
}

namespace {
bool readWorkerRecord(const uint8_t* data, size_t size, pid_t from, const ArenaView* arena,
                      SegmentSpans& out) {
    ByteReader r{data, data + size};
    r.from = from;
    r.arena = arena;
    return readSegment(r, out);
}
}  // namespace

void decodeIsolated(const std::vector<size_t>& segments, unsigned workers, const DecoderIsolation& isolation,
                    const std::string& library, const DecodeOneFn& decodeOne, const FailedOneFn& failedOne,
                    const ParallelRun& parallel, std::vector<std::shared_ptr<const SegmentSpans>>& out) {
    const size_t n = segments.size();
    out.assign(n, nullptr);
    if (!n) return;
    workers = unsigned(std::clamp<size_t>(workers, 1, n));
    // A slot per worker started: at most one more per failed segment.
    const size_t slots = workers + n;
    const size_t bytes = sizeof(Control) + slots * sizeof(WorkerSlot);
    void* area = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) {
        parallel(n, [&](size_t k) { out[k] = std::make_shared<const SegmentSpans>(decodeOne(segments[k])); });
        return;
    }
    auto* control = new (area) Control;
    control->next.store(0);
    control->remote.store(0);
    auto* slotArea = reinterpret_cast<WorkerSlot*>(static_cast<char*>(area) + sizeof(Control));
    for (size_t s = 0; s < slots; ++s) {
        new (&slotArea[s]) WorkerSlot;
        slotArea[s].current.store(-1);
        slotArea[s].beats.store(0);
        slotArea[s].waiting.store(0);
    }
    int wake[2] = {-1, -1};
    if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) wake[0] = wake[1] = -1;
    const pid_t parent = ::getpid();
    std::vector<Child> active;
    std::vector<ResultFile> resultFds;
    std::map<size_t, DecoderFailure> failures;
    size_t nextSlot = 0;
    bool inProcess = false;  // no worker could be started: the rest decodes here
    const auto hangLimit = std::chrono::duration<double>(isolation.hangSeconds);

    auto startWorker = [&]() {
        const int memfd = ::memfd_create("auxscope-decode", MFD_CLOEXEC);
        if (memfd < 0) return false;
        const int arenaFd = ::memfd_create("auxscope-spans", MFD_CLOEXEC);
        const size_t slot = nextSlot;
        const pid_t pid = ::fork();
        if (pid == 0)
            runWorker(control, &slotArea[slot], memfd, arenaFd, wake[1], parent, segments, isolation,
                      decodeOne);
        if (pid < 0) {
            ::close(memfd);
            if (arenaFd >= 0) ::close(arenaFd);
            return false;
        }
        if (control->remote.load() == 0) {
            // Can this process read its workers' memory (ptrace rules, seccomp)?
            // The probe reads the worker's view of the shared counter.
            uint64_t value = 0;
            iovec local{&value, sizeof value}, remote{&control->next, sizeof value};
            const bool readable = isolation.readWorkerMemory && wake[1] >= 0 &&
                                  ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == ssize_t(sizeof value);
            control->remote.store(readable ? 1 : 2);
        }
        ++nextSlot;
        Child c;
        c.pid = pid;
        c.pidfd = openPidfd(pid);
        c.memfd = memfd;
        c.arenaFd = arenaFd;
        c.slot = slot;
        c.lastChange = std::chrono::steady_clock::now();
        active.push_back(c);
        return true;
    };
    auto finished = [&](Child& c, int status, bool known) {
        WorkerSlot& slot = slotArea[c.slot];
        const int64_t current = slot.current.load();
        const bool failed = c.hung || !known || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        if (current >= 0 && failed) {
            failures.emplace(size_t(current), failureOf(library, isolation, c.hung, known, status));
        }
        if (c.pidfd >= 0) ::close(c.pidfd);
        resultFds.push_back({c.memfd, -1, c.arenaFd});
    };
    std::vector<pid_t> waiting;  // workers done, waiting for their spans to be read

    for (;;) {
        while (active.size() < workers && control->next.load() < n && nextSlot < slots)
            if (!startWorker()) break;
        if (active.empty()) {
            if (control->next.load() < n) inProcess = true;
            break;
        }
        // Wait for a worker to end (its pidfd becomes readable), waking now
        // and then for the watchdog.
        std::vector<pollfd> fds;
        for (const Child& c : active)
            if (c.pidfd >= 0) fds.push_back({c.pidfd, POLLIN, 0});
        const int timeoutMs = fds.size() == active.size() ? 250 : 5;
        if (wake[0] >= 0) fds.push_back({wake[0], POLLIN, 0});
        ::poll(fds.data(), nfds_t(fds.size()), timeoutMs);
        if (wake[0] >= 0) {
            char drain[64];
            while (::read(wake[0], drain, sizeof drain) > 0) {
            }
        }
        const auto now = std::chrono::steady_clock::now();
        for (size_t i = 0; i < active.size();) {
            Child& c = active[i];
            int status = 0;
            pid_t got = ::waitpid(c.pid, &status, WNOHANG);
            while (got < 0 && errno == EINTR)
                got = ::waitpid(c.pid, &status, WNOHANG);
            if (got == 0 && slotArea[c.slot].waiting.load()) {
                // Done: read once every worker has ended or is waiting too.
                if (c.pidfd >= 0) ::close(c.pidfd);
                resultFds.push_back({c.memfd, c.pid, c.arenaFd});
                waiting.push_back(c.pid);
                active.erase(active.begin() + ptrdiff_t(i));
                continue;
            }
            if (got == 0) {
                WorkerSlot& slot = slotArea[c.slot];
                const uint64_t beats = slot.beats.load();
                if (beats != c.beats) {
                    c.beats = beats;
                    c.lastChange = now;
                } else if (slot.current.load() >= 0 && now - c.lastChange > hangLimit) {
                    c.hung = true;
                    ::kill(c.pid, SIGKILL);
                    do
                        got = ::waitpid(c.pid, &status, 0);
                    while (got < 0 && errno == EINTR);
                }
            }
            if (got == 0) {
                ++i;
                continue;
            }
            finished(c, status, got == c.pid);
            active.erase(active.begin() + ptrdiff_t(i));
        }
    }

    // The workers' results: records in their memfds, read back in parallel.
    struct Found {
        const uint8_t* data;
        size_t size;
        pid_t from;
        const ArenaView* arena;
    };
    std::vector<Found> found(n, Found{nullptr, 0, -1, nullptr});
    std::vector<std::pair<void*, size_t>> maps;
    std::deque<ArenaView> arenas;
    for (auto [fd, from, arenaFd] : resultFds) {
        const ArenaView* arena = nullptr;
        struct stat as {};
        if (arenaFd >= 0 && ::fstat(arenaFd, &as) == 0 && as.st_size > 0) {
            const size_t size = size_t(as.st_size);
            void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, arenaFd, 0);
            if (m != MAP_FAILED)
                arena = &arenas.emplace_back(ArenaView{static_cast<const uint8_t*>(m), size,
                                                       std::shared_ptr<const void>(m, [size](const void* p) {
                                                           ::munmap(const_cast<void*>(p), size);
                                                       })});
        }
        if (arenaFd >= 0) ::close(arenaFd);
        struct stat st {};
        if (::fstat(fd, &st) == 0 && st.st_size > 0) {
            void* m = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
            if (m != MAP_FAILED) {
                maps.push_back({m, size_t(st.st_size)});
                const uint8_t* p = static_cast<const uint8_t*>(m);
                const uint8_t* end = p + st.st_size;
                while (size_t(end - p) >= sizeof(RecordHeader)) {
                    RecordHeader h;
                    std::memcpy(&h, p, sizeof h);
                    p += sizeof h;
                    if (h.magic != kRecordMagic || h.index >= n || h.bytes > size_t(end - p)) break;
                    found[h.index] = {p, size_t(h.bytes), from, arena};
                    p += h.bytes;
                }
            }
        }
        ::close(fd);
    }
    std::vector<size_t> toRead;
    for (size_t k = 0; k < n; ++k)
        if (found[k].data) toRead.push_back(k);
    std::vector<char> unreadable(n, 0);
    parallel(toRead.size(), [&](size_t i) {
        const size_t k = toRead[i];
        auto s = std::make_shared<SegmentSpans>();
        if (readWorkerRecord(found[k].data, found[k].size, found[k].from, found[k].arena, *s))
            out[k] = std::move(s);
        else
            unreadable[k] = 1;
    });
    for (auto [m, size] : maps)
        ::munmap(m, size);
    for (pid_t pid : waiting) {
        ::kill(pid, SIGKILL);
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    if (wake[0] >= 0) ::close(wake[0]), ::close(wake[1]);
    // Segments a worker finished before it died, whose spans were still in it:
    // decoded again by new workers.
    std::vector<size_t> redo;
    for (size_t k = 0; k < n; ++k)
        if (unreadable[k] && found[k].from < 0 && !failures.count(k)) redo.push_back(k);
    if (!redo.empty()) {
        std::vector<size_t> again(redo.size());
        for (size_t i = 0; i < redo.size(); ++i)
            again[i] = segments[redo[i]];
        std::vector<std::shared_ptr<const SegmentSpans>> got;
        decodeIsolated(again, workers, isolation, library, decodeOne, failedOne, parallel, got);
        for (size_t i = 0; i < redo.size(); ++i)
            out[redo[i]] = std::move(got[i]), unreadable[redo[i]] = 0;
    }
    const uint64_t claimed = std::min<uint64_t>(control->next.load(), n);
    for (size_t k = 0; k < n; ++k) {
        if (out[k]) continue;
        if (auto it = failures.find(k); it != failures.end()) {
            out[k] = std::make_shared<const SegmentSpans>(
                failedOne(segments[k], it->second.reason, it->second.detail));
        } else if (unreadable[k]) {
            out[k] = std::make_shared<const SegmentSpans>(
                failedOne(segments[k], GapReason::DecoderCrashed,
                          "decoder crashed (" + library + ", result unreadable)"));
        } else if (k < claimed && !inProcess) {
            out[k] = std::make_shared<const SegmentSpans>(failedOne(
                segments[k], GapReason::DecoderCrashed, "decoder crashed (" + library + ", worker lost)"));
        }
    }
    // What no worker could take (fork failed): here, as without isolation.
    for (size_t k = 0; k < n; ++k)
        if (!out[k]) out[k] = std::make_shared<const SegmentSpans>(decodeOne(segments[k]));
    ::munmap(area, bytes);
}

// ------------------------------------------------------------------ streams

namespace {

// A worker's output goes through shared memory: a ring the worker writes
// pieces into and the parent reads them from in place, with no copy through the
// kernel (a pipe cost a kernel copy each way: 1.4 s of system time for the 2 GB
// of blocks of a 16 MB PT trace, +15-20 % wall). The ring is mapped twice back to
// back, so a piece that wraps is still one run of bytes. A pipe beside it carries
// wake-ups (a byte when the worker publishes) and, by its end, the worker's death.
// A piece: [kind: 1 byte][bytes: 4, host order][bytes].
constexpr uint8_t kItemEnd = 255;  // the worker finished its current item
constexpr size_t kPieceHead = 5;
constexpr size_t kBatchBytes = 64 << 10;    // the largest piece
constexpr size_t kRingBytes = 1 << 20;      // a worker's ring
constexpr size_t kPublishBytes = 64 << 10;  // the worker publishes at least this often
// A parent waiting for data is woken once this much waits for it (or the item
// ends): a wake-up per publish (every 64 KiB) cost the worker and the parent a
// context switch each, 55 % more CPU than in-process on a block stream.
constexpr size_t kWakeBytes = 256 << 10;
static_assert(kWakeBytes + kBatchBytes + kPieceHead < kRingBytes,
              "a sleeping parent is woken before the ring fills");

long futexCall(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
    return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

struct RingControl {
    std::atomic<uint64_t> head;         // bytes the worker published
    std::atomic<uint64_t> tail;         // bytes the parent consumed
    std::atomic<uint32_t> freed;        // bumped when the parent moves `tail` (the worker waits on it)
    std::atomic<uint32_t> writerWaits;  // 1: the worker waits for room
    std::atomic<uint32_t> readerWaits;  // 1: the parent sleeps until woken through the pipe
};

// The shared memory of one worker slot (reused by the worker that replaces a
// dead one).
class SharedRing {
public:
    SharedRing() = default;
    SharedRing(const SharedRing&) = delete;
    SharedRing& operator=(const SharedRing&) = delete;
    ~SharedRing() {
        if (control) ::munmap(control, page_);
        if (data) ::munmap(data, 2 * kRingBytes);
    }
    bool create() {
        page_ = size_t(::sysconf(_SC_PAGESIZE));
        const int fd = ::memfd_create("auxscope-stream", MFD_CLOEXEC);
        if (fd < 0) return false;
        bool ok = ::ftruncate(fd, off_t(page_ + kRingBytes)) == 0;
        void* c = ok ? ::mmap(nullptr, page_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
        void* base =
            ok ? ::mmap(nullptr, 2 * kRingBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
        if (c != MAP_FAILED) control = new (c) RingControl;
        if (base != MAP_FAILED) {
            data = static_cast<uint8_t*>(base);
            for (size_t half : {size_t(0), kRingBytes})
                ok = ok && ::mmap(data + half, kRingBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                                  off_t(page_)) != MAP_FAILED;
        }
        ::close(fd);
        return ok && control && data;
    }
    void reset() {
        control->head.store(0);
        control->tail.store(0);
        control->freed.store(0);
        control->writerWaits.store(0);
        control->readerWaits.store(0);
    }
    // The parent consumed up to `tail`: the worker may reuse the room.
    void release(uint64_t tail) {
        control->tail.store(tail, std::memory_order_release);
        control->freed.fetch_add(1);
        if (control->writerWaits.exchange(0)) futexCall(&control->freed, FUTEX_WAKE, 1, nullptr);
    }
    uint8_t* at(uint64_t position) const { return data + position % kRingBytes; }

    RingControl* control = nullptr;
    uint8_t* data = nullptr;

private:
    size_t page_ = 4096;
};

// The worker's side: pieces written straight into the ring, published in
// batches (and at the end of each item) with a byte on the pipe.
class RingOutput final : public IsolatedOutput {
public:
    RingOutput(SharedRing& ring, int wakeFd) : ring_(ring), wakeFd_(wakeFd) {}
    void append(uint8_t kind, const void* data, size_t n) override {
        const auto* bytes = static_cast<const uint8_t*>(data);
        // Longer than a piece (no caller appends that much at once): in pieces.
        while (n > kBatchBytes) {
            append(kind, bytes, kBatchBytes);
            bytes += kBatchBytes;
            n -= kBatchBytes;
            open_ = false;
        }
        bool continued = open_ && kind == kind_ && pieceBytes_ + n <= kBatchBytes;
        if (!room(continued ? n : kPieceHead + n)) {
            publish(true);  // closes the open piece
            continued = false;
            waitForRoom(kPieceHead + n);
        }
        if (!continued) {
            *ring_.at(local_) = kind;
            piece_ = local_;
            local_ += kPieceHead;
            pieceBytes_ = 0;
            kind_ = kind;
            open_ = true;
        }
        if (n) std::memcpy(ring_.at(local_), bytes, n);
        local_ += n;
        pieceBytes_ += uint32_t(n);
        std::memcpy(ring_.at(piece_ + 1), &pieceBytes_, 4);
        if (local_ - published_ >= kPublishBytes) publish();
    }
    // The item is done: its end marker, and everything to the parent now (so a
    // later item that hangs is not taken for this one).
    void endItem() {
        append(kItemEnd, nullptr, 0);
        publish(true);
    }
    // `head` moves; the parent is woken only when it sleeps (readerWaits) and
    // kWakeBytes wait for it, or `now` (the item's end, the ring full).
    void publish(bool now = false) {
        open_ = false;
        if (local_ != published_) {
            // seq_cst against the parent's readerWaits store and head load: one
            // of the two sees the other's.
            ring_.control->head.store(local_);
            published_ = local_;
        }
        if (published_ == woken_) return;
        if (!now && published_ - woken_ < kWakeBytes) {
            // A slow stream wakes it at most every 5 ms; what waits between
            // wake-ups goes with the next publish, the item's end or the
            // parent's 250 ms poll.
            const auto t = std::chrono::steady_clock::now();
            if (t - wokenAt_ < kWakeAfter) return;
        }
        if (!ring_.control->readerWaits.load() || !ring_.control->readerWaits.exchange(0)) return;
        woken_ = published_;
        wokenAt_ = std::chrono::steady_clock::now();
        const char c = 'p';
        // Full (EAGAIN): the parent has wake-ups enough to read.
        if (::write(wakeFd_, &c, 1) < 0 && errno == EPIPE) ::_exit(4);  // the parent gave up on this worker
    }

private:
    bool room(size_t bytes) const {
        return local_ + bytes - ring_.control->tail.load(std::memory_order_acquire) <= kRingBytes;
    }
    void waitForRoom(size_t bytes) {
        RingControl& c = *ring_.control;
        while (!room(bytes)) {
            const uint32_t seen = c.freed.load();
            c.writerWaits.store(1);
            if (room(bytes)) break;
            const timespec wait{0, 100 * 1000 * 1000};
            futexCall(&c.freed, FUTEX_WAIT, seen, &wait);
        }
    }

    SharedRing& ring_;
    int wakeFd_;
    uint64_t local_ = 0;      // written
    uint64_t published_ = 0;  // handed to the parent
    uint64_t woken_ = 0;      // published_ when the parent was last woken
    std::chrono::steady_clock::time_point wokenAt_{};
    static constexpr auto kWakeAfter = std::chrono::milliseconds(5);
    uint64_t piece_ = 0;  // where the open piece's head is
    uint32_t pieceBytes_ = 0;
    uint8_t kind_ = 0;
    bool open_ = false;
};

// Not isolated: straight to the consumer.
class DirectOutput final : public IsolatedOutput {
public:
    DirectOutput(const ConsumeFn& consume, size_t id) : consume_(consume), id_(id) {}
    void append(uint8_t kind, const void* data, size_t n) override {
        consume_(id_, kind, static_cast<const uint8_t*>(data), n);
    }

private:
    const ConsumeFn& consume_;
    size_t id_;
};

struct StreamWorker {
    pid_t pid = -1;
    int fd = -1;  // the read end of its wake-up pipe
    std::unique_ptr<SharedRing> ring;
    uint64_t tail = 0;  // consumed
};

}  // namespace

IsolatedOutputStream::Buffer::Buffer(IsolatedOutput& out, uint8_t kind)
    : out_(out), kind_(kind), text_(kBatchBytes) {
    setp(text_.data(), text_.data() + text_.size());
}

IsolatedOutputStream::Buffer::int_type IsolatedOutputStream::Buffer::overflow(int_type c) {
    sync();
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
    return c;
}

int IsolatedOutputStream::Buffer::sync() {
    if (pptr() > pbase()) out_.append(kind_, pbase(), size_t(pptr() - pbase()));
    setp(text_.data(), text_.data() + text_.size());
    return 0;
}

ConsumeFn listingConsumer(std::function<void(std::string_view)> text,
                          std::function<void(std::string_view)> error,
                          std::function<void(const uint8_t*, size_t)> counts) {
    return [text = std::move(text), error = std::move(error), counts = std::move(counts)](
               size_t, uint8_t kind, const uint8_t* data, size_t n) {
        const std::string_view bytes(reinterpret_cast<const char*>(data), n);
        if (kind == kListingText)
            text(bytes);
        else if (kind == kListingError)
            error(bytes);
        else if (kind == kListingCounts)
            counts(data, n);
    };
}

void streamIsolated(const std::vector<size_t>& ids, unsigned workers, const DecoderIsolation& isolation,
                    const std::string& library, const ProduceFn& produce, const ConsumeFn& consume,
                    const ItemFailedFn& failed) {
    const size_t n = ids.size();
    auto here = [&](size_t k) {
        DirectOutput out(consume, ids[k]);
        produce(ids[k], out);
    };
    if (!isolation.enabled) {
        for (size_t k = 0; k < n; ++k)
            here(k);
        return;
    }
    if (!n) return;
    const size_t count = std::clamp<size_t>(workers, 1, n);
    const pid_t parent = ::getpid();
    std::vector<StreamWorker> pool(count);
    // A worker for items first, first + count, ...: false where none could be started.
    auto start = [&](StreamWorker& w, size_t first) {
        if (!w.ring) {
            auto ring = std::make_unique<SharedRing>();
            if (!ring->create()) return false;
            w.ring = std::move(ring);
        }
        w.ring->reset();
        w.tail = 0;
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) return false;
        (void)::fcntl(fds[1], F_SETFL, O_NONBLOCK);
        const pid_t pid = ::fork();
        if (pid == 0) {
            enterWorker(parent);
            ::close(fds[0]);
            for (const StreamWorker& other : pool)
                if (other.fd >= 0) ::close(other.fd);
            RingOutput out(*w.ring, fds[1]);
            try {
                for (size_t k = first; k < n; k += count) {
                    testDoubles(isolation, ids[k]);
                    produce(ids[k], out);
                    out.endItem();
                }
            } catch (...) {
                ::_exit(3);
            }
            ::_exit(0);
        }
        ::close(fds[1]);
        if (pid < 0) {
            ::close(fds[0]);
            return false;
        }
        w.pid = pid;
        w.fd = fds[0];
        return true;
    };
    // The worker ended (or was killed): reaped, its pipe closed.
    auto reap = [&](StreamWorker& w, bool hung) {
        int status = 0;
        const pid_t pid = w.pid;
        pid_t got;
        do
            got = ::waitpid(pid, &status, 0);
        while (got < 0 && errno == EINTR);
        ::close(w.fd);
        w.pid = -1;
        w.fd = -1;
        return failureOf(library, isolation, hung, got == pid, status);
    };
    for (size_t i = 0; i < count; ++i)
        (void)start(pool[i], i);
    const auto hangLimit = std::chrono::duration<double>(isolation.hangSeconds);
    for (size_t k = 0; k < n; ++k) {
        StreamWorker& w = pool[k % count];
        if (w.pid < 0 && !start(w, k)) {
            here(k);  // no worker to be had (fork failed): here, as without isolation
            continue;
        }
        auto lastData = std::chrono::steady_clock::now();
        bool ended = false;  // the pipe's end: the worker exited or died
        for (bool done = false; !done;) {
            // The whole pieces published so far, read in place.
            const uint64_t head = w.ring->control->head.load(std::memory_order_acquire);
            const uint64_t had = w.tail;
            bool corrupt = head - w.tail > kRingBytes;
            while (!done && !corrupt && head - w.tail >= kPieceHead) {
                const uint8_t* piece = w.ring->at(w.tail);
                uint32_t bytes = 0;
                std::memcpy(&bytes, piece + 1, 4);
                if (bytes > kBatchBytes || head - w.tail - kPieceHead < bytes) {
                    corrupt = true;
                    break;
                }
                if (piece[0] == kItemEnd)
                    done = true;
                else
                    consume(ids[k], piece[0], piece + kPieceHead, bytes);
                w.tail += kPieceHead + bytes;
            }
            if (w.tail != had) {
                w.ring->release(w.tail);
                lastData = std::chrono::steady_clock::now();
            }
            if (done) break;
            if (corrupt) {
                // What the worker published does not parse: its memory is not to be trusted.
                ::kill(w.pid, SIGKILL);
                DecoderFailure f = reap(w, false);
                f.detail = "decoder crashed (" + library + ", result unreadable)";
                failed(ids[k], f);
                break;
            }
            if (ended) {
                // The end of the pipe before the end of the item: the worker died on it.
                failed(ids[k], reap(w, false));
                break;
            }
            // Asleep until the worker wakes it (kWakeBytes, the item's end) or
            // ends: said first, then head looked at again (seq_cst both, as the
            // worker's head store and readerWaits load).
            w.ring->control->readerWaits.store(1);
            if (w.ring->control->head.load() != head) continue;
            pollfd p{w.fd, POLLIN, 0};
            const int ready = ::poll(&p, 1, 250);
            if (ready < 0 && errno != EINTR) {
                // Cannot wait on this worker: end it, the item is lost to it.
                ::kill(w.pid, SIGKILL);
                failed(ids[k], reap(w, false));
                break;
            }
            if (ready <= 0) {
                if (w.ring->control->head.load() == head &&
                    std::chrono::steady_clock::now() - lastData > hangLimit) {
                    ::kill(w.pid, SIGKILL);
                    failed(ids[k], reap(w, true));
                    break;
                }
                continue;
            }
            char wakeups[4096];
            ssize_t got = ::read(w.fd, wakeups, sizeof wakeups);
            while (got < 0 && errno == EINTR)
                got = ::read(w.fd, wakeups, sizeof wakeups);
            // 0: the worker is gone; what it published before is still read.
            if (got == 0) ended = true;
        }
    }
    for (StreamWorker& w : pool)
        if (w.pid >= 0) {
            // Done with every item: it exits (or is ended, should it linger).
            for (;;) {
                pollfd p{w.fd, POLLIN, 0};
                char wakeups[4096];
                if (::poll(&p, 1, 1000) <= 0) {
                    ::kill(w.pid, SIGKILL);
                    break;
                }
                const ssize_t got = ::read(w.fd, wakeups, sizeof wakeups);
                if (got == 0 || (got < 0 && errno != EINTR)) break;
            }
            (void)reap(w, false);
        }
}

}  // namespace auxscope
