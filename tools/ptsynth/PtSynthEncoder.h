// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Turns a known control flow into Intel PT packets with libipt's encoder, the
// way a processor tracing user space only (IA32_RTIT_CTL.User=1, OS=0) would
// packetize it (Intel SDM vol. 3, chapter 32):
//
//   - conditional branches         -> TNT bits (short TNT, up to 6 bits a packet)
//   - direct jumps and calls       -> nothing (the decoder follows the code)
//   - indirect jumps and calls     -> TIP with the target
//   - near returns                 -> TIP, or with return compression (the
//                                     default, perf's too) a taken TNT bit when
//                                     the target is the top of the call stack
//   - SYSCALL and the like         -> TIP.PGD with the IP suppressed: the
//                                     target is in the kernel, which is not traced
//   - resuming in user space       -> TIP.PGE with the IP (MODE.Exec before the
//                                     first one), a TSC (and TMA) before it when asked
//   - an asynchronous stop         -> FUP with the IP of the instruction not yet
//     (interrupt, signal, end)        executed, then TIP.PGD
//   - every psbPeriod bytes        -> PSB+: PSB, TSC, TMA, CBR, [MODE.Exec, FUP], PSBEND
//   - time                         -> MTC every 2^mtcFreq crystal clock ticks
//
// Pending TNT bits are always emitted before any TIP, FUP, PGD or PSB so that
// the order of branches stays unambiguous. The stream is cut into chunks at PSB
// boundaries only, so each chunk (one PERF_RECORD_AUXTRACE) decodes on its own.
//
// Time is virtual: the caller advances the TSC (retire()/addTime()); the
// crystal clock runs at TSC * ctcD / ctcN (CPUID leaf 0x15: TSC = CTC * EBX / EAX).
//
// Errors are sticky (the first one is kept and everything after it is a no-op)
// because the calls sit on the generator's hot path; check ok() at the end.
#include <intel-pt.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope::ptsynth {

struct PtEncoderOptions {
    bool retCompression = true;      // false: every RET is a TIP (perf's noretcomp)
    bool mtc = true;                 // MTC packets and TMA in PSB+
    uint8_t mtcFreq = 3;             // MTC every 2^mtcFreq CTC ticks (perf's default mtc_period)
    uint32_t ctcEax = 2;             // CPUID.15H:EAX (denominator)
    uint32_t ctcEbx = 308;           // CPUID.15H:EBX (numerator): 154 TSC ticks per CTC tick
    uint8_t cbr = 37;                // core:bus ratio in PSB+ (= the max non-turbo ratio)
    uint64_t psbPeriod = 4096;       // bytes between PSB+ (hardware's PSBFreq 0 is 2 KiB)
    uint64_t chunkBytes = 4u << 20;  // AUXTRACE chunk size (cut at the next PSB after this many bytes)
    uint64_t startTsc = 1000000000;  // virtual TSC of the first packet
};

struct PtEncoderStats {
    uint64_t bytes = 0;  // in finished chunks (PtFlowEncoder::bytes() adds the open one)
    uint64_t chunks = 0;
    uint64_t psb = 0, tnt = 0, tip = 0, tipPge = 0, tipPgd = 0, fup = 0, mtc = 0, tsc = 0, mode = 0;
    uint64_t compressedReturns = 0, uncompressedReturns = 0;
};

class PtFlowEncoder {
public:
    // Receives each finished chunk (starting with a PSB); a returned error stops the encoder.
    using ChunkSink = std::function<Expected<void>(std::span<const uint8_t> chunk)>;

    PtFlowEncoder(const PtEncoderOptions& options, ChunkSink sink);
    ~PtFlowEncoder();
    PtFlowEncoder(const PtFlowEncoder&) = delete;
    PtFlowEncoder& operator=(const PtFlowEncoder&) = delete;

    // Time passes: `n` instructions retired (one TSC tick each) / `ticks` outside user space.
    void retire(uint64_t n) { tsc_ += n; }
    void addTime(uint64_t ticks) { tsc_ += ticks; }

    // Tracing (re)starts at `ip` (the next instruction to execute): TIP.PGE, with a
    // standalone TSC (and TMA) before it when `withTsc` (so a decoder has exact time after a
    // gap in which side-band, e.g. a new mapping, happened).
    void enable(uint64_t ip, bool withTsc = false);
    // A conditional branch retired; `nextIp` is where execution goes on.
    void conditional(bool taken, uint64_t nextIp) {
        reserve();
        timing();
        tntBit(taken);
        maybePsb(nextIp);
    }
    // A direct near call (no packet; remembered for return compression). A call
    // to the very next instruction (position-independent code getting its IP)
    // is not pushed, as decoders do not push it either.
    void directCall(uint64_t returnIp, uint64_t target) {
        if (target != returnIp) push(returnIp);
    }
    void indirectCall(uint64_t returnIp, uint64_t target);
    void indirectJump(uint64_t target);
    void ret(uint64_t target) {
        if (options_.retCompression && stackSize_ && stack_[(stackTop_ - 1) & 63] == target) {
            reserve();
            timing();
            stackTop_ = (stackTop_ - 1) & 63;
            --stackSize_;
            tntBit(true);
            ++stats_.compressedReturns;
            maybePsb(target);
        } else {
            uncompressedRet(target);
        }
    }
    // SYSCALL/SYSENTER/INT n: control leaves user space, TIP.PGD without an IP.
    void farTransferOut();
    // Tracing stops before the instruction at `ip` executes (an interrupt or
    // signal taken there, or the end of the capture): FUP(ip) + TIP.PGD.
    void asyncDisable(uint64_t ip);
    // An asynchronous transfer that stays in traced code: FUP(from) + TIP(to).
    void asyncBranch(uint64_t from, uint64_t to);

    // Emits the open chunk. Call once at the end.
    void finish();
    // Called with the TSC of every PSB+ as it is emitted (before the instruction
    // it precedes runs): the truth records where each sync point falls.
    void setPsbObserver(std::function<void(uint64_t tsc)> observer) { psbObserver_ = std::move(observer); }

    bool enabled() const { return enabled_; }
    uint64_t tsc() const { return tsc_; }
    uint64_t bytes() const { return stats_.bytes + offset_; }
    const PtEncoderStats& stats() const { return stats_; }
    bool ok() const { return error_.empty(); }
    Error error() const { return makeError(error_); }
    const PtEncoderOptions& options() const { return options_; }

private:
    void put(const pt_packet& packet);
    void putIp(pt_packet_type type, uint64_t ip);
    void putIpSuppressed(pt_packet_type type);
    // The generator calls the inline paths below billions of times; the rare
    // slow paths (packets, growth, PSB) stay out of line.
    void tntBit(bool taken) {
        tntBits_ = uint8_t((tntBits_ << 1) | (taken ? 1 : 0));  // oldest bit ends up highest
        if (++tntCount_ == 6) flushTnt();
    }
    void flushTnt();
    void timing() {
        if (options_.mtc && tsc_ >= nextMtcTsc_) mtc();
    }
    void mtc();
    // The next MTC at the first crystal-clock edge after `tsc` (none for the edges before).
    void skipMtcTo(uint64_t tsc);
    void tma();
    void uncompressedRet(uint64_t target);
    void psbPlus(uint64_t ip);
    void maybePsb(uint64_t nextIp) {
        if (offset_ - lastPsb_ >= options_.psbPeriod) psbPlus(nextIp);
    }
    void cutChunk();
    // The most one event emits (PSB+ plus a TNT, MTC, FUP and TIP), with room to spare.
    static constexpr size_t kHeadroom = 256;
    void reserve() {
        if (offset_ + kHeadroom > buffer_.size()) grow();
    }
    void grow();
    void push(uint64_t returnIp) {
        stack_[stackTop_] = returnIp;
        stackTop_ = (stackTop_ + 1) & 63;
        if (stackSize_ < 64) ++stackSize_;
    }
    void fail(const std::string& what);

    PtEncoderOptions options_;
    ChunkSink sink_;
    std::function<void(uint64_t)> psbObserver_;
    std::vector<uint8_t> buffer_;
    pt_encoder* encoder_ = nullptr;
    pt_config config_{};
    std::string error_;
    PtEncoderStats stats_;

    bool enabled_ = false;
    bool modeSent_ = false;
    uint64_t tsc_ = 0;
    uint64_t offset_ = 0;   // write position in buffer_ (libipt's encoder offset, tracked here)
    uint64_t lastIp_ = 0;   // IP compression reference (reset by PSB)
    uint64_t lastPsb_ = 0;  // offset of the last PSB in the open chunk
    uint64_t nextMtcTsc_ = 0;
    uint8_t tntBits_ = 0, tntCount_ = 0;
    // Return compression: the call stack as decoders keep it (push on every near
    // call, pop on a compressed return only), at most 64 deep like libipt's, and
    // emptied at PSB and whenever tracing stops (perf clears its stack at PSB;
    // starting empty is always safe: a return not compressed is a TIP, which
    // every decoder accepts without touching its stack).
    uint64_t stack_[64];
    unsigned stackTop_ = 0, stackSize_ = 0;
};

}  // namespace auxscope::ptsynth
