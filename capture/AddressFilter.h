// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Address filters for AUX-area trace events, in perf's --filter syntax:
//
//   ACTION START [/ SIZE] [@ FILE]     several separated by commas or spaces
//
//   ACTION  filter | start | stop | tracestop
//   START   an address (0x..., decimal) or a function symbol, optionally "#N" (the N'th symbol of
//           that name in address order) or "#g" (the global one); "*" means the whole object
//   SIZE    a number, or a symbol: the region then ends where that symbol ends
//   FILE    an ELF object; without it START is a kernel address or a /proc/kallsyms symbol
//
// and turned into the string the kernel takes with PERF_EVENT_IOC_SET_FILTER, e.g.
// "filter 0x1139/0x2a@/usr/bin/prog,stop 0xffffffff81000000/0x40". File-backed addresses are
// offsets into the file (the kernel matches them against each mapping's file offset), so
// symbols are converted from their virtual address through the PT_LOAD segment holding them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope {

enum class AddrFilterAction {
    Filter,     // trace only inside the region
    Start,      // start tracing at the address (or on entering the region)
    Stop,       // stop tracing at the address
    TraceStop,  // stop tracing on entering the region (sent to the kernel as "stop" with a size)
};

const char* addrFilterActionName(AddrFilterAction a);

// One filter as the user wrote it.
struct AddrFilterSpec {
    AddrFilterAction action = AddrFilterAction::Filter;
    std::optional<uint64_t> addr;  // START given as a number
    std::string symFrom;           // START given as a symbol ("*": the whole object)
    int symFromIdx = -1;           // -1: unique, 0: the global one, N: the N'th in address order
    bool hasSize = false;          // "/ SIZE" was given
    std::optional<uint64_t> size;  // SIZE given as a number
    std::string symTo;             // SIZE given as a symbol: the region ends at its end
    int symToIdx = -1;
    std::string file;  // empty: kernel
    std::string text;  // the filter as written, for messages

    // filter and tracestop always describe a region; start/stop only with "/ SIZE".
    bool isRange() const {
        return hasSize || action == AddrFilterAction::Filter || action == AddrFilterAction::TraceStop;
    }
};

// One filter with every symbol resolved, ready for the kernel.
struct ResolvedAddrFilter {
    AddrFilterAction action = AddrFilterAction::Filter;
    uint64_t start = 0;  // file offset (FILE given) or kernel virtual address
    uint64_t size = 0;
    bool range = false;
    std::string file;  // canonical path; empty: kernel
    std::string text;  // the filter as written

    // "filter 0x1139/0x2a@/usr/bin/prog", "stop 0xffffffff81000000"
    std::string kernelString() const;
};

struct AddrFilterResolveOptions {
    std::string kallsyms = "/proc/kallsyms";  // kernel symbols for filters without @ FILE
};

// Splits --filter text into filters; fails on syntax errors, naming the offending text.
Expected<std::vector<AddrFilterSpec>> parseAddrFilters(const std::string& text);

// Resolves symbols (from the ELF FILE's .symtab, else .dynsym; or from kallsyms) and sizes.
Expected<ResolvedAddrFilter> resolveAddrFilter(const AddrFilterSpec& spec,
                                               const AddrFilterResolveOptions& opts = {});

// The kernel's filter string for a list of resolved filters (comma-separated).
std::string kernelFilterString(const std::vector<ResolvedAddrFilter>& filters);

// parse + resolve + join, for callers that do not need the pieces.
Expected<std::string> buildKernelAddrFilter(const std::string& text,
                                            const AddrFilterResolveOptions& opts = {});

// A function symbol of an ELF object, as address filters see it.
struct ElfFunctionSymbol {
    std::string name;
    uint64_t value = 0;       // st_value (virtual address in the object)
    uint64_t size = 0;        // st_size, or up to the next function when the object gives 0
    uint64_t fileOffset = 0;  // where the kernel sees it: offset into the file
    bool global = false;      // STB_GLOBAL (weak and local are not)
};

// Every defined function symbol of `path`, in address order (.symtab when present, else .dynsym).
Expected<std::vector<ElfFunctionSymbol>> readElfFunctionSymbols(const std::string& path);

}  // namespace auxscope
