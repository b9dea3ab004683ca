// SPDX-License-Identifier: GPL-3.0-or-later
#include "auxtrace/SpeExportNames.h"

namespace auxscope {

SpeExportNames speExportNames(const spe::SpeRecords& records, const ImageResolver& images,
                              const FunctionTable& functions, const PerfDataReader& file,
                              const std::vector<std::string>& searchDirs) {
    SpeExportNames names;
    names.space = std::make_shared<const SpeAddressSpace>(SpeAddressSpace::load(file, searchDirs));
    names.spe.records = &records.records;
    names.spe.function = [&images, &functions](const spe::SpeRecord& r) {
        if (!r.hasPc) return std::string();
        const uint32_t id = images.functionAt(r.pid, r.pc);
        return id < functions.size() && id != FunctionTable::kUnknown ? functions[id].name : std::string();
    };
    names.spe.dataSymbol = [space = names.space](const spe::SpeRecord& r) {
        return r.hasDataVa ? space->name(r.pid, r.dataVa) : std::string();
    };
    names.spe.source = [&records](const spe::SpeRecord& r) {
        return spe::dataSourceName(r.dataSource, records.midrOf(r.cpu));
    };
    names.spe.events = [](const spe::SpeRecord& r) { return spe::eventNames(r.events); };
    return names;
}

}  // namespace auxscope
