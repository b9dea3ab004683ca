// SPDX-License-Identifier: GPL-3.0-or-later
#include "pt/PtDecodeRequest.h"

#include <fstream>
#include <iterator>

#include "OptionParser.h"

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
    if (!range) return makeError("--raw " + argument + ": " + range.error().message);
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

namespace {

// Every option of `auxscope decode --pt`: libipt's ptxed and ptdump spellings.
// The common parser (OptionParser.h) reads them (--opt VALUE and --opt=VALUE
// alike) and refuses anything else; each option group then applies its own.
constexpr OptionSpec kPtDecodeOptions[] = {
    {"pt", 0, OptionArg::Required, "FILE[:FROM[-TO]]", ""},
    {"raw", 0, OptionArg::Required, "BIN[:FROM[-TO]]:ADDR", ""},
    {"elf", 0, OptionArg::Required, "ELF[:BASE]", ""},
    {"format", 0, OptionArg::Required, "ptxed|packets", ""},
    // PtConfigOptions
    {"cpu", 0, OptionArg::Required, "F/M[/S]", ""},
    {"mtc-freq", 0, OptionArg::Required, "N", ""},
    {"nom-freq", 0, OptionArg::Required, "N", ""},
    {"cpuid-0x15.eax", 0, OptionArg::Required, "N", ""},
    {"cpuid-0x15.ebx", 0, OptionArg::Required, "N", ""},
    {"cpuid-15", 0, OptionArg::Required, "EAX,EBX", ""},
    {"filter:addr0_cfg", 0, OptionArg::Required, "C", ""},
    {"filter:addr0_a", 0, OptionArg::Required, "A", ""},
    {"filter:addr0_b", 0, OptionArg::Required, "B", ""},
    {"filter:addr1_cfg", 0, OptionArg::Required, "C", ""},
    {"filter:addr1_a", 0, OptionArg::Required, "A", ""},
    {"filter:addr1_b", 0, OptionArg::Required, "B", ""},
    {"filter:addr2_cfg", 0, OptionArg::Required, "C", ""},
    {"filter:addr2_a", 0, OptionArg::Required, "A", ""},
    {"filter:addr2_b", 0, OptionArg::Required, "B", ""},
    {"filter:addr3_cfg", 0, OptionArg::Required, "C", ""},
    {"filter:addr3_a", 0, OptionArg::Required, "A", ""},
    {"filter:addr3_b", 0, OptionArg::Required, "B", ""},
    // PtPacketDumpOptions (--time, --quiet: the flow's too)
    {"no-offset", 0, OptionArg::None, "", ""},
    {"raw-bytes", 0, OptionArg::None, "", ""},
    {"lastip", 0, OptionArg::None, "", ""},
    {"exec-mode", 0, OptionArg::None, "", ""},
    {"time-delta", 0, OptionArg::None, "", ""},
    {"quiet", 'q', OptionArg::None, "", ""},
    {"no-pad", 0, OptionArg::None, "", ""},
    {"no-sync", 0, OptionArg::None, "", ""},
    {"no-tcal", 0, OptionArg::None, "", ""},
    {"no-wall-clock", 0, OptionArg::None, "", ""},
    {"no-timing", 0, OptionArg::None, "", ""},
    {"no-cyc", 0, OptionArg::None, "", ""},
    {"time", 0, OptionArg::None, "", ""},
    {"tcal", 0, OptionArg::None, "", ""},
    // PtInsnFlowOptions
    {"offset", 0, OptionArg::None, "", ""},
    {"check", 0, OptionArg::None, "", ""},
    {"event:time", 0, OptionArg::None, "", ""},
    {"event:ip", 0, OptionArg::None, "", ""},
    {"event:tick", 0, OptionArg::None, "", ""},
    {"block:show-blocks", 0, OptionArg::None, "", ""},
    {"block:end-on-call", 0, OptionArg::None, "", ""},
    {"block:end-on-jump", 0, OptionArg::None, "", ""},
    {"stat", 0, OptionArg::None, "", ""},
    {"stat:insn", 0, OptionArg::None, "", ""},
    {"stat:blocks", 0, OptionArg::None, "", ""},
    {"no-inst", 0, OptionArg::None, "", ""},
    {"insn-decoder", 0, OptionArg::None, "", ""},
    {"block-decoder", 0, OptionArg::None, "", ""},
    // PtSidebandOptions
    {"sb", 0, OptionArg::None, "", ""},
    {"sb:compact", 0, OptionArg::None, "", ""},
    {"sb:verbose", 0, OptionArg::None, "", ""},
    {"sb:filename", 0, OptionArg::None, "", ""},
    {"sb:offset", 0, OptionArg::None, "", ""},
    {"sb:time", 0, OptionArg::None, "", ""},
    {"sb:switch", 0, OptionArg::None, "", ""},
    {"sb:warn", 0, OptionArg::None, "", ""},
    {"pevent", 0, OptionArg::Required, "FILE", ""},
    {"pevent:primary", 0, OptionArg::Required, "FILE", ""},
    {"pevent:secondary", 0, OptionArg::Required, "FILE", ""},
    {"pevent:sample-type", 0, OptionArg::Required, "N", ""},
    {"pevent:time-zero", 0, OptionArg::Required, "N", ""},
    {"pevent:tsc-offset", 0, OptionArg::Required, "N", ""},
    {"pevent:kernel-start", 0, OptionArg::Required, "ADDR", ""},
    {"pevent:time-shift", 0, OptionArg::Required, "N", ""},
    {"pevent:time-mult", 0, OptionArg::Required, "N", ""},
    {"pevent:sysroot", 0, OptionArg::Required, "DIR", ""},
    {"pevent:vdso-x64", 0, OptionArg::Required, "FILE", ""},
    {"pevent:vdso-x32", 0, OptionArg::Required, "FILE", ""},
    {"pevent:vdso-ia32", 0, OptionArg::Required, "FILE", ""},
    {"pevent:kcore", 0, OptionArg::Required, "FILE", ""},
};

Expected<void> setTrace(PtDecodeRequest& request, const std::string& what, const std::string& argument) {
    if (!request.tracePath.empty())
        return makeError(what + ": only one trace can be decoded at a time ('" + request.tracePath +
                         "' given)");
    auto range = splitFileRange(argument);
    if (!range) return range.error();
    request.tracePath = range->path;
    request.traceOffset = range->offset;
    request.traceSize = range->size;
    return {};
}

}  // namespace

std::span<const OptionSpec> ptDecodeOptionTable() {
    return kPtDecodeOptions;
}

Expected<PtDecodeRequest> parsePtDecodeArguments(const std::vector<std::string>& args) {
    auto parsed = parseCommandLine(kPtDecodeOptions, args);
    if (!parsed) return parsed.error();
    PtDecodeRequest request;
    for (const ParsedOption& o : parsed->options) {
        const std::string& v = o.value ? *o.value : std::string();
        if (o.is("pt")) {
            if (auto r = setTrace(request, "--pt " + v, v); !r) return r.error();
        } else if (o.is("raw")) {
            auto spec = parseRawImage(v);
            if (!spec) return spec.error();
            request.images.push_back(*spec);
        } else if (o.is("elf")) {
            request.images.push_back(parseElfImage(v));
        } else if (o.is("format")) {
            if (v == "packets" || v == "ptdump")
                request.format = PtOutputFormat::Packets;
            else if (v == "ptxed" || v == "flow")
                request.format = PtOutputFormat::Ptxed;
            else
                return makeError("--format " + v + ": unknown format (ptxed or packets)");
        } else {
            // The option groups apply what they know (the table above holds
            // nothing else), each from its normalized spelling "--name" and value.
            // A flag two groups know (--time: ptxed's and ptdump's) goes to both.
            const std::string flag = "--" + std::string(o.spec->longName);
            bool known = false;
            for (const Expected<bool>& took : {parsePtSidebandFlag(request.sideband, flag, o.value),
                                               parsePtConfigFlag(request.config, flag, o.value),
                                               parsePtPacketDumpFlag(request.packets, flag, o.value),
                                               parsePtInsnFlowFlag(request.flow, flag, o.value)}) {
                if (!took) return took.error();
                known |= *took;
            }
            if (!known) return makeError("option '" + o.spelling + "': not handled (internal)");
        }
    }
    for (const std::string& operand : parsed->operands)
        if (auto r = setTrace(request, "'" + operand + "'", operand); !r) return r.error();
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
