// SPDX-License-Identifier: GPL-3.0-or-later
#include "CallGraphConfig.h"

#include <sys/syscall.h>
#include <unistd.h>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "EventSpec.h"
#include "Pmu.h"

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace auxscope {
namespace {

bool isDummy(const perf_event_attr& a) {
    return a.type == PERF_TYPE_SOFTWARE && a.config == PERF_COUNT_SW_DUMMY;
}

// The CPU's own PMU, whose hardware events sample LBR: "cpu" on x86, "cpu_core"
// and "cpu_atom" on hybrid Intel parts.
const PmuInfo* corePmu(const PmuRegistry& pmus) {
    for (const char* name : {"cpu", "cpu_core", "cpu_atom"})
        if (const PmuInfo* p = pmus.find(name)) return p;
    return nullptr;
}

// What kind of event this is, for the LBR refusal; empty for a core-PMU hardware event.
std::string notAHardwareEvent(const EventDesc& e, const PmuRegistry& pmus) {
    const uint32_t t = e.attr.type;
    if (t == PERF_TYPE_HARDWARE || t == PERF_TYPE_HW_CACHE || t == PERF_TYPE_RAW) return {};
    for (const char* name : {"cpu", "cpu_core", "cpu_atom"})
        if (const PmuInfo* p = pmus.find(name); p && p->type == t) return {};
    if (e.isTracepoint || t == PERF_TYPE_TRACEPOINT) return "a tracepoint";
    if (t == PERF_TYPE_SOFTWARE) return "a software event";
    if (t == PERF_TYPE_BREAKPOINT) return "a breakpoint event";
    for (const PmuInfo& p : pmus.pmus())
        if (p.type == t) return "an event of the PMU '" + p.name + "', not of the CPU's core PMU";
    return "an event of PMU type " + std::to_string(t) + ", not of the CPU's core PMU";
}

}  // namespace

Expected<CallGraphOptions> parseCallGraph(std::string_view text, std::string_view option) {
    const std::string opt(option);
    const std::string given(text);
    const size_t comma = text.find(',');
    const std::string_view mode = text.substr(0, comma);
    const bool hasArg = comma != std::string_view::npos;
    CallGraphOptions o;
    if (mode == "fp" || mode == "lbr") {
        if (hasArg)
            return makeError(opt + " '" + given + "': " + std::string(mode) +
                             " takes no size (only dwarf,SIZE does)");
        o.mode = mode == "fp" ? CallGraphMode::FramePointer : CallGraphMode::Lbr;
        return o;
    }
    if (mode != "dwarf")
        return makeError(opt + " '" + given + "': unknown mode '" + std::string(mode) +
                         "' (fp, dwarf[,SIZE] or lbr, as perf record --call-graph takes them)");
    o.mode = CallGraphMode::Dwarf;
    if (!hasArg) return o;
    std::string_view size = text.substr(comma + 1);
    const std::string range = "a multiple of 8 from 8 to " + std::to_string(kMaxDwarfStackBytes) + " bytes";
    int base = 10;
    if (size.size() > 2 && size[0] == '0' && (size[1] == 'x' || size[1] == 'X'))
        size.remove_prefix(2), base = 16;
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), v, base);
    if (size.empty() || ec != std::errc() || end != size.data() + size.size())
        return makeError(opt + " '" + given + "': the user stack size '" +
                         std::string(text.substr(comma + 1)) + "' is not a number (" + range + ")");
    if (v == 0 || v > kMaxDwarfStackBytes || v % 8)
        return makeError(opt + " '" + given + "': the user stack size " + std::to_string(v) + " must be " +
                         range + " (the kernel copies the stack in u64s into a sample of at most 64 KiB)");
    o.dwarfStackBytes = uint32_t(v);
    return o;
}

std::string formatCallGraph(const CallGraphOptions& o) {
    if (o.mode == CallGraphMode::Dwarf) return "dwarf," + std::to_string(o.dwarfStackBytes);
    return callGraphModeName(o.mode);
}

const char* callGraphModeName(CallGraphMode mode) {
    switch (mode) {
        case CallGraphMode::None:
            return "none";
        case CallGraphMode::FramePointer:
            return "fp";
        case CallGraphMode::Dwarf:
            return "dwarf";
        case CallGraphMode::Lbr:
            return "lbr";
    }
    return "?";
}

std::string describeCallGraph(const CallGraphOptions& o) {
    switch (o.mode) {
        case CallGraphMode::None:
            return "none";
        case CallGraphMode::FramePointer:
            return "fp (frame pointers, kernel and user callchain)";
        case CallGraphMode::Dwarf: {
            char mask[32];
            std::snprintf(mask, sizeof mask, "0x%llx", (unsigned long long)dwarfUserRegsMask());
            return "dwarf (" + std::to_string(o.dwarfStackBytes) +
                   " bytes of user stack and user registers " + mask + " per sample; kernel callchain)";
        }
        case CallGraphMode::Lbr:
            return "lbr (user call stack from the LBRs; kernel callchain)";
    }
    return "?";
}

uint64_t dwarfUserRegsMaskFor(std::string_view arch) {
    // x86_64: registers 0..23 (AX..R15, PERF_REG_X86_64_MAX = 24) without the
    // segment registers DS, ES, FS, GS (12..15), which the kernel does not sample
    // for user space. perf 6.1 on this machine records the same 0xff0fff.
    if (arch == "x86_64") return ((uint64_t(1) << 24) - 1) & ~(uint64_t(0xf) << 12);
    // i386: AX..GS (PERF_REG_X86_32_MAX = 16): perf's 32-bit build samples all 16.
    if (arch == "i386" || arch == "i486" || arch == "i586" || arch == "i686") return (uint64_t(1) << 16) - 1;
    // arm64: X0..X30, SP, PC (PERF_REG_ARM64_MAX = 33); VG is added at run time.
    if (arch == "aarch64" || arch == "arm64") return (uint64_t(1) << 33) - 1;
    // arm: R0..R10, FP, IP, SP, LR, PC (PERF_REG_ARM_MAX = 16).
    if (arch == "arm" || arch.starts_with("armv")) return (uint64_t(1) << 16) - 1;
    // riscv64: PC, RA, SP, GP, TP, T0..T6, S0..S11, A0..A7 (PERF_REG_RISCV_MAX = 32).
    if (arch == "riscv64") return (uint64_t(1) << 32) - 1;
    return 0;
}

const char* hostArch() {
#if defined(__x86_64__)
    return "x86_64";
#elif defined(__i386__)
    return "i386";
#elif defined(__aarch64__)
    return "aarch64";
#elif defined(__arm__)
    return "arm";
#elif defined(__riscv) && __riscv_xlen == 64
    return "riscv64";
#else
    return "unknown";
#endif
}

uint64_t dwarfUserRegsMask() {
    static const uint64_t mask = [] {
        uint64_t m = dwarfUserRegsMaskFor(hostArch());
#if defined(__aarch64__)
        // perf adds the SVE vector granule (VG, register 46), needed to unwind
        // SVE frames, where the CPU has SVE and the kernel accepts the register
        // (Linux 5.19 on). The kernel's check of sample_regs_user does not
        // depend on the PMU, so a software event on this thread asks it.
#ifndef HWCAP_SVE
#define HWCAP_SVE (1 << 22)
#endif
        constexpr uint64_t kVg = uint64_t(1) << 46;
        if (getauxval(AT_HWCAP) & HWCAP_SVE) {
            perf_event_attr a;
            std::memset(&a, 0, sizeof a);
            a.size = sizeof a;
            a.type = PERF_TYPE_SOFTWARE;
            a.config = PERF_COUNT_SW_CPU_CLOCK;
            a.sample_period = 1;
            a.sample_type = PERF_SAMPLE_REGS_USER;
            a.sample_regs_user = m | kVg;
            a.disabled = 1;
            a.exclude_kernel = 1;
            const int fd = int(syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
            if (fd >= 0) {
                close(fd);
                m |= kVg;
            }
        }
#endif
        return m;
    }();
    return mask;
}

void applyCallGraph(const CallGraphOptions& o, perf_event_attr& a, uint64_t dwarfRegsMask) {
    if (!o.enabled()) return;
    a.sample_type |= PERF_SAMPLE_CALLCHAIN;
    switch (o.mode) {
        case CallGraphMode::None:
        case CallGraphMode::FramePointer:
            break;
        case CallGraphMode::Dwarf:
            a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
            a.sample_regs_user |= dwarfRegsMask;
            a.sample_stack_user = o.dwarfStackBytes;
            // The user part comes from unwinding the stack copy: the kernel's
            // frame-pointer walk of it would only repeat (or contradict) it.
            a.exclude_callchain_user = 1;
            break;
        case CallGraphMode::Lbr:
            a.sample_type |= PERF_SAMPLE_BRANCH_STACK;
            a.branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK |
                                   PERF_SAMPLE_BRANCH_NO_CYCLES | PERF_SAMPLE_BRANCH_NO_FLAGS |
                                   PERF_SAMPLE_BRANCH_HW_INDEX;
            break;
    }
}

Expected<void> applyCallGraph(const CallGraphOptions& o, perf_event_attr& a) {
    uint64_t mask = 0;
    if (o.mode == CallGraphMode::Dwarf) {
        mask = dwarfUserRegsMask();
        if (!mask)
            return makeError(std::string("--call-graph dwarf: auxscope knows perf's user register set for "
                                         "x86_64, i386, aarch64, arm and riscv64, not for this machine (") +
                             hostArch() + "); use --call-graph fp");
    }
    applyCallGraph(o, a, mask);
    return {};
}

bool takesCallGraph(const EventDesc& e) {
    return !e.isAux && !isDummy(e.attr);
}

Expected<void> checkCallGraphEvents(const CallGraphOptions& o, const std::vector<EventDesc>& events,
                                    const PmuRegistry& pmus, std::string_view cpuVendor) {
    if (!o.enabled()) return {};
    size_t sampling = 0;
    for (const EventDesc& e : events)
        sampling += takesCallGraph(e);
    const std::string opt = "--call-graph " + formatCallGraph(o);
    if (!sampling)
        return makeError(opt + ": no event here takes samples to put call stacks on (an AUX-area trace or " +
                         "dummy event takes none): add a sampling event, e.g. -e cpu-clock");
    if (o.mode == CallGraphMode::Dwarf && !dwarfUserRegsMask())
        return makeError(opt +
                         ": auxscope knows perf's user register set for x86_64, i386, aarch64, arm and " +
                         "riscv64, not for this machine (" + hostArch() + "); use --call-graph fp");
    if (o.mode != CallGraphMode::Lbr) return {};
    for (const EventDesc& e : events) {
        if (!takesCallGraph(e)) continue;
        const std::string what = notAHardwareEvent(e, pmus);
        if (!what.empty())
            return makeError("--call-graph lbr: event '" + e.name + "' is " + what +
                             "; LBR call stacks come from the CPU's Last Branch Records, which only hardware "
                             "events of the core PMU sample (cycles, instructions, cpu/event=.../): use "
                             "-e cycles, or --call-graph dwarf or fp with this event");
        if (e.attr.exclude_user)
            return makeError("--call-graph lbr: event '" + e.name +
                             "' excludes user space, and LBR call stacks hold user-space calls only "
                             "(perf falls back to frame pointers here): use --call-graph fp");
    }
    const PmuInfo* core = corePmu(pmus);
    if (!core)
        return makeError(
            "--call-graph lbr: this machine has no core PMU (no /sys/bus/event_source/devices/cpu): "
            "no hardware events and no Last Branch Records, as in a virtual machine without a virtual PMU; "
            "use --call-graph dwarf or fp");
    if (cpuVendor != "GenuineIntel")
        return makeError(
            "--call-graph lbr: LBR call stacks are an Intel PMU feature (Haswell and later); "
            "this CPU is " +
            (cpuVendor.empty() ? std::string("not an x86 CPU") : std::string(cpuVendor)) +
            (cpuVendor == "AuthenticAMD" ? " (AMD's branch sampling has no call-stack mode)" : "") +
            "; use --call-graph dwarf or fp");
    const auto branches = core->capValue("branches");
    if (!branches || *branches == 0)
        return makeError(
            "--call-graph lbr: the Intel PMU '" + core->name + "' has no Last Branch Records (caps/" +
            "branches is " + (branches ? "0" : "absent") + " in /sys/bus/event_source/devices/" + core->name +
            "/: LBR is not exposed, as in most virtual machines); use --call-graph " + "dwarf or fp");
    return {};
}

std::string thisCpuVendor() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("vendor_id", 0) != 0) continue;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) return {};
        size_t b = colon + 1;
        while (b < line.size() && (line[b] == ' ' || line[b] == '\t'))
            ++b;
        size_t e = line.size();
        while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t' || line[e - 1] == '\r'))
            --e;
        return line.substr(b, e - b);
    }
    return {};
}

}  // namespace auxscope
