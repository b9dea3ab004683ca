// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Builds the bodies of perf.data feature sections (HEADER_*), encoded exactly as
// perf reads them: strings as a u32 length (the NUL included, padded to a
// multiple of 64) followed by the NUL-padded bytes, counts as u32, sizes as u64.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "Result.h"
#include "perfdata/PerfDataWriter.h"

namespace auxscope {

// Appends perf's primitive encodings to a byte vector.
class FeatureBlob {
public:
    FeatureBlob& u32(uint32_t v) { return raw(&v, 4); }
    FeatureBlob& u64(uint64_t v) { return raw(&v, 8); }
    FeatureBlob& raw(const void* p, size_t n);
    // perf_header_string: u32 len, then the string and NULs up to len (a multiple of 64).
    FeatureBlob& str(std::string_view s);
    std::vector<uint8_t> take() { return std::move(buf_); }
    size_t size() const { return buf_.size(); }

private:
    std::vector<uint8_t> buf_;
};

struct BuildIdEntry {
    std::string path;              // as named in the MMAP/MMAP2 record, or "[kernel.kallsyms]"
    std::vector<uint8_t> buildId;  // up to 20 bytes
    bool kernel = false;
};

class FeatureWriter {
public:
    // What perf record describes the machine with: HEADER_HOSTNAME, OSRELEASE,
    // VERSION, ARCH, NRCPUS, CPUDESC, CPUID, TOTAL_MEM, CMDLINE, CPU_TOPOLOGY and
    // PMU_MAPPINGS. A feature the host does not expose is left out (with a note).
    static std::map<unsigned, std::vector<uint8_t>> hostFeatures(const std::vector<std::string>& cmdline,
                                                                 const std::string& version,
                                                                 std::vector<std::string>* notes = nullptr);

    // HEADER_PMU_MAPPINGS: each PMU's type and name.
    static std::vector<uint8_t> pmuMappings(const std::vector<std::pair<uint32_t, std::string>>& pmus);
    // The PMU_MAPPINGS of a recording made with one AUX-area PMU (`auxType`, `auxName`):
    // the software and tracepoint PMUs and it.
    static std::vector<uint8_t> auxPmuMappings(uint32_t auxType, const std::string& auxName);
    // HEADER_EVENT_DESC: every attr with its name and ids.
    static std::vector<uint8_t> eventDesc(const std::vector<PerfDataEventAttr>& attrs);
    // HEADER_SAMPLE_TIME: first and last sample time.
    static std::vector<uint8_t> sampleTime(uint64_t first, uint64_t last);
    // HEADER_BUILD_ID: one entry per file (kernel ones first).
    static std::vector<uint8_t> buildIds(const std::vector<BuildIdEntry>& entries);
    // HEADER_TRACING_DATA for tracepoints named "system:event": the ring buffer's
    // header formats and each event's format file, from tracefs.
    static Expected<std::vector<uint8_t>> tracingData(const std::vector<std::string>& tracepoints);

    // The GNU build-id note of an ELF file (libelf), or nullopt.
    static std::optional<std::vector<uint8_t>> elfBuildId(const std::string& path);
    // The running kernel's build-id (/sys/kernel/notes), or nullopt.
    static std::optional<std::vector<uint8_t>> kernelBuildId();
};

}  // namespace auxscope
