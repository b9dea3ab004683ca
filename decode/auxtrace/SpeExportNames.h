// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The names an export of Arm SPE records prints (export/TraceExport.h's
// ExportSpe): the PC's function from the session's code images, the data
// address as symbol+offset from the processes' mappings and the ELF's data
// symbols (SpeAnalysis), the data source by the CPU's MIDR, the events. One
// object the command line and the GUI's exporter share.
#include <memory>
#include <string>
#include <vector>

#include "auxtrace/SpeAnalysis.h"
#include "export/TraceExport.h"
#include "images/ImageResolver.h"
#include "spe/SpeDecoder.h"

namespace auxscope {

struct SpeExportNames {
    std::shared_ptr<const SpeAddressSpace> space;
    ExportSpe spe;  // its functions read `records`, `images`, `functions` and `space`: keep them alive
};

// `records` (by time), named through `images`/`functions` (the session's) and
// the mappings and data symbols of `file`, looked up also in `searchDirs`.
SpeExportNames speExportNames(const spe::SpeRecords& records, const ImageResolver& images,
                              const FunctionTable& functions, const PerfDataReader& file,
                              const std::vector<std::string>& searchDirs);

}  // namespace auxscope
