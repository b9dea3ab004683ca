// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The privileged capture helper (auxscope-capture-helper): pkexec runs it as
// root for a GUI that runs as the user. It serves one socket (its standard
// input) with the protocol of capture/HelperProtocol.h: it accepts a fixed set
// of messages, validates each (a refused one is answered with the reason),
// captures with the same CaptureSession and PerfDataWriterCapture as the CLI and
// the GUI, writes into the file the GUI created and passed, streams the
// statistics back, and when the GUI's end closes stops, completes the file and
// exits. A launched command runs as the user, never as root.
#include <sys/types.h>

#include "HelperProtocol.h"

namespace auxscope::helper {

struct HelperConfig {
    uid_t user = 0;  // whom the helper serves: the output file's owner, a command's user
    StartLimits limits = StartLimits::forThisMachine();
    unsigned statsHz = 20;
};

// Serves `sock` until the peer closes it (or breaks the protocol). Returns the
// exit status: 0 after a clean end, 2 when the peer broke the protocol.
int serveCaptureHelper(int sock, const HelperConfig& config);

// The user pkexec says invoked the helper (PKEXEC_UID), else the real uid.
Expected<uid_t> invokingUser();

}  // namespace auxscope::helper
