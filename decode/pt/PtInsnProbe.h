// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The block decoder reports a block as first IP, last IP and instruction count.
// Listing the instructions in between needs each one's length and, for the
// direct jumps and calls a block follows, their targets. Both come from libipt
// itself: a private instruction decoder, started at the block's first IP by a
// four-packet trace of its own (PSB, MODE.EXEC, FUP with the IP, PSBEND), walks
// the same image. Inside a block every instruction but the last is a non-branch
// or a direct jump/call, which libipt follows without trace. So the walk knows
// every instruction libipt knows (EVEX/AVX-512, ...), where a disassembler of
// an older generation (capstone 4) would lose its way.
//
// Used by PtInsnFlow (ptxed's instruction lines) and PtSession (where a block
// of libipt's default flags, which runs through direct calls and jumps, changes
// function: see PtSpanDecoder.cpp).
#include <intel-pt.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace auxscope {

class InsnProbe {
public:
    explicit InsnProbe(const pt_config& base) {
        pt_config config;
        pt_config_init(&config);
        config.cpu = base.cpu;
        config.errata = base.errata;
        config.begin = trace_;
        config.end = trace_ + sizeof trace_;
        encoder_ = pt_alloc_encoder(&config);
        decoder_ = pt_insn_alloc_decoder(&config);
    }
    ~InsnProbe() {
        pt_insn_free_decoder(decoder_);
        pt_free_encoder(encoder_);
    }
    InsnProbe(const InsnProbe&) = delete;
    InsnProbe& operator=(const InsnProbe&) = delete;

    struct Walk {
        std::vector<pt_insn> insns;  // decoded, in execution order
        int status = 0;              // why fewer than asked for came back
        uint64_t stoppedAt = 0;      // the IP that could not be decoded then (0: unknown)
    };

    // Up to `count` instructions from `ip` in `mode`, as libipt decodes them from `image`.
    Walk walk(pt_image* image, uint64_t ip, pt_exec_mode mode, size_t count) {
        Walk walk;
        walk.stoppedAt = ip;
        walk.status = start(image, ip, mode);
        while (walk.status >= 0 && walk.insns.size() < count) {
            pt_insn insn;
            std::memset(&insn, 0, sizeof insn);
            int status = pt_insn_next(decoder_, &insn, sizeof insn);
            // libipt hands out the instruction before finding where it leads; an
            // error after that (a branch needing trace) still leaves it decoded.
            if (status < 0 && insn.iclass == ptic_error) {
                walk.status = status;
                walk.stoppedAt = insn.ip;
                break;
            }
            walk.insns.push_back(insn);
            walk.status = status < 0 ? status : drain(status);
            walk.stoppedAt = 0;
        }
        if (walk.insns.size() == count) walk.status = 0;
        return walk;
    }

private:
    int start(pt_image* image, uint64_t ip, pt_exec_mode mode) {
        if (!encoder_ || !decoder_) return -pte_nomem;
        std::memset(trace_, 0, sizeof trace_);  // PAD after PSBEND: then the trace ends
        if (int err = pt_enc_sync_set(encoder_, 0); err < 0) return err;
        pt_packet packets[4];
        std::memset(packets, 0, sizeof packets);
        packets[0].type = ppt_psb;
        packets[1].type = ppt_mode;
        packets[1].payload.mode.leaf = pt_mol_exec;
        packets[1].payload.mode.bits.exec.csl = mode == ptem_64bit;
        packets[1].payload.mode.bits.exec.csd = mode == ptem_32bit;
        packets[2].type = ppt_fup;
        packets[2].payload.ip.ipc = pt_ipc_full;
        packets[2].payload.ip.ip = ip;
        packets[3].type = ppt_psbend;
        for (pt_packet& packet : packets)
            if (int err = pt_enc_next(encoder_, &packet); err < 0) return err;
        if (int err = pt_insn_set_image(decoder_, image); err < 0) return err;
        return drain(pt_insn_sync_set(decoder_, 0));
    }

    int drain(int status) {
        while (status >= 0 && (status & pts_event_pending)) {
            pt_event event;
            status = pt_insn_event(decoder_, &event, sizeof event);
        }
        return status;
    }

    uint8_t trace_[64];
    pt_encoder* encoder_ = nullptr;
    pt_insn_decoder* decoder_ = nullptr;
};

}  // namespace auxscope
