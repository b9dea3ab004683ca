// SPDX-License-Identifier: GPL-3.0-or-later
#include "etm/EtmElement.h"

namespace auxscope::etm {

const char* etmElementKindName(EtmElementKind kind) {
    switch (kind) {
        case EtmElementKind::InstrRange:
            return "instruction range";
        case EtmElementKind::RangeNoPath:
            return "range without path";
        case EtmElementKind::Exception:
            return "exception";
        case EtmElementKind::ExceptionReturn:
            return "exception return";
        case EtmElementKind::TraceOn:
            return "trace on";
        case EtmElementKind::NoSync:
            return "no sync";
        case EtmElementKind::AddrNacc:
            return "address not accessible";
        case EtmElementKind::AddrUnknown:
            return "address unknown";
        case EtmElementKind::PeContext:
            return "PE context";
        case EtmElementKind::Timestamp:
            return "timestamp";
        case EtmElementKind::CycleCount:
            return "cycle count";
        case EtmElementKind::Event:
            return "event";
        case EtmElementKind::SwTrace:
            return "software trace";
        case EtmElementKind::EndOfTrace:
            return "end of trace";
        case EtmElementKind::Other:
            return "other";
    }
    return "?";
}

const char* etmIsaName(EtmIsa isa) {
    switch (isa) {
        case EtmIsa::Arm:
            return "A32";
        case EtmIsa::Thumb2:
            return "T32";
        case EtmIsa::A64:
            return "A64";
        case EtmIsa::ThumbEE:
            return "TEE";
        case EtmIsa::Jazelle:
            return "Jazelle";
        case EtmIsa::Custom:
            return "custom";
        case EtmIsa::Unknown:
            return "unknown";
    }
    return "?";
}

const char* etmUnsyncReasonName(EtmUnsyncReason r) {
    switch (r) {
        case EtmUnsyncReason::Unknown:
            return "unknown";
        case EtmUnsyncReason::InitDecoder:
            return "start of trace";
        case EtmUnsyncReason::ResetDecoder:
            return "decoder reset";
        case EtmUnsyncReason::Overflow:
            return "overflow";
        case EtmUnsyncReason::Discard:
            return "trace discarded";
        case EtmUnsyncReason::BadPacket:
            return "bad packet";
        case EtmUnsyncReason::EndOfTrace:
            return "end of trace";
    }
    return "?";
}

}  // namespace auxscope::etm
