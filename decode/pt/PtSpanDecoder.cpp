// SPDX-License-Identifier: GPL-3.0-or-later
#include "pt/PtSpanDecoder.h"

#include <intel-pt.h>

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "pt/PtFlowWalker.h"
#include "pt/PtInsnProbe.h"

namespace auxscope {

BranchClass classifyX86Branch(const uint8_t* bytes, size_t size, bool is64Bit) {
    size_t i = 0;
    auto at = [&](size_t n) { return n < size ? int(bytes[n]) : -1; };
    for (;; ++i) {
        const int b = at(i);
        if (b >= 0 && ptwalk::isX86Prefix(uint8_t(b))) continue;
        break;
    }
    if (is64Bit && (at(i) & 0xf0) == 0x40) ++i;  // REX
    int op = at(i);
    if (op < 0) return BranchClass::Other;
    switch (op) {
        case 0xc3:
        case 0xc2:
            return BranchClass::Return;
        case 0xcb:
        case 0xca:
        case 0xcf:
            return BranchClass::FarReturn;
        case 0xe8:
            return BranchClass::Call;
        case 0x9a:
        case 0xcc:
        case 0xcd:
        case 0xce:
            return BranchClass::FarCall;
        case 0xe9:
        case 0xeb:
        case 0xe0:
        case 0xe1:
        case 0xe2:
        case 0xe3:
            return BranchClass::Jump;
        case 0xea:
            return BranchClass::FarJump;
        case 0x0f: {
            int op2 = at(i + 1);
            if (op2 == 0x05 || op2 == 0x34) return BranchClass::FarCall;    // syscall, sysenter
            if (op2 == 0x07 || op2 == 0x35) return BranchClass::FarReturn;  // sysret, sysexit
            if (op2 >= 0x80 && op2 <= 0x8f) return BranchClass::Jump;
            return BranchClass::Other;
        }
        case 0xff: {
            int modrm = at(i + 1);
            if (modrm < 0) return BranchClass::Other;
            switch ((modrm >> 3) & 7) {
                case 2:
                    return BranchClass::Call;
                case 3:
                    return BranchClass::FarCall;
                case 4:
                    return BranchClass::Jump;
                case 5:
                    return BranchClass::FarJump;
                default:
                    return BranchClass::Other;
            }
        }
        default:
            return (op >= 0x70 && op <= 0x7f) ? BranchClass::Jump : BranchClass::Other;
    }
}

namespace {

std::string hex(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%" PRIx64, v);
    return b;
}

BranchClass branchClassFromBytes(const pt_block& block, pt_image_section_cache* cache);

BranchClass branchClassOf(const pt_block& block, pt_image_section_cache* cache) {
    // libipt's block cache leaves the class of indirect branches and far
    // transfers open; the instruction's bytes tell them apart.
    if (block.iclass == ptic_error) return branchClassFromBytes(block, cache);
    return ptwalk::branchClassOf(block.iclass);
}

BranchClass branchClassFromBytes(const pt_block& block, pt_image_section_cache* cache) {
    uint8_t bytes[pt_max_insn_size];
    size_t size = 0;
    if (block.truncated) {
        size = block.size;
        std::memcpy(bytes, block.raw, size);
    } else if (block.isid > 0) {
        int n = pt_iscache_read(cache, bytes, sizeof bytes, block.isid, block.end_ip);
        if (n > 0) size = size_t(n);
    }
    return size ? classifyX86Branch(bytes, size, block.mode == ptem_64bit) : BranchClass::Other;
}

// ip -> value for the blocks of one segment, computed on first use. The hot
// loop looks up every block's start (its function) and the end of every block
// libipt left unclassified, and a segment revisits the same few thousand blocks
// millions of times: a flat table (ptwalk::IpMap), where std::unordered_map
// chases a node per lookup.
template <typename V>
class IpCache {
public:
    // The value for `ip`, computed by `make(ip)` the first time.
    // The hit inline in the decode loop, the miss out of line.
    template <typename Make>
    [[gnu::always_inline]] V get(uint64_t ip, Make&& make) {
        if (ip) [[likely]]
            if (const V* v = map_.find(ip)) [[likely]]
                return *v;
        return miss(ip, make);
    }
    template <typename Make>
    [[gnu::noinline]] V miss(uint64_t ip, Make& make) {
        V v = make(ip);
        if (ip) map_.insert(ip, v);  // 0 marks a free slot: not cached (no code runs there)
        return v;
    }
    void clear() { map_.clear(); }

private:
    ptwalk::IpMap<V> map_;
};

// How one block of libipt's default flags splits into runs of one function.
// Without end_on_call and end_on_jump a block runs from its first instruction
// through direct calls and direct jumps to the first instruction that needs
// trace (a conditional or indirect branch, a return), which ends it; an event
// or a full block may end it earlier. Its path is therefore fixed by its first
// IP: the first time a process runs a block from an IP, the path is walked
// once (InsnProbe: libipt's own instruction decoder over the same image) and
// the places where it changes frame are kept -- every direct call, and every
// direct jump into another function. The decode then hands FlowToSpans the same
// runs it got when libipt ended blocks there itself, at the speed of libipt's
// default block loop (end_on_call and end_on_jump cost it 20-30 %: a block and
// its decoder round trip per call and per jump).
struct BlockBreak {
    uint32_t end;      // instructions from the block's start through the call or jump
    BranchClass last;  // Call or Jump
    uint32_t next;     // the function the run after it is in
};
struct BlockShape {
    uint32_t function = 0;  // of the first instruction
    uint32_t covered = 0;   // instructions of the path walked (a longer block is not known)
    std::vector<BlockBreak> breaks;
};
// What the hot loop keeps per block start: its function, and its shape when
// the path changes function (shapes live as long as the session).
struct ShapeRef {
    uint32_t function = 0;
    const BlockShape* split = nullptr;  // the block's shape when it changes function
};

}  // namespace

// Shared by the decoder threads: a path is walked once per process and IP in
// the session, not once per segment (a segment revisits a few thousand block
// starts, and walking them costs about as much as decoding a small segment).
// Shapes are never changed once published, so the pointers segments keep stay
// valid and need no lock.
struct PtSession::BlockShapes {
    std::mutex mutex;
    std::unordered_map<int32_t, std::unordered_map<uint64_t, std::unique_ptr<const BlockShape>>> byPid;
};

// The flow walker's code tables of one segment decode at a time, one per
// process with the libipt image its code is read through. The session keeps
// them between segments: a segment revisits the same few thousand blocks, and
// building them (libipt's instruction decoder over each path) costs about 5 ms.
struct PtSession::WalkTables {
    struct Entry {
        pt_image* image = nullptr;
        std::unique_ptr<ptwalk::BlockTable> table;
        Entry() = default;
        Entry(const Entry&) = delete;
        Entry& operator=(const Entry&) = delete;
        ~Entry() {
            table.reset();
            if (image) pt_image_free(image);
        }
    };
    std::map<int32_t, Entry> byPid;
};
struct PtSession::WalkTablePool {
    std::mutex mutex;
    std::vector<std::unique_ptr<WalkTables>> idle;
};

PtSession::~PtSession() = default;

void PtSession::parallelFor(size_t n, unsigned threads, const std::function<void(size_t)>& task) {
    decode_->parallelFor(n, threads, task);
}

const PsbIndex& PtSession::psbIndex(int cpu) const {
    static const PsbIndex empty;
    auto it = psbs_.find(cpu);
    return it == psbs_.end() ? empty : it->second;
}

Expected<std::unique_ptr<PtSession>> PtSession::open(const PerfDataReader& file, PtSessionOptions options,
                                                     std::unique_ptr<PtSession>* carry) {
    auto trace = PtTraceSource::fromPerfData(file);
    if (!trace) return trace.error();
    auto sideband = Sideband::load(file);
    if (!sideband) return sideband.error();
    std::unique_ptr<PtSession> s(new PtSession);
    s->file_ = &file;
    s->flowWalker_ = options.flowWalker;
    s->walkTables_ = std::make_unique<WalkTablePool>();
    s->decode_ = std::make_unique<SegmentedDecode>(options.cacheBytes, options.isolation, "libipt");
    s->decode_->setLimits(options.limits);
    s->trace_ = std::make_unique<PtTraceSource>(std::move(*trace));
    s->sideband_ = std::make_unique<Sideband>(std::move(*sideband));
    if (carry && *carry && (*carry)->images_) {
        PtSession& from = **carry;
        s->functions_ = std::move(from.functions_);
        s->images_ = std::move(from.images_);
        s->ptImages_ = std::move(from.ptImages_);
        s->shapes_ = std::move(from.shapes_);
        s->walkTables_ = std::move(from.walkTables_);
        carry->reset();
        const ImageResolver::Update changed = s->images_->update(*s->sideband_);
        s->ptImages_->update(*s->images_, changed);
        // A block's shape and the walker's table were read from its process's
        // code: gone with it (the tables point at the shapes).
        for (auto& tables : s->walkTables_->idle) {
            if (changed.all) tables->byPid.clear();
            for (int32_t pid : changed.pids)
                tables->byPid.erase(pid);
        }
        if (changed.all)
            s->shapes_->byPid.clear();
        else
            for (int32_t pid : changed.pids)
                s->shapes_->byPid.erase(pid);
        s->filesLoaded_ = changed.filesLoaded;
        s->carried_ = true;
    } else {
        s->shapes_ = std::make_unique<BlockShapes>();
        s->functions_ = std::make_unique<FunctionTable>();
        s->images_ = std::make_unique<ImageResolver>(*s->sideband_, *s->functions_, options.images);
        s->images_->prepare();
        s->ptImages_ = std::make_unique<PtImages>(*s->images_);
        s->filesLoaded_ = s->images_->files().size();
    }
    const PtTimeConv& time = s->trace_->time();
    for (const PtCpuTrace& cpu : s->trace_->cpus()) {
        PsbIndex& index = s->psbs_[cpu.cpu] = PsbIndex::build(
            cpu, s->trace_->configOptions(),
            [&](size_t n, const std::function<void(size_t)>& task) { s->parallelFor(n, 0, task); });
        const size_t cpuFirst = s->segments_.size();
        std::vector<std::string> carried;  // losses of runs without a PSB, told at the next segment
        uint64_t traceEnd = 0;             // the end time of the CPU's segments so far
        for (size_t r = 0; r < cpu.runs.size(); ++r) {
            const PtRun& run = cpu.runs[r];
            const PsbRunIndex& psbs = index.runs[r];
            uint64_t runEnd = psbs.endTsc ? time.toPerfTime(psbs.endTsc) : 0;
            size_t first = s->segments_.size();
            if (psbs.psbs.empty()) {
                if (!run.lostCause.empty()) carried.push_back(run.lostCause);
                if (!run.lostAfterCause.empty()) carried.push_back(run.lostAfterCause);
                continue;
            }
            for (size_t i = 0; i < psbs.psbs.size();) {
                size_t j = i + 1;
                while (j < psbs.psbs.size() &&
                       psbs.psbs[j].offset - psbs.psbs[i].offset < options.segmentBytes)
                    ++j;
                Segment seg;
                seg.cpu = cpu.cpu;
                seg.run = r;
                seg.begin = psbs.psbs[i].offset;
                seg.end = j < psbs.psbs.size() ? psbs.psbs[j].offset : run.end;
                seg.startTime = psbs.psbs[i].tsc ? time.toPerfTime(psbs.psbs[i].tsc) : 0;
                seg.firstOfRun = i == 0;
                s->segments_.push_back(seg);
                i = j;
            }
            // Each segment ends where the next starts (or at the run's last time estimate).
            for (size_t k = first; k < s->segments_.size(); ++k) {
                Segment& seg = s->segments_[k];
                if (!seg.startTime && k > first) seg.startTime = s->segments_[k - 1].startTime;
                seg.endTime = k + 1 < s->segments_.size() ? s->segments_[k + 1].startTime : runEnd;
                seg.endTime = std::max(seg.endTime, seg.startTime);
            }
            Segment& head = s->segments_[first];
            if ((!run.lostCause.empty() || !carried.empty()) && traceEnd && traceEnd < head.startTime)
                head.lossFrom = traceEnd;
            head.lostBefore = std::move(carried);
            carried.clear();
            traceEnd = std::max(traceEnd, s->segments_.back().endTime);
            if (!run.lostAfterCause.empty()) s->segments_.back().lostAfter.push_back(run.lostAfterCause);
        }
        // Losses after the last run with a PSB: told where the CPU's decoded trace ends.
        if (!carried.empty() && s->segments_.size() > cpuFirst)
            for (std::string& cause : carried)
                s->segments_.back().lostAfter.push_back(std::move(cause));
    }
    return s;
}

SegmentSpans PtSession::decodeSegment(const Segment& seg,
                                      const std::function<void(const FlowBlock&)>* visit) const {
    // Spans: the flow walker over libipt's query decoder (pt/PtFlowWalker.h);
    // what it does not handle, and listings (which want libipt's blocks), go
    // through libipt's block decoder.
    if (!visit && flowWalker_) {
        bool unhandled = false;
        SegmentSpans result = decodeSegmentWith(seg, nullptr, true, &unhandled);
        if (!unhandled) return result;
        result = decodeSegmentWith(seg, nullptr, false, nullptr);
        result.stats.segmentsRedecoded = 1;
        return result;
    }
    return decodeSegmentWith(seg, visit, false, nullptr);
}

namespace {
// A status of the walk: the next segment's PSB+ was reached.
constexpr int kNextSegment = -1001;
}  // namespace

SegmentSpans PtSession::decodeSegmentWith(const Segment& seg,
                                          const std::function<void(const FlowBlock&)>* visit, bool walk,
                                          bool* unhandled) const {
    SegmentSpans result;
    DecodeStats& stats = result.stats;
    stats.segments = 1;
    stats.traceBytes = seg.end - seg.begin;
    const PtCpuTrace& trace = *trace_->cpu(seg.cpu);
    const PtRun& run = trace.runs[seg.run];
    const PtTimeConv& conv = trace_->time();
    FlowToSpans flow;
    thread_local std::vector<std::vector<Span>> spareSpans;
    while (!spareSpans.empty()) {
        flow.reuse(std::move(spareSpans.back()));
        spareSpans.pop_back();
    }

    // The file's bytes when the segment lies in one AUXTRACE buffer, else a copy
    // (a memcpy is a fraction of a percent of the decode).
    thread_local std::vector<uint8_t> stitched;
    // The segment and the PSB+ of the next one (when the run goes on): libipt
    // binds that PSB+'s status updates to its FUP, so the decoder reports them
    // where the next segment resumes and stops there (below). Without them it
    // would go on through the code that needs no packets (direct calls and
    // jumps, straight code up to the next conditional branch), which the next
    // segment decodes as well.
    uint64_t feedEnd = seg.end;
    if (seg.end < run.end) {
        thread_local std::vector<uint8_t> headScratch;
        std::span<const uint8_t> head =
            trace.bytes.view(seg.end, std::min<uint64_t>(run.end, seg.end + 512), headScratch);
        PtConfig headConfig = makePtConfig(trace_->configOptions(), head.data(), head.data() + head.size());
        if (pt_packet_decoder* pkt = pt_pkt_alloc_decoder(&headConfig.config)) {
            pt_packet p;
            uint64_t offset = 0;
            if (pt_pkt_sync_set(pkt, 0) >= 0)
                while (pt_pkt_next(pkt, &p, sizeof p) >= 0)
                    if (p.type == ppt_psbend) {
                        if (pt_pkt_get_offset(pkt, &offset) >= 0) feedEnd = seg.end + offset;
                        break;
                    }
            pt_pkt_free_decoder(pkt);
        }
    }
    std::span<const uint8_t> bytes = trace.bytes.view(seg.begin, feedEnd, stitched);
    PtConfig config = makePtConfig(trace_->configOptions(), bytes.data(), bytes.data() + bytes.size());
    // libipt's default flags: blocks run through direct calls and jumps, and
    // BlockShapes says where they change frame. A listing (`visit`) wants
    // straight runs of code, so there calls and direct jumps end blocks.
    config.config.flags.variant.block.end_on_call = visit != nullptr;
    config.config.flags.variant.block.end_on_jump = visit != nullptr;
    pt_block_decoder* decoder = walk ? nullptr : pt_blk_alloc_decoder(&config.config);
    pt_query_decoder* query = walk ? pt_qry_alloc_decoder(&config.config) : nullptr;
    // The walker's code tables, per process (their links and return sites hold
    // for one process's code), from the session's pool.
    std::unique_ptr<WalkTables> walkTables;
    if (walk) {
        std::lock_guard lock(walkTables_->mutex);
        if (!walkTables_->idle.empty()) {
            walkTables = std::move(walkTables_->idle.back());
            walkTables_->idle.pop_back();
        }
    }
    if (walk && !walkTables) walkTables = std::make_unique<WalkTables>();
    ptwalk::BlockTable* table = nullptr;
    // The thread on this CPU: from the switch timeline, else the AUX buffer's own
    // (per-thread recording), else unknown (-1).
    auto running = [&](uint64_t t) {
        RunningThread r = sideband_->runningAt(seg.cpu, t);
        if (r.tid < 0 && trace.tid > 0) r = {sideband_->pidOf(trace.tid), trace.tid};
        return r;
    };
    std::map<int32_t, pt_image*> imageOfPid;
    pt_image* currentImage = nullptr;
    // Per process (cleared on a switch to another one): the shape of each block
    // start (its function, and where it changes function), and how each block
    // end libipt did not classify leaves (read from the code: pt_iscache_read
    // locks the section cache all decoder threads share).
    IpCache<ShapeRef> shapeCache;
    IpCache<BranchClass> endClassCache;
    RunningThread current{};
    auto setThread = [&](uint64_t t, RunningThread r) {
        flow.switchThread(t, r.tid);
        if (r.pid == current.pid && !imageOfPid.empty()) {
            current = r;
            return;
        }
        current = r;
        pt_image*& image = imageOfPid[r.pid];
        if (!image) image = ptImages_->newImage(r.pid);
        currentImage = image;
        if (decoder) pt_blk_set_image(decoder, image);
        if (walk) {
            WalkTables::Entry& e = walkTables->byPid[r.pid];
            if (!e.table) {
                e.image = ptImages_->newImage(r.pid);
                e.table = std::make_unique<ptwalk::BlockTable>(e.image, config.config);
                e.table->owner = r.pid;
            }
            table = e.table.get();
        }
        shapeCache.clear();
        endClassCache.clear();
    };
    // The shape of the block that starts at `b.ip` in the current process: from
    // the session's table, else walked and published there.
    std::unique_ptr<InsnProbe> probe;
    auto shapeOf = [&](uint64_t ip, pt_exec_mode mode) {
        const BlockShape* shape = nullptr;
        {
            std::lock_guard lock(shapes_->mutex);
            auto& known = shapes_->byPid[current.pid];
            if (auto it = known.find(ip); it != known.end()) shape = it->second.get();
        }
        if (!shape) {
            auto made = std::make_unique<BlockShape>();
            made->function = images_->functionAt(current.pid, ip);
            if (!probe) probe = std::make_unique<InsnProbe>(config.config);
            const InsnProbe::Walk path = probe->walk(currentImage, ip, mode, 0xffff);
            made->covered = uint32_t(path.insns.size());
            uint32_t function = made->function;
            for (size_t i = 0; i + 1 < path.insns.size(); ++i) {
                const pt_insn& insn = path.insns[i];
                if (insn.iclass != ptic_call && insn.iclass != ptic_jump) continue;
                const uint32_t next = images_->functionAt(current.pid, path.insns[i + 1].ip);
                if (insn.iclass == ptic_jump && next == function) continue;
                made->breaks.push_back({uint32_t(i + 1),
                                        insn.iclass == ptic_call ? BranchClass::Call : BranchClass::Jump,
                                        next});
                function = next;
            }
            std::lock_guard lock(shapes_->mutex);
            shape = shapes_->byPid[current.pid].try_emplace(ip, std::move(made)).first->second.get();
        }
        // The walk ends where libipt's block would (a branch that needs trace,
        // code it cannot read, 64 Ki instructions), so no block from this IP is
        // longer: one without breaks is one run.
        return ShapeRef{shape->function, shape->breaks.empty() ? nullptr : shape};
    };
    // After a loss, the lost-AUX gap starts where the trace before it ended.
    const bool lossGap = seg.lossFrom && seg.lossFrom < seg.startTime;
    uint64_t lastTime = lossGap ? seg.lossFrom : seg.startTime;
    setThread(lastTime, running(lastTime));
    uint64_t nextSwitch = sideband_->nextSwitchAfter(seg.cpu, lastTime);
    auto advance = [&](uint64_t t) {
        while (t >= nextSwitch && nextSwitch != UINT64_MAX) {
            setThread(nextSwitch, running(nextSwitch));
            nextSwitch = sideband_->nextSwitchAfter(seg.cpu, nextSwitch);
        }
    };
    // Asked before every block, but the decoder's time moves only now and then
    // (at timing packets): the conversion runs only for a TSC not seen last
    // (the same TSC converts to a time lastTime already covers).
    // Everything before the next segment's PSB ran before that PSB's exact TSC,
    // where the next segment starts; the decoder's estimates (timing packets
    // read ahead of the instructions they follow) can reach it. Kept below it,
    // a range that ends at the PSB holds this segment's instructions and no
    // other segment's.
    const uint64_t timeCap = seg.end < run.end && seg.endTime > seg.startTime ? seg.endTime - 1 : UINT64_MAX;
    uint64_t lastTsc = 0;
    auto now = [&]() {
        uint64_t tsc = 0;
        uint32_t lostMtc = 0, lostCyc = 0;
        const int got = walk ? pt_qry_time(query, &tsc, &lostMtc, &lostCyc)
                             : pt_blk_time(decoder, &tsc, &lostMtc, &lostCyc);
        if (got >= 0 && tsc && tsc != lastTsc) {
            lastTsc = tsc;
            lastTime = std::max(lastTime, std::min(conv.toPerfTime(tsc), timeCap));
        }
        return lastTime;
    };
    auto eventTime = [&](const pt_event& ev) {
        if (ev.has_tsc) lastTime = std::max(lastTime, std::min(conv.toPerfTime(ev.tsc), timeCap));
        return lastTime;
    };
    auto offsetNow = [&]() {
        uint64_t offset = 0;
        if (walk)
            pt_qry_get_offset(query, &offset);
        else
            pt_blk_get_offset(decoder, &offset);
        return seg.begin + offset;
    };
    auto addGap = [&](uint64_t t, GapReason reason, std::string detail, uint64_t offset) {
        ++stats.gaps[reason];
        flow.gap(t, reason, std::move(detail), offset, seg.cpu);
    };

    // A run after lost AUX data resumes mid-stream: the bytes before its first PSB
    // cannot be decoded either, and belong to the same loss (one gap, not two).
    const bool undecodableHead = seg.firstOfRun && run.begin < seg.begin;
    for (const std::string& cause : seg.lostBefore)
        addGap(lastTime, GapReason::LostAux, cause, run.begin);
    // Every run but the first starts after a loss; the first one too when AUX
    // data before its first buffer is missing from the file.
    if (seg.firstOfRun && !run.lostCause.empty())
        addGap(lastTime, GapReason::LostAux,
               undecodableHead ? run.lostCause + "; " + std::to_string(seg.begin - run.begin) +
                                     " bytes after it precede the next PSB (offset " + hex(seg.begin) + ")"
                               : run.lostCause,
               run.begin);
    else if (undecodableHead)
        addGap(lastTime, GapReason::DecodeError, "no PSB before offset " + hex(seg.begin), run.begin);
    if (lossGap) {
        // The threads that ran during the loss share the gap; the trace resumes at the segment's start.
        advance(seg.startTime);
        lastTime = seg.startTime;
    }

    pt_block block;
    std::memset(&block, 0, sizeof block);
    // `fetchIp`: where code could not be read (-pte_nomap); `shownIp`: the
    // instruction the error names.
    auto reportError = [&](int status, uint64_t fetchIp, uint64_t shownIp) {
        ++stats.decodeErrors;
        uint64_t t = now();
        uint64_t offset = offsetNow();
        if (status == -pte_nomap) {
            const uint64_t ip = fetchIp;
            if (const std::string* file = images_->missingFileAt(current.pid, ip)) {
                ++stats.missingImages[*file];
                const std::string hint = images_->missingHintAt(current.pid, ip);
                addGap(t, GapReason::MissingImage,
                       "missing image " + *file + (hint.empty() ? "" : " (" + hint + ")"), offset);
                return;
            }
            std::string mapping = images_->mappingAt(current.pid, ip);
            if (mapping.empty()) {
                ++stats.missingImages["(no mapping)"];
                addGap(t, GapReason::MissingImage, "missing image (no mapping at " + hex(ip) + ")", offset);
                return;
            }
        }
        addGap(t, GapReason::DecodeError,
               "decode error: " + ptErrorName(status) + " at offset " + hex(offset) + " (ip " + hex(shownIp) +
                   ")",
               offset);
    };
    // What an event means for the spans, once bound to its instruction; true:
    // it is the next segment's PSB+, where this segment ends.
    auto onEvent = [&](const pt_event& ev) {
        if (ev.status_update && feedEnd > seg.end && offsetNow() >= seg.end) return true;
        switch (ev.type) {
            case ptev_enabled:
                advance(eventTime(ev));
                break;
            case ptev_disabled:
                addGap(eventTime(ev), GapReason::Untraced, "tracing disabled", offsetNow());
                break;
            case ptev_async_disabled:
                // An interrupt: the flow resumes at ev.variant.async_disabled.at, where the
                // last block's branch (a call, a return) had already gone.
                ++stats.gaps[GapReason::Untraced];
                flow.interruptedGap(eventTime(ev), "tracing disabled", offsetNow(), seg.cpu);
                break;
            case ptev_stop:
                addGap(eventTime(ev), GapReason::Untraced, "trace stopped (TraceStop)", offsetNow());
                break;
            case ptev_overflow:
                addGap(eventTime(ev), GapReason::Overflow, "trace overflow (OVF)", offsetNow());
                break;
            case ptev_async_branch:
                flow.interrupt(eventTime(ev));
                break;
            default:
                // paging, exec mode, tsx, vmcs, power and timing events do not move the stack.
                break;
        }
        return false;
    };
    uint64_t blocks = 0, instructions = 0;  // in registers, not through `stats`
    // `count` instructions of a block from `ip` (its shape: `mode`), the last
    // leaving as `last`, at the decoder's time now.
    auto shapeAt = [&](uint64_t ip, pt_exec_mode mode) {
        return shapeCache.get(ip, [&](uint64_t) { return shapeOf(ip, mode); });
    };
    auto runBlock = [&](ShapeRef shape, uint32_t count, BranchClass last, uint64_t t) {
        const uint32_t function = shape.function;
        if (!shape.split) [[likely]] {
            flow.instructions(t, function, count, last);
        } else {
            // The runs of the block in each function, as blocks ending at
            // calls and direct jumps would give them (same time: no trace is
            // read between them).
            uint32_t runFunction = function, done = 0;
            for (const BlockBreak& at : shape.split->breaks) {
                if (at.end >= count) break;
                flow.instructions(t, runFunction, at.end - done, at.last);
                done = at.end;
                runFunction = at.next;
            }
            flow.instructions(t, runFunction, count - done, last);
        }
        ++blocks;
        instructions += count;
        return function;
    };

    if (walk && query) {
        // The walker calls back for every block and every bound event.
        struct Sink {
            decltype(runBlock)& run;
            decltype(shapeAt)& shapeOfBlock;
            decltype(onEvent)& event_;
            decltype(now)& timeNow;
            decltype(advance)& advanceTo;
            const uint64_t& nextSwitch;
            const RunningThread& current;
            ptwalk::BlockTable*& table;
            bool block(ptwalk::Block& b, uint32_t count, BranchClass last) {
                const uint64_t t = timeNow();
                const int32_t pid = current.pid;
                if (t >= nextSwitch) advanceTo(t);
                // The block's shape, kept in the block while its table is the
                // running process's (a switch inside the block: looked up).
                if (!b.known && table->owner == current.pid) {
                    const ShapeRef shape = shapeOfBlock(b.ip, table->mode);
                    b.sinkFunction = shape.function;
                    b.sinkShape = shape.split;
                    b.known = true;
                }
                const ShapeRef shape =
                    table->owner == current.pid
                        ? ShapeRef{b.sinkFunction, static_cast<const BlockShape*>(b.sinkShape)}
                        : shapeOfBlock(b.ip, table->mode);
                run(shape, count, last, t);
                return current.pid != pid;
            }
            int event(const pt_event& ev) { return event_(ev) ? kNextSegment : 0; }
        } sink{runBlock, shapeAt, onEvent, now, advance, nextSwitch, current, table};
        ptwalk::Walker<Sink> walker(query, &table, sink);
        int status = walker.sync();
        for (;;) {
            if (status < 0) {
                if (status == -pte_eos || status == kNextSegment) break;
                // What the walker does not handle, and any decode error: the
                // segment goes to libipt's block decoder, whose errors, gaps and
                // resynchronisation the spans have always shown.
                *unhandled = true;
                break;
            }
            if (status & pts_event_pending) {
                status = walker.events(status);
                continue;
            }
            if (!walker.enabled()) {
                status = (status & pts_eos) ? -pte_eos : -pte_no_enable;
                continue;
            }
            status = walker.hot();
        }
        stats.blocks += blocks;
        stats.instructions += instructions;
    } else if (!decoder) {
        addGap(lastTime, GapReason::DecodeError, "libipt refused the trace configuration", seg.begin);
    } else {
        int status = pt_blk_sync_forward(decoder);
        uint64_t lastErrorOffset = UINT64_MAX;
        for (;;) {
            if (status < 0) {
                if (status == -pte_eos) break;
                uint64_t offset = offsetNow();
                if (offset == lastErrorOffset && block.ninsn == 0) {
                    // No progress since the last error: skip ahead rather than loop.
                    status = pt_blk_sync_forward(decoder);
                    if (status < 0 && offsetNow() == offset) break;
                    continue;
                }
                lastErrorOffset = offset;
                reportError(status, block.ninsn ? block.end_ip + 1 : block.ip,
                            block.ninsn ? block.end_ip : block.ip);
                std::memset(&block, 0, sizeof block);
                status = pt_blk_sync_forward(decoder);
                continue;
            }
            bool nextSegment = false;
            while (status & pts_event_pending) {
                pt_event ev;
                status = pt_blk_event(decoder, &ev, sizeof ev);
                if (status < 0) break;
                // The next segment's PSB+: this one ends where that one resumes.
                if (onEvent(ev)) {
                    nextSegment = true;
                    break;
                }
            }
            if (nextSegment) break;
            if (status < 0) continue;
            // A block's time is the decoder's time before it: fetching the block
            // consumes (and looks ahead past) the timing packets that follow its
            // instructions, so the time after it belongs to its end.
            uint64_t t = now();
            // pt_blk_next zeroes the block itself (also when it fails).
            status = pt_blk_next(decoder, &block, sizeof block);
            if (block.ninsn) {
                if (t >= nextSwitch) advance(t);
                BranchClass last = block.iclass != ptic_error || block.truncated
                                       ? branchClassOf(block, ptImages_->cache())
                                       : endClassCache.get(block.end_ip, [&](uint64_t) {
                                             return branchClassFromBytes(block, ptImages_->cache());
                                         });
                const uint32_t function = runBlock(shapeAt(block.ip, block.mode), block.ninsn, last, t);
                if (visit)
                    (*visit)({t, seg.cpu, current.tid, block.ip, block.end_ip, block.ninsn, last, function});
            }
        }
        stats.blocks += blocks;
        stats.instructions += instructions;
    }
    advance(std::max(now(), seg.endTime));
    for (const std::string& cause : seg.lostAfter)
        addGap(std::max(lastTime, seg.endTime), GapReason::LostAux, cause, run.end);
    flow.finish(std::max(lastTime, seg.endTime));
    // A segment after the first of its run resumes exactly where the one before
    // it stopped (that one ends at this one's PSB): frames open across the cut
    // are joined when both are merged (spans/SegmentedDecode.h).
    result.cpu = seg.cpu;
    result.resumesPrevious = !seg.firstOfRun && seg.lostBefore.empty() && !seg.lossFrom;
    result.stackEnds = flow.stackEnds();
    // Packed here, on the decoder thread: the cache holds 16 bytes a span, and
    // the merge of segments in time order only copies packed spans. FlowToSpans
    // gives the spans in pre-order, which is start order (sorted only where it
    // says not); the vectors go back to the next segment's builder on this thread.
    for (auto& [tid, spans] : flow.take()) {
        if (!spans.inStartOrder) sortSpans(spans.spans);
        result.threads[tid].append(spans.spans, spans.gaps);
        spareSpans.push_back(std::move(spans.spans));
    }
    if (decoder) pt_blk_free_decoder(decoder);
    if (query) pt_qry_free_decoder(query);
    if (walkTables) {
        std::lock_guard lock(walkTables_->mutex);
        walkTables_->idle.push_back(std::move(walkTables));
    }
    for (auto& [pid, image] : imageOfPid)
        pt_image_free(image);
    return result;
}

SegmentSpans PtSession::failedSegment(size_t index, GapReason reason, const std::string& detail) const {
    // libipt died on it: the whole segment is a gap for the threads that ran.
    const Segment& seg = segments_[index];
    return segmentGap(*sideband_, seg.cpu, trace_->cpu(seg.cpu)->tid, seg.startTime, seg.endTime, reason,
                      detail, seg.begin, seg.end - seg.begin);
}

DecodedSpans PtSession::decodeSpans(const DecodeWindow& window, unsigned threads) {
    return decode_->decode(
        SegmentedDecode::select(segments_, window), window, threads,
        [&](size_t i) { return decodeSegment(segments_[i], nullptr); },
        [&](size_t i, GapReason reason, const std::string& detail) {
            return failedSegment(i, reason, detail);
        });
}

DecodeStats PtSession::forEachBlock(const DecodeWindow& window,
                                    const std::function<void(const FlowBlock&)>& visit, unsigned threads,
                                    std::vector<Gap>* failures) {
    return decode_->forEachRecord<FlowBlock>(
        SegmentedDecode::select(segments_, window), threads,
        [&](size_t i, const std::function<void(const FlowBlock&)>& to) {
            const std::function<void(const FlowBlock&)> sink = SegmentedDecode::windowFilter(window, to);
            return decodeSegment(segments_[i], &sink).stats;
        },
        [&](size_t i, GapReason reason, const std::string& detail) {
            return failedSegment(i, reason, detail);
        },
        visit, failures);
}

}  // namespace auxscope
