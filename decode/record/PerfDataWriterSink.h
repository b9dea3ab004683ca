// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The SinkWriter that turns a QueuedSink's stream into perf.data: ring records
// copied verbatim into the data section, queue drops as PERF_RECORD_LOST (with
// the CPU's tracking event id, so perf's tools count the gap), FINISHED_ROUND at
// the end of every drain pass. On the way it learns what the HEADER_BUILD_ID and
// HEADER_SAMPLE_TIME features need: which mapped files code samples hit (from
// MMAP/MMAP2/FORK records and the samples' ip), and the first and last sample time.
// AUX area bytes become PERF_RECORD_AUXTRACE records (listed in the HEADER_AUXTRACE
// index by PerfDataWriter); the file needs a PERF_RECORD_AUXTRACE_INFO of its own
// (PerfDataWriter::writeAuxtraceInfo(), written by whoever knows the AUX PMU).
// Runs on the QueuedSink's writer thread; query it once that thread is joined.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "RecordParser.h"
#include "SinkWriter.h"
#include "perfdata/FeatureWriter.h"
#include "perfdata/PerfDataWriter.h"

namespace auxscope {

struct PerfDataWriterSinkConfig {
    const IdTable* ids = nullptr;  // attributes records to their events (sample layout)
    // The sample_id a synthesized LOST record of each CPU carries (the tracking
    // event's id and sample_type on that CPU); CPUs not listed use `fallbackLostId`.
    std::map<int, SampleIdSpec> lostIdByCpu;
    SampleIdSpec fallbackLostId;
    bool trackBuildIds = true;
    // Push buffered bytes to the file when the queue runs empty, at most this often.
    std::chrono::milliseconds idleFlushInterval{10};
};

class PerfDataWriterSink : public SinkWriter {
public:
    PerfDataWriterSink(PerfDataWriter& writer, PerfDataWriterSinkConfig config);

    Expected<void> writeRecord(int cpu, std::span<const uint8_t> record) override;
    Expected<void> writeLost(int cpu, uint64_t records, uint64_t lastTime) override;
    Expected<void> writeAux(int cpu, uint32_t ringIndex, uint64_t auxOffset, std::span<const uint8_t> first,
                            std::span<const uint8_t> second) override;
    Expected<void> endRound() override;
    Expected<void> idle() override;
    std::vector<SinkLoss> writerLosses() const override;

    // After a write error (or PerfDataWriter::finish()): records the writer had
    // accepted but that did not reach the file. Call on the thread using the writer.
    void noteWriterState();

    // Learns from a record written by other means (the synthesized MMAP2/FORK).
    void observe(std::span<const uint8_t> record);

    // Every mapped file (and the kernel) that a sample hit, with its build-id where
    // one could be read. Reads the ELF files: call after the capture.
    std::vector<BuildIdEntry> hitBuildIds(std::vector<std::string>* notes = nullptr) const;

    uint64_t samples() const { return samples_; }
    uint64_t firstSampleTime() const { return firstSample_; }
    uint64_t lastSampleTime() const { return lastSample_; }
    uint64_t lostRecordsWritten() const { return lostRecords_; }  // synthesized LOST records
    uint64_t lostCount() const { return lostCount_; }             // sum of their counts
    uint64_t auxtraceRecordsWritten() const { return auxRecords_; }
    uint64_t auxtraceBytesWritten() const { return auxBytes_; }

private:
    struct Map {
        uint64_t start, end;
        uint32_t file;
    };
    void addMap(pid_t pid, uint64_t start, uint64_t len, const std::string_view& file);
    void hit(pid_t pid, uint64_t ip);

    PerfDataWriter& writer_;
    PerfDataWriterSinkConfig config_;
    ParsedRecord rec_;
    std::unordered_map<pid_t, std::vector<Map>> maps_;  // per process, sorted by start
    std::vector<std::string> files_;
    std::unordered_map<std::string, uint32_t> fileIndex_;
    std::vector<bool> fileHit_;
    bool kernelHit_ = false;
    uint64_t samples_ = 0, firstSample_ = 0, lastSample_ = 0;
    uint64_t lostRecords_ = 0, lostCount_ = 0;
    uint64_t auxRecords_ = 0, auxBytes_ = 0;
    std::chrono::steady_clock::time_point lastFlush_{};
    Expected<void> checked(Expected<void> r);
    std::atomic<uint64_t> unwrittenRecords_{0}, unwrittenBytes_{0};
    mutable std::mutex errorMutex_;
    std::string error_;
};

}  // namespace auxscope
