// SPDX-License-Identifier: GPL-3.0-or-later
#include "LibraryVersions.h"

#include <capstone/capstone.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <intel-pt.h>
#include <opencsd/c_api/opencsd_c_api.h>
#include <zstd.h>

namespace auxscope {

std::vector<std::pair<std::string, std::string>> decodeLibraryVersions() {
    std::vector<std::pair<std::string, std::string>> v;
    pt_version pt = pt_library_version();
    v.emplace_back("libipt", std::to_string(pt.major) + "." + std::to_string(pt.minor) + "." +
                                 std::to_string(pt.patch) + (pt.ext ? std::string(pt.ext) : ""));
    v.emplace_back("OpenCSD", ocsd_get_version_str());
    int major = 0, minor = 0;
    cs_version(&major, &minor);
    v.emplace_back("capstone", std::to_string(major) + "." + std::to_string(minor));
    v.emplace_back("elfutils", dwfl_version(nullptr));
    v.emplace_back("libelf", elf_version(EV_CURRENT) != EV_NONE ? "EV_CURRENT supported" : "unusable");
    v.emplace_back("zstd", ZSTD_versionString());
    return v;
}

}  // namespace auxscope
