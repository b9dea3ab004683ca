// SPDX-License-Identifier: GPL-3.0-or-later
// auxscope: one binary, perf-style. `auxscope` starts the GUI (optionally with a
// file); `auxscope record ...` captures headless. Both drive the same
// CaptureSession from capture/.
#include <dlfcn.h>
#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "LibraryVersions.h"
#include "cli/CompareCommand.h"
#include "cli/DecodeCommand.h"
#include "cli/ExportCommand.h"
#include "cli/InfoCommand.h"
#include "cli/RecordCommand.h"
#include "cli/ReportCommand.h"

namespace {

const char* kHelp = R"(usage: auxscope [FILE]                start the GUI (with a perf.data open)
       auxscope FILE --compare-with B | auxscope --compare A B
                                          start the GUI comparing two perf.data (before and after)
       auxscope record [-a | -C LIST | -p PID | -- cmd ...] [-e EVENT]... [-F HZ]
                       [-g | --call-graph fp|dwarf[,SIZE]|lbr] [-m PAGES[,AUX_PAGES]]
                       [-S[[e]SIZE]] [--overwrite] [--filter FILTERS] [--duration S]
                       [--control fifo:CTL[,ACK]] [--replay FILE [--replay-speed X]]
                       [-o OUT [-z]] [--json] [--list-events]
                                          capture headless, print per-CPU totals, write perf.data
       auxscope info [--json] FILE        what a perf.data holds: events, features, records, losses
       auxscope decode PERF.DATA [--format spans|insn|ranges|packets] [--cpu N] [--tid T]
                       [--time A-B] [--symfs DIR] [--vmlinux FILE] [--kcore DIR|FILE]
                       [--kallsyms FILE] [--jit-dump FILE] [--perf-map FILE] [-j N]
                       [--pt-decoder walk|block]
                                          Intel PT or CoreSight ETM/ETE in a perf.data: call-stack
                                          spans (default), basic blocks, CoreSight ranges, packets
       auxscope decode SNAPSHOT_DIR [--format ranges|packets]
                                          an OpenCSD/DS-5 CoreSight snapshot folder: ranges (default)
                                          or packets; for spans, make it a perf.data first with
                                          auxscope-etmsnap SNAPSHOT_DIR -o OUT.data
       auxscope decode --pt FILE [--raw BIN:ADDR | --elf ELF[:BASE]]... [--format ptxed|packets]
                                          raw Intel PT bytes with libipt, as ptxed and ptdump print
       auxscope export FILE [--format perfetto|csv] [-o OUT] [--decode|--no-decode] [--cpu N]
                       [--tid T] [--time A-B] [--symfs DIR] [--vmlinux FILE] [--kcore DIR|FILE]
                                          convert a perf.data for ui.perfetto.dev or scripts
       auxscope report FILE [--source auto|trace|samples|off-cpu] [--tid T] [--time A-B]
                       [--sort KEY] [--format text|csv|json] [--top N] [--tree] [--symfs DIR]
                                          top functions and call tree of a decoded AUX trace or
                                          of samples
       auxscope compare A B [--time A-B] [--time-b A-B] [--tid T] [--tid-b T] [--event E]
                       [--by-symbol] [--normalize none|total|per-call=FUNC] [--sort COLUMN]
                       [--format text|csv|json] [--limit N] [--tree] [--bottom-up]
                                          before and after: two captures (or two ranges) side by
                                          side, functions matched by name, with the deltas (also
                                          auxscope report --diff A B)
       decode, export, report and compare find code and names with --symfs DIR, --binary-dir DIR,
       --debug-dir DIR, --debuginfod URL, --no-debuginfod, --vmlinux FILE, --kcore DIR|FILE,
       --kallsyms FILE, --jit-dump FILE and --perf-map FILE (help COMMAND)
       auxscope --version                 versions of auxscope and its libraries
       auxscope help COMMAND              every option of a command (also COMMAND --help)

Every command reads its options as perf does: --opt VALUE or --opt=VALUE, -F 99 or
-F99, short flags combined (-ag), -e a,b (two events), -- before a command to launch;
numbers are decimal and range-checked, an unknown option is refused by name (exit 2).

Without a display (no DISPLAY, WAYLAND_DISPLAY or QT_QPA_PLATFORM), `auxscope`
runs a 3-second system-wide headless capture and prints its summary instead.
GUI captures are written into the captures folder (default
$XDG_DATA_HOME/auxscope/captures, shown and changed on the capture page) and stay
there until you discard them.
)";

// Loads the GUI library that sits beside this binary (or in ../lib/auxscope).
void* loadGuiLibrary(std::string& error) {
    std::string dir = ".";
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        dir = self;
        dir = dir.substr(0, dir.rfind('/'));
    }
    for (const std::string& candidate :
         {dir + "/libauxscope_app.so", dir + "/../lib/auxscope/libauxscope_app.so"}) {
        if (access(candidate.c_str(), R_OK) != 0) continue;
        if (void* h = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
        error = dlerror();
        return nullptr;
    }
    error = "libauxscope_app.so not found beside " + dir + "/auxscope";
    return nullptr;
}

// A display to show the GUI on: from the environment, or Qt's -platform option.
bool haveDisplay(const std::vector<std::string>& args) {
    for (const std::string& a : args)
        if (a == "-platform" || a == "--platform" || a.starts_with("-platform=") ||
            a.starts_with("--platform="))
            return true;
    for (const char* var : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) {
        const char* v = std::getenv(var);
        if (v && *v) return true;
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty()) {
        const std::string& cmd = args[0];
        if (cmd == "record") return auxscope::runRecordCommand({args.begin() + 1, args.end()});
        if (cmd == "info") return auxscope::runInfoCommand({args.begin() + 1, args.end()});
        if (cmd == "export") return auxscope::runExportCommand({args.begin() + 1, args.end()});
        if (cmd == "decode") return auxscope::runDecodeCommand({args.begin() + 1, args.end()});
        if (cmd == "report") return auxscope::runReportCommand({args.begin() + 1, args.end()});
        if (cmd == "compare") return auxscope::runCompareCommand({args.begin() + 1, args.end()});
        if (cmd == "-h" || cmd == "--help" || cmd == "help") {
            if (args.size() > 1 && args[1] == "record") return auxscope::runRecordCommand({"--help"});
            if (args.size() > 1 && args[1] == "info") return auxscope::runInfoCommand({"--help"});
            if (args.size() > 1 && args[1] == "export") return auxscope::runExportCommand({"--help"});
            if (args.size() > 1 && args[1] == "decode") return auxscope::runDecodeCommand({"--help"});
            if (args.size() > 1 && args[1] == "report") return auxscope::runReportCommand({"--help"});
            if (args.size() > 1 && args[1] == "compare") return auxscope::runCompareCommand({"--help"});
            if (args.size() > 1) {
                std::cerr << "auxscope help: unknown command '" << args[1]
                          << "' (record, info, decode, export, report or compare; auxscope --help)\n";
                return 2;
            }
            std::cout << kHelp;
            return 0;
        }
        if (cmd == "--version" || cmd == "version") {
            std::cout << "auxscope " << AUXSCOPE_VERSION << "\n";
            for (auto& [name, version] : auxscope::decodeLibraryVersions())
                std::cout << "  " << name << " " << version << "\n";
            std::string error;
            if (void* gui = loadGuiLibrary(error)) {
                auto qtVersion = reinterpret_cast<const char* (*)()>(dlsym(gui, "auxscope_gui_qt_version"));
                std::cout << "  Qt " << (qtVersion ? qtVersion() : "?") << "\n";
            } else {
                std::cout << "  Qt: GUI library not loadable: " << error << "\n";
            }
            return 0;
        }
    }
    if (!haveDisplay(args) && !args.empty()) {
        // A file or option meant for the GUI: nothing to show it in, and a capture is not what was asked.
        std::cerr
            << "auxscope: no display for the GUI (DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM are unset), "
               "so '"
            << args[0]
            << "' is not opened; without one: auxscope info FILE, decode FILE, report FILE "
               "(auxscope --help)\n";
        return 2;
    }
    if (!haveDisplay(args)) {
        std::cerr
            << "auxscope: no display (DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM are unset); running a "
               "3-second headless capture instead: auxscope record -a --duration 3\n";
        return auxscope::runRecordCommand({"-a", "--duration", "3"});
    }
    std::string error;
    void* gui = loadGuiLibrary(error);
    auto run = gui ? reinterpret_cast<int (*)(int, char**)>(dlsym(gui, "auxscope_run_gui")) : nullptr;
    if (!run) {
        std::cerr << "auxscope: cannot load the GUI: " << (gui ? dlerror() : error)
                  << "\n(headless capture still works: auxscope record --help)\n";
        return 1;
    }
    return run(argc, argv);
}
