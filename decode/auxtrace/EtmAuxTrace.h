// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// CoreSight ETM/ETE behind AuxTraceSession: etm/EtmSession (OpenCSD) as the
// decoder-neutral entry point hands it out.
#include <memory>

#include "auxtrace/AuxTraceDecode.h"
#include "etm/EtmSession.h"

namespace auxscope {

class EtmAuxTraceSession final : public AuxTraceSession {
public:
    static Expected<std::unique_ptr<AuxTraceSession>> open(const PerfDataReader& file,
                                                           const AuxTraceOptions& options,
                                                           std::unique_ptr<AuxTraceSession>* carry = nullptr);
    size_t filesLoaded() const override { return etm_->filesLoaded(); }
    bool carried() const override { return etm_->carried(); }
    DecodeLimitReport lastDecodeLimit() const override { return etm_->lastDecodeLimit(); }

    AuxTraceKind kind() const override { return AuxTraceKind::CoreSight; }
    const Sideband& sideband() const override { return etm_->sideband(); }
    const FunctionTable& functions() const override { return etm_->functions(); }
    const ImageResolver& images() const override { return etm_->images(); }
    std::vector<std::string> traceNotes() const override;
    std::vector<std::string> imageNotes() const override;
    std::vector<std::string> lossLines(std::optional<int> cpu) const override;
    std::vector<Segment> segments() const override;
    DecodedSpans decodeSpans(const DecodeWindow& window, unsigned threads) override;
    DecodeStats forEachBlock(const DecodeWindow& window, const std::function<void(const FlowBlock&)>& visit,
                             unsigned threads = 1, std::vector<Gap>* failures = nullptr) override;
    int listPackets(std::optional<int> cpu, std::ostream& out, std::ostream& err) override;
    int listRanges(std::optional<int> cpu, std::ostream& out, std::ostream& err) override;

    etm::EtmSession& etm() { return *etm_; }

private:
    explicit EtmAuxTraceSession(std::unique_ptr<etm::EtmSession> etm) : etm_(std::move(etm)) {}
    std::unique_ptr<etm::EtmSession> etm_;
};

}  // namespace auxscope
