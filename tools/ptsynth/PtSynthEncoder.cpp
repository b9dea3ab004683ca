// SPDX-License-Identifier: GPL-3.0-or-later
#include "PtSynthEncoder.h"

#include <cstring>

namespace auxscope::ptsynth {
namespace {

// Canonical user addresses sign-extend from bit 47.
bool signExtends48(uint64_t ip) {
    return uint64_t(int64_t(ip << 16) >> 16) == ip;
}

}  // namespace

PtFlowEncoder::PtFlowEncoder(const PtEncoderOptions& options, ChunkSink sink)
    : options_(options), sink_(std::move(sink)), tsc_(options.startTsc) {
    if (options_.ctcEax == 0 || options_.ctcEbx == 0) options_.mtc = false;
    buffer_.resize(options_.chunkBytes + options_.psbPeriod + 64 * 1024);
    pt_config_init(&config_);
    config_.begin = buffer_.data();
    config_.end = buffer_.data() + buffer_.size();
    config_.mtc_freq = options_.mtcFreq;
    config_.cpuid_0x15_eax = options_.ctcEax;
    config_.cpuid_0x15_ebx = options_.ctcEbx;
    config_.nom_freq = options_.cbr;
    encoder_ = pt_alloc_encoder(&config_);
    if (!encoder_) fail("libipt refused the encoder configuration");
    // The first MTC comes at the first crystal-clock edge after the start, as
    // its payload names that edge (not the time it is emitted at).
    skipMtcTo(tsc_);
}

void PtFlowEncoder::skipMtcTo(uint64_t tsc) {
    const uint64_t ctc = tsc * options_.ctcEax / std::max<uint32_t>(options_.ctcEbx, 1);
    const uint64_t nextCtc = ((ctc >> options_.mtcFreq) + 1) << options_.mtcFreq;
    nextMtcTsc_ = (nextCtc * options_.ctcEbx + options_.ctcEax - 1) / std::max<uint32_t>(options_.ctcEax, 1);
}

PtFlowEncoder::~PtFlowEncoder() {
    if (encoder_) pt_free_encoder(encoder_);
}

void PtFlowEncoder::fail(const std::string& what) {
    if (error_.empty()) error_ = "PT encoder at trace offset " + std::to_string(bytes()) + ": " + what;
}

// Grows the buffer when an event could run past its end (only a long stretch
// without a PSB, e.g. a huge psbPeriod, gets here).
void PtFlowEncoder::grow() {
    const uint64_t off = offset_;
    if (off + kHeadroom <= buffer_.size() || !encoder_) return;
    buffer_.resize(buffer_.size() * 2);
    pt_free_encoder(encoder_);
    config_.begin = buffer_.data();
    config_.end = buffer_.data() + buffer_.size();
    encoder_ = pt_alloc_encoder(&config_);
    if (!encoder_ || pt_enc_sync_set(encoder_, off) < 0) {
        encoder_ = nullptr;
        fail("cannot grow the trace buffer");
    }
}

void PtFlowEncoder::put(const pt_packet& packet) {
    if (!encoder_) return;
    const int n = pt_enc_next(encoder_, &packet);
    if (n < 0) {
        fail(std::string("libipt cannot encode a packet: ") + pt_errstr(pt_errcode(n)));
        pt_free_encoder(encoder_);
        encoder_ = nullptr;
        return;
    }
    offset_ += uint64_t(n);
}

// The shortest IP compression that lets a decoder rebuild `ip` from the last IP
// (SDM: IPBytes 001 = update 16 bits, 010 = update 32, 011 = sign-extend 48).
void PtFlowEncoder::putIp(pt_packet_type type, uint64_t ip) {
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = type;
    const uint64_t diff = ip ^ lastIp_;
    if ((diff >> 16) == 0)
        p.payload.ip.ipc = pt_ipc_update_16;
    else if ((diff >> 32) == 0)
        p.payload.ip.ipc = pt_ipc_update_32;
    else if (signExtends48(ip))
        p.payload.ip.ipc = pt_ipc_sext_48;
    else
        p.payload.ip.ipc = pt_ipc_full;
    p.payload.ip.ip = ip;
    lastIp_ = ip;
    put(p);
}

void PtFlowEncoder::putIpSuppressed(pt_packet_type type) {
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = type;
    p.payload.ip.ipc = pt_ipc_suppressed;
    put(p);
}

void PtFlowEncoder::flushTnt() {
    if (!tntCount_) return;
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = ppt_tnt_8;
    p.payload.tnt.bit_size = tntCount_;
    p.payload.tnt.payload = tntBits_;
    put(p);
    ++stats_.tnt;
    tntBits_ = 0;
    tntCount_ = 0;
}

// An MTC for the latest crystal-clock edge the TSC passed (one only, even after
// a gap: MTC carries 8 bits of CTC, which decoders unwrap modulo 256 periods).
void PtFlowEncoder::mtc() {
    const uint64_t ctc = tsc_ * options_.ctcEax / options_.ctcEbx;
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = ppt_mtc;
    p.payload.mtc.ctc = uint8_t(ctc >> options_.mtcFreq);
    put(p);
    ++stats_.mtc;
    const uint64_t nextCtc = ((ctc >> options_.mtcFreq) + 1) << options_.mtcFreq;
    nextMtcTsc_ = (nextCtc * options_.ctcEbx + options_.ctcEax - 1) / options_.ctcEax;
}

void PtFlowEncoder::cutChunk() {
    const uint64_t off = offset_;
    if (!off || !encoder_) return;
    if (auto r = sink_(std::span<const uint8_t>(buffer_.data(), off)); !r) {
        fail(r.error().message);
        return;
    }
    stats_.bytes += off;
    ++stats_.chunks;
    if (pt_enc_sync_set(encoder_, 0) < 0) fail("cannot rewind the trace buffer");
    offset_ = 0;
    lastPsb_ = 0;
}

// PSB+ (SDM 32.3.7): the packets a decoder synchronizes on. The FUP is present
// only while packets are enabled and names the next instruction to execute.
void PtFlowEncoder::psbPlus(uint64_t ip) {
    flushTnt();
    if (offset_ >= options_.chunkBytes) cutChunk();
    lastPsb_ = offset_;
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = ppt_psb;
    put(p);
    ++stats_.psb;
    if (psbObserver_) psbObserver_(tsc_);
    p.type = ppt_tsc;
    p.payload.tsc.tsc = tsc_;
    put(p);
    ++stats_.tsc;
    if (options_.mtc) tma();
    std::memset(&p, 0, sizeof p);
    p.type = ppt_cbr;
    p.payload.cbr.ratio = options_.cbr;
    put(p);
    lastIp_ = 0;
    if (enabled_) {
        std::memset(&p, 0, sizeof p);
        p.type = ppt_mode;
        p.payload.mode.leaf = pt_mol_exec;
        p.payload.mode.bits.exec.csl = 1;
        put(p);
        putIp(ppt_fup, ip);
        ++stats_.fup;
    }
    std::memset(&p, 0, sizeof p);
    p.type = ppt_psbend;
    put(p);
    stackSize_ = 0;
}

// TMA (SDM: follows every TSC packet while MTCEn=1): the CTC at this TSC and
// how far (in TSC ticks) past its last edge. Decoders time MTCs from it
// (libipt ignores MTCs after a TSC until a TMA came).
void PtFlowEncoder::tma() {
    const uint64_t ctc = tsc_ * options_.ctcEax / options_.ctcEbx;
    const uint64_t edge = (ctc * options_.ctcEbx + options_.ctcEax - 1) / options_.ctcEax;
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = ppt_tma;
    p.payload.tma.ctc = uint16_t(ctc);
    p.payload.tma.fc = uint16_t(tsc_ > edge ? std::min<uint64_t>(tsc_ - edge, 0x1ff) : 0);
    put(p);
    // The TMA names this MTC period: an MTC for it (one still due after time
    // passed untraced, addTime()) would read as a whole wrap of 256 periods later.
    if (tsc_ >= nextMtcTsc_) skipMtcTo(tsc_);
}

void PtFlowEncoder::enable(uint64_t ip, bool withTsc) {
    reserve();
    if (stats_.psb == 0) psbPlus(ip);  // the first PSB+, before packets are enabled: no FUP
    // After a gap with a TSC the TSC (and its TMA) tell the time: no MTC before it.
    if (!withTsc || !modeSent_) timing();
    if (!modeSent_) {
        pt_packet p;
        std::memset(&p, 0, sizeof p);
        p.type = ppt_mode;
        p.payload.mode.leaf = pt_mol_exec;
        p.payload.mode.bits.exec.csl = 1;
        put(p);
        ++stats_.mode;
        modeSent_ = true;
    } else if (withTsc) {
        pt_packet p;
        std::memset(&p, 0, sizeof p);
        p.type = ppt_tsc;
        p.payload.tsc.tsc = tsc_;
        put(p);
        ++stats_.tsc;
        if (options_.mtc) tma();
    }
    putIp(ppt_tip_pge, ip);
    ++stats_.tipPge;
    enabled_ = true;
    maybePsb(ip);
}

void PtFlowEncoder::indirectCall(uint64_t returnIp, uint64_t target) {
    reserve();
    timing();
    flushTnt();
    putIp(ppt_tip, target);
    ++stats_.tip;
    push(returnIp);
    maybePsb(target);
}

void PtFlowEncoder::indirectJump(uint64_t target) {
    reserve();
    timing();
    flushTnt();
    putIp(ppt_tip, target);
    ++stats_.tip;
    maybePsb(target);
}

void PtFlowEncoder::uncompressedRet(uint64_t target) {
    reserve();
    timing();
    flushTnt();
    putIp(ppt_tip, target);
    ++stats_.tip;
    ++stats_.uncompressedReturns;
    maybePsb(target);
}

void PtFlowEncoder::farTransferOut() {
    reserve();
    timing();
    flushTnt();
    putIpSuppressed(ppt_tip_pgd);
    ++stats_.tipPgd;
    enabled_ = false;
    stackSize_ = 0;
}

void PtFlowEncoder::asyncDisable(uint64_t ip) {
    reserve();
    timing();
    flushTnt();
    putIp(ppt_fup, ip);
    ++stats_.fup;
    putIpSuppressed(ppt_tip_pgd);
    ++stats_.tipPgd;
    enabled_ = false;
    stackSize_ = 0;
}

void PtFlowEncoder::asyncBranch(uint64_t from, uint64_t to) {
    reserve();
    timing();
    flushTnt();
    putIp(ppt_fup, from);
    ++stats_.fup;
    putIp(ppt_tip, to);
    ++stats_.tip;
    maybePsb(to);
}

void PtFlowEncoder::finish() {
    flushTnt();
    cutChunk();
}

}  // namespace auxscope::ptsynth
