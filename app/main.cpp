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
#include "cli/DecodeCommand.h"
#include "cli/ExportCommand.h"
#include "cli/InfoCommand.h"
#include "cli/RecordCommand.h"
#include "cli/ReportCommand.h"

namespace {

const char* kHelp = R"(usage: auxscope [FILE]                start the GUI
       auxscope record [options] [-- cmd]  capture headless and print per-CPU totals
       auxscope info [--json] FILE        what a perf.data holds: events, features, records, losses
       auxscope export FILE [--format perfetto|csv] [-o OUT]
                                          convert a perf.data for ui.perfetto.dev or scripts
       auxscope report FILE [--tid T] [--time A-B] [--sort self|total|calls|insns]
                       [--format text|csv|json] [--top N] [--tree]
                                          top functions and call tree of a decoded AUX trace
       auxscope decode FILE [--format spans|insn|ranges|packets] [--cpu N] [--tid T] [--time A-B]
                                          decode a perf.data's Intel PT or CoreSight trace
       auxscope decode SNAPSHOT_DIR [--format ranges|packets]
                                          decode an OpenCSD/DS-5 CoreSight snapshot
       auxscope decode --pt FILE [--raw BIN:ADDR | --elf ELF] [--format ptxed|packets]
                                          decode raw Intel PT trace with libipt
       decode, report and export find code and names with [--symfs DIR] [--binary-dir DIR]
       [--debug-dir DIR] [--debuginfod URL] [--no-debuginfod] [--vmlinux FILE] [--kcore DIR|FILE]
       auxscope --version                 versions of auxscope and its libraries
       auxscope help COMMAND              help for a command

Without a display (no DISPLAY, WAYLAND_DISPLAY or QT_QPA_PLATFORM), `auxscope`
runs a 3-second system-wide headless capture and prints its summary instead.
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

bool haveDisplay() {
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
        if (cmd == "-h" || cmd == "--help" || cmd == "help") {
            if (args.size() > 1 && args[1] == "record") return auxscope::runRecordCommand({"--help"});
            if (args.size() > 1 && args[1] == "info") return auxscope::runInfoCommand({"--help"});
            if (args.size() > 1 && args[1] == "export") return auxscope::runExportCommand({"--help"});
            if (args.size() > 1 && args[1] == "decode") return auxscope::runDecodeCommand({"--help"});
            if (args.size() > 1 && args[1] == "report") return auxscope::runReportCommand({"--help"});
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
        if (cmd == "decode" || cmd == "export") {
            std::cerr << "auxscope " << cmd << ": not available in this build yet (see auxscope --help)\n";
            return 2;
        }
    }
    if (!haveDisplay()) {
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
