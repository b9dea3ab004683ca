// SPDX-License-Identifier: GPL-3.0-or-later
#include "pt/PtDecodeRequest.h"

#include <fstream>
#include <iterator>

namespace auxscope {
namespace {

// Splits "FILE:FROM" or "FILE:FROM-TO" (FROM, TO numbers) off a file argument.
// A suffix that does not parse stays part of the name: paths may contain ':'.
struct FileRange {
    std::string path;
    uint64_t offset = 0;
    uint64_t size = 0;
};

Expected<FileRange> splitFileRange(const std::string& argument) {
    FileRange range{argument};
    size_t colon = argument.rfind(':');
    if (colon == std::string::npos) return range;
    std::string suffix = argument.substr(colon + 1);
    size_t dash = suffix.find('-');
    auto from = parsePtNumber(suffix.substr(0, dash));
    if (!from) return range;
    uint64_t size = 0;
    if (dash != std::string::npos) {
        auto to = parsePtNumber(suffix.substr(dash + 1));
        if (!to) return range;
        if (*to <= *from)
            return makeError(argument + ": empty range " + suffix + " (end must lie after begin)");
        size = *to - *from;
    }
    range.path = argument.substr(0, colon);
    range.offset = *from;
    range.size = size;
    return range;
}

Expected<PtImageFileSpec> parseRawImage(const std::string& argument) {
    size_t colon = argument.rfind(':');
    auto address = colon == std::string::npos ? std::nullopt : parsePtNumber(argument.substr(colon + 1));
    if (!address)
        return makeError("--raw " + argument +
                         ": the load address is missing (--raw FILE:ADDRESS, e.g. code.bin:0x1000)");
    auto range = splitFileRange(argument.substr(0, colon));
    if (!range) return range.error();
    PtImageFileSpec spec;
    spec.kind = PtImageFileSpec::Kind::Raw;
    spec.path = range->path;
    spec.address = *address;
    spec.fileOffset = range->offset;
    spec.size = range->size;
    return spec;
}

PtImageFileSpec parseElfImage(const std::string& argument) {
    PtImageFileSpec spec;
    spec.kind = PtImageFileSpec::Kind::Elf;
    spec.path = argument;
    size_t colon = argument.rfind(':');
    if (colon != std::string::npos) {
        if (auto base = parsePtNumber(argument.substr(colon + 1))) {
            spec.path = argument.substr(0, colon);
            spec.address = *base;
        }
    }
    return spec;
}

Expected<std::vector<uint8_t>> loadTrace(const PtDecodeRequest& request) {
    const std::string& path = request.tracePath;
    std::ifstream file(path, std::ios::binary);
    if (!file) return makeError(path + ": cannot open the trace");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (request.traceOffset >= bytes.size())
        return makeError(path + ": offset " + std::to_string(request.traceOffset) +
                         ": no trace there (the file has " + std::to_string(bytes.size()) + " bytes)");
    uint64_t end = bytes.size();
    if (request.traceSize) {
        if (request.traceOffset + request.traceSize > end)
            return makeError(path + ": range ends at " +
                             std::to_string(request.traceOffset + request.traceSize) +
                             ", beyond the end of the file (" + std::to_string(end) + " bytes)");
        end = request.traceOffset + request.traceSize;
    }
    return std::vector<uint8_t>(bytes.begin() + static_cast<ptrdiff_t>(request.traceOffset),
                                bytes.begin() + static_cast<ptrdiff_t>(end));
}

}  // namespace

bool PtDecodeSummary::hasErrors() const {
    for (const PtDecodeIssue& issue : issues)
        if (issue.severity == PtDecodeIssue::Severity::Error) return true;
    return false;
}

Expected<PtDecodeRequest> parsePtDecodeArguments(const std::vector<std::string>& args) {
    PtDecodeRequest request;
    for (size_t i = 0; i < args.size();) {
        const std::string& a = args[i];
        auto value = [&]() -> Expected<std::string> {
            if (i + 1 >= args.size()) return makeError(a + ": missing value");
            return args[i + 1];
        };
        if (a == "--pt" || a == "--raw" || a == "--elf" || a == "--format") {
            auto v = value();
            if (!v) return v.error();
            if (a == "--pt") {
                if (!request.tracePath.empty())
                    return makeError("--pt " + *v + ": only one trace can be decoded at a time");
                auto range = splitFileRange(*v);
                if (!range) return range.error();
                request.tracePath = range->path;
                request.traceOffset = range->offset;
                request.traceSize = range->size;
            } else if (a == "--raw") {
                auto spec = parseRawImage(*v);
                if (!spec) return spec.error();
                request.images.push_back(*spec);
            } else if (a == "--elf") {
                request.images.push_back(parseElfImage(*v));
            } else if (*v == "packets" || *v == "ptdump") {
                request.format = PtOutputFormat::Packets;
            } else if (*v == "ptxed" || *v == "flow") {
                request.format = PtOutputFormat::Ptxed;
            } else {
                return makeError("--format " + *v + ": unknown format (ptxed or packets)");
            }
            i += 2;
            continue;
        }
        if (a.empty() || a[0] != '-') {
            if (!request.tracePath.empty()) return makeError(a + ": only one trace can be decoded at a time");
            auto range = splitFileRange(a);
            if (!range) return range.error();
            request.tracePath = range->path;
            request.traceOffset = range->offset;
            request.traceSize = range->size;
            i += 1;
            continue;
        }
        if (a.rfind("--pevent", 0) == 0 || a.rfind("--sb", 0) == 0) {
            auto known = parsePtSidebandFlag(request.sideband, args, i);
            if (!known) return known.error();
            if (!*known) return makeError("unknown option '" + a + "'");
            continue;
        }
        // Each option group reads the flags it knows; one both views share sets both.
        size_t next = i;
        for (auto parse : {+[](PtDecodeRequest&r, const std::vector<std::string>&v, size_t&j) {
                               return parsePtConfigFlag(r.config, v, j);
                           },
                           +[](PtDecodeRequest&r, const std::vector<std::string>&v, size_t&j) {
                               return parsePtPacketDumpFlag(r.packets, v, j);
                           },
                           +[](PtDecodeRequest&r, const std::vector<std::string>&v, size_t&j) {
                               return parsePtInsnFlowFlag(r.flow, v, j);
                           }}) {
            size_t j = i;
            auto known = parse(request, args, j);
            if (!known) return known.error();
            if (*known) next = std::max(next, j);
        }
        if (next == i) return makeError("unknown option '" + a + "'");
        i = next;
    }
    if (request.tracePath.empty()) return makeError("no trace given (--pt FILE)");
    return request;
}

Expected<PtDecodeSummary> runPtDecode(const PtDecodeRequest& request, std::ostream& out) {
    auto trace = loadTrace(request);
    if (!trace) return trace.error();
    PtConfig config = makePtConfig(request.config, trace->data(), trace->data() + trace->size());
    PtDecodeSummary summary;
    // Sideband problems are warnings: they may cost image sections, never trace.
    auto withSideband = [&](const std::unique_ptr<PtSidebandSession>& sideband) {
        if (sideband)
            summary.issues.insert(summary.issues.end(), sideband->issues().begin(), sideband->issues().end());
    };
    if (request.format == PtOutputFormat::Packets) {
        std::unique_ptr<PtSidebandSession> sideband;
        if (request.sideband.any()) {
            // ptdump's --quiet silences the records too, not their diagnostics.
            auto opened = PtSidebandSession::open(request.sideband, PtSidebandSession::Style::Ptdump, nullptr,
                                                  out, !request.packets.quiet);
            if (!opened) return opened.error();
            sideband = std::move(*opened);
        }
        auto dumped = dumpPtPackets(config, request.packets, out, sideband.get());
        if (!dumped) return makeError(request.tracePath + ": " + dumped.error().message);
        summary.packetCounts = dumped->counts;
        summary.issues = std::move(dumped->issues);
        withSideband(sideband);
        return summary;
    }
    // Sideband MMAP records can name the code instead.
    if (request.images.empty() && !request.sideband.any())
        return makeError(
            "the instruction flow needs the traced code: give --raw FILE:ADDRESS, --elf FILE or "
            "--pevent:primary SIDEBAND");
    PtImage image;
    for (const PtImageFileSpec& spec : request.images) {
        auto added = spec.kind == PtImageFileSpec::Kind::Raw
                         ? image.addRaw(spec.path, spec.address.value_or(0), spec.fileOffset, spec.size)
                         : image.addElf(spec.path, spec.address);
        if (!added) return added.error();
    }
    std::unique_ptr<PtSidebandSession> sideband;
    if (request.sideband.any()) {
        // Process images read through the same section cache as --raw/--elf.
        auto opened = PtSidebandSession::open(request.sideband, PtSidebandSession::Style::Ptxed,
                                              image.sectionCache(), out);
        if (!opened) return opened.error();
        sideband = std::move(*opened);
    }
    auto flow = decodePtInsnFlow(config, image, request.flow, out, sideband.get());
    if (!flow) return makeError(request.tracePath + ": " + flow.error().message);
    summary.instructions = flow->instructions;
    summary.blocks = flow->blocks;
    summary.issues = std::move(flow->issues);
    withSideband(sideband);
    return summary;
}

}  // namespace auxscope
