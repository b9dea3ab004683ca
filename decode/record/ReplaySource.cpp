// SPDX-License-Identifier: GPL-3.0-or-later
#include "record/ReplaySource.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "perfdata/PerfDataFormat.h"

namespace auxscope {

struct ReplaySource::Piece {
    const uint8_t* data = nullptr;
    uint64_t size = 0;
    uint64_t flags = 0;  // PERF_RECORD_AUX flags to re-issue (PARTIAL, COLLISION, CoreSight raw)
    uint32_t cpu = 0;    // simulated CPU
};

struct ReplaySource::Sideband {
    size_t body = 0;  // offset in bodies_
    uint16_t bodySize = 0;
    uint32_t type = 0;
    uint16_t misc = 0;
    int32_t pid = -1, tid = -1;
    uint32_t cpu = 0;         // simulated CPU whose data ring it goes into
    uint32_t trailerCpu = 0;  // CPU of its sample_id
};

struct ReplaySource::Item {
    uint64_t time = 0;
    uint64_t seq = 0;  // file order, for equal times
    uint32_t index = 0;
    bool aux = false;
};

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kFixedChunk = 64 * 1024;        // transaction size without recorded AUX records
constexpr uint64_t kMaxTransaction = 16ull << 20;  // longer recorded transactions are split
constexpr uint64_t kMaxAuxSize = 64ull << 20;      // per simulated CPU, unless asked for more
constexpr uint16_t kTrailerSize = 32;              // TID, TIME, CPU, IDENTIFIER
constexpr unsigned kMaxSimulatedCpus = 4096;

uint64_t nextPow2(uint64_t v) {
    return v <= 1 ? 1 : std::bit_ceil(v);
}

// The sample_id trailer of a non-sample record, read with its event's sample_type.
struct Trailer {
    bool hasTid = false, hasTime = false, hasCpu = false;
    int32_t pid = -1, tid = -1;
    uint64_t time = 0;
    uint32_t cpu = 0;
};

Trailer readTrailer(std::span<const uint8_t> rec, uint64_t sampleType) {
    Trailer t;
    const unsigned size = sampleIdSize(sampleType);
    if (rec.size() < sizeof(perf_event_header) + size) return t;
    const uint8_t* p = rec.data() + rec.size() - size;
    auto u64 = [&p] {
        uint64_t v;
        std::memcpy(&v, p, 8);
        p += 8;
        return v;
    };
    // perf's order: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER.
    if (sampleType & PERF_SAMPLE_TID) {
        const uint64_t v = u64();
        t.hasTid = true, t.pid = int32_t(uint32_t(v)), t.tid = int32_t(uint32_t(v >> 32));
    }
    if (sampleType & PERF_SAMPLE_TIME) t.hasTime = true, t.time = u64();
    if (sampleType & PERF_SAMPLE_ID) u64();
    if (sampleType & PERF_SAMPLE_STREAM_ID) u64();
    if (sampleType & PERF_SAMPLE_CPU) t.hasCpu = true, t.cpu = uint32_t(u64());
    return t;
}

// Why a kernel record type is not replayed; nullptr: it is.
const char* notReplayedReason(uint32_t type) {
    switch (type) {
        case PERF_RECORD_SAMPLE:
            return "samples: the replay has one simulated AUX event, which takes no samples";
        case PERF_RECORD_AUX:
            return "regenerated: the simulated producer writes a PERF_RECORD_AUX for each replayed "
                   "transaction";
        case PERF_RECORD_THROTTLE:
        case PERF_RECORD_UNTHROTTLE:
            return "throttling of a sampling event the replay does not have";
        case PERF_RECORD_LOST_SAMPLES:
            return "lost samples of a sampling event the replay does not have";
        case PERF_RECORD_READ:
            return "counter values of an event the replay does not have";
        default:
            return nullptr;
    }
}

const char* userRecordReason(uint32_t type) {
    switch (type) {
        case perfdata::kRecordAuxtraceInfo:
            return "perf's own record: the output gets the source's block through the writer";
        case perfdata::kRecordTimeConv:
            return "perf's own record: the output gets the source's TIME_CONV through the writer";
        case perfdata::kRecordFinishedRound:
            return "perf's own record: the writer ends its own rounds";
        case perfdata::kRecordIdIndex:
            return "perf's own record: the writer indexes the simulated event's ids";
        default:
            return "perf's or simpleperf's own record (not written into a ring by the kernel)";
    }
}

}  // namespace

Expected<ReplaySpeed> parseReplaySpeed(std::string_view text) {
    ReplaySpeed s;
    if (text == "max") {
        s.max = true;
        return s;
    }
    const std::string str(text);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(str.c_str(), &end);
    if (str.empty() || !end || *end || errno || !std::isfinite(v) || v <= 0)
        return makeError("bad replay speed '" + str +
                         "': give a positive factor of the recorded speed (1 = as recorded, 10 = ten "
                         "times faster, 0.1 = ten times slower) or 'max'");
    s.factor = v;
    return s;
}

std::string describeReplaySpeed(const ReplaySpeed& speed) {
    if (speed.max) return "max speed";
    if (speed.factor == 1.0) return "recorded speed";
    char b[48];
    std::snprintf(b, sizeof b, "%gx recorded speed", speed.factor);
    return b;
}

ReplaySource::~ReplaySource() {
    stop();
}

Expected<std::unique_ptr<ReplaySource>> ReplaySource::open(const std::string& path,
                                                           const Progress& progress) {
    auto reader = PerfDataReader::open(path);
    if (!reader) return reader.error();
    std::unique_ptr<ReplaySource> src(new ReplaySource);
    src->path_ = path;
    src->reader_ = std::make_unique<PerfDataReader>(std::move(reader.value()));
    const PerfDataReader& rd = *src->reader_;
    const PerfDataSummary& sum = rd.summary();

    auto firstError = [&]() -> const PerfDataIssue* {
        for (const PerfDataIssue& i : rd.issues())
            if (i.error) return &i;
        return nullptr;
    };
    if (sum.auxtrace.empty()) {
        std::string msg = path + ": offset " + std::to_string(rd.dataOffset()) +
                          ": nothing to replay: the file holds no AUX trace data (no PERF_RECORD_AUXTRACE "
                          "record); record it with an AUX event (intel_pt, cs_etm, arm_spe)";
        if (const PerfDataIssue* e = firstError()) msg += ". The reader also found: " + e->message;
        return makeError(msg);
    }
    if (firstError()) {
        // The first few: a cut-short file says so first, the AUXTRACE record it hit next.
        std::string msg = "cannot replay a damaged file: ";
        size_t errors = 0;
        for (const PerfDataIssue& i : rd.issues()) {
            if (!i.error) continue;
            if (++errors <= 3) msg += (errors > 1 ? "; " : "") + i.message;
        }
        if (errors > 3) msg += " (and " + std::to_string(errors - 3) + " more errors)";
        return makeError(msg);
    }
    if (rd.attrs().empty()) return makeError(path + ": offset 0: the file describes no events");

    // The reader's own table, plus perf's rule for the records perf synthesizes
    // (MMAP/COMM of running processes): their id is 0, they belong to the first event.
    IdTable ids;
    bool haveZero = false;
    for (size_t a = 0; a < rd.attrs().size(); ++a) {
        const perf_event_attr& at = rd.attrs()[a].attr;
        const EventLayout layout = eventLayoutOf(at, int(a), -1);
        for (uint64_t id : rd.attrs()[a].ids) {
            ids.add(id, layout);
            haveZero |= id == 0;
        }
    }
    {
        const perf_event_attr& at = rd.attrs()[0].attr;
        const EventLayout first = eventLayoutOf(at, 0, -1);
        if (rd.attrs().size() == 1) ids.setSoleEvent(first);
        if (!haveZero) ids.add(0, first);
    }

    struct Buffer {
        uint32_t idx, tid;
        int64_t cpu;
        uint64_t auxOffset;
        std::span<const uint8_t> bytes;
        uint64_t fileTime, seq, fileOffset;
    };
    struct AuxRec {
        int64_t cpu;
        int32_t tid;
        int attr;
        uint64_t time, offset, size, flags, seq;
    };
    struct RawSide {
        Sideband s;
        int64_t cpu;  // recorded, -1: none
        uint64_t time, seq;
    };
    std::vector<Buffer> buffers;
    std::vector<AuxRec> auxRecs;
    std::vector<RawSide> side;
    std::map<std::pair<uint32_t, std::string>, uint64_t> skipped;
    uint64_t newest = 0, seq = 0;
    std::optional<std::string> walkError;

    const uint64_t dataBegin = rd.dataOffset(), dataBytes = rd.dataSize();
    bool cancelled = false;
    auto walk = rd.forEachRecord([&](const PerfRecord& r) {
        if (progress && seq % 4096 == 0) {
            const uint64_t at = r.fileOffset > dataBegin ? r.fileOffset - dataBegin : 0;
            if (!progress(std::min(at, dataBytes), dataBytes)) {
                cancelled = true;
                return false;
            }
        }
        ++seq;
        const uint32_t type = r.header.type;
        if (type == perfdata::kRecordAuxtrace) {
            perfdata::AuxtraceRecord a{};
            if (r.bytes.size() < sizeof(perf_event_header) + sizeof a) {
                walkError = path + ": offset " + std::to_string(r.fileOffset) + ": AUXTRACE record too short";
                return false;
            }
            std::memcpy(&a, r.bytes.data() + sizeof(perf_event_header), sizeof a);
            if (r.payload.size() < r.payloadSize) {
                walkError = path + ": offset " + std::to_string(r.fileOffset) + ": AUXTRACE payload of " +
                            std::to_string(r.payloadSize) + " bytes is cut short (" +
                            std::to_string(r.payload.size()) + " in the file)";
                return false;
            }
            std::span<const uint8_t> bytes;
            if (r.compressed) {
                // Spans into decompressed data live for the callback only.
                src->ownedAux_.emplace_back(r.payload.begin(), r.payload.end());
                bytes = src->ownedAux_.back();
            } else {
                bytes = rd.fileBytes(r.payloadOffset, r.payloadSize);
            }
            buffers.push_back({a.idx, a.tid, a.cpu == UINT32_MAX ? -1 : int64_t(a.cpu), a.offset, bytes,
                               newest, seq, r.fileOffset});
            return true;
        }
        if (type >= perfdata::kRecordHeaderAttr) {
            if (type != perfdata::kRecordCompressed && type != perfdata::kRecordCompressed2)
                ++skipped[{type, userRecordReason(type)}];
            return true;
        }
        ParsedRecord pr;
        const auto err = parseRecord(r.bytes, ids, pr);
        const EventLayout* ev = pr.event;
        Trailer tr;
        if (ev && ev->sampleIdAll) tr = readTrailer(r.bytes, ev->sampleType);
        if (type == PERF_RECORD_SAMPLE && ev && (ev->sampleType & PERF_SAMPLE_TIME))
            tr.hasTime = true, tr.time = pr.time;
        const uint64_t time = tr.hasTime ? tr.time : newest;
        if (tr.hasTime && tr.time > newest) newest = tr.time;
        if (type == PERF_RECORD_AUX && ev && !err) {
            auxRecs.push_back({tr.hasCpu ? int64_t(tr.cpu) : -1, tr.hasTid ? tr.tid : -1, ev->descIndex, time,
                               pr.auxOffset, pr.auxSize, pr.auxFlags, seq});
            ++skipped[{type, notReplayedReason(type)}];
            return true;
        }
        if (const char* why = notReplayedReason(type)) {
            ++skipped[{type, why}];
            return true;
        }
        if (!ev) {
            ++skipped[{type, "no event of the file claims its id"}];
            return true;
        }
        if (err) {
            ++skipped[{type, "cannot be read: " + *err}];
            return true;
        }
        const size_t trailer = ev->sampleIdAll ? sampleIdSize(ev->sampleType) : 0;
        const size_t body = r.bytes.size() - sizeof(perf_event_header) - trailer;
        if (sizeof(perf_event_header) + body + kTrailerSize > UINT16_MAX) {
            ++skipped[{type, "too long for a record once it carries the replay's sample_id"}];
            return true;
        }
        RawSide s;
        s.s.body = src->bodies_.size();
        s.s.bodySize = uint16_t(body);
        s.s.type = type;
        s.s.misc = r.header.misc;
        // The sample_id's task; without one, the record's own (COMM, FORK, ...).
        s.s.pid = tr.hasTid ? tr.pid : pr.pid;
        s.s.tid = tr.hasTid ? tr.tid : pr.tid;
        src->bodies_.insert(src->bodies_.end(), r.bytes.begin() + sizeof(perf_event_header),
                            r.bytes.begin() + long(sizeof(perf_event_header) + body));
        s.cpu = tr.hasCpu && tr.cpu != UINT32_MAX ? int64_t(tr.cpu) : -1;
        s.time = time;
        s.seq = seq;
        side.push_back(s);
        return true;
    });
    if (cancelled) return makeError(path + ": cancelled");
    if (walkError) return makeError(*walkError);
    if (!walk) return makeError("cannot replay a damaged file: " + walk.error().message);

    // The AUX event: the one whose ids the PERF_RECORD_AUX carry, else the attr of the
    // PMU AUXTRACE_INFO names, else the first dynamic-PMU event.
    int auxAttr = -1;
    for (const AuxRec& a : auxRecs)
        if (a.attr >= 0) {
            auxAttr = a.attr;
            break;
        }
    if (!sum.auxtraceInfo.empty()) {
        const PerfAuxtraceInfo& info = sum.auxtraceInfo.front();
        src->auxtraceInfo_ = PerfDataWriterCaptureOptions::AuxtraceInfoBlock{info.type, info.priv};
        uint64_t pmuType = ~0ull;
        if (info.type == 1 /* Intel PT */ && !info.priv.empty()) pmuType = info.priv[0];
        if (info.type == 3 /* CoreSight */ && info.priv.size() > 1) pmuType = info.priv[1] >> 32;
        for (size_t a = 0; auxAttr < 0 && a < rd.attrs().size(); ++a)
            if (rd.attrs()[a].attr.type == pmuType) auxAttr = int(a);
    } else {
        src->notes_.push_back("the source has no AUXTRACE_INFO: perf cannot decode the output's AUX data");
    }
    for (size_t a = 0; auxAttr < 0 && a < rd.attrs().size(); ++a)
        if (rd.attrs()[a].attr.type >= PERF_TYPE_MAX) auxAttr = int(a);
    if (auxAttr < 0) auxAttr = 0;
    src->auxAttr_ = rd.attrs()[size_t(auxAttr)].attr;
    src->auxName_ = rd.attrs()[size_t(auxAttr)].name;
    if (src->auxName_.empty()) src->auxName_ = "aux-pmu-" + std::to_string(src->auxAttr_.type);
    src->timeConv_ = sum.timeConv;

    // Streams: one per AUXTRACE idx (perf's mmap index), in idx order.
    std::map<uint32_t, std::vector<const Buffer*>> byIdx;
    for (const Buffer& b : buffers)
        byIdx[b.idx].push_back(&b);
    bool perCpu = true;
    std::map<int64_t, int> cpuUse;
    for (auto& [idx, list] : byIdx) {
        const int64_t cpu = list.front()->cpu;
        for (const Buffer* b : list)
            if (b->cpu != cpu) perCpu = false;
        if (cpu < 0 || ++cpuUse[cpu] > 1) perCpu = false;
    }
    int64_t maxCpu = -1;
    if (perCpu) {
        for (auto& [idx, list] : byIdx)
            maxCpu = std::max(maxCpu, list.front()->cpu);
        for (const RawSide& s : side)
            if (s.cpu >= 0 && s.cpu < int64_t(kMaxSimulatedCpus)) maxCpu = std::max(maxCpu, s.cpu);
        if (maxCpu >= int64_t(kMaxSimulatedCpus))
            return makeError(path + ": offset " + std::to_string(byIdx.rbegin()->second.front()->fileOffset) +
                             ": AUX data of cpu " + std::to_string(maxCpu) +
                             ": more CPUs than a replay runs (" + std::to_string(kMaxSimulatedCpus) + ")");
        src->simulatedCpus_ = unsigned(maxCpu + 1);
    } else {
        src->simulatedCpus_ = unsigned(byIdx.size());
        src->notes_.push_back(
            "per-thread AUX rings: one simulated CPU per ring (in idx order); sideband goes to simulated "
            "cpu 0 with its recorded CPU in the sample_id");
    }

    // Pieces: each stream's bytes cut at the ends of its recorded AUX transactions.
    std::vector<std::pair<Item, uint64_t>> pieceItems;  // item, stream-order time floor
    uint64_t truncatedRecs = 0;
    unsigned streamNo = 0;
    for (auto& [idx, list] : byIdx) {
        ReplayStream st;
        st.sourceIdx = idx;
        st.sourceCpu = list.front()->cpu;
        st.sourceTid = list.front()->tid;
        st.simulatedCpu = perCpu ? unsigned(st.sourceCpu) : streamNo;
        ++streamNo;
        std::vector<const AuxRec*> recs;
        bool overwrite = false;
        for (const AuxRec& a : auxRecs) {
            if (a.attr != auxAttr) continue;
            if (perCpu ? a.cpu != st.sourceCpu : a.tid != int32_t(st.sourceTid)) continue;
            recs.push_back(&a);
            overwrite |= (a.flags & kAuxFlagOverwrite) != 0;
        }
        if (overwrite) {
            src->notes_.push_back("cpu " + std::to_string(st.sourceCpu) +
                                  ": snapshot-mode recording (AUX records with OVERWRITE): replayed in " +
                                  std::to_string(kFixedChunk / 1024) + " KiB transactions");
            recs.clear();
        }
        std::sort(recs.begin(), recs.end(),
                  [](const AuxRec* a, const AuxRec* b) { return a->offset + a->size < b->offset + b->size; });
        for (const AuxRec* a : recs)
            truncatedRecs += (a->flags & kAuxFlagTruncated) != 0;
        st.auxRecords = recs.size();
        uint64_t floor = 0;
        auto addPiece = [&](const uint8_t* data, uint64_t size, uint64_t flags, uint64_t time,
                            uint64_t order) {
            for (uint64_t done = 0; done < size;) {
                const uint64_t n = std::min(size - done, recs.empty() ? kFixedChunk : kMaxTransaction);
                Piece p;
                p.data = data + done;
                p.size = n;
                p.flags = done + n == size ? flags & ~(kAuxFlagTruncated | kAuxFlagOverwrite) : 0;
                p.cpu = st.simulatedCpu;
                // A ring's transactions stay in stream order whatever their times.
                floor = std::max(floor, time);
                Item it;
                it.time = floor;
                it.seq = order;
                it.index = uint32_t(src->pieces_.size());
                it.aux = true;
                src->pieces_.push_back(p);
                src->items_.push_back(it);
                src->maxPiece_ = std::max(src->maxPiece_, n);
                ++st.transactions;
                done += n;
            }
        };
        for (const Buffer* b : list) {
            const uint64_t b0 = b->auxOffset, b1 = b->auxOffset + b->bytes.size();
            uint64_t cursor = b0;
            for (const AuxRec* a : recs) {
                const uint64_t end = a->offset + a->size;
                if (end <= cursor || end > b1) continue;
                addPiece(b->bytes.data() + (cursor - b0), end - cursor, a->flags, a->time, a->seq);
                cursor = end;
            }
            if (cursor < b1) {
                // The rest: the transaction that covers it ends later (next buffer), else
                // nothing recorded it: the buffer's place in the file gives the time.
                uint64_t time = b->fileTime, order = b->seq;
                for (const AuxRec* a : recs)
                    if (a->offset < b1 && a->offset + a->size >= b1) {
                        time = a->time, order = a->seq;
                        break;
                    }
                addPiece(b->bytes.data() + (cursor - b0), b1 - cursor, 0, time, order);
            }
            st.bytes += b->bytes.size();
            ++st.buffers;
        }
        src->auxBytes_ += st.bytes;
        src->largestStream_ = std::max(src->largestStream_, st.bytes);
        src->streams_.push_back(st);
    }
    if (src->auxBytes_ == 0)
        return makeError(path + ": offset " + std::to_string(buffers.front().fileOffset) +
                         ": nothing to replay: the AUXTRACE records hold no bytes");
    if (truncatedRecs)
        src->notes_.push_back(std::to_string(truncatedRecs) +
                              " recorded AUX transactions were TRUNCATED (the ring was full): replayed "
                              "without the flag, the replay does not lose them again");

    // Sideband.
    for (const RawSide& r : side) {
        Sideband s = r.s;
        if (perCpu) {
            const bool known = r.cpu >= 0 && r.cpu < int64_t(src->simulatedCpus_);
            s.cpu = known ? uint32_t(r.cpu) : 0;
            s.trailerCpu = s.cpu;
        } else {
            s.cpu = 0;
            s.trailerCpu = r.cpu >= 0 ? uint32_t(r.cpu) : 0;
        }
        Item it;
        it.time = r.time;
        it.seq = r.seq;
        it.index = uint32_t(src->sideband_.size());
        src->sideband_.push_back(s);
        src->items_.push_back(it);
        ++src->sidebandByType_[s.type];
    }
    std::stable_sort(src->items_.begin(), src->items_.end(), [](const Item& a, const Item& b) {
        return a.time != b.time ? a.time < b.time : a.seq < b.seq;
    });
    for (const Item& it : src->items_) {
        if (!it.time) continue;
        if (!src->firstTime_ || it.time < src->firstTime_) src->firstTime_ = it.time;
        src->lastTime_ = std::max(src->lastTime_, it.time);
    }
    for (auto& [key, n] : skipped)
        src->skipped_.push_back({key.first, n, key.second});
    if (!src->timeConv_) src->notes_.push_back("the source has no TIME_CONV: the output has none either");
    src->notes_.push_back(
        "the output's host features (hostname, CPU description, ...) describe this machine, not the "
        "source's");
    return src;
}

SimulatedCaptureOptions ReplaySource::captureOptions(const ReplayOptions& o) const {
    SimulatedCaptureOptions c;
    c.cpus = simulatedCpus_;
    c.label = label();
    c.eventName = auxName_;
    c.eventAttr = auxAttr_;
    c.publishHz = o.publishHz;
    c.realtimeDrain = o.realtimeDrain;
    // Large enough that a transaction never waits for more than half the area, and
    // that a small file (up to kMaxAuxSize per ring) never wraps: the drain then
    // hands out each transaction in one piece, as it was recorded.
    uint64_t aux = std::max<uint64_t>(64 * 1024, nextPow2(2 * maxPiece_ + 1));
    aux = std::max(aux, nextPow2(std::min(largestStream_ + 1, kMaxAuxSize)));
    c.producer.auxSize = o.auxSize ? o.auxSize : aux;
    c.producer.dataPages = o.dataPages;
    c.producer.mode = o.mode;
    // CoreSight's overwrite head runs free, Intel PT's and SPE's wrap.
    c.producer.freeRunningOverwriteHead = auxtraceInfo_ && auxtraceInfo_->type == 3;
    // The producer's own records (AUX, LOST) name no task: the recorded ones are per CPU.
    c.producer.pid = -1;
    c.producer.tid = -1;
    return c;
}

std::optional<PerfDataWriterCaptureOptions::AuxtraceInfoBlock> ReplaySource::auxtraceInfo(
    const ReplayOptions& options) const {
    auto block = auxtraceInfo_;
    if (!block) return block;
    const uint64_t snapshot = options.mode == AuxMode::Snapshot ? 1 : 0;
    if (block->type == 1 /* Intel PT */ && block->priv.size() > 8) block->priv[8] = snapshot;
    if (block->type == 3 /* CoreSight */ && block->priv.size() > 2) block->priv[2] = snapshot;
    return block;
}

Expected<std::unique_ptr<CaptureSession>> ReplaySource::openSession(const ReplayOptions& options) const {
    auto s = CaptureSession::openSimulated(captureOptions(options));
    if (!s) return makeError(label() + ": " + s.error().message);
    if (timeConv_) {
        for (size_t i = 0; i < (*s)->simulatedCount(); ++i) {
            perf_event_mmap_page* pg = (*s)->simulatedProducer(i).userPage();
            pg->time_shift = uint16_t(timeConv_->timeShift);
            pg->time_mult = uint32_t(timeConv_->timeMult);
            pg->time_zero = timeConv_->timeZero;
            pg->time_cycles = timeConv_->timeCycles;
            pg->time_mask = timeConv_->timeMask;
            pg->cap_user_time_zero = 1;
            pg->cap_user_time_short = timeConv_->capUserTimeShort;
        }
    }
    return s;
}

Expected<void> ReplaySource::start(CaptureSession& session, const ReplayOptions& options) {
    if (thread_.joinable() || finished_.load()) return makeError(label() + ": already started");
    if (!session.simulated() || session.simulatedCount() != simulatedCpus_ || session.eventGroups().empty())
        return makeError(label() + ": the session was not opened by this replay (openSession)");
    const auto& inst = session.eventGroups().front().instances;
    if (inst.size() != simulatedCpus_) return makeError(label() + ": the session's event has no id per CPU");
    ids_.clear();
    for (const auto& i : inst)
        ids_.push_back(i.id);
    session_ = &session;
    options_ = options;
    stop_.store(false);
    running_.store(true);
    wallStart_ = Clock::now();
    thread_ = std::thread([this] { run(); });
    return {};
}

void ReplaySource::requestStop() {
    {
        std::lock_guard lock(mutex_);
        stop_.store(true);
    }
    wake_.notify_all();
}

void ReplaySource::stop() {
    requestStop();
    wait();
}

void ReplaySource::wait() {
    if (thread_.joinable()) thread_.join();
}

ReplayProgress ReplaySource::progress() const {
    ReplayProgress p;
    auto r = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    p.auxBytesFed = r(auxFed_);
    p.auxBytesTotal = auxBytes_;
    p.recordsFed = r(recordsFed_);
    p.recordsTotal = sideband_.size();
    p.transactionsFed = r(transactionsFed_);
    p.recordedSecondsFed = double(r(timeFed_)) * 1e-9;
    p.recordedSeconds = recordedSeconds();
    p.passesDone = r(passes_);
    p.spaceWaits = r(spaceWaits_);
    p.recordsDropped = r(recordsDropped_);
    p.running = running_.load();
    p.finished = finished_.load();
    p.stoppedEarly = stoppedEarly_.load();
    return p;
}

bool ReplaySource::stopRequested() const {
    if (stop_.load(std::memory_order_relaxed) || session_->finished()) return true;
    if (options_.durationSeconds > 0 &&
        Clock::now() - wallStart_ >= std::chrono::duration<double>(options_.durationSeconds))
        return true;
    return false;
}

bool ReplaySource::paceTo(uint64_t t) {
    if (options_.speed.max || !firstTime_ || t <= firstTime_) return !stopRequested();
    const double wall = double(t - firstTime_) * 1e-9 / options_.speed.factor;
    auto target =
        wallStart_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wall));
    if (options_.durationSeconds > 0)
        target = std::min(target, wallStart_ + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(options_.durationSeconds)));
    std::unique_lock lock(mutex_);
    while (!stop_.load() && Clock::now() < target) {
        // Short slices so a session stopped elsewhere (Ctrl-C) ends the wait too.
        wake_.wait_until(lock, std::min(target, Clock::now() + std::chrono::milliseconds(50)));
        if (session_->finished()) break;
    }
    lock.unlock();
    return !stopRequested();
}

bool ReplaySource::waitForSpace(size_t cpu, uint64_t auxBytes, uint64_t dataBytes) {
    SimulatedAuxProducer& p = session_->simulatedProducer(cpu);
    const perf_event_mmap_page* pg = p.userPage();
    const uint64_t dataSize = p.dataRing().size();
    const uint64_t auxSize = p.config().auxSize;
    const bool full = p.config().mode == AuxMode::Full;
    bool waited = false;
    for (unsigned spin = 0;; ++spin) {
        const uint64_t dh = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
        const uint64_t dt = __atomic_load_n(&pg->data_tail, __ATOMIC_ACQUIRE);
        bool ok = dh - dt < dataSize && dataSize - 1 - (dh - dt) >= dataBytes;
        if (auxBytes) {
            ok = ok && p.enabled();
            if (full) {
                const uint64_t ah = __atomic_load_n(&pg->aux_head, __ATOMIC_ACQUIRE);
                const uint64_t at = __atomic_load_n(&pg->aux_tail, __ATOMIC_ACQUIRE);
                ok = ok && ah - at < auxSize && auxSize - 1 - (ah - at) >= auxBytes;
            }
        }
        if (ok) return true;
        if (!waited) spaceWaits_.fetch_add(1, std::memory_order_relaxed), waited = true;
        if (stopRequested()) return false;
        // The drain thread frees space within a pass; start with yields, then sleep.
        if (spin < 64)
            std::this_thread::yield();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

bool ReplaySource::feedPiece(const Piece& piece, uint64_t time) {
    SimulatedAuxProducer& p = session_->simulatedProducer(piece.cpu);
    // A transaction never needs more than half the area (options may ask for a small one).
    const uint64_t most = std::max<uint64_t>(1, p.config().auxSize / 2);
    constexpr uint64_t kAuxRecord = sizeof(perf_event_header) + 3 * 8 + kTrailerSize;
    uint64_t done = 0;
    while (done < piece.size) {
        const uint64_t n = std::min(piece.size - done, most);
        if (!waitForSpace(piece.cpu, n, kAuxRecord)) return false;
        p.setTime(time);
        const bool last = done + n == piece.size;
        const SimulatedAuxTransaction t = p.stepBytes({piece.data + done, n}, last ? piece.flags : 0);
        if (!t.started) continue;  // disabled between the check and the step: wait again
        // Only a disable racing the check can cut a transaction short; the rest follows.
        done += t.written;
        auxFed_.fetch_add(t.written, std::memory_order_relaxed);
        transactionsFed_.fetch_add(1, std::memory_order_relaxed);
    }
    return true;
}

void ReplaySource::feedSideband(const Sideband& s, uint64_t time) {
    const uint16_t size = uint16_t(sizeof(perf_event_header) + s.bodySize + kTrailerSize);
    uint8_t rec[65536];
    const perf_event_header h{s.type, s.misc, size};
    std::memcpy(rec, &h, sizeof h);
    std::memcpy(rec + sizeof h, bodies_.data() + s.body, s.bodySize);
    // A LOST record names the event that lost: now the simulated one.
    if (s.type == PERF_RECORD_LOST && s.bodySize >= 8) std::memcpy(rec + sizeof h, &ids_[s.cpu], 8);
    const uint64_t trailer[4] = {uint64_t(uint32_t(s.pid)) | uint64_t(uint32_t(s.tid)) << 32, time,
                                 uint64_t(s.trailerCpu), ids_[s.cpu]};
    std::memcpy(rec + sizeof h + s.bodySize, trailer, sizeof trailer);
    if (!waitForSpace(s.cpu, 0, size)) return;
    if (!session_->simulatedProducer(s.cpu).writeRecord(rec, size))
        recordsDropped_.fetch_add(1, std::memory_order_relaxed);
    else
        recordsFed_.fetch_add(1, std::memory_order_relaxed);
}

void ReplaySource::run() {
    const uint64_t span = lastTime_ - firstTime_;
    const uint64_t period = span + 1'000'000;  // a loop's pass starts 1 ms (recorded) after the last ended
    bool stopped = false;
    for (uint64_t pass = 0; !stopped; ++pass) {
        for (const Item& it : items_) {
            // Pass 0 keeps the recorded times; later passes move past the previous one.
            uint64_t t = it.time;
            if (pass) t = std::max(it.time, firstTime_) + pass * period;
            if (!paceTo(t)) {
                stopped = true;
                break;
            }
            if (it.aux) {
                if (!feedPiece(pieces_[it.index], t)) {
                    stopped = true;
                    break;
                }
            } else {
                feedSideband(sideband_[it.index], t);
            }
            if (t >= firstTime_ && firstTime_) timeFed_.store(t - firstTime_ - pass * period);
        }
        if (stopped) break;
        passes_.fetch_add(1, std::memory_order_relaxed);
        if (!options_.loop) break;
    }
    // Records a producer still holds back (a full data ring) go out with its next
    // record; there is none after the last: write them now if there is room.
    for (size_t i = 0; i < session_->simulatedCount(); ++i)
        (void)session_->simulatedProducer(i).flushLost();
    stoppedEarly_.store(stopped);
    running_.store(false);
    finished_.store(true, std::memory_order_release);
    if (options_.stopSessionAtEnd) session_->requestStop();
}

}  // namespace auxscope
