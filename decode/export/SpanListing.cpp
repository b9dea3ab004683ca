// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/SpanListing.h"

#include <algorithm>
#include <vector>

#include "sideband/Sideband.h"

namespace auxscope {

const char* branchClassName(BranchClass c) {
    switch (c) {
        case BranchClass::Other:
            return "other";
        case BranchClass::Jump:
            return "jump";
        case BranchClass::Call:
            return "call";
        case BranchClass::Return:
            return "return";
        case BranchClass::FarCall:
            return "far-call";
        case BranchClass::FarReturn:
            return "far-return";
        case BranchClass::FarJump:
            return "far-jump";
    }
    return "?";
}

// "%" PRIu64 " %3d %6d %016" PRIx64 "-%016" PRIx64 " %5" PRIu64 " %-10s " and the function.
void appendInsnLine(LineBuffer& text, const FlowBlock& b, const FunctionTable& functions) {
    text.dec(b.time);
    text.put(' ');
    text.dec(b.cpu, 3);
    text.put(' ');
    text.dec(b.tid, 6);
    text.put(' ');
    text.hex(b.ip, 16);
    text.put('-');
    text.hex(b.endIp, 16);
    text.put(' ');
    text.dec(b.instructions, 5);
    text.put(' ');
    text.left(branchClassName(b.last), 10);
    text.put(' ');
    text.put(functions[b.function].name);
    text.endLine();
}

// --format spans: per thread a header line, then one line per span as
// "%" PRIu64 " %" PRIu64 " %3d %8" PRIu64 " %*s" (2 spaces a level, 40 levels at
// most) and the function or "[reason: detail]". Long stores are cut into
// chunks formatted on `threads` threads and written in order.
bool writeSpanListing(const DecodedSpans& result, const Sideband& sb, const FunctionTable& functions,
                      unsigned threads, std::ostream& out) {
    constexpr size_t kChunkSpans = size_t(1) << 15;
    struct Chunk {
        int32_t tid;
        const SpanStore* store;
        size_t from, to;
    };
    std::vector<Chunk> chunks;
    for (const auto& [tid, store] : result.threads) {
        size_t from = 0;
        do {  // a chunk (maybe empty) starting with the thread's header line, then the rest
            const size_t to = std::min(store.size(), from + kChunkSpans);
            chunks.push_back({tid, &store, from, to});
            from = to;
        } while (from < store.size());
    }
    return writeChunksInOrder(
        chunks.size(), threads,
        [&](size_t i, LineBuffer& text) {
            const Chunk& c = chunks[i];
            const SpanStore& store = *c.store;
            if (c.from == 0) {
                text.put("thread ");
                text.dec(c.tid);
                text.put(" (");
                text.put(sb.model().threadName(c.tid));
                text.put(") pid ");
                text.dec(sb.pidOf(c.tid));
                text.put(": ");
                text.dec(uint64_t(store.size()));
                text.put(" spans\n");
            }
            text.reserve((c.to - c.from) * 64);
            store.forEach(c.from, c.to, [&](size_t, const Span& span) {
                text.dec(span.start);
                text.put(' ');
                text.dec(span.end);
                text.put(' ');
                text.dec(span.depth, 3);
                text.put(' ');
                text.dec(span.instructions, 8);
                text.put(' ');
                text.emptyField(2 * int64_t(std::min(span.depth, 40)));
                if (span.isGap()) {
                    const Gap& gap = store.gaps()[size_t(span.gap)];
                    text.put('[');
                    text.put(gapReasonName(gap.reason));
                    text.put(": ");
                    text.put(gap.detail);
                    text.put("]\n");
                } else {
                    text.put(functions[span.function].name);
                    text.put('\n');
                }
            });
        },
        out);
}

}  // namespace auxscope
