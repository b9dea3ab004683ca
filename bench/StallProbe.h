// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// StallProbe (bench_soak, issue 28): says why the GUI thread's event loop was
// late. The GUI thread beats a heartbeat (beat(), from a 10 ms timer); a watchdog
// thread notices when no beat came for `threshold`, and for that stall
//   - reads the GUI thread's /proc/self/task/TID/schedstat before and after, so
//     the stall splits into time the thread ran, time it waited for a CPU
//     (runnable, not running: the machine was busy) and time it was blocked
//     (sleeping: a lock, I/O, a wait);
//   - every `sampleEvery` sends the GUI thread SIGPROF; the handler records its
//     stack (backtrace(), warmed up before the first signal), so a stall the
//     thread spent running or blocked names where.
// Only for benchmarks: backtrace() in a signal handler is not async-signal-safe
// in general (it is once libgcc's unwinder is loaded, which the warm-up does).
#include <dirent.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cxxabi.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace auxscope::bench {

class StallProbe {
public:
    struct Stall {
        double atSeconds = 0;  // since the probe started
        double ms = 0;         // from the last beat before it to the first after it
        double runMs = 0, waitMs = 0, blockedMs = 0;
        // The GUI thread's state read every 2 ms since the last beat (its stat and
        // syscall files): time seen asleep in futex (a lock, a semaphore, a
        // condition), in poll/epoll (the event loop's own wait, or a wait for the
        // X server's reply), in another system call.
        double sleepFutexMs = 0, sleepPollMs = 0, sleepOtherMs = 0;
        std::vector<std::vector<void*>> stacks;  // the GUI thread's, sampled during it
        std::vector<char> asleep;                // per stack: the thread slept when it was asked for it
        // Where it lasted over 100 ms with the GUI thread asleep: every other
        // thread of the process, once (who held what the GUI thread waited for).
        struct Thread {
            int tid = 0;
            std::string name;  // /proc/self/task/TID/comm
            char state = '?';  // R running or runnable, S sleeping, D ...
            int nice = 0;
            std::vector<void*> stack;
        };
        std::vector<Thread> others;
    };

    // Call on the GUI thread.
    explicit StallProbe(double thresholdMs = 50, double sampleEveryMs = 10)
        : threshold_(int64_t(thresholdMs * 1e6)), sampleEvery_(int64_t(sampleEveryMs * 1e6)) {
        gui_ = pid_t(syscall(SYS_gettid));
        guiThread_ = pthread_self();
        void* warm[4];
        backtrace(warm, 4);  // loads libgcc's unwinder outside the signal handler
        instance_ = this;
        struct sigaction sa {};
        sa.sa_handler = &StallProbe::onSignal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPROF, &sa, &old_);
        start_ = now();
        lastBeat_.store(start_);
        watchdog_ = std::thread([this] { watch(); });
    }
    ~StallProbe() {
        stop_.store(true);
        watchdog_.join();
        sigaction(SIGPROF, &old_, nullptr);
        instance_ = nullptr;
    }
    StallProbe(const StallProbe&) = delete;
    StallProbe& operator=(const StallProbe&) = delete;

    // GUI thread, from a short timer.
    void beat() { lastBeat_.store(now(), std::memory_order_release); }

    // The stalls since the last call, the longest first.
    std::vector<Stall> take() {
        std::lock_guard lock(mutex_);
        std::vector<Stall> out;
        out.swap(done_);
        std::sort(out.begin(), out.end(), [](const Stall& a, const Stall& b) { return a.ms > b.ms; });
        return out;
    }

    // What the GUI thread waited on while it slept, from the stack samples taken
    // while it slept: each such sample's wait named by its innermost frames that
    // are not the waiting itself (futex, lock and syscall wrappers), e.g.
    // "__libc_free <- QTextEngine::freeMemory" (the allocator's arena lock) or
    // "QSemaphore::acquire <- ..." (Qt's raster engine waiting for its paint
    // threads). A stall's blocked time is shared among its sleeping samples.
    static void addBlockedWaits(const Stall& s, std::map<std::string, double>& msByWait) {
        int sleeping = 0;
        for (size_t i = 0; i < s.stacks.size(); ++i)
            sleeping += i < s.asleep.size() && s.asleep[i];
        if (!sleeping) {
            msByWait["(no sample while asleep)"] += s.blockedMs;
            return;
        }
        for (size_t i = 0; i < s.stacks.size(); ++i) {
            if (i >= s.asleep.size() || !s.asleep[i]) continue;
            msByWait[waitName(s.stacks[i])] += s.blockedMs / sleeping;
        }
    }
    static std::string waitName(const std::vector<void*>& stack) {
        static const char* const generic[] = {"syscall",   "__lll_",     "futex", "__futex", "pthread_",
                                              "__pthread", "___pthread", "__GI_", "__poll",  "poll ",
                                              "ppoll",     "__libc_",    "_int_"};
        std::string out;
        int named = 0;
        bool lockWait = false;
        for (size_t i = 0; i < stack.size() && i < 16 && named < 2; ++i) {
            const std::string& name = symbolizeCached(stack[i]);
            if (name.empty() || name.compare(name.size() - 2, 2, " ?") == 0) continue;
            lockWait = lockWait || name.rfind("__lll_lock_wait", 0) == 0;
            bool skip = false;
            for (const char* g : generic)
                skip = skip || name.rfind(g, 0) == 0;
            // The allocator's own entry points name the wait (its arena lock).
            if (name.rfind("__libc_free", 0) == 0 || name.rfind("__libc_malloc", 0) == 0 ||
                name.rfind("__libc_realloc", 0) == 0)
                skip = false;
            if (skip) continue;
            std::string fn = name.substr(0, name.rfind(" ("));
            if (const size_t paren = fn.find('('); paren != std::string::npos) fn = fn.substr(0, paren);
            out += (named ? " <- " : "") + fn;
            ++named;
        }
        if (out.empty()) out = "(no symbol)";
        return (lockWait ? "[lock] " : "") + out;
    }

    // One line for a stall: its split and, when it has stack samples, the frames
    // that most of them share (innermost first, library frames shortened).
    static std::string describe(const Stall& s) {
        char head[320];
        std::snprintf(
            head, sizeof head,
            "stall %.0f ms at t=%.0f s: GUI thread ran %.0f ms, waited for a CPU %.0f ms, blocked %.0f ms "
            "(seen asleep in futex %.0f ms, in poll %.0f ms, elsewhere %.0f ms)",
            s.ms, s.atSeconds, s.runMs, s.waitMs, s.blockedMs, s.sleepFutexMs, s.sleepPollMs, s.sleepOtherMs);
        std::string out = head;
        if (s.stacks.empty()) return out;
        // The frames most samples share (the path from the event loop down to
        // what kept it), innermost first, each with its share of the samples.
        std::map<void*, int> samplesWith;
        for (const auto& st : s.stacks) {
            std::vector<void*> seen(st);
            std::sort(seen.begin(), seen.end());
            seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
            for (void* pc : seen)
                ++samplesWith[pc];
        }
        const int n = int(s.stacks.size());
        out += "; " + std::to_string(n) + " stack sample" + (n == 1 ? "" : "s") + ", the frames most share:";
        // The sample with the most widely shared frames shows them in call order.
        const std::vector<void*>* best = &s.stacks.front();
        int bestScore = -1;
        for (const auto& st : s.stacks) {
            int score = 0;
            for (void* pc : st)
                score += samplesWith[pc] * 2 > n ? 1 : 0;
            if (score > bestScore) bestScore = score, best = &st;
        }
        // Its frames in call order (innermost first), each with how many samples
        // hold it; frames without a symbol are counted, not shown.
        int shown = 0, unnamed = 0;
        for (size_t i = 0; i < best->size() && shown < 40; ++i) {
            void* pc = (*best)[i];
            const std::string name = symbolize(pc);
            if (name.empty() || name.compare(name.size() - 2, 2, " ?") == 0) {
                ++unnamed;
                continue;
            }
            out += "\n      " + std::to_string(samplesWith[pc]) + "/" + std::to_string(n) + "  " + name;
            ++shown;
        }
        if (unnamed) out += "\n      (" + std::to_string(unnamed) + " frames without a symbol)";
        // The other threads at the time the GUI thread slept: the runnable ones
        // and any inside the allocator (a lock the GUI thread may wait for).
        for (const auto& th : s.others) {
            bool inAllocator = false;
            std::vector<std::string> names;
            for (void* pc : th.stack) {
                std::string name = symbolize(pc);
                if (name.find("malloc") != std::string::npos || name.find("free") != std::string::npos ||
                    name.find("_int_") != std::string::npos || name.find("realloc") != std::string::npos)
                    inAllocator = true;
                if (name.size() > 2 && name.compare(name.size() - 2, 2, " ?") != 0) names.push_back(name);
            }
            if (th.state != 'R' && !inAllocator) continue;
            char head[160];
            std::snprintf(head, sizeof head, "\n    thread %d '%s' (nice %d) %s%s:", th.tid, th.name.c_str(),
                          th.nice, th.state == 'R' ? "runnable" : "asleep",
                          inAllocator ? ", inside the allocator" : "");
            out += head;
            for (size_t i = 0; i < names.size() && i < 8; ++i)
                out += "\n        " + names[i];
        }
        return out;
    }

private:
    static int64_t now() {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    struct SchedStat {
        int64_t run = 0, wait = 0;
    };
    SchedStat schedstat() const {
        SchedStat s;
        char path[64];
        std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", int(gui_));
        if (FILE* f = std::fopen(path, "r")) {
            long long run = 0, wait = 0;
            if (std::fscanf(f, "%lld %lld", &run, &wait) == 2) s = {run, wait};
            std::fclose(f);
        }
        return s;
    }
    static std::string symbolize(void* pc) {
        char** names = backtrace_symbols(&pc, 1);
        if (!names) return {};
        std::string line = names[0];
        std::free(names);
        // "file(mangled+0x12) [0x...]": demangle the symbol, keep the file's name.
        const size_t open = line.find('('), plus = line.find('+', open);
        std::string file = line.substr(0, open);
        file = file.substr(file.rfind('/') + 1);
        if (open == std::string::npos || plus == std::string::npos || plus == open + 1) return file + " ?";
        const std::string mangled = line.substr(open + 1, plus - open - 1);
        int status = 0;
        char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
        std::string name = status == 0 && d ? d : mangled;
        std::free(d);
        if (name.size() > 160) name = name.substr(0, 157) + "...";
        return name + " (" + file + ")";
    }
    // symbolize(), remembered (GUI thread only: report time).
    static const std::string& symbolizeCached(void* pc) {
        static std::map<void*, std::string> names;
        auto it = names.find(pc);
        if (it == names.end()) it = names.emplace(pc, symbolize(pc)).first;
        return it->second;
    }
    static void onSignal(int) {
        StallProbe* p = instance_;
        if (!p) return;
        const pid_t self = pid_t(syscall(SYS_gettid));
        if (self != p->gui_) {
            const int slot = p->otherCount_.fetch_add(1, std::memory_order_acq_rel);
            if (slot >= kMaxOthers) return;
            Sample& s = p->others_[slot];
            s.depth = backtrace(s.pcs, kDepth);
            s.tid = self;
            s.done.store(true, std::memory_order_release);
            return;
        }
        const int slot = p->sampleCount_.load(std::memory_order_relaxed);
        if (slot >= kMaxSamples) return;
        Sample& s = p->samples_[slot];
        s.asleep = p->guiAsleepWhenAsked_.load(std::memory_order_acquire);
        s.depth = backtrace(s.pcs, kDepth);
        p->sampleCount_.store(slot + 1, std::memory_order_release);
    }
    void watch() {
        SchedStat before = schedstat();
        int64_t stallFrom = 0;  // the last beat before the current stall, 0: none
        int64_t nextSample = 0;
        bool othersTaken = false;
        std::vector<Stall::Thread> othersOf;  // the current stall's
        const pid_t self = pid_t(syscall(SYS_gettid));
        double futexMs = 0, pollMs = 0, otherMs = 0;  // since the last beat
        int64_t lastT = now(), lastSeenBeat = 0;
        while (!stop_.load()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            const int64_t t = now(), beat = lastBeat_.load(std::memory_order_acquire);
            if (!stallFrom && beat != lastSeenBeat) {
                futexMs = pollMs = otherMs = 0;
                lastSeenBeat = beat;
            }
            if (guiAsleep()) {
                const double dt = double(t - lastT) / 1e6;
                const long nr = std::atol(readTask(gui_, "syscall").c_str());
                if (nr == SYS_futex)
                    futexMs += dt;
                else if (nr == SYS_poll || nr == SYS_ppoll || nr == SYS_epoll_wait || nr == SYS_epoll_pwait)
                    pollMs += dt;
                else
                    otherMs += dt;
            }
            lastT = t;
            if (!stallFrom) {
                if (t - beat < threshold_) {
                    before = schedstat();  // the split counts from a moment the loop was alive
                    continue;
                }
                stallFrom = beat;
                sampleCount_.store(0);
                nextSample = t;
                othersTaken = false;
                othersOf.clear();
            }
            if (beat != stallFrom) {
                // Over: the first beat after it came at `beat`.
                const SchedStat after = schedstat();
                Stall s;
                s.atSeconds = double(stallFrom - start_) / 1e9;
                s.ms = double(beat - stallFrom) / 1e6;
                s.runMs = double(after.run - before.run) / 1e6;
                s.waitMs = double(after.wait - before.wait) / 1e6;
                s.blockedMs = std::max(0.0, s.ms - s.runMs - s.waitMs);
                s.sleepFutexMs = futexMs;
                s.sleepPollMs = pollMs;
                s.sleepOtherMs = otherMs;
                futexMs = pollMs = otherMs = 0;
                lastSeenBeat = beat;
                const int n = std::min(sampleCount_.load(std::memory_order_acquire), kMaxSamples);
                for (int i = 0; i < n; ++i) {
                    // Skip the handler's own frames (this function and the signal trampoline).
                    const Sample& smp = samples_[i];
                    s.stacks.emplace_back(smp.pcs + std::min(2, smp.depth), smp.pcs + smp.depth);
                    s.asleep.push_back(smp.asleep);
                }
                const int m = std::min(otherCount_.load(std::memory_order_acquire), kMaxOthers);
                for (auto& th : othersOf)
                    for (int i = 0; i < m; ++i)
                        if (others_[i].done.load(std::memory_order_acquire) && others_[i].tid == th.tid)
                            th.stack.assign(others_[i].pcs + std::min(2, others_[i].depth),
                                            others_[i].pcs + others_[i].depth);
                s.others = std::move(othersOf);
                othersOf.clear();
                std::lock_guard lock(mutex_);
                done_.push_back(std::move(s));
                stallFrom = 0;
                before = after;
                continue;
            }
            if (!othersTaken && t - stallFrom >= 100'000'000 && guiAsleep()) {
                othersTaken = true;
                otherCount_.store(0);
                for (auto& o : others_)
                    o.done.store(false);
                for (const int tid : threadIds()) {
                    if (tid == gui_ || tid == self) continue;
                    Stall::Thread th;
                    th.tid = tid;
                    th.name = readTask(tid, "comm");
                    while (!th.name.empty() && th.name.back() == '\n')
                        th.name.pop_back();
                    // stat: "tid (comm) S ... ": the state after the last ')', nice is field 19.
                    const std::string stat = readTask(tid, "stat");
                    const size_t close = stat.rfind(')');
                    if (close != std::string::npos && close + 2 < stat.size()) {
                        th.state = stat[close + 2];
                        std::istringstream rest(stat.substr(close + 2));
                        std::string field;
                        for (int f = 3; f <= 19 && rest >> field; ++f)
                            if (f == 19) th.nice = std::atoi(field.c_str());
                    }
                    othersOf.push_back(std::move(th));
                    syscall(SYS_tgkill, getpid(), tid, SIGPROF);
                }
            }
            if (t >= nextSample && sampleCount_.load() < kMaxSamples) {
                guiAsleepWhenAsked_.store(guiAsleep(), std::memory_order_release);
                pthread_kill(guiThread_, SIGPROF);
                nextSample = t + sampleEvery_;
            }
        }
    }

    // Whether the GUI thread sleeps now (not running or runnable).
    bool guiAsleep() const {
        const std::string stat = readTask(gui_, "stat");
        const size_t close = stat.rfind(')');
        return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'R';
    }
    static std::string readTask(int tid, const char* file) {
        char path[96];
        std::snprintf(path, sizeof path, "/proc/self/task/%d/%s", tid, file);
        std::string out;
        if (FILE* f = std::fopen(path, "r")) {
            char buf[1024];
            const size_t n = std::fread(buf, 1, sizeof buf, f);
            out.assign(buf, n);
            std::fclose(f);
        }
        return out;
    }
    static std::vector<int> threadIds() {
        std::vector<int> ids;
        if (DIR* d = opendir("/proc/self/task")) {
            while (dirent* e = readdir(d))
                if (e->d_name[0] != '.') ids.push_back(std::atoi(e->d_name));
            closedir(d);
        }
        return ids;
    }

    static constexpr int kDepth = 48, kMaxSamples = 512, kMaxOthers = 256;
    struct Sample {
        void* pcs[kDepth];
        int depth = 0;
        pid_t tid = 0;
        bool asleep = false;
        std::atomic<bool> done{false};
    };
    static inline StallProbe* instance_ = nullptr;
    const int64_t threshold_, sampleEvery_;
    pid_t gui_ = 0;
    pthread_t guiThread_{};
    int64_t start_ = 0;
    struct sigaction old_ {};
    std::atomic<int64_t> lastBeat_{0};
    std::atomic<bool> stop_{false};
    std::atomic<int> sampleCount_{0};
    Sample samples_[kMaxSamples];
    std::atomic<int> otherCount_{0};
    std::atomic<bool> guiAsleepWhenAsked_{false};
    Sample others_[kMaxOthers];
    std::mutex mutex_;
    std::vector<Stall> done_;
    std::thread watchdog_;
};

}  // namespace auxscope::bench
