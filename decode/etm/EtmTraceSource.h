// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The CoreSight trace of a perf.data (perf's or simpleperf's cs_etm), ready for
// EtmDecoder: per AUX ring (per CPU, or per thread for per-thread recordings)
// the AUX bytes as perfdata/AuxStreams gathers them (runs split where AUX data
// is lost), whether they are CoreSight frame formatted or raw (PERF_RECORD_AUX
// flag 0x100: ETE written by TRBE), the trace sources the AUXTRACE_INFO block
// describes (one EtmSourceConfig per CPU / trace ID), and the perf time of each
// byte: from the trace's timestamps through TIME_CONV when it has them, else
// interpolated between the times of the PERF_RECORD_AUX records that announced
// the bytes.
#include <cstdint>
#include <string>
#include <vector>

#include "Result.h"
#include "etm/EtmDecoder.h"
#include "etm/EtmSourceConfig.h"
#include "perfdata/AuxStreams.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"

namespace auxscope::etm {

struct EtmCpuTrace {
    AuxStream stream;  // cpu -1: a per-thread ring
    EtmInput input = EtmInput::Formatted;
    // The sources its decoder knows: for raw data the ring's own CPU; for
    // formatted data every CPU's (a shared sink may carry several trace IDs).
    std::vector<EtmSourceConfig> sources;
    std::vector<int> sourceCpus;  // the CPU of each source (AUXTRACE_INFO)
    // The CPU whose trace unit writes trace ID `id` (-1: none of the sources).
    int cpuOfTraceId(uint8_t id) const;
    // The source with trace ID `id` (nullptr: none).
    const EtmSourceConfig* sourceOfTraceId(uint8_t id) const;
    // The PERF_RECORD_AUX records of the ring (AUX offset order): bytes at AUX
    // offsets [auxOffset, auxOffset + size) were written by `time`.
    struct AuxWrite {
        uint64_t auxOffset = 0, size = 0, time = 0;
    };
    std::vector<AuxWrite> writes;
    // The first time the ring can have been written at (the recording's start).
    uint64_t startTime = 0;

    // The perf time at stream offset `offset`, interpolated between the AUX
    // records' times (0 when none says).
    uint64_t timeAt(uint64_t offset) const;

    // timeAt() for offsets that mostly move forward a little at a time (a
    // decoder's elements): the buffer and AUX record that hold the last offset
    // are kept, so a lookup is an interpolation rather than two binary searches.
    // timeAt() is one of these.
    class TimeCursor {
    public:
        explicit TimeCursor(const EtmCpuTrace& trace) : trace_(&trace) {}
        uint64_t at(uint64_t offset) {
            if (offset < lo_ || offset >= hi_) seek(offset);
            if (constant_) return value_;
            const uint64_t aux = placeAux_ + (offset - placeBegin_);
            if (aux <= wAux_) return value_;
            return value_ + uint64_t(double(aux - wAux_) * scale_);
        }

    private:
        void seek(uint64_t offset);
        const EtmCpuTrace* trace_;
        uint64_t lo_ = 1, hi_ = 0;  // stream offsets [lo_, hi_) the fields below hold for
        bool constant_ = true;
        uint64_t value_ = 0;  // the time when constant_, else the interpolation's start
        uint64_t placeBegin_ = 0, placeAux_ = 0;
        uint64_t wAux_ = 0;
        double scale_ = 0;  // ns per byte of the AUX record
    };
};

// An AUX ring whose AUX records announce trace the file does not hold at all
// (no AUXTRACE data): nothing of it decodes, its time is one lost-AUX gap.
struct EtmLostRing {
    int cpu = -1;
    int32_t tid = -1;
    uint64_t firstTime = 0, lastTime = 0;  // of its AUX records
    std::string cause;  // "1521344 announced AUX bytes missing from the file (no AUXTRACE data)"
};

class EtmTraceSource {
public:
    // Fails when the file has no CoreSight AUXTRACE_INFO or its block cannot be read.
    static Expected<EtmTraceSource> fromPerfData(const PerfDataReader& file);

    const CsEtmInfo& info() const { return info_; }
    const PerfClockConv& time() const { return time_; }
    // The trace carries timestamps that convert to perf time (TRCCONFIGR.TS or
    // ETMCR timestamp enable, and a TIME_CONV record).
    bool timestamps() const { return timestamps_; }
    const std::vector<EtmCpuTrace>& cpus() const { return cpus_; }
    const EtmCpuTrace* cpu(int cpu) const;
    const std::vector<EtmLostRing>& lostRings() const { return lost_; }
    // The CPU whose trace unit has `traceId` (-1 when none).
    int cpuOfTraceId(uint8_t traceId) const;
    const std::vector<std::string>& notes() const { return notes_; }
    // The recording's first time (the sideband's): the first AUX buffer's bytes
    // are interpolated from there.
    void setStartTime(uint64_t time);

private:
    CsEtmInfo info_;
    PerfClockConv time_;
    bool timestamps_ = false;
    std::vector<EtmCpuTrace> cpus_;
    std::vector<EtmLostRing> lost_;
    std::vector<std::pair<uint8_t, int>> traceIdCpus_;
    std::vector<std::string> notes_;
};

}  // namespace auxscope::etm
