// SPDX-License-Identifier: GPL-3.0-or-later
#include "pt/PtInsnFlow.h"

#include "pt/PtInsnProbe.h"

#include <capstone/capstone.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace auxscope {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
    char buffer[160];
    va_list args;
    va_start(args, fmt);
    int n = std::vsnprintf(buffer, sizeof buffer, fmt, args);
    va_end(args);
    return std::string(buffer, n < 0 ? 0 : std::min<size_t>(n, sizeof buffer - 1));
}

std::string hex16(uint64_t value) {
    return format("%016" PRIx64, value);
}

// ---------------------------------------------------------------- instruction boundaries

// What kind of instruction capstone says it is, to cross-check libipt's
// classification (--check). Capstone 4 does not know every instruction (EVEX,
// ptwrite, ...): those get no verdict.
class X86Classifier {
public:
    X86Classifier() {
        ok_ = cs_open(CS_ARCH_X86, CS_MODE_16, &handles_[0]) == CS_ERR_OK &&
              cs_open(CS_ARCH_X86, CS_MODE_32, &handles_[1]) == CS_ERR_OK &&
              cs_open(CS_ARCH_X86, CS_MODE_64, &handles_[2]) == CS_ERR_OK;
        if (ok_)
            for (csh handle : handles_)
                cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON);
    }
    ~X86Classifier() {
        for (csh& handle : handles_)
            if (handle) cs_close(&handle);
    }
    X86Classifier(const X86Classifier&) = delete;
    X86Classifier& operator=(const X86Classifier&) = delete;

    struct Kind {
        bool decoded = false;
        unsigned groupsMask = 0;
        bool isFarTransfer = false;
    };

    Kind classify(const uint8_t* bytes, size_t size, uint64_t ip, pt_exec_mode mode) const {
        Kind result;
        csh handle = handleFor(mode);
        if (!handle) return result;
        cs_insn* insn = nullptr;
        size_t count = cs_disasm(handle, bytes, size, ip, 1, &insn);
        if (count != 1) return result;
        result.decoded = true;
        if (const cs_detail* detail = insn->detail) {
            for (uint8_t g = 0; g < detail->groups_count; ++g) {
                switch (detail->groups[g]) {
                    case CS_GRP_JUMP:
                        result.groupsMask |= kJump;
                        break;
                    case CS_GRP_CALL:
                        result.groupsMask |= kCall;
                        break;
                    case CS_GRP_RET:
                        result.groupsMask |= kRet;
                        break;
                    default:
                        break;
                }
            }
            // A far jmp/call ptr16:32 has a segment and an offset operand.
            result.isFarTransfer = detail->x86.op_count == 2 && (result.groupsMask & (kJump | kCall));
        }
        cs_free(insn, count);
        return result;
    }

    static constexpr unsigned kJump = 1, kCall = 2, kRet = 4;

private:
    csh handleFor(pt_exec_mode mode) const {
        if (!ok_) return 0;
        switch (mode) {
            case ptem_16bit:
                return handles_[0];
            case ptem_32bit:
                return handles_[1];
            case ptem_64bit:
                return handles_[2];
            default:
                return 0;
        }
    }
    csh handles_[3] = {0, 0, 0};
    bool ok_ = false;
};

// ---------------------------------------------------------------- events

const char* execModeName(pt_exec_mode mode) {
    switch (mode) {
        case ptem_unknown:
            return "<unknown>";
        case ptem_16bit:
            return "16-bit";
        case ptem_32bit:
            return "32-bit";
        case ptem_64bit:
            return "64-bit";
    }
    return "<invalid>";
}

// One event line as ptxed prints it: "[" [offset] [tsc] description [ips] "]".
std::string describeEvent(const pt_event& event, const PtInsnFlowOptions& options, uint64_t offset) {
    std::string line = "[";
    if (options.showOffset) line += hex16(offset) + "  ";
    if (options.showEventTime && event.has_tsc) line += hex16(event.tsc) + "  ";
    const bool ips = options.showEventIp;
    const bool haveIp = !event.ip_suppressed;
    auto ip = [&](const char* label, uint64_t value) {
        line += std::string(", ") + label + ": " + hex16(value);
    };
    const auto& v = event.variant;
    switch (event.type) {
        case ptev_enabled:
            line += v.enabled.resumed ? "resumed" : "enabled";
            if (ips) ip("ip", v.enabled.ip);
            break;
        case ptev_disabled:
            line += "disabled";
            if (ips && haveIp) ip("ip", v.disabled.ip);
            break;
        case ptev_async_disabled:
            line += "disabled";
            if (ips) {
                ip("at", v.async_disabled.at);
                if (haveIp) ip("ip", v.async_disabled.ip);
            }
            break;
        case ptev_async_branch:
            line += "interrupt";
            if (ips) {
                ip("from", v.async_branch.from);
                if (haveIp) ip("to", v.async_branch.to);
            }
            break;
        case ptev_paging:
            line += "paging, cr3: " + hex16(v.paging.cr3) + (v.paging.non_root ? ", nr" : "");
            break;
        case ptev_async_paging:
            line += "paging, cr3: " + hex16(v.async_paging.cr3) + (v.async_paging.non_root ? ", nr" : "");
            if (ips) ip("ip", v.async_paging.ip);
            break;
        case ptev_overflow:
            line += "overflow";
            if (ips && haveIp) ip("ip", v.overflow.ip);
            break;
        case ptev_exec_mode:
            line += std::string("exec mode: ") + execModeName(v.exec_mode.mode);
            if (ips && haveIp) ip("ip", v.exec_mode.ip);
            break;
        case ptev_tsx:
            line += v.tsx.aborted ? "aborted" : v.tsx.speculative ? "begin transaction" : "committed";
            if (ips && haveIp) ip("ip", v.tsx.ip);
            break;
        case ptev_stop:
            line += "stopped";
            break;
        case ptev_vmcs:
            line += "vmcs, base: " + hex16(v.vmcs.base);
            break;
        case ptev_async_vmcs:
            line += "vmcs, base: " + hex16(v.async_vmcs.base);
            if (ips) ip("ip", v.async_vmcs.ip);
            break;
        case ptev_exstop:
            line += "exstop";
            if (ips && haveIp) ip("ip", v.exstop.ip);
            break;
        case ptev_mwait:
            line += format("mwait %" PRIx32 " %" PRIx32, v.mwait.hints, v.mwait.ext);
            if (ips && haveIp) ip("ip", v.mwait.ip);
            break;
        case ptev_pwre:
            line += format("pwre c%u.%u", (v.pwre.state + 1u) & 0xf, (v.pwre.sub_state + 1u) & 0xf);
            if (v.pwre.hw) line += " hw";
            break;
        case ptev_pwrx:
            line += "pwrx ";
            if (v.pwrx.interrupt) line += "int: ";
            if (v.pwrx.store) line += "st: ";
            if (v.pwrx.autonomous) line += "hw: ";
            line += format("c%u (c%u)", (v.pwrx.last + 1u) & 0xf, (v.pwrx.deepest + 1u) & 0xf);
            break;
        case ptev_ptwrite:
            line += format("ptwrite: %" PRIx64, v.ptwrite.payload);
            if (ips && haveIp) ip("ip", v.ptwrite.ip);
            break;
        case ptev_tick:
            line += "tick";
            if (ips && haveIp) ip("ip", v.tick.ip);
            break;
        case ptev_cbr:
            line += format("cbr: %x", v.cbr.ratio);
            break;
        case ptev_mnt:
            line += format("mnt: %" PRIx64, v.mnt.payload);
            break;
    }
    return line + "]";
}

// ---------------------------------------------------------------- the two decoders

// libipt's instruction and block decoders have the same shape (sync, next,
// event, offset); the flow loop is written once over this adapter.
struct InsnDecoderOps {
    using Decoder = pt_insn_decoder;
    static Decoder* alloc(const pt_config& c) { return pt_insn_alloc_decoder(&c); }
    static void release(Decoder* d) { pt_insn_free_decoder(d); }
    static int setImage(Decoder* d, pt_image* i) { return pt_insn_set_image(d, i); }
    static pt_image* image(Decoder* d) { return pt_insn_get_image(d); }
    static int syncForward(Decoder* d) { return pt_insn_sync_forward(d); }
    static int offset(Decoder* d, uint64_t* o) { return pt_insn_get_offset(d, o); }
    static int event(Decoder* d, pt_event* e) { return pt_insn_event(d, e, sizeof *e); }
};
struct BlockDecoderOps {
    using Decoder = pt_block_decoder;
    static Decoder* alloc(const pt_config& c) { return pt_blk_alloc_decoder(&c); }
    static void release(Decoder* d) { pt_blk_free_decoder(d); }
    static int setImage(Decoder* d, pt_image* i) { return pt_blk_set_image(d, i); }
    static pt_image* image(Decoder* d) { return pt_blk_get_image(d); }
    static int syncForward(Decoder* d) { return pt_blk_sync_forward(d); }
    static int offset(Decoder* d, uint64_t* o) { return pt_blk_get_offset(d, o); }
    static int event(Decoder* d, pt_event* e) { return pt_blk_event(d, e, sizeof *e); }
};

template <typename Ops>
class FlowPrinter {
public:
    FlowPrinter(typename Ops::Decoder* decoder, const pt_config& config, const PtInsnFlowOptions& options,
                std::ostream& out, PtSidebandSession* sideband)
        : decoder_(decoder), config_(config), options_(options), out_(out), sideband_(sideband) {
        countStats_ = options.stats || options.statInsn || options.statBlocks;
    }

    PtInsnFlowResult run() {
        uint64_t lastSync = 0;
        while (true) {
            // Error reports name the last IP we know; reset it for each segment.
            insn_.ip = 0;
            block_ = pt_block{};
            int status = Ops::syncForward(decoder_);
            if (status < 0) {
                if (status == -pte_eos) {
                    // ptxed stays silent when there is no PSB at all; say why nothing came out.
                    if (!synchronised_)
                        result_.issues.push_back(
                            {PtDecodeIssue::Severity::Error, 0,
                             "no PSB packet found: nothing to decode (not Intel PT trace data?)"});
                    break;
                }
                reportError("sync error", status);
                // Each failed attempt is reported; stop once the decoder stops moving forward.
                uint64_t position = 0;
                if (Ops::offset(decoder_, &position) < 0 || position <= lastSync) break;
                lastSync = position;
                continue;
            }
            synchronised_ = true;
            status = decodeSegment(status);
            if (status == 0) status = -pte_internal;
            if (status == -pte_eos) break;
            reportError("error", status);
        }
        return std::move(result_);
    }

private:
    // Drains pending events, printing the ones that are not mere status updates.
    int drainEvents(int status) {
        while (status & pts_event_pending) {
            uint64_t offset = 0;
            if (options_.showOffset) {
                if (int err = Ops::offset(decoder_, &offset); err < 0) return err;
            }
            pt_event event;
            status = Ops::event(decoder_, &event);
            if (status < 0) return status;
            time_ = event.tsc;
            if (!options_.quiet && !event.status_update)
                out_ << describeEvent(event, options_, offset) << '\n';
            // Every event, status updates too, moves sideband time and may switch
            // the decoder to another process's image.
            if (sideband_) {
                if (pt_image* switched = sideband_->onEvent(event)) {
                    if (int err = Ops::setImage(decoder_, switched); err < 0) return err;
                }
            }
        }
        return status;
    }

    // From a sync point to the first error (or the end: -pte_eos).
    int decodeSegment(int status) {
        while (true) {
            status = drainEvents(status);
            if (status < 0) return status;
            if (status & pts_eos) {
                if (!(status & pts_ip_suppressed) && !options_.quiet) out_ << "[end of trace]\n";
                return -pte_eos;
            }
            if (options_.showOffset || options_.check) {
                if (int err = Ops::offset(decoder_, &offset_); err < 0) return err;
            }
            status = next();
            if (status < 0) return status;
        }
    }

    int next();

    void linePrefix(std::string& line, bool speculative) const {
        if (options_.showOffset) line += hex16(offset_) + "  ";
        if (options_.showTime) line += hex16(time_) + "  ";
        if (speculative) line += "? ";
    }

    void emitInsn(const pt_insn& insn) {
        result_.instructions += 1;
        if (!options_.quiet) {
            std::string line;
            linePrefix(line, insn.speculative);
            out_ << line << hex16(insn.ip) << '\n';
        }
        if (options_.check) checkInsn(insn);
    }

    // The block's instructions as libipt walks them (from the image the decoder
    // uses now: sideband may have switched it).
    InsnProbe::Walk walkBlock(const pt_block& block, size_t count) {
        if (!probe_) probe_ = std::make_unique<InsnProbe>(config_);
        return probe_->walk(Ops::image(decoder_), block.ip, block.mode, count);
    }

    void emitBlock(const pt_block& block) {
        result_.instructions += block.ninsn;
        result_.blocks += 1;
        if (options_.quiet && !options_.check) return;
        InsnProbe::Walk walk;
        if (block.ninsn) walk = walkBlock(block, block.ninsn);
        if (!options_.quiet) printBlock(block, walk);
        if (options_.check) checkBlock(block, walk);
    }

    void printBlock(const pt_block& block, const InsnProbe::Walk& walk) {
        if (options_.showBlocks)
            out_ << "[block" << (countStats_ ? format(" %" PRIx64, result_.blocks) : std::string()) << "]\n";
        if (!block.ninsn) return;
        std::string prefix;
        linePrefix(prefix, block.speculative);
        for (const pt_insn& insn : walk.insns)
            out_ << prefix << hex16(insn.ip) << '\n';
        if (walk.insns.size() < block.ninsn) {
            // The block decoder got through here a moment ago from the same image:
            // a failure now is a bug, reported rather than hidden.
            reportErrorAt(walk.stoppedAt, "reconstruct error", walk.status < 0 ? walk.status : -pte_internal);
            return;
        }
        // The walk must land on the block decoder's last instruction.
        uint64_t last = walk.insns.back().ip;
        if (last != block.end_ip) reportErrorAt(last, "reconstruct error", -pte_nosync);
    }

    void checkBlock(const pt_block& block, const InsnProbe::Walk& walk) {
        if (!block.ninsn) return;
        if (block.isid <= 0)
            out_ << format("[%" PRIx64 ", %" PRIx64 ": check error: bad isid]\n", offset_, block.ip);
        if (walk.insns.size() < block.ninsn) {
            out_ << format("[%" PRIx64 ", %" PRIx64 ": fetch error: ", offset_, walk.stoppedAt)
                 << ptErrorName(walk.status) << "]\n";
            return;
        }
        uint64_t last = walk.insns.back().ip;
        if (last != block.end_ip)
            out_ << format("[%" PRIx64 ", %" PRIx64 ": error: did not reach end: %" PRIx64 "]\n", offset_,
                           last, block.end_ip);
        // Capstone's second opinion on the instructions it knows.
        for (const pt_insn& insn : walk.insns)
            checkInsn(insn, /*checkIsid=*/false);
    }

    // libipt classifies branches itself (its own instruction length decoder);
    // a disagreement with an independent disassembler points at a wrong image.
    void checkInsn(const pt_insn& insn, bool checkIsid = true) {
        if (checkIsid && insn.isid <= 0)
            out_ << format("[%" PRIx64 ", %" PRIx64 ": check error: bad isid]\n", offset_, insn.ip);
        X86Classifier::Kind step = classifier_.classify(insn.raw, insn.size, insn.ip, insn.mode);
        if (!step.decoded) return;
        const char* expected = nullptr;
        switch (insn.iclass) {
            case ptic_call:
                if (!(step.groupsMask & X86Classifier::kCall) || step.isFarTransfer) expected = "near call";
                break;
            case ptic_return:
                if (!(step.groupsMask & X86Classifier::kRet)) expected = "near return";
                break;
            case ptic_jump:
            case ptic_cond_jump:
                if (!(step.groupsMask & X86Classifier::kJump) || step.isFarTransfer)
                    expected = insn.iclass == ptic_jump ? "near jump" : "cond jump";
                break;
            default:
                break;
        }
        if (expected)
            out_ << format("[%" PRIx64 ", %" PRIx64 ": iclass error: iclass: %s, disassembler disagrees]\n",
                           offset_, insn.ip, expected);
    }

    void reportErrorAt(uint64_t ip, const char* what, int errorCode) {
        uint64_t position = 0;
        std::string text = std::string(what) + ": " + ptErrorName(errorCode);
        if (int err = Ops::offset(decoder_, &position); err < 0) {
            out_ << "could not determine offset: " << ptErrorName(err) << '\n';
            out_ << "[?, " << format("%" PRIx64, ip) << ": " << text << "]\n";
        } else {
            out_ << format("[%" PRIx64 ", %" PRIx64 ": ", position, ip) << text << "]\n";
        }
        result_.issues.push_back(
            {PtDecodeIssue::Severity::Error, position, format("ip %" PRIx64 ": ", ip) + text});
    }

    void reportError(const char* what, int errorCode);

    typename Ops::Decoder* decoder_;
    const pt_config& config_;
    const PtInsnFlowOptions& options_;
    std::ostream& out_;
    PtSidebandSession* sideband_ = nullptr;
    X86Classifier classifier_;
    std::unique_ptr<InsnProbe> probe_;  // block decoder: made on first use
    PtInsnFlowResult result_;
    bool countStats_ = false;
    bool synchronised_ = false;  // found at least one PSB
    uint64_t offset_ = 0;        // trace offset before the current instruction/block
    uint64_t time_ = 0;          // TSC of the last event
    // insn decoder: the last instruction. libipt leaves it untouched when it
    // refuses to decode (tracing disabled), so it is kept across calls as in ptxed.
    pt_insn insn_{};
    pt_block block_{};  // block decoder: the last block
};

template <>
int FlowPrinter<InsnDecoderOps>::next() {
    int status = pt_insn_next(decoder_, &insn_, sizeof insn_);
    // An error can still come with the instruction it was decoding.
    if (status >= 0 || insn_.iclass != ptic_error) emitInsn(insn_);
    return status;
}

template <>
int FlowPrinter<BlockDecoderOps>::next() {
    pt_block block;
    std::memset(&block, 0, sizeof block);
    int status = pt_blk_next(decoder_, &block, sizeof block);
    block_ = block;
    // An error can still come with the instructions before it.
    if (status >= 0 || block.ninsn) emitBlock(block);
    return status;
}

template <>
void FlowPrinter<InsnDecoderOps>::reportError(const char* what, int errorCode) {
    reportErrorAt(insn_.ip, what, errorCode);
}

// For a block the error belongs after its last instruction: when fetching or
// decoding the next one failed, that is the last instruction's successor.
template <>
void FlowPrinter<BlockDecoderOps>::reportError(const char* what, int errorCode) {
    const pt_block& block = block_;
    uint64_t ip = block.ninsn ? block.end_ip : block.ip;
    if (block.ninsn && (errorCode == -pte_nomap || errorCode == -pte_bad_insn)) {
        // The instruction that could not be read follows the block's last one.
        pt_block last = block;
        last.ip = block.end_ip;
        InsnProbe::Walk walk = walkBlock(last, 2);
        if (walk.insns.size() == 2)
            ip = walk.insns[1].ip;
        else if (walk.insns.size() == 1 && walk.stoppedAt)
            ip = walk.stoppedAt;
    }
    reportErrorAt(ip, what, errorCode);
}

template <typename Ops>
Expected<PtInsnFlowResult> runFlow(const pt_config& config, const PtImage& image,
                                   const PtInsnFlowOptions& options, std::ostream& out,
                                   PtSidebandSession* sideband) {
    typename Ops::Decoder* decoder = Ops::alloc(config);
    if (!decoder) return makeError("libipt refused the trace configuration (cannot create the decoder)");
    if (int err = Ops::setImage(decoder, image.image()); err < 0) {
        Ops::release(decoder);
        return makeError("libipt refused the image: " + ptErrorName(err));
    }
    PtInsnFlowResult result = FlowPrinter<Ops>(decoder, config, options, out, sideband).run();
    Ops::release(decoder);
    return result;
}

// libelf wants its version negotiated once per process before any elf_begin.
bool libelfReady() {
    static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
    return ready;
}

}  // namespace

// ---------------------------------------------------------------- PtImage

PtImage::PtImage() : cache_(pt_iscache_alloc(nullptr)), image_(pt_image_alloc(nullptr)) {}

PtImage::~PtImage() {
    pt_image_free(image_);
    pt_iscache_free(cache_);
}

Expected<void> PtImage::addRaw(const std::string& path, uint64_t address, uint64_t fileOffset,
                               uint64_t size) {
    std::error_code ec;
    uint64_t fileSize = std::filesystem::file_size(path, ec);
    if (ec) return makeError(path + ": cannot read the code image: " + ec.message());
    if (fileOffset >= fileSize)
        return makeError(path + ": offset " + std::to_string(fileOffset) +
                         " is beyond the end of the file (" + std::to_string(fileSize) + " bytes)");
    int isid = pt_iscache_add_file(cache_, path.c_str(), fileOffset, size ? size : UINT64_MAX, address);
    if (isid < 0)
        return makeError(path + ": cannot map at 0x" + format("%" PRIx64, address) + ": " +
                         ptErrorName(isid));
    if (int err = pt_image_add_cached(image_, cache_, isid, nullptr); err < 0)
        return makeError(path + ": cannot map at 0x" + format("%" PRIx64, address) + ": " + ptErrorName(err));
    sections_ += 1;
    return {};
}

Expected<void> PtImage::addElf(const std::string& path, std::optional<uint64_t> base) {
    if (!libelfReady()) return makeError(path + ": libelf is unusable: " + elf_errmsg(-1));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return makeError(path + ": cannot open: " + std::strerror(errno));
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    auto fail = [&](const std::string& cause) {
        if (elf) elf_end(elf);
        ::close(fd);
        return makeError(path + ": " + cause);
    };
    if (!elf || elf_kind(elf) != ELF_K_ELF) return fail("offset 0: not an ELF file");
    size_t count = 0;
    if (elf_getphdrnum(elf, &count) != 0)
        return fail(std::string("cannot read the program headers: ") + elf_errmsg(-1));
    std::vector<GElf_Phdr> loads;
    for (size_t n = 0; n < count; ++n) {
        GElf_Phdr phdr;
        if (!gelf_getphdr(elf, static_cast<int>(n), &phdr))
            return fail("program header " + std::to_string(n) + ": " + elf_errmsg(-1));
        if (phdr.p_type == PT_LOAD) loads.push_back(phdr);
    }
    elf_end(elf);
    elf = nullptr;
    ::close(fd);
    // With a base the file moves as a whole: its lowest segment goes to `base`
    // (zero means "where the file says", as in ptxed).
    uint64_t shift = 0;
    if (base && *base) {
        uint64_t lowest = UINT64_MAX;
        for (const GElf_Phdr& phdr : loads)
            lowest = std::min<uint64_t>(lowest, phdr.p_vaddr);
        shift = *base - lowest;
    }
    size_t added = 0;
    for (const GElf_Phdr& phdr : loads) {
        if (!phdr.p_filesz) continue;  // .bss-only segments have no bytes to read
        int isid =
            pt_iscache_add_file(cache_, path.c_str(), phdr.p_offset, phdr.p_filesz, phdr.p_vaddr + shift);
        if (isid < 0)
            return makeError(path + ": segment at file offset " + std::to_string(phdr.p_offset) + ": " +
                             ptErrorName(isid));
        if (int err = pt_image_add_cached(image_, cache_, isid, nullptr); err < 0)
            return makeError(path + ": segment at file offset " + std::to_string(phdr.p_offset) + ": " +
                             ptErrorName(err));
        added += 1;
    }
    if (!added) return makeError(path + ": no loadable segment with file content (PT_LOAD)");
    sections_ += added;
    return {};
}

// ---------------------------------------------------------------- options, entry

Expected<bool> parsePtInsnFlowFlag(PtInsnFlowOptions& options, const std::string& flag,
                                   const std::optional<std::string>& /*value: switches only*/) {
    struct Switch {
        const char* name;
        bool PtInsnFlowOptions::*member;
    };
    static const Switch kSwitches[] = {
        {"--quiet", &PtInsnFlowOptions::quiet},
        {"-q", &PtInsnFlowOptions::quiet},
        {"--offset", &PtInsnFlowOptions::showOffset},
        {"--time", &PtInsnFlowOptions::showTime},
        {"--check", &PtInsnFlowOptions::check},
        {"--event:time", &PtInsnFlowOptions::showEventTime},
        {"--event:ip", &PtInsnFlowOptions::showEventIp},
        {"--event:tick", &PtInsnFlowOptions::tickEvents},
        {"--block:show-blocks", &PtInsnFlowOptions::showBlocks},
        {"--block:end-on-call", &PtInsnFlowOptions::endOnCall},
        {"--block:end-on-jump", &PtInsnFlowOptions::endOnJump},
        {"--stat", &PtInsnFlowOptions::stats},
        {"--stat:insn", &PtInsnFlowOptions::statInsn},
        {"--stat:blocks", &PtInsnFlowOptions::statBlocks},
    };
    for (const Switch& s : kSwitches) {
        if (flag != s.name) continue;
        options.*s.member = true;
        return true;
    }
    if (flag == "--no-inst") {
        return true;
    }
    if (flag == "--insn-decoder" || flag == "--block-decoder") {
        options.decoder = flag == "--insn-decoder" ? PtInsnFlowOptions::Decoder::Instruction
                                                   : PtInsnFlowOptions::Decoder::Block;
        return true;
    }
    return false;
}

bool PtInsnFlowResult::hasErrors() const {
    for (const PtDecodeIssue& issue : issues)
        if (issue.severity == PtDecodeIssue::Severity::Error) return true;
    return false;
}

Expected<PtInsnFlowResult> decodePtInsnFlow(const PtConfig& ptConfig, const PtImage& image,
                                            const PtInsnFlowOptions& options, std::ostream& out,
                                            PtSidebandSession* sideband) {
    std::vector<PtDecodeIssue> configIssues;
    if (ptConfig.errataError < 0) {
        // ptxed's form: the position is "0, 0" since no decoding has happened yet.
        std::string what = "config error: " + ptErrorName(ptConfig.errataError);
        out << "[0, 0: " << what << "]\n";
        configIssues.push_back({PtDecodeIssue::Severity::Warning, 0, what});
    }
    pt_config config = ptConfig.config;
    const bool block = options.decoder == PtInsnFlowOptions::Decoder::Block;
    if (block) {
        config.flags.variant.block.enable_tick_events = options.tickEvents;
        config.flags.variant.block.end_on_call = options.endOnCall;
        config.flags.variant.block.end_on_jump = options.endOnJump;
    } else {
        config.flags.variant.insn.enable_tick_events = options.tickEvents;
    }
    auto result = block ? runFlow<BlockDecoderOps>(config, image, options, out, sideband)
                        : runFlow<InsnDecoderOps>(config, image, options, out, sideband);
    if (!result) return result;
    // Totals as ptxed prints them; --stat alone selects all the decoder has.
    bool statInsn = options.statInsn, statBlocks = options.statBlocks;
    if (options.stats && !statInsn && !statBlocks) {
        statInsn = true;
        statBlocks = block;
    }
    if (statInsn) out << "insn: " << result->instructions << ".\n";
    if (statBlocks) out << "blocks:\t" << result->blocks << ".\n";
    result->issues.insert(result->issues.begin(), configIssues.begin(), configIssues.end());
    return result;
}

}  // namespace auxscope
