// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Intel PT behind AuxTraceSession: pt/PtSession (libipt) as the decoder-neutral
// entry point hands it out.
#include <memory>

#include "auxtrace/AuxTraceDecode.h"
#include "pt/PtSpanDecoder.h"

namespace auxscope {

class PtAuxTraceSession final : public AuxTraceSession {
public:
    static Expected<std::unique_ptr<AuxTraceSession>> open(const PerfDataReader& file,
                                                           const AuxTraceOptions& options,
                                                           std::unique_ptr<AuxTraceSession>* carry = nullptr);
    size_t filesLoaded() const override { return pt_->filesLoaded(); }
    bool carried() const override { return pt_->carried(); }
    DecodeLimitReport lastDecodeLimit() const override { return pt_->lastDecodeLimit(); }

    AuxTraceKind kind() const override { return AuxTraceKind::IntelPt; }
    const Sideband& sideband() const override { return pt_->sideband(); }
    const FunctionTable& functions() const override { return pt_->functions(); }
    const ImageResolver& images() const override { return pt_->images(); }
    std::vector<std::string> traceNotes() const override;
    std::vector<std::string> imageNotes() const override;
    std::vector<std::string> lossLines(std::optional<int> cpu) const override;
    std::vector<Segment> segments() const override;
    DecodedSpans decodeSpans(const DecodeWindow& window, unsigned threads) override;
    DecodeStats forEachBlock(const DecodeWindow& window, const std::function<void(const FlowBlock&)>& visit,
                             unsigned threads = 1, std::vector<Gap>* failures = nullptr) override;
    int listPackets(std::optional<int> cpu, std::ostream& out, std::ostream& err) override;

    PtSession& pt() { return *pt_; }

private:
    explicit PtAuxTraceSession(std::unique_ptr<PtSession> pt) : pt_(std::move(pt)) {}
    std::unique_ptr<PtSession> pt_;
};

}  // namespace auxscope
