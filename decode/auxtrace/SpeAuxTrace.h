// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Arm SPE behind AuxTraceSession: the file's SPE records (spe/SpeDecoder.h),
// decoded once when the session opens, with the sideband and code images the
// views resolve PCs and data addresses with. SPE samples operations; it has no
// control flow, so the session decodes no spans (decodeSpans() and
// forEachBlock() return none, traceNotes() says so).
#include <memory>

#include "auxtrace/AuxTraceDecode.h"
#include "perfdata/AuxStreams.h"
#include "spe/SpeDecoder.h"

namespace auxscope {

class SpeAuxTraceSession final : public AuxTraceSession {
public:
    static Expected<std::unique_ptr<AuxTraceSession>> open(const PerfDataReader& file,
                                                           const AuxTraceOptions& options,
                                                           std::unique_ptr<AuxTraceSession>* carry = nullptr);
    ~SpeAuxTraceSession() override;
    size_t filesLoaded() const override { return filesLoaded_; }
    bool carried() const override { return carried_; }

    AuxTraceKind kind() const override { return AuxTraceKind::ArmSpe; }
    const Sideband& sideband() const override { return *sideband_; }
    const FunctionTable& functions() const override { return *functions_; }
    const ImageResolver& images() const override { return *images_; }
    std::vector<std::string> traceNotes() const override;
    std::vector<std::string> imageNotes() const override;
    std::vector<std::string> lossLines(std::optional<int> cpu) const override;
    // One per AUXTRACE buffer, timed by the records that end in it.
    std::vector<Segment> segments() const override;
    DecodedSpans decodeSpans(const DecodeWindow& window, unsigned threads) override;
    DecodeStats forEachBlock(const DecodeWindow& window, const std::function<void(const FlowBlock&)>& visit,
                             unsigned threads = 1, std::vector<Gap>* failures = nullptr) override;
    // Per AUXTRACE buffer in file order, the packets in the layout of `perf report -D` (perf 6.1's
    // arm_spe_dump: ".  OFFSET:  HEX BYTES  TEXT"), then the packet counts per CPU.
    int listPackets(std::optional<int> cpu, std::ostream& out, std::ostream& err) override;

    // The file's records, by time.
    const spe::SpeRecords& records() const { return records_; }

private:
    SpeAuxTraceSession() = default;
    const PerfDataReader* file_ = nullptr;
    std::unique_ptr<Sideband> sideband_;
    std::unique_ptr<FunctionTable> functions_;
    std::unique_ptr<ImageResolver> images_;
    spe::SpeRecords records_;
    std::vector<AuxStream> streams_;
    size_t filesLoaded_ = 0;
    bool carried_ = false;
};

// Writes one packet line as perf 6.1's arm_spe_dump does (with its newline).
void speDumpLine(std::ostream& out, uint64_t offset, const uint8_t* bytes, size_t n, const std::string* text);

// Lists one AUXTRACE buffer's packets as perf 6.1 does; counts packets per perf
// name into `counts` ("Bad packet" for the bytes that are none).
void speDumpBuffer(std::span<const uint8_t> bytes, std::ostream& out,
                   std::map<std::string, uint64_t>& counts);

}  // namespace auxscope
