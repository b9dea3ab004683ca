// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// decode/record/ turns a capture into a file and a file back into a capture:
// the writer sink the drain thread feeds (this file, PerfDataWriterSink), the
// capture's AUXTRACE_INFO, the /proc synthesis of what already runs, and the
// replay source that feeds a perf.data through capture/'s simulated CPUs. It
// includes capture/ and perfdata/ only.
//
// Writes a CaptureSession to a perf.data file while it captures. open() (before
// the session starts) creates the file with the session's attrs and ids, writes
// what perf record synthesizes up front (ID_INDEX, TIME_CONV, the kernel map,
// FORK/COMM/MMAP2 of what already runs) and adds a QueuedSink to the session;
// the drain thread then only copies records into the sink's queue and the
// sink's writer thread streams them to the file. The /proc synthesis runs first
// on that writer thread, so the capture starts without waiting for it. finish() (after the session
// stopped) writes what is still queued, the feature sections and the header.
//
// AUX data: options.auxtraceInfo is written up front (perf's decoders need it
// before the first AUXTRACE record), and the sink stores every AUX chunk the
// drain thread hands over as PERF_RECORD_AUXTRACE, indexed in the AUXTRACE feature.
//
// Lifetime: the session must outlive this object's writer thread, i.e. call
// finish() (or destroy this object) before destroying the session: the sink asks
// the session to stop when the file cannot be written.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CaptureSession.h"
#include "QueuedSink.h"
#include "perfdata/PerfDataWriter.h"
#include "record/PerfDataWriterSink.h"
#include "record/ProcSynth.h"

namespace auxscope {

struct PerfDataWriterCaptureOptions {
    std::string path = "perf.data";
    // Write into this descriptor (taken over) instead of creating `path`, which
    // then only names the file (PerfDataWriterOptions::adoptFd).
    int fd = -1;
    bool compress = false;             // -z: zstd-compressed PERF_RECORD_COMPRESSED records
    std::vector<std::string> cmdline;  // HEADER_CMDLINE (the program and its arguments)
    std::string version = "auxscope";  // HEADER_VERSION
    size_t queueBytes = size_t(32) << 20;
    // The writer backlog's budget (queue and spill, QueuedSinkOptions::budgetBytes);
    // nullopt: defaultWriterBudget(), a quarter of MemAvailable, at most 4 GiB.
    // 0: the queue alone (records wait in the kernel's rings once it is full).
    std::optional<uint64_t> writerBudget;
    // PERF_RECORD_AUXTRACE_INFO written right after ID_INDEX and TIME_CONV, when
    // the capture has AUX rings: the PMU's type word and private block (see
    // AuxtraceInfo.h; a replay passes the recorded file's block unchanged).
    struct AuxtraceInfoBlock {
        uint32_t type = 0;
        std::vector<uint64_t> priv;
    };
    std::optional<AuxtraceInfoBlock> auxtraceInfo;
};

struct PerfDataWriterCaptureReport {
    std::string path;
    uint64_t fileBytes = 0;        // size of the file after finish()
    uint64_t dataBytes = 0;        // data section
    uint64_t records = 0;          // records in the file (whole ones, before compression)
    uint64_t streamBytes = 0;      // bytes of ring records written
    uint64_t compressedBytes = 0;  // their size on disk under -z
    bool compressed = false;
    ProcSynthCounts synthesized;  // records synthesized from /proc
    bool kernelMapSynthesized = false;
    bool timeConvWritten = false;
    uint64_t samples = 0;               // samples written
    uint64_t droppedRecords = 0;        // ring records that did not make it into the file, all reasons
    uint64_t queueFullRecords = 0;      // the queue was full (the file has LOST records for them)
    uint64_t writerStoppedRecords = 0;  // the writer had failed (e.g. disk full)
    uint64_t lostRecordsWritten = 0;    // synthesized PERF_RECORD_LOST for them
    // Back-pressure: times the drain thread left records in a data ring, or AUX
    // bytes in an AUX area, because the writer was behind (nothing dropped).
    uint64_t recordsHeldBack = 0, auxHeldBack = 0;
    uint64_t auxBytes = 0;  // AUX bytes written as PERF_RECORD_AUXTRACE
    uint64_t buildIds = 0;
    size_t queueCapacity = 0, maxQueuedBytes = 0;
    // The writer backlog (queue and spill): its high-water mark and budget in bytes,
    // AUX bytes copied into it, and the times records or AUX bytes were left in the
    // kernel's rings because the whole budget was in use.
    uint64_t maxBacklogBytes = 0, backlogBudget = 0, auxCopiedBytes = 0;
    uint64_t maxSpilledBytes = 0, maxSpillMemory = 0, spillRuns = 0;  // the part beyond the queue
    uint64_t heldBackAtBudget = 0;
    double synthesisSeconds = 0;  // time spent in open() reading /proc
    std::vector<std::string> notes;
};

// What a perf.data of a capture starts with, as perf record writes it: one attr
// per opened event group with its instances' ids, the ID_INDEX entries, and
// the tracking event that synthesized records are attributed to. The file
// writer and the live decoder (which writes small in-memory files) share it.
struct CaptureFileLayout {
    std::vector<PerfDataEventAttr> attrs;
    std::vector<perfdata::IdIndexEntry> idIndex;
    SampleIdSpec fallbackId;                      // the tracking event's first instance
    std::map<int, SampleIdSpec> trackingIdByCpu;  // the tracking event's instance per CPU
};
// Errors name `what` (the file) when the capture has no tracking event.
Expected<CaptureFileLayout> captureFileLayout(const CaptureSession& session, const std::string& what);

// FORK/COMM/MMAP2 of what already runs, and the kernel map, from /proc, as perf
// record synthesizes them for the capture's target. Nothing for simulated or
// replayed captures (their sideband comes from their source). Notes say what
// could not be synthesized; `kernelMap` whether the kernel map was.
// Now: what must be read before the capture starts (a launched command's name,
// before its exec); Later: the rest (kernel map, running processes), which the
// file writer gathers while the capture runs.
enum class SidebandPart { All, Now, Later };
Expected<void> synthesizeCaptureSideband(const CaptureSession& session, ProcSynth& synth,
                                         std::vector<std::string>& notes, bool* kernelMap = nullptr,
                                         SidebandPart part = SidebandPart::All);

class PerfDataWriterCapture {
public:
    ~PerfDataWriterCapture();
    static Expected<std::unique_ptr<PerfDataWriterCapture>> open(CaptureSession& session,
                                                                 PerfDataWriterCaptureOptions options);
    // Call once the session has stopped (after CaptureSession::wait()).
    Expected<void> finish();
    PerfDataWriterCaptureReport report() const;

    PerfDataWriter& writer() { return *writer_; }
    QueuedSink& sink() { return *queue_; }

private:
    PerfDataWriterCapture() = default;

    CaptureSession* session_ = nullptr;
    PerfDataWriterCaptureOptions options_;
    std::vector<PerfDataEventAttr> attrs_;
    std::unique_ptr<PerfDataWriter> writer_;
    std::unique_ptr<PerfDataWriterSink> sinkWriter_;
    std::unique_ptr<QueuedSink> queue_;
    PerfDataWriterCaptureReport report_;
    SampleIdSpec fallbackId_;
    bool finished_ = false;
};

}  // namespace auxscope
