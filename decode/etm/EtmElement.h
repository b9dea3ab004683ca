// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One generic trace element from OpenCSD, compact and free of OpenCSD's types.
// A consumer turns them into the decoder-neutral flow (spans/FlowToSpans.h):
//   InstrRange       -> instructions(time, function(start..), instructions, etmBranchClass())
//   Exception        -> interrupt(time)   (ExceptionReturn ends the handler's frame via
//                                          the range before it: lastSubtype V8Eret)
//   TraceOn          -> end of an untraced stretch (reason Normal) or of an overflow
//   NoSync, Overflow/Discontinuity, AddrNacc, AddrUnknown -> gap(GapReason::...)
//   PeContext        -> switchThread (contextId = CONTEXTIDR, the kernel's pid)
//   Timestamp        -> the time base for what follows
//   EndOfTrace       -> finish()
#include <cstdint>

namespace auxscope::etm {

enum class EtmElementKind : uint8_t {
    InstrRange,       // instructions [start, end), `instructions` of them, last at lastAddr
    RangeNoPath,      // instructions ran in [start, end) but the path is unknown (ETE)
    Exception,        // exception taken: number; end = preferred return address (returnAddrValid)
    ExceptionReturn,  // exception return
    TraceOn,          // trace (re)starts: traceOnReason says why (normal/filtering, overflow, debug)
    NoSync,           // decoder not (or no longer) synchronised: unsyncReason
    AddrNacc,         // code at `start` could not be read (no memory image): nothing decoded from there
    AddrUnknown,      // the decoder lost the address (needs an address packet)
    PeContext,        // new PE context: contextId/vmid/exception level/security/64-bit
    Timestamp,        // timestamp (trace unit clock) in `timestamp`
    CycleCount,       // cycle count in `cycles`
    Event,            // trigger or numbered event in `number`
    SwTrace,          // software (STM/ITM) payload: not kept
    EndOfTrace,       // end of the data fed so far (flush/finish)
    Other,            // sync markers, memory transactions, custom
};
const char* etmElementKindName(EtmElementKind kind);

enum class EtmIsa : uint8_t { Arm, Thumb2, A64, ThumbEE, Jazelle, Custom, Unknown };
const char* etmIsaName(EtmIsa isa);  // "A32", "T32", "A64", "TEE", "Jazelle", "custom", "unknown"

// OpenCSD's ocsd_instr_type / ocsd_instr_subtype for a range's last instruction.
enum class EtmInstrType : uint8_t { Other, Branch, IndirectBranch, Isb, DsbDmb, WfiWfe, TStart };
enum class EtmInstrSubtype : uint8_t { None, BranchLink, V8Ret, V8Eret, V7ImpliedRet };

enum class EtmUnsyncReason : uint8_t {
    Unknown,
    InitDecoder,
    ResetDecoder,
    Overflow,
    Discard,
    BadPacket,
    EndOfTrace
};
const char* etmUnsyncReasonName(EtmUnsyncReason r);
enum class EtmTraceOnReason : uint8_t { Normal, Overflow, DebugExit };

struct EtmElement {
    uint64_t index = 0;      // byte offset (caller's) of the packet that produced the element
    uint64_t start = 0;      // range start / inaccessible address / exception return address
    uint64_t end = 0;        // range end (exclusive)
    uint64_t lastAddr = 0;   // address of the last instruction of a range
    uint64_t timestamp = 0;  // Timestamp elements
    uint32_t instructions = 0;
    uint32_t cycles = 0;     // cycle count (CycleCount, or a range with hasCycles)
    uint32_t number = 0;     // exception number, event number, or the raw unsync/trace-on reason
    uint32_t contextId = 0;  // PeContext (valid with contextIdValid)
    uint32_t vmid = 0;       // PeContext (valid with vmidValid)
    uint8_t traceId = 0;
    EtmElementKind kind = EtmElementKind::Other;
    EtmIsa isa = EtmIsa::Unknown;
    EtmInstrType lastType = EtmInstrType::Other;
    EtmInstrSubtype lastSubtype = EtmInstrSubtype::None;
    uint8_t lastSize = 0;       // bytes (2 or 4)
    bool lastExecuted = false;  // the last instruction's condition passed (a branch was taken)
    bool lastConditional = false;
    bool hasCycles = false;
    int8_t exceptionLevel = -1;  // PeContext: 0..3, -1 unknown
    bool secure = false;         // PeContext
    bool bits64 = false;         // PeContext
    bool contextIdValid = false;
    bool vmidValid = false;
    bool returnAddrValid = false;  // Exception: `end` is the preferred return address

    EtmUnsyncReason unsyncReason() const { return static_cast<EtmUnsyncReason>(number); }
    EtmTraceOnReason traceOnReason() const { return static_cast<EtmTraceOnReason>(number); }
};

// How a range's last instruction leaves it, the way perf's cs-etm reads it.
enum class EtmBranch : uint8_t {
    None,             // not a branch, or a branch not taken: falls through
    Jump,             // direct or indirect branch without link
    Call,             // branch with link (BL, BLR)
    Return,           // A64 RET, or an A32/T32 instruction that implies one (POP {..,pc}, MOV pc,lr)
    ExceptionReturn,  // ERET
};
// What the last instruction of an InstrRange did (None for any other element).
inline EtmBranch etmBranch(const EtmElement& r) {
    if (r.kind != EtmElementKind::InstrRange || !r.lastExecuted) return EtmBranch::None;
    switch (r.lastType) {
        case EtmInstrType::Branch:
            return r.lastSubtype == EtmInstrSubtype::BranchLink ? EtmBranch::Call : EtmBranch::Jump;
        case EtmInstrType::IndirectBranch:
            switch (r.lastSubtype) {
                case EtmInstrSubtype::BranchLink:
                    return EtmBranch::Call;
                case EtmInstrSubtype::V8Ret:
                case EtmInstrSubtype::V7ImpliedRet:
                    return EtmBranch::Return;
                case EtmInstrSubtype::V8Eret:
                    return EtmBranch::ExceptionReturn;
                case EtmInstrSubtype::None:
                    return EtmBranch::Jump;
            }
            return EtmBranch::Jump;
        default:
            return EtmBranch::None;
    }
}

}  // namespace auxscope::etm
