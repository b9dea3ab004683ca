// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Entry points of the GUI library (libauxscope_app.so), looked up with dlsym by
// the `auxscope` binary.

extern "C" {
int auxscope_run_gui(int argc, char** argv);
const char* auxscope_gui_qt_version();
}
