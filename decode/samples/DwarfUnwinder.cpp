// SPDX-License-Identifier: GPL-3.0-or-later
#include "samples/DwarfUnwinder.h"

#include <elf.h>
#include <elfutils/libdwfl.h>
#include <libelf.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "images/ImageResolver.h"
#include "samples/ElfCfi.h"
#include "samples/UnwindStep.h"
#include "samples/UserRegisters.h"

namespace auxscope {

const char* unwindStopName(UnwindStop stop) {
    switch (stop) {
        case UnwindStop::Complete:
            return "complete";
        case UnwindStop::StackCopyEnd:
            return "stack copy end";
        case UnwindStop::NoUnwindInfo:
            return "no unwind info";
        case UnwindStop::MissingImage:
            return "missing image";
        case UnwindStop::WrongImage:
            return "wrong image";
        case UnwindStop::NoRegisters:
            return "no registers";
        case UnwindStop::Loop:
            return "loop";
        case UnwindStop::MaxFrames:
            return "max frames";
        case UnwindStop::Error:
            return "error";
    }
    return "?";
}

uint16_t elfMachineOfArch(std::string_view arch) {
    if (arch == "x86_64" || arch == "amd64") return EM_X86_64;
    if (arch == "aarch64" || arch == "arm64") return EM_AARCH64;
    if (arch == "i386" || arch == "i486" || arch == "i586" || arch == "i686" || arch == "x86") return EM_386;
    return 0;
}

namespace {

// A recorded build-id and the file's: perf pads shorter ids (an md5's 16 bytes) to 20 with zeros.
bool sameBuildId(std::span<const uint8_t> recorded, const std::vector<uint8_t>& file) {
    if (file.empty() || recorded.size() < file.size()) return false;
    if (!std::equal(file.begin(), file.end(), recorded.begin())) return false;
    return std::all_of(recorded.begin() + ptrdiff_t(file.size()), recorded.end(),
                       [](uint8_t b) { return b == 0; });
}

// Mapped names that stand for no file at all (anonymous memory, JIT code in
// it or in a memfd), as opposed to a file that was not found.
bool namesAFile(const std::string& recorded) {
    if (recorded == "[vdso]") return true;
    return !recorded.empty() && recorded[0] == '/' && recorded.rfind("//anon", 0) != 0 &&
           recorded.rfind("/memfd:", 0) != 0;
}

// One mapping of a process as the unwinder uses it.
struct Module {
    uint64_t start = 0, end = 0, pgoff = 0;
    uint32_t file = 0;
    std::span<const uint8_t> bytes, buildId;
    enum class State : uint8_t { Unresolved, Usable, NoFile, Missing, Mismatch } state = State::Unresolved;
    ElfCfi* cfi = nullptr;
    uint64_t loadBias = 0;
};

struct ProcessModules {
    std::vector<Module> modules;  // by start
    Module* at(uint64_t address) {
        auto it = std::upper_bound(modules.begin(), modules.end(), address,
                                   [](uint64_t a, const Module& m) { return a < m.start; });
        if (it == modules.begin()) return nullptr;
        --it;
        return address < it->end ? &*it : nullptr;
    }
};

char* gDebuginfoPath = nullptr;
const Dwfl_Callbacks kProcessCallbacks = {
    nullptr,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    &gDebuginfoPath,
};

// An ELF header alone, for dwfl_attach_state to pick elfutils' backend (the
// process's architecture) before and whatever modules are reported.
struct ArchElf {
    std::array<unsigned char, sizeof(Elf64_Ehdr)> bytes{};
    Elf* elf = nullptr;
    ArchElf(uint16_t machine, bool elf32) {
        unsigned char* id = bytes.data();
        std::memcpy(id, ELFMAG, SELFMAG);
        id[EI_CLASS] = elf32 ? ELFCLASS32 : ELFCLASS64;
        id[EI_DATA] = ELFDATA2LSB;
        id[EI_VERSION] = EV_CURRENT;
        size_t size;
        if (elf32) {
            Elf32_Ehdr h;
            std::memcpy(&h, bytes.data(), sizeof h);
            h.e_type = ET_CORE, h.e_machine = machine, h.e_version = EV_CURRENT, h.e_ehsize = sizeof h;
            std::memcpy(bytes.data(), &h, sizeof h);
            size = sizeof h;
        } else {
            Elf64_Ehdr h;
            std::memcpy(&h, bytes.data(), sizeof h);
            h.e_type = ET_CORE, h.e_machine = machine, h.e_version = EV_CURRENT, h.e_ehsize = sizeof h;
            std::memcpy(bytes.data(), &h, sizeof h);
            size = sizeof h;
        }
        elf = elf_memory(reinterpret_cast<char*>(bytes.data()), size);
    }
    ~ArchElf() {
        if (elf) elf_end(elf);
    }
};

struct SampleContext;

// The Libdwfl engine's state for one process: its Dwfl, attached once.
struct ProcessDwfl {
    Dwfl* dwfl = nullptr;
    bool attached = false;
    SampleContext* current = nullptr;  // the sample being unwound (what the callbacks read)
    ~ProcessDwfl() {
        if (dwfl) dwfl_end(dwfl);
    }
};

}  // namespace

struct DwarfUnwinder::Worker::Impl {
    const ImageResolver& images;
    uint16_t machine;
    Options options;
    std::unordered_map<uint64_t, std::unique_ptr<ElfCfi>> files;              // (file, frameRegs)
    std::unordered_map<uint64_t, std::unique_ptr<ProcessModules>> processes;  // (pid, frameRegs)
    uint64_t lastProcessKey = ~uint64_t(0);
    ProcessModules* lastProcess = nullptr;
    std::unordered_map<uint64_t, std::unique_ptr<ArchElf>> archElfs;  // outlive the Dwfls below
    std::unordered_map<uint64_t, std::unique_ptr<ProcessDwfl>> dwfls;
    UnwindFrame scratch[3];
    std::vector<std::pair<uint64_t, uint64_t>> seen;  // (PC, SP) of the frames listed, for loops
    std::unordered_set<uint64_t> seenHashes;
    Stats stats;

    Impl(const ImageResolver& i, uint16_t m, Options o) : images(i), machine(m), options(o) {}

    ElfCfi* fileCfi(uint32_t file, unsigned frameRegs) {
        const uint64_t key = uint64_t(file) << 8 | frameRegs;
        auto& slot = files[key];
        if (!slot) {
            const ImageResolver::FileStatus& f = images.files()[file];
            slot = std::make_unique<ElfCfi>(f.resolved, f.recorded, frameRegs);
            ++stats.files;
        }
        return slot.get();
    }

    ProcessModules& process(int32_t pid, unsigned frameRegs) {
        const uint64_t key = uint64_t(uint32_t(pid)) << 8 | frameRegs;
        if (key == lastProcessKey) return *lastProcess;
        auto& slot = processes[key];
        if (!slot) {
            slot = std::make_unique<ProcessModules>();
            for (const ImageResolver::MappedModule& m : images.mappedModules(pid)) {
                Module mod;
                mod.start = m.start, mod.end = m.end, mod.pgoff = m.pgoff, mod.file = m.file;
                mod.bytes = m.bytes, mod.buildId = m.buildId;
                slot->modules.push_back(mod);
            }
            ++stats.processes;
        }
        lastProcessKey = key, lastProcess = slot.get();
        return *slot;
    }

    // What a module's file is to the unwinder, found out the first time it is needed.
    Module::State resolve(Module& m, unsigned frameRegs) {
        if (m.state != Module::State::Unresolved) return m.state;
        const ImageResolver::FileStatus& f = images.files()[m.file];
        if (m.bytes.empty() || f.resolved.empty()) {
            m.state = namesAFile(f.recorded) ? Module::State::Missing : Module::State::NoFile;
            return m.state;
        }
        ElfCfi* cfi = fileCfi(m.file, frameRegs);
        if (!cfi->opened()) {
            m.state = Module::State::Missing;  // found, but not an ELF file libdwfl can open
        } else if (!m.buildId.empty() && !sameBuildId(m.buildId, cfi->buildId())) {
            m.state = Module::State::Mismatch;
        } else if (!cfi->loadBias(m.start, m.pgoff, m.loadBias)) {
            m.state = Module::State::NoFile;  // the mapped offset lies in no PT_LOAD: no code of the file
        } else {
            m.cfi = cfi;
            m.state = Module::State::Usable;
        }
        return m.state;
    }

    ArchElf& archElf(const UserRegisterLayout& layout) {
        const uint64_t key = uint64_t(layout.machine) << 1 | layout.elf32;
        auto& slot = archElfs[key];
        if (!slot) slot = std::make_unique<ArchElf>(layout.machine, layout.elf32);
        return *slot;
    }
};

namespace {

// What unwind() and its callbacks share for one sample.
struct SampleContext {
    DwarfUnwinder::Worker::Impl& w;
    const UserRegisterLayout& layout;
    ProcessModules& process;
    UnwindMemory& memory;
    const UnwindFrame& initial;
    std::vector<uint64_t>& frames;
    size_t maxFrames;
    size_t listed = 0;
    bool spSeen = false;  // a frame with a known SP was listed; the highest is `maxSp`
    uint64_t maxSp = 0;
    bool stopped = false;
    UnwindStop stop = UnwindStop::Complete;
    UnwindFrame* last = nullptr;  // Libdwfl: the last frame's registers, for the stop reason
};

// Lists one frame (`address`: its PC, less one for a caller) unless it repeats
// an earlier frame, and says whether the unwinding stops at it. `module`: the
// mapping holding `address` (nullptr: none).
bool listFrame(SampleContext& s, uint64_t address, bool spKnown, uint64_t sp, Module* module) {
    DwarfUnwinder::Worker::Impl& w = s.w;
    // A loop: the same PC with the same SP again (a real stack never repeats a
    // frame). A frame above every earlier one (callers' SPs grow) repeats none.
    const std::pair<uint64_t, uint64_t> frame{address, spKnown ? sp : ~uint64_t(0)};
    const bool above = spKnown && (!s.spSeen || sp > s.maxSp);
    if (spKnown) s.maxSp = s.spSeen ? std::max(s.maxSp, sp) : sp, s.spSeen = true;
    const uint64_t hash = frame.first * 0x9E3779B97F4A7C15ull ^ frame.second;
    if (w.seen.size() < 64) {
        if (!above && std::find(w.seen.begin(), w.seen.end(), frame) != w.seen.end()) {
            s.stopped = true, s.stop = UnwindStop::Loop;
            return true;
        }
        w.seen.push_back(frame);
        if (w.seen.size() == 64)
            for (const auto& f : w.seen)
                w.seenHashes.insert(f.first * 0x9E3779B97F4A7C15ull ^ f.second);
    } else if (!w.seenHashes.insert(hash).second && !above) {
        // Beyond 64 frames by hash: a collision may stop a (very deep) stack early, never run on.
        s.stopped = true, s.stop = UnwindStop::Loop;
        return true;
    }
    s.frames.push_back(address);
    ++s.listed;
    if (module) {
        const Module::State state = w.resolve(*module, s.layout.frameRegs);
        if (state == Module::State::Missing || state == Module::State::Mismatch) {
            s.stopped = true;
            s.stop = state == Module::State::Missing ? UnwindStop::MissingImage : UnwindStop::WrongImage;
            return true;
        }
    }
    if (s.listed >= s.maxFrames) {
        s.stopped = true, s.stop = UnwindStop::MaxFrames;
        return true;
    }
    return false;
}

// The address libdwfl looks a frame's CFI up at: its PC, less one for a
// caller (a return address may be the first byte after its call's function).
uint64_t lookupAddress(const UnwindFrame& frame) {
    return frame.pc - (frame.initial || frame.signal ? 0 : 1);
}

// The CFI row (and load bias) for `lookup`, as libdwfl would find it: the
// module holding it (`module`, nullptr when none), its file's rows.
const CfiRow* rowFor(SampleContext& s, uint64_t lookup, Module*& module, uint64_t& loadBias) {
    module = s.process.at(lookup);
    if (!module || s.w.resolve(*module, s.layout.frameRegs) != Module::State::Usable) return nullptr;
    loadBias = module->loadBias;
    ++s.w.stats.rowLookups;
    return module->cfi->rowAt(lookup - module->loadBias);
}

UnwindStop stopOf(const StepOutcome& out, const UnwindMemory& memory) {
    if (out.kind == StepKind::End) {
        if (out.outermost) return UnwindStop::Complete;
        return memory.failedAboveCopy() ? UnwindStop::StackCopyEnd : UnwindStop::Error;
    }
    if (out.badCfi) return UnwindStop::Error;
    if (memory.failedAboveCopy()) return UnwindStop::StackCopyEnd;
    return out.noCfi ? UnwindStop::NoUnwindInfo : UnwindStop::Error;
}

UnwindStop unwindWithRows(SampleContext& s) {
    UnwindFrame* frame = &s.w.scratch[0];
    UnwindFrame* caller = &s.w.scratch[1];
    *frame = s.initial;
    for (;;) {
        uint64_t loadBias = 0;
        Module* module = nullptr;
        const uint64_t lookup = lookupAddress(*frame);
        const CfiRow* row = rowFor(s, lookup, module, loadBias);
        if (!row) ++s.w.stats.framePointerSteps;
        s.memory.resetFailures();
        const StepOutcome out = unwindStep(s.layout, *frame, row, loadBias, s.memory, *caller);
        // libdwfl's "activation": the sampled frame, one a signal interrupted,
        // and the signal frame itself (its PC is the handler's return address).
        const bool activation =
            frame->initial || frame->signal || (out.kind == StepKind::Unwound && caller->signal);
        uint64_t sp = 0;
        const bool spKnown = frame->get(s.layout.spReg, sp);
        const uint64_t address = frame->pc - (activation ? 0 : 1);
        if (listFrame(s, address, spKnown, sp, address == lookup ? module : s.process.at(address)))
            return s.stop;
        if (out.kind != StepKind::Unwound) return stopOf(out, s.memory);
        std::swap(frame, caller);
    }
}

// The Libdwfl engine: libdwfl's own unwinder over the same registers and memory.
pid_t nextThread(Dwfl* dwfl, void* arg, void** threadArg) {
    if (*threadArg) return 0;
    *threadArg = arg;
    return dwfl_pid(dwfl);
}

bool getThread(Dwfl*, pid_t, void* arg, void** threadArg) {
    *threadArg = arg;
    return true;
}

bool memoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
    SampleContext* s = static_cast<ProcessDwfl*>(arg)->current;
    uint64_t v;
    if (!s->memory.read(addr, v)) return false;
    *result = v;
    return true;
}

bool setInitialRegisters(Dwfl_Thread* thread, void* arg) {
    SampleContext* s = static_cast<ProcessDwfl*>(arg)->current;
    const UnwindFrame& init = s->initial;
    for (unsigned r = 0; r < s->layout.frameRegs; ++r) {
        uint64_t v;
        if (!init.get(r, v)) continue;
        const Dwarf_Word word = v;
        if (!dwfl_thread_state_registers(thread, int(r), 1, &word)) return false;
    }
    if (s->layout.pcReg >= s->layout.frameRegs) dwfl_thread_state_register_pc(thread, init.pc);
    return true;
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    nextThread, getThread, memoryRead, setInitialRegisters, nullptr, nullptr,
};

int frameCallback(Dwfl_Frame* state, void* arg) {
    SampleContext& s = *static_cast<SampleContext*>(arg);
    Dwarf_Addr pc;
    bool activation = false;
    if (!dwfl_frame_pc(state, &pc, &activation)) {
        s.stopped = true, s.stop = UnwindStop::Error;
        return DWARF_CB_ABORT;
    }
    // Kept for the stop reason: this frame's registers, as the next step starts from them.
    UnwindFrame& last = *s.last;
    last.clearRegisters();
    for (unsigned r = 0; r < s.layout.frameRegs; ++r) {
        Dwarf_Word v;
        if (dwfl_frame_reg(state, r, &v) == 0) last.put(r, v, s.layout.elf32);
    }
    last.pc = pc;
    last.initial = s.listed == 0;
    // Where the unwinding ends at this frame, libdwfl's activation is "initial or signal".
    last.signal = activation && !last.initial;
    uint64_t sp = 0;
    const bool spKnown = last.get(s.layout.spReg, sp);
    const uint64_t address = pc - (activation ? 0 : 1);
    return listFrame(s, address, spKnown, sp, s.process.at(address)) ? DWARF_CB_ABORT : DWARF_CB_OK;
}

ProcessDwfl* processDwfl(DwarfUnwinder::Worker::Impl& w, int32_t pid, const UserRegisterLayout& layout,
                         ProcessModules& process) {
    const uint64_t key = uint64_t(uint32_t(pid)) << 8 | layout.frameRegs;
    auto& slot = w.dwfls[key];
    if (slot) return slot->attached ? slot.get() : nullptr;
    slot = std::make_unique<ProcessDwfl>();
    slot->dwfl = dwfl_begin(&kProcessCallbacks);
    if (!slot->dwfl) return nullptr;
    // Every usable file once, at its load bias (perf reports them per sample as frames reach them).
    dwfl_report_begin_add(slot->dwfl);
    for (Module& m : process.modules) {
        if (w.resolve(m, layout.frameRegs) != Module::State::Usable) continue;
        const ImageResolver::FileStatus& f = w.images.files()[m.file];
        if (dwfl_report_elf(slot->dwfl, f.recorded.c_str(), f.resolved.c_str(), -1, m.loadBias, true))
            ++w.stats.files;
    }
    dwfl_report_end(slot->dwfl, nullptr, nullptr);
    ArchElf& arch = w.archElf(layout);
    if (!arch.elf) return nullptr;
    slot->attached =
        dwfl_attach_state(slot->dwfl, arch.elf, pid > 0 ? pid : 1, &kThreadCallbacks, slot.get());
    return slot->attached ? slot.get() : nullptr;
}

UnwindStop unwindWithLibdwfl(SampleContext& s, int32_t pid) {
    ProcessDwfl* p = processDwfl(s.w, pid, s.layout, s.process);
    if (!p) return UnwindStop::Error;
    s.last = &s.w.scratch[2];
    p->current = &s;
    const int rc = dwfl_getthread_frames(p->dwfl, pid > 0 ? pid : 1, frameCallback, &s);
    p->current = nullptr;
    if (s.stopped) return s.stop;
    if (s.listed == 0) return UnwindStop::Error;
    // libdwfl says only "ended" (0) or "failed" (-1): why is the step from the
    // last frame, taken again the CfiRows way (the tests check both agree).
    uint64_t loadBias = 0;
    Module* module = nullptr;
    const CfiRow* row = rowFor(s, lookupAddress(*s.last), module, loadBias);
    s.memory.resetFailures();
    const StepOutcome out = unwindStep(s.layout, *s.last, row, loadBias, s.memory, s.w.scratch[1]);
    if (out.kind == StepKind::Unwound || (out.kind == StepKind::End) != (rc == 0)) return UnwindStop::Error;
    return stopOf(out, s.memory);
}

}  // namespace

DwarfUnwinder::DwarfUnwinder(const ImageResolver& images, uint16_t machine)
    : DwarfUnwinder(images, machine, Options{}) {}

DwarfUnwinder::DwarfUnwinder(const ImageResolver& images, uint16_t machine, Options options)
    : images_(images), machine_(machine), options_(options) {
    elf_version(EV_CURRENT);  // libelf's version handshake, before any Elf is made
}

DwarfUnwinder::~DwarfUnwinder() = default;

DwarfUnwinder::Worker::Worker(std::unique_ptr<Impl> impl) : d_(std::move(impl)) {}
DwarfUnwinder::Worker::~Worker() {
    if (!d_) return;
    d_->dwfls.clear();  // before the ELF headers they were attached with
    d_->archElfs.clear();
}

DwarfUnwinder::Worker::Stats DwarfUnwinder::Worker::stats() const {
    Stats s = d_->stats;
    for (const auto& [key, f] : d_->files)
        s.rowsComputed += f->stats().computed;
    return s;
}

std::unique_ptr<DwarfUnwinder::Worker> DwarfUnwinder::worker() const {
    return std::unique_ptr<Worker>(new Worker(std::make_unique<Worker::Impl>(images_, machine_, options_)));
}

UnwindStop DwarfUnwinder::unwind(Worker& worker, int32_t pid, const UserStackCopy& copy,
                                 std::vector<uint64_t>& frames, size_t maxFrames) const {
    Worker::Impl& w = *worker.d_;
    ++w.stats.samples;
    const UserRegisterLayout* layout = userRegisterLayout(machine_, copy.abi);
    if (!layout) return UnwindStop::NoRegisters;
    uint64_t sp, pc;
    if (!readPerfRegister(copy.regsMask, copy.regs, layout->perfBitOf[layout->spReg], sp) ||
        !readPerfRegister(copy.regsMask, copy.regs, layout->pcPerfBit, pc))
        return UnwindStop::NoRegisters;
    if (maxFrames == 0) return UnwindStop::MaxFrames;
    UnwindFrame& initial = w.scratch[2];
    initial.clearRegisters();
    for (unsigned r = 0; r < layout->frameRegs; ++r) {
        uint64_t v;
        if (readPerfRegister(copy.regsMask, copy.regs, layout->perfBitOf[r], v))
            initial.put(r, v, layout->elf32);
    }
    initial.pc = layout->elf32 ? pc & 0xffffffffu : pc;
    initial.initial = true;
    initial.signal = false;
    UnwindMemory memory(copy.stack, sp, layout->elf32, images_, pid);
    ProcessModules& process = w.process(pid, layout->frameRegs);
    w.seen.clear();
    // Used past 64 frames only; clear() costs the bucket count, so a set a very
    // deep stack grew is dropped rather than cleared sample after sample.
    if (!w.seenHashes.empty()) {
        if (w.seenHashes.bucket_count() > 4096) {
            std::unordered_set<uint64_t>().swap(w.seenHashes);
        } else {
            w.seenHashes.clear();
        }
    }
    const size_t before = frames.size();
    UnwindStop stop;
    if (options_.engine == Engine::Libdwfl) {
        UnwindFrame start = initial;  // scratch[2] keeps the last frame's registers
        SampleContext s{w, *layout, process, memory, start, frames, maxFrames};
        stop = unwindWithLibdwfl(s, pid);
    } else {
        SampleContext s{w, *layout, process, memory, initial, frames, maxFrames};
        stop = unwindWithRows(s);
    }
    w.stats.frames += frames.size() - before;
    return stop;
}

}  // namespace auxscope
