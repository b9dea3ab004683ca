// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// SIGTERM, SIGINT and SIGHUP to the GUI (a logout, `kill`, Ctrl+C in the
// terminal that started it) end it the way closing the window does, without
// asking: a capture still running is stopped and its perf.data completed, every
// capture is kept, then the application quits. The handler only writes a byte
// to a socketpair (async-signal-safe); a QSocketNotifier on the GUI thread reads
// it and asks the window to quit.
namespace auxscope {

class MainWindow;

// Installs the handlers for `window` (once per process; later calls do nothing
// and return false). Returns whether they are installed.
bool installQuitSignals(MainWindow& window);

}  // namespace auxscope
