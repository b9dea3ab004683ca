// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/analysis/CompareLoader.h"

#include <algorithm>

#include "auxtrace/AuxTraceDecode.h"
#include "auxtrace/SpeSamples.h"
#include "perfdata/PerfDataReader.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"
#include "spe/SpeDecoder.h"

namespace auxscope {

namespace {

Error failed(const std::string& path, const std::string& message) {
    return makeError(message.starts_with(path) ? message : path + ": " + message);
}

// What the function table must keep alive.
struct Holder {
    std::unique_ptr<PerfDataReader> file;
    std::unique_ptr<AuxTraceSession> session;
    std::shared_ptr<const SampleProfile> profile;
};

}  // namespace

Expected<CompareSideData> loadCompareSide(const std::string& path) {
    auto opened = PerfDataReader::open(path);
    if (!opened) return failed(path, opened.error().message);
    auto holder = std::make_shared<Holder>();
    holder->file = std::make_unique<PerfDataReader>(std::move(*opened));
    const QString name = QString::fromStdString(path);
    CompareSideData out;
    // Arm SPE has no flow: its records are samples of the arm_spe events, as
    // `auxscope compare` reads them.
    const bool spe = auxTraceKind(*holder->file) == AuxTraceKind::ArmSpe;
    if (!spe && hasDecodableAuxTrace(*holder->file)) {
        auto session = AuxTraceSession::open(*holder->file);
        if (!session) return failed(path, session.error().message);
        holder->session = std::move(*session);
        const TimeExtent extent = recordingExtent(*holder->session);
        DecodeWindow window;
        window.begin = extent.begin;
        DecodedSpans decoded = holder->session->decodeSpans(window, 0);
        RangeQuery query;
        query.begin = window.begin;
        query.end = window.end;
        query.threads = 0;
        auto stats = computeRangeStats(decoded.threads, query);
        if (!stats) return failed(path, stats.error().message);
        out.stats = std::make_shared<const RangeStats>(std::move(*stats));
        out.functions = std::shared_ptr<const FunctionTable>(holder, &holder->session->functions());
        out.label = name + " (" + auxTraceKindName(holder->session->kind()) + ")";
        return out;
    }
    auto sideband = Sideband::load(*holder->file);
    if (!sideband) return failed(path, sideband.error().message);
    SampleProfileOptions options;
    if (spe) {
        auto records = spe::decodeSpeRecords(*holder->file, *sideband);
        if (!records) return failed(path, records.error().message);
        options.synthetic = std::make_shared<const SyntheticSamples>(speSyntheticSamples(records->records));
    }
    auto loaded =
        SampleProfile::load(*holder->file, std::make_shared<const Sideband>(std::move(*sideband)), options);
    if (!loaded) return failed(path, loaded.error().message);
    holder->profile = *loaded;
    const SampleProfile& profile = *holder->profile;
    int chosen = -1;
    for (const SampledEvent& e : profile.events())
        if (e.samples > 0 && !e.switchEvent) {
            chosen = e.index;
            break;
        }
    if (chosen < 0)
        for (const SampledEvent& e : profile.events())
            if (e.samples > 0) {
                chosen = e.index;
                break;
            }
    if (chosen < 0) return failed(path, "no AUX trace to decode and no samples to compare");
    SampleQuery query;
    query.event = chosen;
    query.begin = std::min(profile.sideband().model().firstTime(), profile.firstTime());
    auto stats = computeSampleRangeStats(profile, query);
    if (!stats) return failed(path, stats.error().message);
    out.stats = std::make_shared<const RangeStats>(std::move(*stats));
    out.functions = std::shared_ptr<const FunctionTable>(holder, &profile.functions());
    out.label = name + " (samples of " + QString::fromStdString(profile.events()[size_t(chosen)].name) + ")";
    return out;
}

}  // namespace auxscope
