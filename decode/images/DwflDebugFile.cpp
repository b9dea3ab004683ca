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
        const auto* path = static_cast<const std::string*>(*userdata);
        const int fd = ::open(path->c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            *debuginfoFileName = ::strdup(path->c_str());
            return fd;
        }
    }
    return dwfl_standard_find_debuginfo(module, userdata, moduleName, base, fileName, debuglinkFile,
                                        debuglinkCrc, debuginfoFileName);
}

void setDwflDebugFile(Dwfl_Module* module, const std::string& debugFile) {
    if (!module || debugFile.empty()) return;
    void** userdata = nullptr;
    dwfl_module_info(module, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (userdata) *userdata = const_cast<std::string*>(&debugFile);
}

}  // namespace auxscope
