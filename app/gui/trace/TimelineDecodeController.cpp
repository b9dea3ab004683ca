// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/trace/TimelineDecodeController.h"

#include <QApplication>
#include <QLayout>
#include <QPointer>
#include <QProgressBar>

#include <linux/perf_event.h>

#include <chrono>
#include <map>
#include <thread>
#include <unordered_map>

#include "auxtrace/AuxTraceDecode.h"
#include "auxtrace/SpeAnalysis.h"
#include "auxtrace/SpeAuxTrace.h"
#include "auxtrace/SpeSamples.h"
#include "gui/analysis/CodeView.h"
#include "gui/analysis/RangeStatsPane.h"
#include "gui/analysis/SpePane.h"
#include "gui/timeline/OverviewStrip.h"
#include "gui/timeline/TimeFormat.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceText.h"
#include "gui/trace/TraceTimelineTab.h"
#include "images/CodeAnnotation.h"
#include "images/ImageResolver.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"
#include "spans/SidebandLanes.h"
#include "spans/TimelineOverview.h"
#include "spe/SpeDecoder.h"

namespace auxscope {
namespace {

std::string eventName(const PerfAttr& a) {
    if (!a.name.empty()) return a.name;
    return "type " + std::to_string(a.attr.type) + " config " + std::to_string(a.attr.config);
}

const QString kDecodingHint = QStringLiteral("decoding…");

// Each lane sample's stack, from the sampled profile: the profile's sample of
// the same thread at the same time (of the same event when there are several).
class ProfileStacks {
public:
    explicit ProfileStacks(const SampleProfile& profile) : profile_(profile) {
        for (size_t i = 0; i < profile.size(); ++i)
            byTid_[profile.tid(i)].push_back(uint32_t(i));
    }
    uint32_t at(int32_t tid, uint64_t time, int event) {
        if (tid != lastTid_) {
            auto it = byTid_.find(tid);
            last_ = it == byTid_.end() ? nullptr : &it->second;
            lastTid_ = tid;
        }
        if (!last_) return 0;
        auto it = std::lower_bound(last_->begin(), last_->end(), time,
                                   [&](uint32_t i, uint64_t t) { return profile_.time(i) < t; });
        uint32_t any = 0;
        for (; it != last_->end() && profile_.time(*it) == time; ++it) {
            if (profile_.event(*it) == event) return profile_.node(*it);
            if (!any) any = profile_.node(*it);
        }
        return any;
    }

private:
    const SampleProfile& profile_;
    std::unordered_map<int32_t, std::vector<uint32_t>> byTid_;  // sample indices by time, per thread
    int32_t lastTid_ = INT32_MIN;
    const std::vector<uint32_t>* last_ = nullptr;
};

// The lanes' symbols and stacks from the sampled profile: the function at a
// sample's IP from the profile's images (the file's one symbol load) and each
// sample's stack as a node of the profile's tree. `stacks` must outlive the build.
void useProfile(SidebandLanesOptions& options, const std::shared_ptr<const SampleProfile>& profile,
                ProfileStacks& stacks) {
    options.functions = profile->sharedFunctions();
    options.functionAt = [profile](int32_t pid, uint64_t ip) {
        return profile->images().functionAt(pid, ip);
    };
    options.stacks = std::shared_ptr<const CallTree>(profile, &profile->tree());
    options.stackAt = [&stacks](int32_t tid, uint64_t time, int event) {
        return stacks.at(tid, time, event);
    };
}

bool hasSamples(const PerfDataReader& reader) {
    auto it = reader.summary().recordsByType.find(PERF_RECORD_SAMPLE);
    return it != reader.summary().recordsByType.end() && it->second > 0;
}

// An Arm SPE file: its AUXTRACE_INFO says arm_spe.
bool isArmSpe(const PerfDataReader& reader) {
    for (const PerfAuxtraceInfo& info : reader.summary().auxtraceInfo)
        if (info.type == auxtrace::kTypeArmSpe) return true;
    return false;
}

// An SPE file's records, decoded once on the worker that opens the timeline:
// they become the profile's arm_spe events and the SPE tab's data.
struct SpeLoad {
    std::shared_ptr<const spe::SpeRecords> records;
    std::string error;
};
SpeLoad decodeSpe(const PerfDataReader& reader, const Sideband& sideband) {
    SpeLoad out;
    auto decoded = spe::decodeSpeRecords(reader, sideband);
    if (decoded)
        out.records = std::make_shared<const spe::SpeRecords>(std::move(*decoded));
    else
        out.error = decoded.error().message;
    return out;
}

// The SPE tab's data: each record's function (the profile's symbols), the
// processes' mappings and data symbols, the compressed address axis.
std::shared_ptr<const SpeViewData> speViewData(const std::shared_ptr<const spe::SpeRecords>& records,
                                               const std::shared_ptr<const SampleProfile>& profile,
                                               const PerfDataReader& reader, const ImageOptions& images) {
    auto data = std::make_shared<SpeViewData>();
    data->owner = records;
    data->records = records->records;
    data->profile = profile;
    data->function.resize(records->records.size(), FunctionTable::kUnknown);
    if (profile)
        for (size_t i = 0; i < records->records.size(); ++i) {
            const spe::SpeRecord& r = records->records[i];
            if (r.hasPc) data->function[i] = profile->images().functionAt(r.pid, r.pc);
        }
    std::vector<std::string> dirs = images.binaryDirs;
    data->space = std::make_shared<const SpeAddressSpace>(SpeAddressSpace::load(reader, dirs));
    data->axis = std::make_shared<const SpeAddressAxis>(records->records);
    data->sourceName = [records](uint16_t source) {
        return spe::dataSourceName(source, records->midr.empty() ? 0 : records->midr.begin()->second);
    };
    data->eventNames = [](uint64_t events) { return spe::eventNames(events); };
    data->summarize();
    return data;
}

// SPE records as ticks on their threads' lanes, coloured by total latency or data source.
void addSpeTicks(SidebandLanesOptions& options, const spe::SpeRecords& records) {
    options.extraEvent = "arm_spe";
    options.extraValueName = "total latency (cycles)";
    const uint64_t midr = records.midr.empty() ? 0 : records.midr.begin()->second;
    options.extraSamples.reserve(records.records.size());
    for (const spe::SpeRecord& r : records.records) {
        SidebandLanesOptions::ExtraSample s;
        s.time = r.time, s.ip = r.pc;
        s.pid = r.pid, s.tid = r.tid;
        s.cpu = int16_t(r.cpu);
        s.value = r.hasTotalLatency ? r.totalLatency : 0;
        s.key = r.hasDataSource ? uint16_t(r.dataSource + 1) : 0;
        if (s.key && !options.extraKeyNames.count(s.key))
            options.extraKeyNames[s.key] = "source " + spe::dataSourceName(r.dataSource, midr);
        options.extraSamples.push_back(s);
    }
}

// What the timeline's status says of SPE records: how many, what did not decode.
QString speLine(const spe::SpeRecords& r) {
    QString text = QString("Arm SPE: %1 records (%2 packets, %3 bytes)")
                       .arg(formatCount(r.records.size()))
                       .arg(formatCount(r.stats.packets))
                       .arg(formatCount(r.stats.bytes));
    for (const auto& [reason, bytes] : r.stats.gaps)
        text += QString("; %1 bytes: %2").arg(formatCount(bytes)).arg(QString::fromStdString(reason));
    text += ". The SPE tab below: latency histogram and memory map.";
    for (const std::string& note : r.notes)
        text += "\n" + QString::fromStdString(note);
    return text;
}

// What the timeline's status says of a profile: its samples and stacks, and what is partial and why.
QString profileLine(const SampleProfile& profile) {
    QStringList events;
    for (const SampledEvent& e : profile.events())
        if (e.samples)
            events << QString("%1 %2 samples%3")
                          .arg(formatCount(e.samples))
                          .arg(QString::fromStdString(e.name))
                          .arg(e.withCallchain ? QString(" with call stacks") : QString());
    QString text = events.isEmpty() ? QString("No samples") : "Samples: " + events.join(", ");
    text += ". Select a range for its top functions, call tree and flame graph.";
    for (const StackNote& n : profile.stackNotes())
        text += QString("\n%1 %2").arg(formatCount(n.samples)).arg(QString::fromStdString(n.reason));
    if (!profile.offCpu().empty() && !profile.hasOffCpuStacks())
        text +=
            "\nOff-CPU time has no stacks (no switch-out samples with call stacks): record with "
            "perf record -e sched:sched_switch -g, or auxscope record -g -e sched:sched_switch.";
    return text;
}

}  // namespace

TimelineDecodeController::TimelineDecodeController(TraceTimelineTab* tab,
                                                   std::shared_ptr<PerfDataReader> reader, bool hasTrace,
                                                   const QString& traceKind, ImageOptions images,
                                                   QObject* parent)
    : QObject(parent),
      tab_(tab),
      reader_(std::move(reader)),
      hasTrace_(hasTrace),
      traceKind_(traceKind),
      images_(std::move(images)) {
    connect(tab_, &TraceTimelineTab::cancelRequested, this, &TimelineDecodeController::cancel);
    // A window the view settles on is decoded (the strip follows the view at once: it obeys the state).
    connect(tab_->state(), &TimelineState::windowSettled, this,
            &TimelineDecodeController::timelineRangeChanged);
    connect(tab_->state(), &TimelineState::dataChanged, this, [this] {
        // Shown (large data: once the view has summarized it).
        if (tab_->view()->undecodedHint() == kDecodingHint) tab_->view()->setUndecodedHint({});
        emit updated();
    });
}

const ImageResolver* TimelineDecodeController::images() const {
    if (session_) return &session_->images();
    return profile_ ? &profile_->images() : nullptr;
}

TimelineDecodeController::~TimelineDecodeController() {
    // A timeline being built or decoded stops at its next progress report.
    *timelineCancel_ = true;
}

void TimelineDecodeController::open() {
    if (!hasTrace_) {
        buildSidebandTimeline();
        return;
    }
    // Open the session and build the lanes and the overview on a worker thread;
    // the first frame shows them, and the decode of a first window follows.
    timelineBusy_ = true;
    ptOpening_ = true;
    tab_->showBusy(true);
    tab_->setBusyProgress("Opening %p%");  // busy: the session opens in one step
    staleTimeline();
    QPointer<TimelineDecodeController> self(this);
    std::thread([self, reader = reader_, lock = sessionLock_, cancel = timelineCancel_, images = images_] {
        std::unique_lock guard(*lock);
        const auto started = std::chrono::steady_clock::now();
        auto lastReport = started - std::chrono::seconds(1);
        auto report = [&](int percent, const QString& phase) {
            const auto now = std::chrono::steady_clock::now();
            if (now - lastReport >= std::chrono::milliseconds(50)) {
                lastReport = now;
                QMetaObject::invokeMethod(
                    qApp,
                    [self, percent, phase] {
                        if (self && self->ptOpening_) self->tab_->setProgress(percent, phase);
                    },
                    Qt::QueuedConnection);
            }
            return !*cancel;
        };
        AuxTraceOptions traceOptions;
        traceOptions.images = images;
        auto opened = AuxTraceSession::open(*reader, traceOptions);
        std::shared_ptr<AuxTraceSession> session;
        std::shared_ptr<const TimelineData> base;
        std::shared_ptr<const TimelineOverview> overview;
        std::shared_ptr<const SampleProfile> profile;
        std::string error, profileError;
        std::shared_ptr<const spe::SpeRecords> speRecords;
        std::shared_ptr<const SpeViewData> speView;
        if (*cancel) {
            error = "cancelled";
        } else if (opened) {
            // The session reads the reader's mapping: keep the reader as long as the session.
            session = std::shared_ptr<AuxTraceSession>(opened->release(),
                                                       [reader](AuxTraceSession* s) { delete s; });
            TimelineData withLanes = timelineBase(session);
            SidebandLanesOptions options;
            for (const PerfAttr& a : reader->attrs())
                options.events.push_back(eventName(a));
            options.functions = withLanes.functions;
            options.functionAt = [&session](int32_t pid, uint64_t ip) {
                return session->images().functionAt(pid, ip);
            };
            // Samples beside the trace: their profile (stacks, the selection's sampled sources),
            // over the session's sideband; the lanes then name samples by its symbols.
            std::optional<ProfileStacks> stacks;
            // An Arm SPE file: its session's records are samples of the arm_spe events.
            if (session->kind() == AuxTraceKind::ArmSpe)
                speRecords = std::shared_ptr<const spe::SpeRecords>(
                    session, &static_cast<const SpeAuxTraceSession&>(*session).records());
            if ((hasSamples(*reader) || speRecords) && !*cancel) {
                report(0, "Reading samples and stacks");
                SampleProfileOptions po;
                po.images = images;
                if (speRecords)
                    po.synthetic =
                        std::make_shared<const SyntheticSamples>(speSyntheticSamples(speRecords->records));
                po.progress = [&](uint64_t done, uint64_t total) {
                    return report(int(80 * done / std::max<uint64_t>(total, 1)),
                                  "Reading samples and stacks");
                };
                auto loaded = SampleProfile::load(
                    *reader, std::shared_ptr<const Sideband>(session, &session->sideband()), po);
                if (loaded) {
                    profile = *loaded;
                    stacks.emplace(*profile);
                    useProfile(options, profile, *stacks);
                } else if (!*cancel) {
                    profileError = loaded.error().message;
                }
            }
            options.progress = [&](uint64_t done, uint64_t total) {
                return report(80 + int(20 * done / std::max<uint64_t>(total, 1)), "Resolving samples");
            };
            if (speRecords) addSpeTicks(options, *speRecords);
            auto lanes = *cancel ? nullptr : buildSidebandLanes(session->sideband(), options);
            if (lanes && speRecords) speView = speViewData(speRecords, profile, *reader, images);
            if (lanes) {
                setTimelineLanes(withLanes, std::move(lanes));
                // The overview: the lanes' activity and the trace's segments (its sync-point index).
                std::vector<OverviewTraceChunk> chunks;
                for (const AuxTraceSession::Segment& seg : session->segments())
                    chunks.push_back({seg.cpu, seg.startTime, seg.endTime, seg.bytes});
                overview = buildTimelineOverview(withLanes, chunks);
                base = std::make_shared<const TimelineData>(std::move(withLanes));
            } else {
                error = "cancelled";
                session.reset();
                profile.reset();
                speRecords.reset();
                speView.reset();
            }
        } else {
            error = opened.error().message;
        }
        guard.unlock();
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QMetaObject::invokeMethod(
            qApp,
            [self, session, base, overview, profile, profileError, error, seconds, speRecords, speView] {
                if (!self) return;
                self->timelineBusy_ = false;
                self->ptOpening_ = false;
                self->tab_->showBusy(false);
                if (!session) {
                    if (error == "cancelled") {
                        self->tab_->setStatus("Cancelled: the timeline was not built.", true);
                        return;
                    }
                    // The lanes need no decoder: show them, and say why there are no flame charts.
                    self->timelineNote_ =
                        "Cannot open the " + self->traceKind_ + " trace: " + QString::fromStdString(error);
                    self->buildSidebandTimeline();
                    return;
                }
                self->session_ = session;
                self->timelineBase_ = base;
                // The selection answers from the trace, and from the samples when there are any.
                self->profile_ = profile;
                // SPE has no flow to decode into spans: the selection answers from its samples.
                self->tab_->rangeStats()->setSources(speView ? QString() : self->traceKind_, profile);
                if (speView) self->tab_->showSpe(speView);
                // The first frame: the whole recording, every lane, the overview; nothing decoded yet.
                self->tab_->overview()->setOverview(overview);
                if (auto* l = self->tab_->overview()->parentWidget()->layout())
                    l->activate();  // its height, before painting
                self->tab_->view()->setData(base);
                const SidebandLanes* lanes = base->lanes.get();
                DecodeWindow whole;
                whole.begin = base->begin, whole.end = base->end;
                const uint64_t wholeBytes = windowTraceBytes(*session, whole);
                QString text = QString(
                                   "Opened in %1 s: %2 CPUs, %3 processes, %4 threads, %5 samples, %6 of %7 "
                                   "over %8.")
                                   .arg(seconds, 0, 'f', 2)
                                   .arg(base->cpus.size())
                                   .arg(lanes ? lanes->processes.size() : 0)
                                   .arg(lanes ? lanes->threads.size() : 0)
                                   .arg(lanes ? lanes->sampleCount : 0)
                                   .arg(megabytes(wholeBytes))
                                   .arg(self->traceKind_)
                                   .arg(relativeTime(base->end, base->begin));
                for (const std::string& note : base->notes)
                    text += "\n" + QString::fromStdString(note);
                if (speRecords) text += "\n" + speLine(*speRecords);
                if (profile) text += "\n" + profileLine(*profile);
                if (!profileError.empty())
                    text += "\nCannot read the samples' stacks: " + QString::fromStdString(profileError);
                self->tab_->setStatus(text);
                emit self->opened();
                // SPE: nothing to decode into spans (its records are all read).
                if (speView) {
                    self->pendingWindow_.reset();
                    emit self->updated();
                    return;
                }
                // Then what the view was moved to while opening, or the whole recording when its
                // trace fits the budget, else its first 1/1000 (the rest as the view zooms in).
                if (self->pendingWindow_) {
                    self->timelineRangeChanged(self->pendingWindow_->begin, self->pendingWindow_->end);
                } else if (wholeBytes <= self->timelineBudget_) {
                    self->timelineRangeChanged(whole.begin, whole.end);
                } else {
                    const DecodeWindow first = firstFrameWindow(*session);
                    self->pendingWindow_ = Window{first.begin, first.end};
                    self->tab_->view()->setUndecodedHint(
                        QString("only the first 1/1000 is decoded: zoom in to "
                                "decode more (%1 of trace in the recording)")
                            .arg(megabytes(wholeBytes)));
                    self->runTimelineDecode();
                }
            },
            Qt::QueuedConnection);
    }).detach();
}

// A file without a decodable AUX trace: the lanes are all there is, built once.
void TimelineDecodeController::buildSidebandTimeline() {
    timelineBusy_ = true;
    tab_->showBusy(true);
    tab_->setProgress(0, "Reading the sideband");
    QPointer<TimelineDecodeController> self(this);
    std::thread([self, reader = reader_, cancel = timelineCancel_, imageOptions = images_] {
        const auto started = std::chrono::steady_clock::now();
        auto lastReport = started - std::chrono::seconds(1);
        // Progress to the page at most every 50 ms; false once the page is gone.
        auto report = [&](int percent, const char* phase) {
            const auto now = std::chrono::steady_clock::now();
            if (now - lastReport >= std::chrono::milliseconds(50)) {
                lastReport = now;
                const QString text = QString::fromUtf8(phase);
                QMetaObject::invokeMethod(
                    qApp,
                    [self, percent, text] {
                        if (self) self->tab_->setProgress(percent, text);
                    },
                    Qt::QueuedConnection);
            }
            return !*cancel;
        };
        std::shared_ptr<TimelineData> data;
        std::shared_ptr<const TimelineOverview> overview;
        std::string error;
        std::vector<std::string> notes;
        auto loadedSideband = Sideband::load(*reader, [&](uint64_t done, uint64_t total) {
            return report(total ? int(40 * done / total) : 0, "Reading the sideband");
        });
        std::shared_ptr<const SampleProfile> profile;
        std::string profileError;
        SpeLoad spe;
        std::shared_ptr<const SpeViewData> speView;
        if (loadedSideband) {
            auto sideband = std::make_shared<const Sideband>(std::move(*loadedSideband));
            // An Arm SPE file: its records, as samples of arm_spe events.
            if (isArmSpe(*reader)) {
                report(40, "Decoding Arm SPE");
                spe = decodeSpe(*reader, *sideband);
            }
            // The sampled profile (every sample's stack, off-CPU time): its symbol load
            // also names the lanes' samples, and it carries their stacks.
            report(40, "Loading symbols");
            SampleProfileOptions po;
            po.images = imageOptions;
            if (spe.records)
                po.synthetic =
                    std::make_shared<const SyntheticSamples>(speSyntheticSamples(spe.records->records));
            po.progress = [&](uint64_t done, uint64_t total) {
                return report(40 + int(45 * done / std::max<uint64_t>(total, 1)),
                              "Reading samples and stacks");
            };
            auto loaded = SampleProfile::load(*reader, sideband, po);
            SidebandLanesOptions options;
            for (const PerfAttr& a : reader->attrs())
                options.events.push_back(eventName(a));
            std::optional<ProfileStacks> stacks;
            auto functions = std::make_shared<FunctionTable>();
            std::optional<ImageResolver> images;
            if (loaded) {
                profile = *loaded;
                stacks.emplace(*profile);
                useProfile(options, profile, *stacks);
            } else if (!*cancel) {
                // No profile (a file it cannot read): the samples' IPs resolve through
                // the decoders' symbol code alone, without stacks.
                profileError = loaded.error().message;
                report(70, "Loading symbols");
                images.emplace(*sideband, *functions, imageOptions);
                images->prepare();
                options.functions = functions;
                options.functionAt = [&images](int32_t pid, uint64_t ip) {
                    return images->functionAt(pid, ip);
                };
            }
            options.progress = [&](uint64_t done, uint64_t total) {
                return report(85 + int(15 * done / std::max<uint64_t>(total, 1)), "Resolving samples");
            };
            if (spe.records) addSpeTicks(options, *spe.records);
            auto lanes = *cancel ? nullptr : buildSidebandLanes(*sideband, options);
            if (lanes && spe.records) speView = speViewData(spe.records, profile, *reader, imageOptions);
            if (lanes) {
                data = std::make_shared<TimelineData>();
                setTimelineCpus(*data, *sideband);
                data->functions = options.functions;
                setTimelineLanes(*data, lanes);
                overview = buildTimelineOverview(*data, {});
            } else {
                error = "cancelled";
                profile.reset();
            }
        } else {
            error = loadedSideband.error().message;
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QMetaObject::invokeMethod(
            qApp,
            [self, data, overview, profile, profileError, error, seconds, spe, speView] {
                if (!self) return;
                self->timelineBusy_ = false;
                self->tab_->showBusy(false);
                QString note = self->timelineNote_.isEmpty() ? QString() : self->timelineNote_ + "\n";
                // An SPE file's records are the answer here: not "cannot open the trace".
                if (speView) note.clear();
                if (!data) {
                    self->tab_->setStatus(
                        note + (error == "cancelled"
                                    ? QString("Cancelled: the timeline was not built.")
                                    : "Cannot build the timeline: " + QString::fromStdString(error)),
                        true);
                    return;
                }
                self->tab_->overview()->setOverview(overview);
                if (auto* l = self->tab_->overview()->parentWidget()->layout())
                    l->activate();  // its height, before painting
                // The selection answers from the samples (and off-CPU time): set before the data.
                self->profile_ = profile;
                self->tab_->rangeStats()->setSources({}, profile);
                self->tab_->view()->setData(data);
                const SidebandLanes& lanes = *data->lanes;
                uint64_t losses = 0;
                for (const auto& [cpu, v] : lanes.losses)
                    losses += v.size();
                QString text = QString(
                                   "%1 CPUs, %2 processes, %3 threads, %4 samples, %5 loss markers over %6 "
                                   "(built in %7 s). Ctrl+wheel or W/S zoom, A/D or drag pan, 0 shows "
                                   "everything.")
                                   .arg(data->cpus.size())
                                   .arg(lanes.processes.size())
                                   .arg(lanes.threads.size())
                                   .arg(lanes.sampleCount)
                                   .arg(losses)
                                   .arg(relativeTime(data->end, data->begin))
                                   .arg(seconds, 0, 'f', 2);
                if (data->cpus.empty()) text = "No CPU in the sideband: " + text;
                if (spe.records) text += "\n" + speLine(*spe.records);
                if (!spe.error.empty())
                    text += "\nCannot decode the Arm SPE trace: " + QString::fromStdString(spe.error);
                if (profile) text += "\n" + profileLine(*profile);
                if (!profileError.empty())
                    text += "\nCannot read the samples' stacks: " + QString::fromStdString(profileError);
                if (speView) self->tab_->showSpe(speView);
                self->tab_->setStatus(note + text, losses > 0 || !note.isEmpty() || !spe.error.empty());
                emit self->opened();
                emit self->updated();
            },
            Qt::QueuedConnection);
    }).detach();
}

void TimelineDecodeController::timelineRangeChanged(quint64 begin, quint64 end) {
    if (!session_ && !ptOpening_) return;
    if (session_ && session_->kind() == AuxTraceKind::ArmSpe) return;  // no spans to decode
    if (begin >= decodedWindow_.begin && end <= decodedWindow_.end) {
        // Already shown: whatever was asked for since is not needed any more.
        if (session_ && (timelineBusy_ || pendingWindow_)) staleTimeline();
        pendingWindow_.reset();
        tab_->view()->setUndecodedHint({});
        return;
    }
    staleTimeline();  // whatever runs now is stale
    if (session_) {
        DecodeWindow window;
        window.begin = begin, window.end = end;
        const uint64_t bytes = windowTraceBytes(*session_, window);
        if (bytes > timelineBudget_) {
            pendingWindow_.reset();
            const QString hint = QString("zoom in to decode (%1 of trace in view)").arg(megabytes(bytes));
            tab_->view()->setUndecodedHint(hint);
            tab_->setStatus(
                QString("Not decoded: %1 of trace in view, more than the %2 budget; zoom in to decode.")
                    .arg(megabytes(bytes))
                    .arg(megabytes(timelineBudget_)));
            return;
        }
    }
    tab_->view()->setUndecodedHint(kDecodingHint);
    pendingWindow_ = Window{begin, end};
    if (!timelineBusy_) runTimelineDecode();
}

void TimelineDecodeController::runTimelineDecode() {
    if (!session_ || !pendingWindow_ || timelineBusy_) return;
    const Window w = *pendingWindow_;
    pendingWindow_.reset();
    timelineBusy_ = true;
    const uint64_t generation = timelineGeneration_;
    DecodeWindow window;
    window.begin = w.begin, window.end = w.end;
    const uint64_t origin = timelineBase_->begin;
    const uint64_t bytes = windowTraceBytes(*session_, window);
    tab_->setStatus(QString("Decoding +%1 … +%2 (%3 of trace)…")
                        .arg(relativeTime(w.begin, origin))
                        .arg(relativeTime(w.end, origin))
                        .arg(megabytes(bytes)));
    tab_->showBusy(true);
    tab_->setBusyProgress("Decoding %p%");  // busy until the first batch
    std::vector<int32_t> seen(seenTids_.begin(), seenTids_.end());
    QPointer<TimelineDecodeController> self(this);
    std::thread([self, session = session_, base = timelineBase_, window, seen, generation,
                 lock = sessionLock_, live = liveGeneration_] {
        std::unique_lock guard(*lock);
        const auto started = std::chrono::steady_clock::now();
        // The window decoded in batches (each cached by the session) for progress, and
        // to stop between batches once the view has moved on; the last call below
        // then merges what is cached.
        const bool stale = !decodeInBatches(*session, window, 0, [&](size_t done, size_t total) {
            if (done) {
                const int permille = int(1000 * done / std::max<size_t>(total, 1));
                QMetaObject::invokeMethod(
                    qApp,
                    [self, permille, generation] {
                        if (!self || generation != self->timelineGeneration_) return;
                        self->tab_->progress()->setRange(0, 1000);
                        self->tab_->progress()->setValue(permille);
                    },
                    Qt::QueuedConnection);
            }
            return live->load() == generation;
        });
        std::shared_ptr<const TimelineData> data;
        size_t now = 0, cached = 0;
        if (!stale && live->load() == generation) {
            DecodedSpans result = session->decodeSpans(window, 0);
            guard.unlock();
            now = result.decodedNow, cached = result.fromCache;
            data = makeTimeline(*base, *session, std::move(result), window.begin, window.end, seen);
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QMetaObject::invokeMethod(
            qApp,
            [self, data, window, seconds, now, cached, generation] {
                if (!self) return;
                self->timelineBusy_ = false;
                self->tab_->showBusy(false);
                if (data && generation == self->timelineGeneration_) {
                    // The newest request: show it (a stale one is dropped).
                    for (const auto& t : data->threads)
                        self->seenTids_.insert(t.tid);
                    self->decodedWindow_ = {window.begin, window.end};
                    self->tab_->view()->setData(data);
                    size_t spans = 0;
                    for (const auto& t : data->threads)
                        spans += t.spans.size();
                    self->tab_->setStatus(QString("Decoded +%1 … +%2: %3 spans in %4 s (%5 segments decoded, "
                                                  "%6 from cache)")
                                              .arg(relativeTime(window.begin, data->begin))
                                              .arg(relativeTime(window.end, data->begin))
                                              .arg(spans)
                                              .arg(seconds, 0, 'f', 2)
                                              .arg(now)
                                              .arg(cached));
                }
                self->runTimelineDecode();
            },
            Qt::QueuedConnection);
    }).detach();
}

void TimelineDecodeController::staleTimeline() {
    ++timelineGeneration_;
    liveGeneration_->store(timelineGeneration_);
}

void TimelineDecodeController::cancel() {
    if (ptOpening_ || (!session_ && timelineBusy_)) {
        // Opening or building the lanes: the worker stops at its next progress report.
        *timelineCancel_ = true;
        tab_->setStatus("Cancelling…");
        return;
    }
    if (!timelineBusy_ && !pendingWindow_) return;
    // A window's decode: stop it between batches and forget the window; moving the view asks again.
    pendingWindow_.reset();
    staleTimeline();
    tab_->view()->setUndecodedHint("decode cancelled: move or zoom the view to decode again");
    tab_->setStatus("Decode cancelled.");
}

void TimelineDecodeController::showCode(int32_t tid, uint32_t function, uint64_t begin, uint64_t end) {
    if (!tab_) return;
    tab_->showCodeTab();
    const auto data = tab_->view()->data();
    const QString name = data && data->functions && function < data->functions->size()
                             ? QString::fromStdString((*data->functions)[function].name)
                             : QString("function %1").arg(function);
    if (!session_) {
        tab_->codeView()->showMessage("No decoder for this file's trace: no code to show.", true);
        return;
    }
    if (end <= begin) end = begin + 1;  // a span that took no time on the clock: its instant
    DecodeWindow window;
    window.begin = begin, window.end = end;
    if (tid >= 0) window.tid = tid;
    const uint64_t bytes = windowTraceBytes(*session_, window);
    if (bytes > timelineBudget_) {
        tab_->codeView()->showMessage(
            QString("The code view decodes the instruction flow of the range again: %1 of trace is "
                    "more than the %2 budget; select a shorter range.")
                .arg(megabytes(bytes))
                .arg(megabytes(timelineBudget_)),
            true);
        return;
    }
    const uint64_t origin = data ? data->begin : 0;
    const QString context = QString("%1, +%2 … +%3")
                                .arg(tid >= 0 ? QString("thread %1").arg(tid) : QString("all threads"))
                                .arg(formatNs(double(begin - origin)))
                                .arg(formatNs(double(end - origin)));
    tab_->codeView()->showMessage(
        QString("Decoding the flow of %1 (%2) to count its instructions…").arg(name, context));
    const uint64_t request = ++codeGeneration_;
    QPointer<TimelineDecodeController> self(this);
    std::thread([self, session = session_, lock = sessionLock_, window, function, request, context] {
        // Blocks of the function, counted per distinct (ip, endIp), in the first process that ran it.
        std::map<std::pair<uint64_t, uint64_t>, std::pair<uint64_t, uint64_t>> counts;  // -> (count, insns)
        int32_t pid = -1;
        // Segments the decoding library crashed or hung on (in its worker process):
        // their blocks are missing from the counts, and the view says so.
        std::vector<Gap> failures;
        {
            std::lock_guard guard(*lock);
            session->forEachBlock(
                window,
                [&](const FlowBlock& b) {
                    if (b.function != function) return;
                    const int32_t p = session->sideband().pidOf(b.tid);
                    if (pid == -1) pid = p;
                    if (p != pid) return;
                    auto& c = counts[{b.ip, b.endIp}];
                    ++c.first;
                    c.second = b.instructions;
                },
                1, &failures);
        }
        QString shown = context;
        if (!failures.empty())
            shown += QString("; %1 on %2 segment%3 of the range: counts without %4")
                         .arg(QString::fromStdString(failures.front().detail))
                         .arg(failures.size())
                         .arg(failures.size() == 1 ? "" : "s")
                         .arg(failures.size() == 1 ? "it" : "them");
        std::vector<ExecutedBlock> blocks;
        blocks.reserve(counts.size());
        for (const auto& [key, c] : counts)
            blocks.push_back({key.first, key.second, c.second, c.first});
        auto code = std::make_shared<Expected<AnnotatedCode>>(
            annotateFunction(session->images(), session->functions(), pid, function, blocks));
        QMetaObject::invokeMethod(
            qApp,
            [self, code, request, shown] {
                if (!self || request != self->codeGeneration_) return;
                if (!*code)
                    self->tab_->codeView()->showMessage(QString::fromStdString(code->error().message), true);
                else
                    self->tab_->codeView()->showCode(code->value(), shown);
            },
            Qt::QueuedConnection);
    }).detach();
}

void TimelineDecodeController::showSampleCode(int event, int32_t tid, uint32_t function, uint64_t begin,
                                              uint64_t end) {
    if (!tab_) return;
    tab_->showCodeTab();
    if (!profile_) {
        tab_->codeView()->showMessage("This file has no samples: no sample counts to show.", true);
        return;
    }
    const FunctionTable& functions = profile_->functions();
    const QString name = function < functions.size() ? QString::fromStdString(functions[function].name)
                                                     : QString("function %1").arg(function);
    if (event < 0 || size_t(event) >= profile_->events().size()) {
        tab_->codeView()->showMessage(
            QString("The code view counts samples by the instruction they were taken at; off-CPU time "
                    "has none. Choose a Samples source to see the code of %1.")
                .arg(name),
            true);
        return;
    }
    const auto data = tab_->view()->data();
    const uint64_t origin = data ? data->begin : 0;
    const QString context = QString("%1, +%2 … +%3")
                                .arg(tid >= 0 ? QString("thread %1").arg(tid) : QString("all threads"))
                                .arg(formatNs(double(begin - origin)))
                                .arg(formatNs(double(end - origin)));
    const QString eventName = QString::fromStdString(profile_->events()[size_t(event)].name);
    tab_->codeView()->showMessage(QString("Counting the samples of %1 (%2)…").arg(name, context));
    const uint64_t request = ++codeGeneration_;
    QPointer<TimelineDecodeController> self(this);
    std::thread([self, profile = profile_, event, tid, function, begin, end, request, context, name,
                 eventName] {
        // Samples of the event in the range whose leaf is in the function (the
        // symbol at the sampled address, or the stack's innermost function when
        // that is one inlined there), per address, in the first process that ran it.
        std::map<uint64_t, uint64_t> counts;
        int32_t pid = -1;
        std::map<std::pair<int32_t, uint64_t>, bool> inFunction;  // by (pid, address): the symbol lookup once
        for (size_t i = profile->lowerBound(begin); i < profile->size() && profile->time(i) < end; ++i) {
            if (profile->event(i) != event || (tid >= 0 && profile->tid(i) != tid)) continue;
            const int32_t p = profile->pid(i);
            if (pid != -1 && p != pid) continue;
            const uint64_t ip = profile->ip(i);
            bool in = profile->tree().nodes[profile->node(i)].function == function;
            if (!in) {
                auto [it, fresh] = inFunction.try_emplace({p, ip}, false);
                if (fresh) it->second = profile->images().functionAt(p, ip) == function;
                in = it->second;
            }
            if (!in) continue;
            pid = p;
            ++counts[ip];
        }
        std::vector<ExecutedBlock> blocks;  // one instruction each: where the samples were taken
        blocks.reserve(counts.size());
        for (const auto& [ip, n] : counts)
            blocks.push_back({ip, ip, 1, n});
        auto code = std::make_shared<Expected<AnnotatedCode>>(
            blocks.empty()
                ? Expected<AnnotatedCode>(makeError("No sample of " + eventName.toStdString() + " in " +
                                                    context.toStdString() + " has its leaf in " +
                                                    name.toStdString() + "."))
                : annotateFunction(profile->images(), profile->functions(), pid, function, blocks));
        QMetaObject::invokeMethod(
            qApp,
            [self, code, request, context, eventName] {
                if (!self || request != self->codeGeneration_) return;
                if (!*code)
                    self->tab_->codeView()->showMessage(QString::fromStdString(code->error().message), true);
                else
                    self->tab_->codeView()->showCode(code->value(), context, eventName);
            },
            Qt::QueuedConnection);
    }).detach();
}

}  // namespace auxscope
