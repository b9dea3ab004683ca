// SPDX-License-Identifier: GPL-3.0-or-later
#include "SimulatedCapture.h"

namespace auxscope {

Expected<std::unique_ptr<SimulatedCapture>> SimulatedCapture::create(const SimulatedCaptureOptions& options) {
    auto session = CaptureSession::openSimulated(options);
    if (!session) return session.error();
    std::unique_ptr<SimulatedCapture> c(new SimulatedCapture());
    c->session_ = std::move(session.value());
    c->firstId_ = options.firstId;
    return c;
}

}  // namespace auxscope
