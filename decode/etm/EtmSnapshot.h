// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An OpenCSD / DS-5 trace snapshot directory:
//   snapshot.ini  [snapshot] version, [device_list] deviceN=FILE.ini, [trace] metadata=trace.ini
//   FILE.ini      [device] name/class/type, [regs] NAME(extra)=VALUE, [dump...]
//   file/address/offset/length/space trace.ini     [trace_buffers] buffers=b0,b1  [b0] name/file/format
//                 [source_buffers] SOURCE=BUFFER  [core_trace_sources] CORE=SOURCE
// Read as OpenCSD's snapshot reader reads it (trc_pkt_lister -ss_dir), but
// strictly: every malformed line, missing mandatory key, duplicate key, bad
// number or reference to a buffer that does not exist is an error naming
// file:line. What OpenCSD tolerates with a message (a source without a device
// file, an ITM source it has no decoder for, a missing memory dump) is a note.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "Result.h"
#include "etm/EtmDecoder.h"
#include "etm/EtmMemory.h"
#include "etm/EtmSourceConfig.h"

namespace auxscope::etm {

struct SnapshotRegister {
    std::string name;  // without the "(0x004)" / "(id:0x2,size:64)" suffix
    uint64_t value = 0;
    int line = 0;
};

struct SnapshotDump {
    std::string file;  // as written (relative to the snapshot directory)
    std::string path;  // the snapshot directory joined with it
    uint64_t address = 0;
    uint64_t offset = 0;
    uint64_t length = 0;  // 0: to the end of the file
    uint8_t space = kMemAny;
    std::string spaceName;
    std::string where;  // "cpu_0.ini:11" (the section header)
};

struct SnapshotDevice {
    std::string iniFile;  // as listed in snapshot.ini
    std::string name, deviceClass, type;
    std::vector<SnapshotRegister> regs;
    std::vector<SnapshotDump> dumps;
    int regsLine = 0;  // the [regs] header (0: none)

    // A register by name, case-insensitive (OpenCSD's rule).
    const SnapshotRegister* reg(const std::string& name) const;
};

struct SnapshotBuffer {
    std::string name;
    std::string file, path;  // as written / joined with the directory
    std::string format;      // "coresight" (default), "dstream_coresight", "source_data"
    EtmInput input = EtmInput::Formatted;
    std::string where;
};

// A trace source of a buffer, with what it takes to decode it.
struct SnapshotSource {
    std::string name;                       // the trace source device ("ETM_0")
    std::string core;                       // its core device ("cpu_0"); empty for STM/ITM
    std::optional<EtmSourceConfig> config;  // empty: not decodable (see note)
    std::string note;                       // why not, or a warning (defaults used)
};

class EtmSnapshot {
public:
    // Reads snapshot.ini, every device file and trace.ini of `dir`.
    static Expected<EtmSnapshot> read(const std::string& dir);

    const std::string& dir() const { return dir_; }
    const std::string& version() const { return version_; }
    const std::vector<SnapshotDevice>& devices() const { return devices_; }
    const std::vector<SnapshotBuffer>& buffers() const { return buffers_; }
    const SnapshotDevice* device(const std::string& name) const;
    const SnapshotBuffer* buffer(const std::string& name) const;

    // The sources written to `buffer`, by source name (OpenCSD's order), each
    // with its decoder configuration where it has one.
    // A source that claims a protocol but lacks what it needs is an error.
    Expected<std::vector<SnapshotSource>> sources(const std::string& buffer) const;
    // The memory dumps of the cores whose sources write to `buffer`.
    std::vector<SnapshotDump> dumps(const std::string& buffer) const;

    // Notes from reading (tolerated oddities), one line each.
    const std::vector<std::string>& notes() const { return notes_; }

    // Builds the configuration of a trace source device for the core type
    // `coreType` ("Cortex-A53"); an error names the device file and cause.
    static Expected<EtmSourceConfig> sourceConfig(const SnapshotDevice& source, const std::string& coreType);

private:
    std::string dir_;
    std::string version_;
    std::vector<SnapshotDevice> devices_;
    std::vector<SnapshotBuffer> buffers_;
    std::vector<std::pair<std::string, std::string>> sourceBuffer_;  // source -> buffer (trace.ini order)
    std::vector<std::pair<std::string, std::string>> coreSource_;    // core -> source
    std::vector<std::string> notes_;
};

}  // namespace auxscope::etm
