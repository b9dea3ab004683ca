// SPDX-License-Identifier: GPL-3.0-or-later
#include "PerfEvent.h"

#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include "Pmu.h"

namespace auxscope {

PerfEventFd& PerfEventFd::operator=(PerfEventFd&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = o.fd_;
        o.fd_ = -1;
    }
    return *this;
}

PerfEventFd::~PerfEventFd() {
    if (fd_ >= 0) ::close(fd_);
}

Expected<PerfEventFd> PerfEventFd::open(perf_event_attr attr, pid_t pid, int cpu, int groupFd,
                                        const std::string& what) {
    int fd = int(syscall(SYS_perf_event_open, &attr, pid, cpu, groupFd, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) {
        int err = errno;
        std::string where = cpu >= 0 ? "cpu " + std::to_string(cpu) : "any cpu";
        if (pid >= 0) where += ", pid " + std::to_string(pid);
        return makeError("cannot open event '" + what + "' (" + where + "): " + std::strerror(err) + ". " +
                         explainPerfOpenError(err, attr, pid, cpu));
    }
    return PerfEventFd(fd);
}

static Expected<void> ioctlOrError(int fd, unsigned long req, unsigned long arg, const char* what) {
    if (::ioctl(fd, req, arg) != 0) return makeError(std::string(what) + " failed: " + std::strerror(errno));
    return {};
}

Expected<uint64_t> PerfEventFd::id() const {
    uint64_t id = 0;
    if (::ioctl(fd_, PERF_EVENT_IOC_ID, &id) != 0)
        return makeError(std::string("PERF_EVENT_IOC_ID failed: ") + std::strerror(errno));
    return id;
}
Expected<void> PerfEventFd::enable() const {
    return ioctlOrError(fd_, PERF_EVENT_IOC_ENABLE, 0, "enable");
}
Expected<void> PerfEventFd::disable() const {
    return ioctlOrError(fd_, PERF_EVENT_IOC_DISABLE, 0, "disable");
}
Expected<void> PerfEventFd::setOutput(int target) const {
    return ioctlOrError(fd_, PERF_EVENT_IOC_SET_OUTPUT, unsigned(target), "PERF_EVENT_IOC_SET_OUTPUT");
}
Expected<void> PerfEventFd::setFilter(const std::string& filter) const {
    if (ioctl(fd_, PERF_EVENT_IOC_SET_FILTER, filter.c_str()) == 0) return {};
    const int e = errno;
    std::string why = std::string("PERF_EVENT_IOC_SET_FILTER failed: ") + std::strerror(e);
    if (e == EINVAL)
        why += " (the kernel refused the filter: check that the object is mapped and the range lies in it)";
    if (e == EOPNOTSUPP) why += " (this PMU has no address filters)";
    return makeError(why);
}
Expected<void> PerfEventFd::pauseOutput(bool pause) const {
    return ioctlOrError(fd_, PERF_EVENT_IOC_PAUSE_OUTPUT, pause ? 1 : 0, "PERF_EVENT_IOC_PAUSE_OUTPUT");
}

Expected<PerfEventFd::Reading> PerfEventFd::read(uint64_t readFormat) const {
    uint64_t buf[8] = {};
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0) return makeError(std::string("read of event counter failed: ") + std::strerror(errno));
    Reading r;
    size_t i = 0;
    r.value = buf[i++];
    if (readFormat & PERF_FORMAT_TOTAL_TIME_ENABLED) ++i;
    if (readFormat & PERF_FORMAT_TOTAL_TIME_RUNNING) ++i;
    if (readFormat & PERF_FORMAT_ID) r.id = buf[i++];
    if (readFormat & PERF_FORMAT_LOST) {
        r.lost = buf[i++];
        r.hasLost = true;
    }
    if (size_t(n) < i * 8) return makeError("short read of event counter: " + std::to_string(n) + " bytes");
    return r;
}

std::optional<std::string> perfCaptureUnavailableReason() {
    perf_event_attr a;
    std::memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.disabled = 1;
    auto fd = PerfEventFd::open(a, -1, 0, -1, "cpu-clock");
    if (!fd) return fd.error().message;
    return std::nullopt;
}

int perfEventParanoid() {
    auto v = readSmallFile("/proc/sys/kernel/perf_event_paranoid");
    return v ? std::atoi(v->c_str()) : 2;
}

bool hasPerfmonCapability() {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (syscall(SYS_capget, &hdr, data) != 0) return geteuid() == 0;
    auto has = [&](int cap) { return (data[cap / 32].effective >> (cap % 32)) & 1; };
    constexpr int kCapPerfmon = 38;  // CAP_PERFMON, Linux 5.8
    return has(kCapPerfmon) || has(CAP_SYS_ADMIN);
}

std::string explainPerfOpenError(int err, const perf_event_attr& attr, pid_t pid, int cpu) {
    switch (err) {
        case EACCES:
        case EPERM: {
            int paranoid = perfEventParanoid();
            std::string s = "kernel.perf_event_paranoid is " + std::to_string(paranoid) +
                            " and this process " + (hasPerfmonCapability() ? "has" : "lacks") +
                            " CAP_PERFMON/CAP_SYS_ADMIN. ";
            if (attr.type == PERF_TYPE_TRACEPOINT)
                s += "Tracepoints need CAP_PERFMON or perf_event_paranoid <= -1. ";
            else if (pid < 0 && cpu >= 0)
                s += "System-wide or per-CPU capture needs CAP_PERFMON or perf_event_paranoid <= 0. ";
            else if (!attr.exclude_kernel)
                s += "Tracing kernel code needs CAP_PERFMON or perf_event_paranoid <= 1 (or add ':u' to the "
                     "event). ";
            return s +
                   "Fix: run as root, 'setcap cap_perfmon+ep' the auxscope binary, or "
                   "'sysctl kernel.perf_event_paranoid=-1'.";
        }
        case ENOENT:
        case EOPNOTSUPP:
            if (err == EOPNOTSUPP && (attr.sample_type & PERF_SAMPLE_BRANCH_STACK))
                return "The PMU takes no branch stack samples of this kind (--call-graph lbr needs LBR call "
                       "stacks: an Intel CPU from Haswell on, with LBR exposed to this machine).";
            return "This kernel or CPU does not provide the event (virtual machines often lack hardware "
                   "counters "
                   "and trace units).";
        case ENODEV:
            return "The PMU does not exist on this CPU.";
        case EINVAL:
            return "The kernel rejected the event attributes (an unsupported term or flag combination).";
        case EMFILE:
            return "Too many open files: raise the limit with 'ulimit -n' (one descriptor per event per "
                   "CPU).";
        case ESRCH:
            return "No such process.";
        case EBUSY:
            return "The PMU is in use by another tool (only one user of an AUX PMU at a time).";
        case E2BIG:
            return "perf_event_attr size mismatch between this build and the kernel.";
        default:
            return "";
    }
}

}  // namespace auxscope
