// SPDX-License-Identifier: GPL-3.0-or-later
#include "PtSynthStepper.h"

#include <capstone/capstone.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>

namespace auxscope::ptsynth {

// ---------------------------------------------------------------- classification

InsnClassifier::InsnClassifier() {
    csh h = 0;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) return;
    cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
    handle_ = h;
}

InsnClassifier::~InsnClassifier() {
    if (handle_) {
        csh h = handle_;
        cs_close(&h);
    }
}

InsnInfo InsnClassifier::classify(const uint8_t* bytes, size_t size, uint64_t ip) const {
    InsnInfo info;
    if (!handle_) return info;
    cs_insn* insn = nullptr;
    const size_t count = cs_disasm(handle_, bytes, size, ip, 1, &insn);
    if (count != 1) return info;  // capstone 4 misses a few newer instructions (none branch)
    info.length = uint8_t(insn->size);
    const cs_x86& x86 = insn->detail->x86;
    const bool immediate = x86.op_count == 1 && x86.operands[0].type == X86_OP_IMM;
    switch (insn->id) {
        case X86_INS_SYSCALL:
        case X86_INS_SYSENTER:
        case X86_INS_INT:
        case X86_INS_INT1:
        case X86_INS_INT3:
        case X86_INS_INTO:
            info.kind = InsnKind::FarOut;
            break;
        case X86_INS_RET:
            info.kind = InsnKind::Return;
            break;
        case X86_INS_RETF:
        case X86_INS_RETFQ:
        case X86_INS_IRET:
        case X86_INS_IRETD:
        case X86_INS_IRETQ:
        case X86_INS_LJMP:
        case X86_INS_LCALL:
            info.kind = InsnKind::FarOther;
            break;
        case X86_INS_CALL:
            info.kind = immediate ? InsnKind::DirectCall : InsnKind::IndirectCall;
            break;
        case X86_INS_JMP:
            info.kind = immediate ? InsnKind::DirectJump : InsnKind::IndirectJump;
            break;
        default:
            for (uint8_t g = 0; g < insn->detail->groups_count; ++g)
                if (insn->detail->groups[g] == CS_GRP_JUMP) info.kind = InsnKind::CondBranch;
            break;
    }
    cs_free(insn, count);
    return info;
}

// ---------------------------------------------------------------- /proc

std::vector<PtSynthMapping> executableMappings(pid_t pid) {
    std::vector<PtSynthMapping> out;
    std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string range, perms, offset, dev, inode;
        ls >> range >> perms >> offset >> dev >> inode;
        if (perms.size() < 4 || perms[2] != 'x') continue;
        std::string path;
        std::getline(ls, path);
        path.erase(0, path.find_first_not_of(' '));
        PtSynthMapping m;
        const auto dash = range.find('-'), colon = dev.find(':');
        if (dash == std::string::npos || colon == std::string::npos) continue;
        m.start = std::stoull(range.substr(0, dash), nullptr, 16);
        m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
        m.pgoff = std::stoull(offset, nullptr, 16);
        m.major = uint32_t(std::stoul(dev.substr(0, colon), nullptr, 16));
        m.minor = uint32_t(std::stoul(dev.substr(colon + 1), nullptr, 16));
        m.inode = std::stoull(inode);
        m.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
        m.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
        m.path = path.empty() ? "//anon" : path;
        out.push_back(std::move(m));
    }
    return out;
}

namespace {

// One bit per signal from a /proc/PID/status mask line ("SigCgt:\t0000000000004000").
uint64_t statusMask(pid_t pid, const char* key) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    const size_t n = std::strlen(key);
    while (std::getline(in, line))
        if (line.compare(0, n, key) == 0) return std::strtoull(line.c_str() + n, nullptr, 16);
    return 0;
}

bool signalReachesHandler(pid_t pid, int sig) {
    const uint64_t bit = uint64_t(1) << (sig - 1);
    return (statusMask(pid, "SigCgt:") & bit) && !(statusMask(pid, "SigBlk:") & bit);
}

std::string readComm(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string s;
    std::getline(in, s);
    return s;
}

// The address of function `name` in the main executable of `pid`, with the
// load bias of a position-independent executable applied.
Expected<uint64_t> symbolAddress(pid_t pid, const std::string& name) {
    char exe[4096];
    const ssize_t n = readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1);
    if (n <= 0) return makeError("cannot read /proc/" + std::to_string(pid) + "/exe");
    exe[n] = 0;
    const std::string path(exe);
    elf_version(EV_CURRENT);
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return makeError(path + ": " + std::strerror(errno));
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    auto done = [&](Expected<uint64_t> r) {
        if (elf) elf_end(elf);
        close(fd);
        return r;
    };
    GElf_Ehdr eh;
    if (!elf || !gelf_getehdr(elf, &eh)) return done(makeError(path + ": not an ELF file"));
    std::optional<uint64_t> value;
    Elf_Scn* scn = nullptr;
    while (!value && (scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)) continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (!data || !sh.sh_entsize) continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; ++i) {
            GElf_Sym sym;
            if (!gelf_getsym(data, int(i), &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value)
                continue;
            const char* s = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (s && name == s) {
                value = sym.st_value;
                break;
            }
        }
    }
    if (!value) return done(makeError(path + ": no function symbol '" + name + "'"));
    uint64_t bias = 0;
    if (eh.e_type == ET_DYN) {
        // The mapping of file offset 0 sits at the bias plus the first PT_LOAD's page.
        uint64_t firstVaddr = UINT64_MAX;
        size_t phnum = 0;
        elf_getphdrnum(elf, &phnum);
        for (size_t i = 0; i < phnum; ++i) {
            GElf_Phdr ph;
            if (gelf_getphdr(elf, int(i), &ph) && ph.p_type == PT_LOAD)
                firstVaddr = std::min<uint64_t>(firstVaddr, ph.p_vaddr & ~uint64_t(0xfff));
        }
        std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
        std::string line;
        while (std::getline(maps, line)) {
            if (line.size() < path.size() || line.compare(line.size() - path.size(), path.size(), path) != 0)
                continue;
            std::istringstream ls(line);
            std::string range, perms, offset;
            ls >> range >> perms >> offset;
            if (std::stoull(offset, nullptr, 16) != 0) continue;
            bias = std::stoull(range.substr(0, range.find('-')), nullptr, 16) - firstVaddr;
            break;
        }
    }
    return done(bias + *value);
}

struct Tracee {
    pid_t pid = 0;
    bool alive = false;
    ~Tracee() {
        if (alive) {
            kill(pid, SIGKILL);
            int status = 0;
            waitpid(pid, &status, 0);
        }
    }
};

Error sysError(const std::string& what) {
    return makeError(what + ": " + std::strerror(errno));
}

// Up to 16 bytes of the tracee's memory at `ip` (fewer at the end of a mapping).
size_t readCode(pid_t pid, uint64_t ip, uint8_t* out) {
    size_t got = 0;
    while (got < 16) {
        iovec local{out + got, 16 - got};
        // Never cross a page boundary in one read: the next page may be unmapped.
        const uint64_t at = ip + got;
        const size_t pageLeft = 4096 - (at & 4095);
        local.iov_len = std::min(local.iov_len, pageLeft);
        iovec remote{reinterpret_cast<void*>(at), local.iov_len};
        const ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0) break;
        got += size_t(n);
    }
    return got;
}

bool isMapSyscall(uint64_t nr) {
    // mmap, mprotect, munmap, mremap, execve, execveat (x86-64 numbers)
    return nr == 9 || nr == 10 || nr == 11 || nr == 25 || nr == 59 || nr == 322;
}

}  // namespace

// ---------------------------------------------------------------- the run

Expected<StepResult> runStepped(const StepOptions& options, PtFlowEncoder& encoder, Truth& truth,
                                const StepSideband& sideband) {
    if (options.argv.empty()) return makeError("no command to run");
    InsnClassifier classifier;
    if (!classifier.ok()) return makeError("capstone cannot disassemble x86-64");
    StepResult result;
    const std::string cmd = options.argv[0];

    int errPipe[2];
    if (pipe2(errPipe, O_CLOEXEC) != 0) return sysError("pipe");
    std::vector<char*> argv;
    for (const auto& a : options.argv)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return sysError("fork");
    if (pid == 0) {
        close(errPipe[0]);
        ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
        if (options.disableAslr) personality(ADDR_NO_RANDOMIZE);
        execvp(argv[0], argv.data());
        const int e = errno;
        (void)!write(errPipe[1], &e, sizeof e);
        _exit(127);
    }
    close(errPipe[1]);
    Tracee tracee{pid, true};
    result.pid = pid;
    int execErrno = 0;
    const bool execFailed = read(errPipe[0], &execErrno, sizeof execErrno) == sizeof execErrno;
    close(errPipe[0]);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return sysError("waitpid");
    if (execFailed) {
        tracee.alive = !(WIFEXITED(status) || WIFSIGNALED(status));
        return makeError("cannot run '" + cmd + "': " + std::strerror(execErrno));
    }
    if (!WIFSTOPPED(status)) {
        tracee.alive = false;
        return makeError("'" + cmd + "' ended before its first instruction");
    }
    ptrace(PTRACE_SETOPTIONS, pid, nullptr, PTRACE_O_EXITKILL);

    if (!options.startSymbol.empty()) {
        auto at = symbolAddress(pid, options.startSymbol);
        if (!at) return at.error();
        errno = 0;
        const long word = ptrace(PTRACE_PEEKTEXT, pid, reinterpret_cast<void*>(*at), nullptr);
        if (errno) return sysError("reading the code at " + options.startSymbol);
        const long patched = (word & ~0xffL) | 0xcc;
        if (ptrace(PTRACE_POKETEXT, pid, reinterpret_cast<void*>(*at), reinterpret_cast<void*>(patched)) != 0)
            return sysError("setting a breakpoint at " + options.startSymbol);
        // Untraced up to the breakpoint: signals met on the way go to the program.
        int sig = 0;
        for (;;) {
            if (ptrace(PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(long(sig))) != 0)
                return sysError("PTRACE_CONT");
            if (waitpid(pid, &status, 0) != pid) return sysError("waitpid");
            if (WIFEXITED(status) || WIFSIGNALED(status)) {
                tracee.alive = false;
                return makeError("'" + cmd + "' ended before reaching " + options.startSymbol);
            }
            sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
            if (!sig) break;
        }
        user_regs_struct regs;
        ptrace(PTRACE_GETREGS, pid, nullptr, &regs);
        if (regs.rip != *at + 1)
            return makeError("stopped at an unexpected SIGTRAP instead of " + options.startSymbol);
        ptrace(PTRACE_POKETEXT, pid, reinterpret_cast<void*>(*at), reinterpret_cast<void*>(word));
        regs.rip = *at;
        ptrace(PTRACE_SETREGS, pid, nullptr, &regs);
    }

    // Side-band known before the first traced instruction.
    result.comm = readComm(pid);
    const uint64_t sidebandTsc = encoder.tsc() - 1;
    if (sideband.started)
        if (auto r = sideband.started(pid, result.comm, sidebandTsc); !r) return r.error();
    std::vector<PtSynthMapping> known = executableMappings(pid);
    for (const auto& m : known) {
        truth.maps.push_back({m.start, m.end, m.pgoff, m.path});
        if (sideband.mapped)
            if (auto r = sideband.mapped(m, sidebandTsc); !r) return r.error();
    }
    truth.pid = truth.tid = pid;
    truth.tscFirst = encoder.tsc();

    std::unordered_map<uint64_t, InsnInfo> cache;
    auto classifyAt = [&](uint64_t ip) -> InsnInfo {
        auto it = cache.find(ip);
        if (it != cache.end()) return it->second;
        uint8_t bytes[16];
        const size_t n = readCode(pid, ip, bytes);
        InsnInfo info = n ? classifier.classify(bytes, n, ip) : InsnInfo{};
        cache.emplace(ip, info);
        return info;
    };

    user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, pid, nullptr, &regs) != 0) return sysError("PTRACE_GETREGS");
    uint64_t ip = regs.rip;
    int pending = 0;             // signal to deliver with the next step
    bool resumeWithTsc = false;  // side-band happened while tracing was off
    uint64_t unknownNotes = 0;

    while (truth.instructions < options.maxInsns) {
        const InsnInfo info = classifyAt(ip);
        const uint64_t rax = regs.rax;  // the system call number, when this is one
        const int deliver = pending;
        const bool toHandler = deliver && signalReachesHandler(pid, deliver);
        pending = 0;
        if (ptrace(PTRACE_SINGLESTEP, pid, nullptr, reinterpret_cast<void*>(long(deliver))) != 0)
            return sysError("PTRACE_SINGLESTEP");
        ++result.steps;
        if (waitpid(pid, &status, 0) != pid) return sysError("waitpid");

        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            tracee.alive = false;
            result.exited = true;
            result.exitStatus = status;
            if (info.kind == InsnKind::FarOut) {
                // exit/exit_group: the instruction ran, and user space never resumed.
                if (!encoder.enabled()) encoder.enable(ip, resumeWithTsc);
                truth.instruction(ip);
                encoder.retire(1);
                ++truth.syscalls;
                truth.event(TruthEvent::Kind::Syscall, encoder.tsc(), ip, 0);
                encoder.farTransferOut();
            } else if (encoder.enabled()) {
                encoder.asyncDisable(ip);  // killed by a signal before `ip` ran
            }
            break;
        }
        const int sig = WSTOPSIG(status);
        if (ptrace(PTRACE_GETREGS, pid, nullptr, &regs) != 0) return sysError("PTRACE_GETREGS");
        const uint64_t next = regs.rip;
        if (sig != SIGTRAP) {
            // A signal is about to be delivered; no instruction ran since the last stop.
            pending = sig;
            if (next != ip) result.notes.push_back("IP moved during a signal stop");
            ip = next;
            continue;
        }
        if (toHandler) {
            // The kernel entered the handler instead of running `ip`.
            if (encoder.enabled()) encoder.asyncDisable(ip);
            encoder.addTime(options.syscallTicks);
            ++truth.signals;
            truth.event(TruthEvent::Kind::Signal, encoder.tsc(), ip, next);
            ip = next;
            continue;
        }
        if (info.kind == InsnKind::Other && next == ip) continue;  // one more REP iteration

        // `ip` executed and control is at `next`.
        if (!encoder.enabled()) {
            encoder.enable(ip, resumeWithTsc);
            resumeWithTsc = false;
        }
        truth.instruction(ip);
        encoder.retire(1);
        const uint64_t fallThrough = ip + info.length;
        switch (info.kind) {
            case InsnKind::Other:
                // A branch the disassembler did not see as one: the trace cannot
                // describe it, the decoders will stop here.
                if (info.length && next != fallThrough && ++unknownNotes <= 5)
                    result.notes.push_back("instruction at 0x" +
                                           (std::ostringstream() << std::hex << ip).str() +
                                           " went to an unexpected address");
                break;
            case InsnKind::DirectJump:
                break;
            case InsnKind::CondBranch:
                encoder.conditional(next != fallThrough, next);
                break;
            case InsnKind::DirectCall:
                encoder.directCall(fallThrough, next);
                ++truth.calls;
                truth.event(TruthEvent::Kind::Call, encoder.tsc(), ip, next);
                break;
            case InsnKind::IndirectCall:
                encoder.indirectCall(fallThrough, next);
                ++truth.calls;
                truth.event(TruthEvent::Kind::Call, encoder.tsc(), ip, next);
                break;
            case InsnKind::IndirectJump:
                encoder.indirectJump(next);
                break;
            case InsnKind::Return:
                encoder.ret(next);
                ++truth.returns;
                truth.event(TruthEvent::Kind::Ret, encoder.tsc(), ip, next);
                break;
            case InsnKind::FarOther:
                encoder.indirectJump(next);  // a far transfer within user space: TIP
                break;
            case InsnKind::FarOut: {
                encoder.farTransferOut();
                ++truth.syscalls;
                truth.event(TruthEvent::Kind::Syscall, encoder.tsc(), ip, next);
                encoder.addTime(options.syscallTicks / 2);
                if (isMapSyscall(rax)) {
                    cache.clear();
                    auto now = executableMappings(pid);
                    for (const auto& m : now) {
                        bool seen = false;
                        for (const auto& k : known)
                            seen = seen || (k.start == m.start && k.end == m.end && k.path == m.path &&
                                            k.pgoff == m.pgoff);
                        if (seen) continue;
                        truth.maps.push_back({m.start, m.end, m.pgoff, m.path});
                        if (sideband.mapped)
                            if (auto r = sideband.mapped(m, encoder.tsc()); !r) return r.error();
                        resumeWithTsc = true;
                    }
                    known = std::move(now);
                }
                encoder.addTime(options.syscallTicks - options.syscallTicks / 2);
                break;
            }
        }
        ip = next;
        if (!encoder.ok()) return encoder.error();
    }
    if (!result.exited && encoder.enabled()) encoder.asyncDisable(ip);  // cut before `ip`
    truth.tscLast = encoder.tsc();
    if (unknownNotes > 5)
        result.notes.push_back(std::to_string(unknownNotes) + " unexpected transfers in all");
    return result;
}

}  // namespace auxscope::ptsynth
