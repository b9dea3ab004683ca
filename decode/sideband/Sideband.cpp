// SPDX-License-Identifier: GPL-3.0-or-later
#include "sideband/Sideband.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

namespace auxscope {

namespace {

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif

// MMAP2 carries either device/inode numbers or (kernel >= 5.12 with
// attr.build_id) a build-id in the same 24 bytes; prot follows. ParsedRecord
// skips both, so read them here from the record body.
struct Mmap2Extra {
    uint32_t prot = PROT_EXEC;
    std::vector<uint8_t> buildId;
};

Mmap2Extra readMmap2Extra(std::span<const uint8_t> rec, uint16_t misc) {
    Mmap2Extra extra;
    // header 8, pid/tid 8, addr/len/pgoff 24, then the 24-byte union, prot, flags.
    constexpr size_t kUnion = 8 + 8 + 24;
    if (rec.size() < kUnion + 24 + 8) return extra;
    const uint8_t* u = rec.data() + kUnion;
    if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
        size_t size = std::min<size_t>(u[0], 20);
        extra.buildId.assign(u + 4, u + 4 + size);
    }
    std::memcpy(&extra.prot, u + 24, 4);
    return extra;
}

}  // namespace

Sideband::Builder::Builder(std::map<std::string, std::vector<uint8_t>> headerBuildIds)
    : headerBuildIds_(std::move(headerBuildIds)) {}

void Sideband::Builder::addRecord(int cpu, const ParsedRecord& r, std::span<const uint8_t> bytes) {
    Sideband& sb = sb_;
    ++records_;
    sb.model_.addRecord(cpu, r);
    switch (r.type) {
        case PERF_RECORD_ITRACE_START:
            if (cpu >= 0 && r.tid > 0) itraceStarts_[cpu].push_back({r.time, UINT64_MAX, r.pid, r.tid});
            if (r.tid > 0 && r.pid > 0 && !sb.pidOf_->count(r.tid))
                sb.pidOf_.mutable_().emplace(r.tid, r.pid);
            break;
        case PERF_RECORD_COMM: {
            assignIfChanged(sb.pidOf_, r.tid, r.pid);
            ProcessSideband& p = sb.processes_.mutable_()[r.pid];
            p.pid = r.pid;
            if (r.pid == r.tid) p.name = std::string(r.comm);
            // exec replaces the address space: the maps that follow are the new
            // program's (those recorded before it, from another CPU's ring, too).
            if (r.misc & PERF_RECORD_MISC_COMM_EXEC) {
                std::erase_if(p.maps,
                              [&](const Mapping& m) { return !r.time || !m.time || m.time < r.time; });
                uint64_t& exec = execTime_.mutable_()[r.pid];
                exec = std::max(exec, r.time);
            }
            break;
        }
        case PERF_RECORD_FORK: {
            assignIfChanged(sb.pidOf_, r.tid, r.pid);
            if (r.pid != r.ppid) {
                // A new process starts with its parent's mappings, unless it has
                // exec'd since (its exec may come first in the file).
                auto& processes = sb.processes_.mutable_();
                ProcessSideband& child = processes[r.pid];
                child.pid = r.pid;
                auto parent = processes.find(r.ppid);
                auto exec = execTime_->find(r.pid);
                const bool execSince = exec != execTime_->end() && (!r.time || exec->second >= r.time);
                if (parent != processes.end()) {
                    if (!execSince) {
                        // The parent's maps as of the fork, then what the child mapped itself.
                        std::vector<Mapping> maps;
                        for (const Mapping& m : parent->second.maps)
                            if (!r.time || !m.time || m.time <= r.time) maps.push_back(m);
                        maps.insert(maps.end(), child.maps.begin(), child.maps.end());
                        child.maps = std::move(maps);
                    }
                    if (child.name.empty()) child.name = parent->second.name;
                }
            }
            break;
        }
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2: {
            Mapping m;
            m.start = r.mapStart, m.length = r.mapLen, m.pgoff = r.mapPgoff;
            m.file = std::string(r.filename);
            m.time = r.time;
            uint16_t cpumode = r.misc & PERF_RECORD_MISC_CPUMODE_MASK;
            m.kernel = cpumode == PERF_RECORD_MISC_KERNEL || cpumode == PERF_RECORD_MISC_GUEST_KERNEL;
            bool exec = true;
            if (r.type == PERF_RECORD_MMAP2) {
                Mmap2Extra extra = readMmap2Extra(bytes, r.misc);
                exec = extra.prot & PROT_EXEC;
                m.buildId = std::move(extra.buildId);
            } else {
                exec = !(r.misc & PERF_RECORD_MISC_MMAP_DATA);
            }
            if (!exec) break;
            if (m.buildId.empty()) {
                auto it = headerBuildIds_.find(m.file);
                if (it == headerBuildIds_.end() && m.kernel) it = headerBuildIds_.find("[kernel.kallsyms]");
                if (it != headerBuildIds_.end()) m.buildId = it->second;
            }
            if (m.kernel || r.pid == -1) {
                sb.kernelMaps_.mutable_().push_back(std::move(m));
            } else {
                assignIfChanged(sb.pidOf_, r.tid, r.pid);
                ProcessSideband& p = sb.processes_.mutable_()[r.pid];
                p.pid = r.pid;
                // A mapping of the program an exec already replaced (read late from another CPU's ring).
                auto exec = execTime_->find(r.pid);
                if (exec != execTime_->end() && m.time && m.time < exec->second) break;
                p.maps.push_back(std::move(m));
            }
            break;
        }
        default:
            break;
    }
}

void Sideband::Builder::complete(Sideband& sb, std::map<int, std::vector<Slice>> itraceStarts) {
    sb.model_.finish();
    // pidOf() asks the model for the threads the records above did not place
    // (rather than copying them in here).
    // Each CPU's slices in one block.
    std::map<int, size_t> perCpu;
    for (const RunSlice& s : sb.model_.runSlices())
        ++perCpu[s.cpu];
    for (const auto& [cpu, n] : perCpu)
        sb.slices_[cpu].reserve(n);
    for (const RunSlice& s : sb.model_.runSlices())
        sb.slices_[s.cpu].push_back({s.start, s.end, s.pid, s.tid});
    // A CPU without switch records (perf record --no-switch-events, a replay of a
    // per-thread ring): the thread an ITRACE_START names runs there from then on,
    // until the next one, as perf's decoder assumes.
    for (auto& [cpu, starts] : itraceStarts) {
        if (sb.slices_.count(cpu)) continue;
        std::stable_sort(starts.begin(), starts.end(),
                         [](const Slice& a, const Slice& b) { return a.start < b.start; });
        for (size_t i = 0; i + 1 < starts.size(); ++i)
            starts[i].end = starts[i + 1].start;
        sb.slices_[cpu] = std::move(starts);
    }
    for (auto& [cpu, v] : sb.slices_)
        std::sort(v.begin(), v.end(), [](const Slice& a, const Slice& b) { return a.start < b.start; });
}

Sideband Sideband::Builder::snapshot() const {
    Sideband sb = sb_;
    complete(sb, itraceStarts_);
    return sb;
}

Sideband Sideband::Builder::finish() && {
    Sideband sb = std::move(sb_);
    complete(sb, std::move(itraceStarts_));
    sb_ = Sideband();
    itraceStarts_.clear();
    records_ = 0;
    return sb;
}

Expected<Sideband> Sideband::load(const PerfDataReader& file, const Progress& progress) {
    bool cancelled = false;
    uint64_t seen = 0;
    const uint64_t dataBegin = file.dataOffset(), dataBytes = file.dataSize();
    std::map<std::string, std::vector<uint8_t>> headerBuildIds;
    if (const auto& ids = file.features().buildIds)
        for (const PerfBuildId& b : *ids)
            headerBuildIds[b.filename] = b.id;
    Builder builder(std::move(headerBuildIds));
    builder.model().readHeaders(file);  // sched_switch layouts, CPUs, capture statistics
    auto walked = file.forEachRecord([&](const PerfRecord& rec) {
        if (progress && ++seen % 4096 == 0) {
            const uint64_t at = rec.fileOffset > dataBegin ? rec.fileOffset - dataBegin : 0;
            if (!progress(std::min(at, dataBytes), dataBytes)) {
                cancelled = true;
                return false;
            }
        }
        if (rec.header.type >= perfdata::kRecordHeaderAttr) return true;
        builder.addRecord(int(rec.cpu), rec.parsed, rec.bytes);
        return true;
    });
    if (cancelled) return makeError(file.path() + ": reading the sideband: cancelled");
    Sideband sb = std::move(builder).finish();
    if (!walked && sb.processes_->empty() && sb.kernelMaps_->empty()) return walked.error();
    return sb;
}

const ProcessSideband* Sideband::process(int32_t pid) const {
    auto it = processes_->find(pid);
    return it == processes_->end() ? nullptr : &it->second;
}

int32_t Sideband::pidOf(int32_t tid) const {
    auto it = pidOf_->find(tid);
    if (it != pidOf_->end()) return it->second;
    auto model = model_.processOf().find(tid);
    return model == model_.processOf().end() ? -1 : model->second;
}

std::vector<std::shared_ptr<const void>> Sideband::sharedParts() const {
    std::vector<std::shared_ptr<const void>> parts;
    for (auto part :
         {std::shared_ptr<const void>(processes_.shared()), std::shared_ptr<const void>(kernelMaps_.shared()),
          std::shared_ptr<const void>(pidOf_.shared())})
        if (part) parts.push_back(std::move(part));
    model_.sharedParts(parts);
    return parts;
}

bool Sideband::hasSwitches(int cpu) const {
    auto it = slices_.find(cpu);
    return it != slices_.end() && !it->second.empty();
}

RunningThread Sideband::runningAt(int cpu, uint64_t time) const {
    auto it = slices_.find(cpu);
    if (it == slices_.end()) return {};
    const auto& v = it->second;
    auto after =
        std::upper_bound(v.begin(), v.end(), time, [](uint64_t t, const Slice& s) { return t < s.start; });
    if (after == v.begin()) return {};
    const Slice& s = *(after - 1);
    if (time >= s.end && s.end != s.start) return {0, 0};  // between slices: idle
    int32_t pid = s.pid > 0 ? s.pid : pidOf(s.tid);
    return {pid, s.tid};
}

uint64_t Sideband::nextSwitchAfter(int cpu, uint64_t time) const {
    auto it = slices_.find(cpu);
    if (it == slices_.end()) return UINT64_MAX;
    const auto& v = it->second;
    auto after =
        std::upper_bound(v.begin(), v.end(), time, [](uint64_t t, const Slice& s) { return t < s.start; });
    uint64_t next = after == v.end() ? UINT64_MAX : after->start;
    if (after != v.begin() && (after - 1)->end > time && (after - 1)->end < next) next = (after - 1)->end;
    return next;
}

}  // namespace auxscope
