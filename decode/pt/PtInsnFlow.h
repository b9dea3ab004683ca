// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Instruction flow of an Intel PT trace with libipt: the code image (raw
// binaries at an address, ELF files by their program headers) plus the trace
// give every executed instruction's address and the events between them
// (enabled, disabled, interrupt, paging, tsx, ...). Printed in the line format of
// libipt's ptxed with --no-inst: one address per line, events as "[event]",
// decode errors as "[offset, ip: error: libipt error]". Instructions are not
// disassembled here; a later layer turns the same flow into spans.
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "Result.h"
#include "pt/PtConfig.h"
#include "pt/PtSideband.h"

struct pt_image;
struct pt_image_section_cache;

namespace auxscope {

// The memory the traced code ran from, as libipt sees it: sections of files
// mapped at virtual addresses. Owns libipt's image and section cache.
class PtImage {
public:
    PtImage();
    ~PtImage();
    PtImage(const PtImage&) = delete;
    PtImage& operator=(const PtImage&) = delete;

    // `size` bytes of `path` from `fileOffset` (0: to the end of the file) at `address`.
    Expected<void> addRaw(const std::string& path, uint64_t address, uint64_t fileOffset = 0,
                          uint64_t size = 0);
    // Every PT_LOAD segment with file content, at its p_vaddr; with `base`, the
    // lowest segment lands at `base` and the others keep their distance to it.
    Expected<void> addElf(const std::string& path, std::optional<uint64_t> base = std::nullopt);

    pt_image* image() const { return image_; }
    pt_image_section_cache* sectionCache() const { return cache_; }
    size_t sectionCount() const { return sections_; }

private:
    pt_image_section_cache* cache_ = nullptr;
    pt_image* image_ = nullptr;
    size_t sections_ = 0;
};

// ptxed's switches that change the flow or its lines (defaults: ptxed --no-inst).
struct PtInsnFlowOptions {
    enum class Decoder {
        Block,        // --block-decoder (ptxed's default): pt_block_decoder, faster
        Instruction,  // --insn-decoder: pt_insn_decoder, one call per instruction
    };
    Decoder decoder = Decoder::Block;
    bool quiet = false;          // --quiet: no instructions or events, only diagnostics (and stats)
    bool showOffset = false;     // --offset: trace offset before each line
    bool showTime = false;       // --time: the last event's TSC before each instruction
    bool check = false;          // --check: cross-check libipt's instruction class with a disassembler
    bool showEventTime = false;  // --event:time: the TSC on events that have one
    bool showEventIp = false;    // --event:ip: the IPs events carry
    bool tickEvents = false;     // --event:tick: ask libipt for tick events at timing packets
    bool showBlocks = false;     // --block:show-blocks: "[block]" before each block
    bool endOnCall = false;      // --block:end-on-call: blocks end at calls
    bool endOnJump = false;      // --block:end-on-jump: blocks end at direct jumps
    bool stats = false;          // --stat: print totals at the end
    bool statInsn = false;       // --stat:insn: total instructions (selects statistics)
    bool statBlocks = false;     // --stat:blocks: total blocks (selects statistics)
};

// Takes `flag` (with its `value`, which these switches have none of) if it is one
// of the flags above (ptxed's spelling; --no-inst is accepted and changes nothing
// since instructions are never disassembled); false for any other option.
Expected<bool> parsePtInsnFlowFlag(PtInsnFlowOptions& options, const std::string& flag,
                                   const std::optional<std::string>& value);

struct PtInsnFlowResult {
    uint64_t instructions = 0;
    uint64_t blocks = 0;  // block decoder only
    std::vector<PtDecodeIssue> issues;
    bool hasErrors() const;
};

// Decodes the whole trace, re-synchronising at the next PSB after an error as
// ptxed does. An error only when libipt refuses the configuration or image.
// With `sideband` (its MMAP sections in image's cache), its records are shown and
// applied at the events, and the decoder follows its process image switches.
Expected<PtInsnFlowResult> decodePtInsnFlow(const PtConfig& config, const PtImage& image,
                                            const PtInsnFlowOptions& options, std::ostream& out,
                                            PtSidebandSession* sideband = nullptr);

}  // namespace auxscope
