// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// libdwfl's find_debuginfo callback for readers of DWARF (CodeAnnotation,
// InlineFrames): the separate debug file the ImageResolver found for a module
// (its build-id roots, debug folders, .gnu_debuglink, perf's build-id cache,
// debuginfod's cache: ImageResolver::debugFileOf) when the resolver searched
// for one (set with setDwflDebugFile(); "" : none, the search ends there, so
// that libdwfl never asks a debuginfod server on its own), else libdwfl's
// standard search. A later call for the same module is for the debug file's
// .gnu_debugaltlink (dwz's shared file): libdwfl's standard search finds it.
#include <elfutils/libdwfl.h>

#include <string>

namespace auxscope {

struct DwflDebugFile {
    std::string path;    // "" : the resolver found none
    bool given = false;  // the module's debug file was answered (later calls: its alt file)
};

int findResolvedDebuginfo(Dwfl_Module* module, void** userdata, const char* moduleName, Dwarf_Addr base,
                          const char* fileName, const char* debuglinkFile, GElf_Word debuglinkCrc,
                          char** debuginfoFileName);
// `file` must outlive the module's Dwfl.
void setDwflDebugFile(Dwfl_Module* module, DwflDebugFile& file);

}  // namespace auxscope
