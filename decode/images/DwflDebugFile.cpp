// SPDX-License-Identifier: GPL-3.0-or-later
#include "images/DwflDebugFile.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace auxscope {

int findResolvedDebuginfo(Dwfl_Module* module, void** userdata, const char* moduleName, Dwarf_Addr base,
                          const char* fileName, const char* debuglinkFile, GElf_Word debuglinkCrc,
                          char** debuginfoFileName) {
    if (userdata && *userdata) {
        auto* file = static_cast<DwflDebugFile*>(*userdata);
        if (!file->given) {
            file->given = true;
            if (file->path.empty()) return -1;  // the resolver's whole look-up found none
            const int fd = ::open(file->path.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) return -1;
            *debuginfoFileName = ::strdup(file->path.c_str());
            return fd;
        }
    }
    return dwfl_standard_find_debuginfo(module, userdata, moduleName, base, fileName, debuglinkFile,
                                        debuglinkCrc, debuginfoFileName);
}

void setDwflDebugFile(Dwfl_Module* module, DwflDebugFile& file) {
    if (!module) return;
    void** userdata = nullptr;
    dwfl_module_info(module, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (userdata) *userdata = &file;
}

}  // namespace auxscope
