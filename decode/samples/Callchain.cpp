// SPDX-License-Identifier: GPL-3.0-or-later
#include "samples/Callchain.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstring>

namespace auxscope {

CallchainStatus appendCallchain(std::span<const uint8_t> callchain, std::vector<RawFrame>& out,
                                size_t maxFrames) {
    const size_t n = callchain.size() / 8;
    const size_t first = out.size();
    FrameContext context = FrameContext::User;
    size_t taken = 0;
    for (size_t i = 0; i < n; ++i) {
        uint64_t ip;
        std::memcpy(&ip, callchain.data() + 8 * i, 8);
        if (ip >= uint64_t(PERF_CONTEXT_MAX)) {
            switch (ip) {
                case uint64_t(PERF_CONTEXT_KERNEL):
                    context = FrameContext::Kernel;
                    break;
                case uint64_t(PERF_CONTEXT_USER):
                    context = FrameContext::User;
                    break;
                case uint64_t(PERF_CONTEXT_HV):
                    context = FrameContext::Hypervisor;
                    break;
                case uint64_t(PERF_CONTEXT_GUEST_KERNEL):
                    context = FrameContext::GuestKernel;
                    break;
                case uint64_t(PERF_CONTEXT_GUEST_USER):
                    context = FrameContext::GuestUser;
                    break;
                case uint64_t(PERF_CONTEXT_GUEST):
                    context = FrameContext::GuestKernel;
                    break;
                default:
                    out.resize(first);
                    return CallchainStatus::InvalidContext;
            }
            continue;
        }
        if (taken == maxFrames) return CallchainStatus::Truncated;
        out.push_back({ip, context});
        ++taken;
    }
    return CallchainStatus::Ok;
}

bool appendLbrCallStack(std::span<const uint8_t> callchain, std::span<const uint8_t> branches,
                        std::vector<RawFrame>& out, size_t maxFrames) {
    const size_t n = std::min(callchain.size() / 8, maxFrames);
    const size_t entries = branches.size() / 24;
    auto word = [](std::span<const uint8_t> s, size_t i) {
        uint64_t v;
        std::memcpy(&v, s.data() + 8 * i, 8);
        return v;
    };
    size_t user = 0;
    while (user < n && word(callchain, user) != uint64_t(PERF_CONTEXT_USER))
        ++user;
    if (user == n || entries == 0) return false;
    if (appendCallchain(callchain.first(user * 8), out, maxFrames) == CallchainStatus::InvalidContext)
        return false;
    out.push_back({word(branches, 1), FrameContext::User});  // entries[0].to
    for (size_t e = 0; e < entries; ++e)
        out.push_back({word(branches, 3 * e), FrameContext::User});  // entries[e].from
    return true;
}

}  // namespace auxscope
