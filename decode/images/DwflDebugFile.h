// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// libdwfl's find_debuginfo callback for readers of DWARF (CodeAnnotation,
// InlineFrames): the separate debug file the ImageResolver found for a module
// (its build-id roots, debug folders, .gnu_debuglink, perf's build-id cache,
// debuginfod's cache: ImageResolver::debugFileOf) when one was set with
// setDwflDebugFile(), else libdwfl's standard search.
#include <elfutils/libdwfl.h>

#include <string>

namespace auxscope {

int findResolvedDebuginfo(Dwfl_Module* module, void** userdata, const char* moduleName, Dwarf_Addr base,
                          const char* fileName, const char* debuglinkFile, GElf_Word debuglinkCrc,
                          char** debuginfoFileName);
// `debugFile` must outlive the module's Dwfl; empty: libdwfl's standard search.
void setDwflDebugFile(Dwfl_Module* module, const std::string& debugFile);

}  // namespace auxscope
