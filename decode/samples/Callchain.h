// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// decode/samples/ owns the call stacks of samples: the callchains the kernel
// records (frame pointers, PERF_SAMPLE_CALLCHAIN), the user stacks it copies for
// DWARF unwinding (REGS_USER + STACK_USER, unwound with elfutils' libdwfl),
// symbolized into the function table with inlined frames, and the sampled
// profile (samples and off-CPU time as costs of stacks) that the range
// statistics aggregate like decoded spans. It includes images/, spans/,
// sideband/ and perfdata/; no trace decoder.
//
// A sample's PERF_SAMPLE_CALLCHAIN as perf reads it (tools/perf/util/machine.c,
// thread__resolve_callchain_sample, callee order): u64 entries, leaf first;
// PERF_CONTEXT_KERNEL / USER / HV / GUEST* markers set the context of the
// addresses after them (the context starts as user); an unknown marker makes
// the whole chain unusable (perf drops it); at most `maxFrames` addresses are
// taken (perf report's --max-stack, kernel.perf_event_max_stack: 127).
#include <cstdint>
#include <span>
#include <vector>

namespace auxscope {

enum class FrameContext : uint8_t { User, Kernel, Hypervisor, GuestKernel, GuestUser };

struct RawFrame {
    uint64_t address = 0;
    FrameContext context = FrameContext::User;
    bool operator==(const RawFrame&) const = default;
};

constexpr size_t kDefaultMaxStack = 127;

enum class CallchainStatus : uint8_t {
    Ok,
    Truncated,       // more than maxFrames addresses: the outermost ones were left out
    InvalidContext,  // a marker perf does not know: nothing appended
};

// Appends the frames of `callchain` (the record's bytes: u64 entries) to `out`,
// leaf first.
CallchainStatus appendCallchain(std::span<const uint8_t> callchain, std::vector<RawFrame>& out,
                                size_t maxFrames = kDefaultMaxStack);

// A sample of an event that records LBR call stacks (--call-graph lbr:
// PERF_SAMPLE_BRANCH_STACK with PERF_SAMPLE_BRANCH_CALL_STACK), as perf's
// resolve_lbr_callchain_sample reads it in callee order: the callchain's
// entries before its PERF_CONTEXT_USER (the kernel part), then the user part
// from the branch stack (`branches`: 24-byte {from, to, flags} entries, the
// newest call first): the first entry's target (the running function's entry),
// then every entry's source (the call sites, outwards). False, with nothing
// appended, when the callchain has no user part among its first `maxFrames`
// entries or the branch stack is empty: the sample then reads as a plain
// callchain. (perf's --stitch-lbr, off by default, is not done.)
bool appendLbrCallStack(std::span<const uint8_t> callchain, std::span<const uint8_t> branches,
                        std::vector<RawFrame>& out, size_t maxFrames = kDefaultMaxStack);

}  // namespace auxscope
