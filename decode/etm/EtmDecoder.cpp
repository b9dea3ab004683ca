// SPDX-License-Identifier: GPL-3.0-or-later
#include "etm/EtmDecoder.h"

#include <opencsd/c_api/opencsd_c_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace auxscope::etm {

namespace {

// ETMv3 and PTM take the same four registers in OpenCSD structs of different types.
template <class Config>
Config etmV3Like(const EtmSourceConfig& s, ocsd_arch_version_t arch, ocsd_core_profile_t profile) {
    Config c{};
    c.reg_idr = s.etmidr;
    c.reg_ctrl = s.etmcr;
    c.reg_ccer = s.etmccer;
    c.reg_trc_id = s.etmtraceidr;
    c.arch_ver = arch;
    c.core_prof = profile;
    return c;
}

// OpenCSD's decoder registry, its map of trees and its default error logger are
// process-wide and set up lazily: creating and destroying trees and reading the
// last error are serialised.
std::mutex& openCsdMutex() {
    static std::mutex m;
    return m;
}

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string ocsdErrorName(ocsd_err_t err) {
    char buf[256] = {};
    ocsd_err_str(err, buf, sizeof buf);
    return buf;
}

const char* respName(ocsd_datapath_resp_t r) {
    switch (r) {
        case OCSD_RESP_FATAL_NOT_INIT:
            return "decoder not initialised";
        case OCSD_RESP_FATAL_INVALID_OP:
            return "invalid data path operation";
        case OCSD_RESP_FATAL_INVALID_PARAM:
            return "invalid parameter";
        case OCSD_RESP_FATAL_INVALID_DATA:
            return "invalid trace data";
        case OCSD_RESP_FATAL_SYS_ERR:
            return "internal error";
        default:
            return "error";
    }
}

// An enum field of an OpenCSD element as the integer it holds: OpenCSD leaves
// fields an element type does not use uninitialised (an ETMv3 NO_SYNC's ISA),
// and loading an out-of-range value as the enum type is undefined.
template <typename E>
uint32_t raw(const E& field) {
    static_assert(sizeof(E) == sizeof(uint32_t));
    uint32_t v;
    std::memcpy(&v, &field, sizeof v);
    return v;
}

ocsd_trace_protocol_t ocsdProtocol(EtmProtocol p) {
    switch (p) {
        case EtmProtocol::EtmV3:
            return OCSD_PROTOCOL_ETMV3;
        case EtmProtocol::Ptm:
            return OCSD_PROTOCOL_PTM;
        case EtmProtocol::EtmV4:
            return OCSD_PROTOCOL_ETMV4I;
        case EtmProtocol::Ete:
            return OCSD_PROTOCOL_ETE;
        case EtmProtocol::Stm:
            return OCSD_PROTOCOL_STM;
    }
    return OCSD_PROTOCOL_UNKNOWN;
}

}  // namespace

struct EtmDecoder::Impl {
    struct Source {
        Impl* impl = nullptr;
        uint8_t traceId = 0;
        ocsd_trace_protocol_t protocol = OCSD_PROTOCOL_UNKNOWN;
    };

    dcd_tree_handle_t tree = C_API_INVALID_TREE_HANDLE;
    EtmMemory* memory = nullptr;
    // The image bytes onMemory() copied from last (EtmMemory::view).
    struct View {
        uint64_t begin = 0, end = 0;
        const uint8_t* data = nullptr;
        uint64_t version = 0;
        uint8_t space = 0, traceId = 0;
    } view;
    EtmElementSink* elements = nullptr;
    EtmPacketSink* packets = nullptr;
    std::vector<std::unique_ptr<Source>> sources;
    uint64_t base = 0;     // the caller's offset of OpenCSD's index 0
    uint64_t next = 0;     // the caller's offset the next feed() continues at
    bool started = false;  // bytes fed since the last reset
    bool broken = false;   // a fatal error: reset() before more
    // Frame-formatted input goes to OpenCSD in whole frames (16 bytes, 4 with
    // FSYNCs): the tail of a feed that ends inside one waits for the next feed.
    uint32_t unit = 1;
    uint8_t pending[16];
    uint32_t pendingSize = 0;
    char text[1024];

    ~Impl() {
        // The C API keeps every tree in a process-wide map: destroying one while
        // another thread creates one corrupts it.
        if (tree == C_API_INVALID_TREE_HANDLE) return;
        std::lock_guard lock(openCsdMutex());
        ocsd_destroy_dcd_tree(tree);
    }

    static ocsd_datapath_resp_t onElement(const void* ctx, const ocsd_trc_index_t index,
                                          const uint8_t traceId, const ocsd_generic_trace_elem* e) {
        auto* self = static_cast<Impl*>(const_cast<void*>(ctx));
        if (!self->elements) return OCSD_RESP_CONT;
        EtmElement x;
        x.index = self->base + index;
        x.traceId = traceId;
        x.isa = raw(e->isa) <= ocsd_isa_unknown ? static_cast<EtmIsa>(raw(e->isa)) : EtmIsa::Unknown;
        switch (raw(e->elem_type)) {
            case OCSD_GEN_TRC_ELEM_INSTR_RANGE:
                if (e->en_addr < e->st_addr) {
                    // OpenCSD 1.3.3's ETMv3 decoder can hand on a range that ends
                    // before it starts (0 instructions, a stale end: etm_fuzzer,
                    // tests/fuzz/etm_fuzzer-crashes/etmv3-range-ends-before-start).
                    // Not a range: said as a decode error, its cycles kept.
                    char m[160];
                    std::snprintf(m, sizeof m,
                                  "OpenCSD gave an instruction range that ends before it starts "
                                  "(0x%llx-0x%llx, %u instructions): not decoded",
                                  static_cast<unsigned long long>(e->st_addr),
                                  static_cast<unsigned long long>(e->en_addr), e->num_instr_range);
                    self->elements->decodeError(x.index, traceId, m);
                    if (!e->has_cc) return OCSD_RESP_CONT;
                    x.kind = EtmElementKind::CycleCount;
                    x.hasCycles = true;
                    x.cycles = e->cycle_count;
                    break;
                }
                x.kind = EtmElementKind::InstrRange;
                x.start = e->st_addr;
                x.end = e->en_addr;
                x.instructions = e->num_instr_range;
                x.lastSize = static_cast<uint8_t>(e->last_instr_sz);
                x.lastAddr = e->en_addr - e->last_instr_sz;
                x.lastType = raw(e->last_i_type) <= OCSD_INSTR_TSTART
                                 ? static_cast<EtmInstrType>(raw(e->last_i_type))
                                 : EtmInstrType::Other;
                x.lastSubtype = raw(e->last_i_subtype) <= OCSD_S_INSTR_V7_IMPLIED_RET
                                    ? static_cast<EtmInstrSubtype>(raw(e->last_i_subtype))
                                    : EtmInstrSubtype::None;
                x.lastExecuted = e->last_instr_exec;
                x.lastConditional = e->last_instr_cond;
                x.hasCycles = e->has_cc;
                x.cycles = e->cycle_count;
                break;
            case OCSD_GEN_TRC_ELEM_I_RANGE_NOPATH:
                x.kind = EtmElementKind::RangeNoPath;
                x.start = e->st_addr;
                x.end = e->en_addr;
                x.instructions = e->num_instr_range;
                break;
            case OCSD_GEN_TRC_ELEM_ADDR_NACC:
                x.kind = EtmElementKind::AddrNacc;
                x.start = e->st_addr;
                break;
            case OCSD_GEN_TRC_ELEM_ADDR_UNKNOWN:
                x.kind = EtmElementKind::AddrUnknown;
                break;
            case OCSD_GEN_TRC_ELEM_EXCEPTION:
                x.kind = EtmElementKind::Exception;
                x.start = e->st_addr;
                x.end = e->en_addr;
                x.returnAddrValid = e->excep_ret_addr;
                x.number = e->exception_number;
                break;
            case OCSD_GEN_TRC_ELEM_EXCEPTION_RET:
                x.kind = EtmElementKind::ExceptionReturn;
                break;
            case OCSD_GEN_TRC_ELEM_TRACE_ON:
                x.kind = EtmElementKind::TraceOn;
                x.number = raw(e->trace_on_reason);
                break;
            case OCSD_GEN_TRC_ELEM_NO_SYNC:
                x.kind = EtmElementKind::NoSync;
                x.number = raw(e->unsync_eot_info);
                break;
            case OCSD_GEN_TRC_ELEM_EO_TRACE:
                x.kind = EtmElementKind::EndOfTrace;
                x.number = raw(e->unsync_eot_info);
                break;
            case OCSD_GEN_TRC_ELEM_PE_CONTEXT:
                x.kind = EtmElementKind::PeContext;
                x.contextId = e->context.context_id;
                x.vmid = e->context.vmid;
                x.contextIdValid = e->context.ctxt_id_valid;
                x.vmidValid = e->context.vmid_valid;
                x.bits64 = e->context.bits64;
                x.secure = raw(e->context.security_level) == ocsd_sec_secure;
                x.exceptionLevel =
                    e->context.el_valid ? static_cast<int8_t>(raw(e->context.exception_level)) : -1;
                break;
            case OCSD_GEN_TRC_ELEM_TIMESTAMP:
                x.kind = EtmElementKind::Timestamp;
                x.timestamp = e->timestamp;
                x.hasCycles = e->has_cc;
                x.cycles = e->cycle_count;
                break;
            case OCSD_GEN_TRC_ELEM_CYCLE_COUNT:
                x.kind = EtmElementKind::CycleCount;
                x.hasCycles = true;
                x.cycles = e->cycle_count;
                break;
            case OCSD_GEN_TRC_ELEM_EVENT:
                x.kind = EtmElementKind::Event;
                x.number = e->trace_event.ev_number;
                break;
            case OCSD_GEN_TRC_ELEM_SWTRACE:
                x.kind = EtmElementKind::SwTrace;
                break;
            default:
                x.kind = EtmElementKind::Other;
                break;
        }
        self->elements->element(x);
        return OCSD_RESP_CONT;
    }

    static uint32_t onMemory(const void* ctx, const ocsd_vaddr_t address, const ocsd_mem_space_acc_t space,
                             const uint8_t traceId, const uint32_t size, uint8_t* out) {
        auto* self = static_cast<Impl*>(const_cast<void*>(ctx));
        if (!self->memory || size == 0) return 0;
        // OpenCSD 1.3.3 reads through a cache of 256-byte pages: this is called
        // for every page it misses (~200,000 times for 7.6 M instructions of
        // cc1), so the last image view is kept and copied from directly.
        View& v = self->view;
        const auto sp = static_cast<uint8_t>(space);
        if (!(address >= v.begin && address < v.end && sp == v.space && traceId == v.traceId &&
              v.version == self->memory->version())) {
            const std::span<const uint8_t> bytes = self->memory->view(address, traceId, sp);
            if (bytes.empty()) {
                v.end = v.begin;
                const size_t n = self->memory->read(address, traceId, sp, std::span<uint8_t>(out, size));
                return static_cast<uint32_t>(n > size ? size : n);
            }
            v = {address, address + bytes.size(), bytes.data(), self->memory->version(), sp, traceId};
        }
        const uint64_t n = std::min<uint64_t>(size, v.end - address);
        std::memcpy(out, v.data + (address - v.begin), size_t(n));
        return static_cast<uint32_t>(n);
    }

    static void printPacket(Source* s, ocsd_datapath_op_t op, ocsd_trc_index_t index, const void* packet) {
        Impl* self = s->impl;
        if (op == OCSD_OP_EOT) {
            self->packets->endOfTrace(s->traceId);
            return;
        }
        if (op != OCSD_OP_DATA || !packet) return;
        self->text[0] = 0;
        if (ocsd_pkt_str(s->protocol, packet, self->text, sizeof self->text) != OCSD_OK)
            std::snprintf(self->text, sizeof self->text, "(packet OpenCSD cannot print)");
        self->packets->packet(s->traceId, self->base + index, self->text);
    }
    static ocsd_datapath_resp_t onPacket(const void* ctx, const ocsd_datapath_op_t op,
                                         const ocsd_trc_index_t index, const void* packet) {
        printPacket(static_cast<Source*>(const_cast<void*>(ctx)), op, index, packet);
        return OCSD_RESP_CONT;
    }
    static void onPacketMonitor(const void* ctx, const ocsd_datapath_op_t op, const ocsd_trc_index_t index,
                                const void* packet, const uint32_t, const uint8_t*) {
        printPacket(static_cast<Source*>(const_cast<void*>(ctx)), op, index, packet);
    }

    // OpenCSD logged an error it carries on after: pass its message on.
    void reportLastError() {
        if (!elements) return;
        ocsd_trc_index_t index = 0;
        uint8_t chan = 0;
        char msg[512] = {};
        ocsd_err_t err;
        {
            std::lock_guard lock(openCsdMutex());
            err = ocsd_get_last_err(&index, &chan, msg, sizeof msg);
        }
        if (err == OCSD_OK) return;
        elements->decodeError(index == OCSD_BAD_TRC_INDEX ? base : base + index,
                              chan == OCSD_BAD_CS_SRC_ID ? 0 : chan,
                              msg[0] ? std::string_view(msg) : std::string_view(ocsdErrorName(err)));
    }

    // Hands `bytes` (at the caller's offset `index`) to OpenCSD.
    Expected<void> process(uint64_t index, std::span<const uint8_t> bytes) {
        size_t done = 0;
        for (int stalls = 0; done < bytes.size();) {
            const auto chunk = static_cast<uint32_t>(bytes.size() - done);
            uint32_t used = 0;
            const auto at = static_cast<ocsd_trc_index_t>(index - base + done);
            const ocsd_datapath_resp_t r =
                ocsd_dt_process_data(tree, OCSD_OP_DATA, at, chunk, bytes.data() + done, &used);
            if (used > chunk) used = chunk;
            done += used;
            if (OCSD_DATA_RESP_IS_FATAL(r)) return fatal(r, index + done, "decode");
            if (OCSD_DATA_RESP_IS_ERR(r)) reportLastError();
            if (OCSD_DATA_RESP_IS_WAIT(r)) {
                if (auto f = op(OCSD_OP_FLUSH, "flush"); !f) return f;
            } else if (used == 0 && ++stalls > 16) {
                return makeError("offset " + hex(index + done) + ": OpenCSD takes no more bytes");
            }
        }
        return {};
    }

    Expected<void> fatal(ocsd_datapath_resp_t resp, uint64_t at, const char* what) {
        broken = true;
        ocsd_trc_index_t index = 0;
        uint8_t chan = 0;
        char msg[512] = {};
        {
            std::lock_guard lock(openCsdMutex());
            (void)ocsd_get_last_err(&index, &chan, msg, sizeof msg);
        }
        std::string m = "offset " + hex(at) + ": OpenCSD " + what + ": " + respName(resp);
        if (msg[0]) m += std::string(" (") + msg + ")";
        return makeError(m);
    }

    // Runs a non-data operation, waiting out OpenCSD's WAIT responses.
    Expected<void> op(ocsd_datapath_op_t o, const char* what) {
        for (int i = 0; i < 1000000; ++i) {
            uint32_t used = 0;
            const ocsd_datapath_resp_t r = ocsd_dt_process_data(tree, o, 0, 0, nullptr, &used);
            if (OCSD_DATA_RESP_IS_FATAL(r)) return fatal(r, next, what);
            if (OCSD_DATA_RESP_IS_ERR(r)) reportLastError();
            if (!OCSD_DATA_RESP_IS_WAIT(r)) return {};
            if (o != OCSD_OP_FLUSH) o = OCSD_OP_FLUSH;  // a WAIT is resolved by flushing
        }
        return makeError("offset " + hex(next) + ": OpenCSD " + what + " does not finish");
    }
};

Expected<std::unique_ptr<EtmDecoder>> EtmDecoder::create(std::span<const EtmSourceConfig> sources,
                                                         const EtmDecoderOptions& options, EtmMemory* memory,
                                                         EtmElementSink* elements, EtmPacketSink* packets) {
    if (sources.empty()) return makeError("no trace source to decode");
    if (options.input == EtmInput::Raw && sources.size() != 1)
        return makeError("raw (unformatted) trace holds one source, " + std::to_string(sources.size()) +
                         " given");
    if (!options.packetsOnly && !elements) return makeError("a full decode needs an element sink");
    for (size_t i = 0; i < sources.size(); ++i) {
        const uint8_t id = sources[i].traceId();
        if (options.input != EtmInput::Raw && (id == 0 || id >= 0x70))
            return makeError(sources[i].describe() + ": trace ID outside 0x01..0x6f");
        for (size_t j = 0; j < i; ++j)
            if (sources[j].traceId() == id)
                return makeError("two sources with trace ID " + hex(id) + ": " + sources[j].describe() +
                                 ", " + sources[i].describe());
    }

    std::unique_ptr<EtmDecoder> d(new EtmDecoder());
    d->sources_.assign(sources.begin(), sources.end());
    d->impl_ = std::make_unique<Impl>();
    Impl& impl = *d->impl_;
    impl.memory = memory;
    impl.elements = elements;
    impl.packets = packets;

    std::lock_guard lock(openCsdMutex());
    uint32_t flags = 0;
    ocsd_dcd_tree_src_t srcType = OCSD_TRC_SRC_FRAME_FORMATTED;
    switch (options.input) {
        case EtmInput::Formatted:
            flags = OCSD_DFRMTR_FRAME_MEM_ALIGN;
            break;
        case EtmInput::FormattedFsync:
            flags = OCSD_DFRMTR_HAS_FSYNCS;
            break;
        case EtmInput::Raw:
            srcType = OCSD_TRC_SRC_SINGLE;
            break;
    }
    impl.unit = options.input == EtmInput::Formatted ? 16 : options.input == EtmInput::FormattedFsync ? 4 : 1;
    if (options.resetOn4xFsync && srcType == OCSD_TRC_SRC_FRAME_FORMATTED)
        flags |= OCSD_DFRMTR_RESET_ON_4X_FSYNC;
    impl.tree = ocsd_create_dcd_tree(srcType, flags);
    if (impl.tree == C_API_INVALID_TREE_HANDLE) return makeError("OpenCSD cannot create a decode tree");
    if (srcType == OCSD_TRC_SRC_FRAME_FORMATTED) {
        // OpenCSD's frame deformatter (TraceFmtDcdImpl, 1.3.3 and still 1.8)
        // leaves the two counters of the frame it is handing on (m_out_data_idx,
        // m_out_processed) uninitialised until it unpacks its first frame, and
        // neither its constructor nor a reset sets them: a flush before that
        // frame (a decoder fed fewer than 16 bytes, or only FSYNCs, or nothing)
        // hands on whatever the heap held there, an index into its 7-entry
        // array: a read past it, a crash or a hang, depending on what was freed
        // there before (etm_fuzzer found it only after thousands of inputs).
        // One frame of zeros, all data for no trace ID yet, sets both for good;
        // the reset then starts the deformatter over as if it had been fed
        // nothing. Here, before any decoder is attached: the frame reaches
        // none, and the reset none (a packet processor without an output
        // refuses operations). FSYNC-delimited input needs an FSYNC first to
        // find the frame.
        const uint8_t frame[20] = {0xff, 0xff, 0xff, 0x7f};  // an FSYNC, then 16 zeros
        const bool fsync = options.input == EtmInput::FormattedFsync;
        const uint32_t size = fsync ? 20 : 16;
        uint32_t used = 0;
        const ocsd_datapath_resp_t r =
            ocsd_dt_process_data(impl.tree, OCSD_OP_DATA, 0, size, fsync ? frame : frame + 4, &used);
        const ocsd_datapath_resp_t reset =
            ocsd_dt_process_data(impl.tree, OCSD_OP_RESET, 0, 0, nullptr, &used);
        if (!OCSD_DATA_RESP_IS_CONT(r) || used != size || !OCSD_DATA_RESP_IS_CONT(reset))
            return makeError("OpenCSD cannot set up the frame deformatter: " +
                             std::string(respName(OCSD_DATA_RESP_IS_CONT(r) ? reset : r)));
    }

    const int createFlags = options.packetsOnly ? OCSD_CREATE_FLG_PACKET_PROC : OCSD_CREATE_FLG_FULL_DECODER;
    for (const auto& s : d->sources_) {
        ocsd_err_t err = OCSD_OK;
        unsigned char csid = 0;
        const auto arch = static_cast<ocsd_arch_version_t>(s.core.arch);
        const auto prof = static_cast<ocsd_core_profile_t>(s.core.profile);
        if (s.protocol != EtmProtocol::Stm && !s.core.known())
            return makeError(s.describe() + ": the core's architecture is unknown");
        switch (s.protocol) {
            case EtmProtocol::EtmV3: {
                ocsd_etmv3_cfg c = etmV3Like<ocsd_etmv3_cfg>(s, arch, prof);
                err = ocsd_dt_create_decoder(impl.tree, OCSD_BUILTIN_DCD_ETMV3, createFlags, &c, &csid);
                break;
            }
            case EtmProtocol::Ptm: {
                ocsd_ptm_cfg c = etmV3Like<ocsd_ptm_cfg>(s, arch, prof);
                err = ocsd_dt_create_decoder(impl.tree, OCSD_BUILTIN_DCD_PTM, createFlags, &c, &csid);
                break;
            }
            case EtmProtocol::EtmV4: {
                ocsd_etmv4_cfg c{};
                c.reg_idr0 = s.trcidr0;
                c.reg_idr1 = s.trcidr1;
                c.reg_idr2 = s.trcidr2;
                c.reg_idr8 = s.trcidr8;
                c.reg_idr9 = s.trcidr9;
                c.reg_idr10 = s.trcidr10;
                c.reg_idr11 = s.trcidr11;
                c.reg_idr12 = s.trcidr12;
                c.reg_idr13 = s.trcidr13;
                c.reg_configr = s.trcconfigr;
                c.reg_traceidr = s.trctraceidr;
                c.arch_ver = arch;
                c.core_prof = prof;
                err = ocsd_dt_create_decoder(impl.tree, OCSD_BUILTIN_DCD_ETMV4I, createFlags, &c, &csid);
                break;
            }
            case EtmProtocol::Ete: {
                ocsd_ete_cfg c{};
                c.reg_idr0 = s.trcidr0;
                c.reg_idr1 = s.trcidr1;
                c.reg_idr2 = s.trcidr2;
                c.reg_idr8 = s.trcidr8;
                c.reg_devarch = s.trcdevarch;
                c.reg_configr = s.trcconfigr;
                c.reg_traceidr = s.trctraceidr;
                c.arch_ver = arch;
                c.core_prof = prof;
                err = ocsd_dt_create_decoder(impl.tree, OCSD_BUILTIN_DCD_ETE, createFlags, &c, &csid);
                break;
            }
            case EtmProtocol::Stm: {
                ocsd_stm_cfg c{};
                c.reg_tcsr = s.stmtcsr;
                err = ocsd_dt_create_decoder(impl.tree, OCSD_BUILTIN_DCD_STM, createFlags, &c, &csid);
                break;
            }
        }
        if (err != OCSD_OK)
            return makeError(s.describe() + ": OpenCSD cannot create its decoder: " + ocsdErrorName(err));
        auto src = std::make_unique<Impl::Source>();
        src->impl = &impl;
        src->traceId = csid;
        src->protocol = ocsdProtocol(s.protocol);
        if (packets) {
            err = options.packetsOnly
                      ? ocsd_dt_attach_packet_callback(impl.tree, csid, OCSD_C_API_CB_PKT_SINK,
                                                       reinterpret_cast<void*>(&Impl::onPacket), src.get())
                      : ocsd_dt_attach_packet_callback(impl.tree, csid, OCSD_C_API_CB_PKT_MON,
                                                       reinterpret_cast<void*>(&Impl::onPacketMonitor),
                                                       src.get());
            if (err != OCSD_OK)
                return makeError(s.describe() +
                                 ": OpenCSD cannot attach the packet printer: " + ocsdErrorName(err));
        }
        impl.sources.push_back(std::move(src));
    }
    if (!options.packetsOnly) {
        ocsd_err_t err = ocsd_dt_set_gen_elem_outfn(impl.tree, &Impl::onElement, &impl);
        if (err == OCSD_OK)
            err = ocsd_dt_add_callback_trcid_mem_acc(impl.tree, 0, ~0ull, OCSD_MEM_SPACE_ANY, &Impl::onMemory,
                                                     &impl);
        if (err != OCSD_OK) return makeError("OpenCSD cannot set up the decode tree: " + ocsdErrorName(err));
    }
    return d;
}

EtmDecoder::~EtmDecoder() = default;

Expected<void> EtmDecoder::feed(uint64_t index, std::span<const uint8_t> bytes) {
    Impl& impl = *impl_;
    if (impl.broken)
        return makeError("offset " + hex(index) + ": the decoder failed before; reset() it first");
    if (!impl.started) {
        impl.base = index;
        impl.next = index;
        impl.started = true;
    }
    if (index != impl.next)
        return makeError("offset " + hex(index) + ": trace does not continue where the last bytes ended (" +
                         hex(impl.next) + "); reset() the decoder before a discontinuity");
    // OpenCSD indexes with 32 bits here: a stream longer than 4 GiB needs a reset() in between.
    if (index - impl.base + bytes.size() > 0xffffffffull)
        return makeError("offset " + hex(index) + ": more than 4 GiB since the last reset()");
    impl.next = index + bytes.size();
    bytesFed_ += bytes.size();
    // Complete a frame held back from the last feed.
    if (impl.pendingSize) {
        const uint64_t at = index - impl.pendingSize;
        const size_t take = std::min<size_t>(impl.unit - impl.pendingSize, bytes.size());
        std::memcpy(impl.pending + impl.pendingSize, bytes.data(), take);
        impl.pendingSize += static_cast<uint32_t>(take);
        bytes = bytes.subspan(take);
        index += take;
        if (impl.pendingSize < impl.unit) return {};
        impl.pendingSize = 0;
        if (auto r = impl.process(at, std::span<const uint8_t>(impl.pending, impl.unit)); !r) return r;
    }
    const size_t whole = bytes.size() - bytes.size() % impl.unit;
    if (auto r = impl.process(index, bytes.first(whole)); !r) return r;
    impl.pendingSize = static_cast<uint32_t>(bytes.size() - whole);
    std::memcpy(impl.pending, bytes.data() + whole, impl.pendingSize);
    return {};
}

Expected<void> EtmDecoder::flush() {
    if (impl_->broken)
        return makeError("offset " + hex(impl_->next) + ": the decoder failed before; reset() it first");
    return impl_->op(OCSD_OP_FLUSH, "flush");
}

Expected<void> EtmDecoder::finish() {
    if (impl_->broken)
        return makeError("offset " + hex(impl_->next) + ": the decoder failed before; reset() it first");
    return impl_->op(OCSD_OP_EOT, "end of trace");
}

Expected<void> EtmDecoder::reset(uint64_t index) {
    Impl& impl = *impl_;
    impl.broken = false;
    auto r = impl.op(OCSD_OP_RESET, "reset");
    impl.broken = false;
    impl.started = false;
    impl.pendingSize = 0;
    impl.base = impl.next = index;
    return r;
}

}  // namespace auxscope::etm
