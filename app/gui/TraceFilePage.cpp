// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/TraceFilePage.h"

#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <unordered_map>

#include "auxtrace/AuxTraceDecode.h"
#include "export/TraceExport.h"
#include "gui/CallTreeModel.h"
#include "gui/CodeView.h"
#include "gui/LaneBar.h"
#include "gui/OverviewStrip.h"
#include "gui/RangeStatsPane.h"
#include "gui/SearchBar.h"
#include "gui/SpanDetailsPane.h"
#include "gui/TimelineView.h"
#include "images/CodeAnnotation.h"
#include "images/ImageResolver.h"
#include "perfdata/CaptureStatsFeature.h"
#include "perfdata/PerfDataReader.h"
#include "sideband/Sideband.h"
#include "sideband/TraceModelLoader.h"
#include "spans/SidebandLanes.h"
#include "spans/TimelineOverview.h"

namespace auxscope {
namespace {

QString hex(uint64_t v) {
    return "0x" + QString::number(v, 16);
}

QString auxFlags(const PerfAuxStats& a) {
    QStringList parts;
    if (a.truncated) parts << QString("truncated %1").arg(a.truncated);
    if (a.partial) parts << QString("partial %1").arg(a.partial);
    if (a.collision) parts << QString("collision %1").arg(a.collision);
    if (a.overwrite) parts << QString("overwrite %1").arg(a.overwrite);
    if (a.formatRaw) parts << QString("raw CoreSight %1").arg(a.formatRaw);
    return parts.isEmpty() ? "no loss flags" : parts.join(", ");
}

// 50331672 -> "50.3 MB".
QString byteSize(uint64_t n) {
    if (n < 1000) return QString("%1 bytes").arg(n);
    if (n < 1000 * 1000) return QString("%1 kB").arg(double(n) / 1e3, 0, 'f', 1);
    if (n < uint64_t(1000) * 1000 * 1000) return QString("%1 MB").arg(double(n) / 1e6, 0, 'f', 1);
    return QString("%1 GB").arg(double(n) / 1e9, 0, 'f', 2);
}

QString percent(uint64_t part, uint64_t whole) {
    const double p = whole ? 100.0 * double(part) / double(whole) : 0.0;
    if (part && p < 0.1) return "<0.1%";
    if (p < 1 || (p > 99 && part < whole)) return QString("%1%").arg(p, 0, 'f', 1);
    return QString("%1%").arg(qRound(p));
}

// The header line's word on AUX bytes the AUX records announce and the file
// lacks: "AUX: 75% of the trace missing from the file (50.3 MB in 2 gaps on cpu 0)".
QString auxMissingLine(const PerfDataSummary& s) {
    if (!s.auxMissingBytes) return {};
    uint64_t gaps = 0;
    QStringList cpus, others;
    for (const PerfAuxArea& a : s.auxAreas) {
        if (!a.missingBytes) continue;
        gaps += a.gaps.size();
        if (a.cpu >= 0)
            cpus << QString::number(a.cpu);
        else
            others << QString::fromStdString(perfAuxAreaName(a));
    }
    QStringList where;
    if (cpus.size() > 4)
        where << QString("%1 CPUs").arg(cpus.size());
    else if (!cpus.isEmpty())
        where << (cpus.size() == 1 ? "cpu " : "cpus ") + cpus.join(", ");
    if (others.size() > 4)
        where << QString("%1 threads").arg(others.size());
    else
        where << others;
    return QString("AUX: %1 of the trace missing from the file (%2 in %3 %4 on %5)")
        .arg(percent(s.auxMissingBytes, s.auxAnnouncedBytes))
        .arg(byteSize(s.auxMissingBytes))
        .arg(gaps)
        .arg(gaps == 1 ? "gap" : "gaps")
        .arg(where.join(", "));
}

}  // namespace

// What the page shows of a decode, computed on the worker thread: walking
// millions of spans must not stall the window.
struct PtSpanSummary {
    struct Function {
        std::string name;
        uint64_t instructions = 0, calls = 0;
    };
    struct GapKind {
        uint64_t count = 0;
        std::vector<std::string> examples;  // distinct causes, a few
    };
    struct Thread {
        int32_t tid = -1, pid = -1;
        std::string name;
        uint64_t spans = 0, instructions = 0, functions = 0;
        std::vector<Function> top;  // by instructions
        std::map<GapReason, GapKind> gaps;
    };
    std::vector<Thread> threads;
    uint64_t spans = 0;
    DecodeStats stats;
    std::vector<std::string> notes;
};

namespace {

constexpr size_t kTopFunctions = 15, kGapExamples = 5;

PtSpanSummary summarize(const AuxTraceSpans& decoded) {
    PtSpanSummary out;
    out.stats = decoded.result.stats;
    out.notes = decoded.session->traceNotes();
    const FunctionTable& functions = decoded.session->functions();
    const Sideband& sideband = decoded.session->sideband();
    for (const auto& [tid, store] : decoded.result.threads) {
        PtSpanSummary::Thread t;
        t.tid = tid;
        t.pid = sideband.pidOf(tid);
        t.name = sideband.model().threadName(tid);
        t.spans = store.size();
        std::unordered_map<uint32_t, PtSpanSummary::Function> byFunction;
        for (size_t i = 0; i < store.size(); ++i) {
            const Span s = store.at(i);
            if (s.isGap()) {
                const Gap& g = store.gaps()[size_t(s.gap)];
                auto& kind = t.gaps[g.reason];
                ++kind.count;
                if (kind.examples.size() < kGapExamples &&
                    std::find(kind.examples.begin(), kind.examples.end(), g.detail) == kind.examples.end())
                    kind.examples.push_back(g.detail);
                continue;
            }
            auto& f = byFunction[s.function];
            f.instructions += s.instructions;
            ++f.calls;
            t.instructions += s.instructions;
        }
        t.functions = byFunction.size();
        std::vector<std::pair<uint32_t, PtSpanSummary::Function>> ranked(byFunction.begin(),
                                                                         byFunction.end());
        const size_t keep = std::min(kTopFunctions, ranked.size());
        std::partial_sort(ranked.begin(), ranked.begin() + ptrdiff_t(keep), ranked.end(),
                          [](const auto& a, const auto& b) {
                              return a.second.instructions > b.second.instructions ||
                                     (a.second.instructions == b.second.instructions && a.first < b.first);
                          });
        for (size_t i = 0; i < keep; ++i) {
            ranked[i].second.name =
                ranked[i].first < functions.size() ? functions[ranked[i].first].name : "[unknown]";
            t.top.push_back(std::move(ranked[i].second));
        }
        out.spans += t.spans;
        out.threads.push_back(std::move(t));
    }
    return out;
}

}  // namespace

TraceFilePage::TraceFilePage(const QString& path, QWidget* parent) : QWidget(parent), path_(path) {
    status_ = new QLabel("Reading " + path + "…");
    status_->setObjectName("traceStatus");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    tree_ = new QTreeWidget;
    tree_->setObjectName("traceTree");
    tree_->setColumnCount(2);
    tree_->setHeaderLabels({"", "Value"});
    tree_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    decode_ = new QPushButton("Decode Intel PT");
    decode_->setObjectName("decodeIntelPt");
    decode_->setToolTip("Decode the Intel PT trace into per-thread call stacks (on a worker thread)");
    decode_->setVisible(false);
    connect(decode_, &QPushButton::clicked, this, [this] { startDecode(); });
    progress_ = new QProgressBar;
    progress_->setObjectName("decodeProgress");
    progress_->setVisible(false);
    progress_->setMaximumWidth(160);
    exportPerfetto_ = new QPushButton("Export to Perfetto…");
    exportPerfetto_->setObjectName("exportPerfetto");
    exportCsv_ = new QPushButton("Export CSV…");
    exportCsv_->setObjectName("exportCsv");
    for (auto* b : {exportPerfetto_, exportCsv_})
        b->setEnabled(false);
    connect(exportPerfetto_, &QPushButton::clicked, this, [this] { exportTo("perfetto"); });
    connect(exportCsv_, &QPushButton::clicked, this, [this] { exportTo("csv"); });
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(status_, 1);
    buttons->addWidget(progress_);
    buttons->addWidget(decode_);
    buttons->addWidget(exportPerfetto_);
    buttons->addWidget(exportCsv_);
    exportProgress_ = new QProgressBar;
    exportProgress_->setObjectName("exportProgress");
    exportProgress_->setMaximumWidth(160);
    exportProgress_->setFormat("Export %p%");
    exportProgress_->setVisible(false);
    exportCancelButton_ = new QPushButton("Cancel export");
    exportCancelButton_->setObjectName("exportCancel");
    exportCancelButton_->setVisible(false);
    connect(exportCancelButton_, &QPushButton::clicked, this, [this] { cancelExport(); });
    buttons->addWidget(exportProgress_);
    buttons->addWidget(exportCancelButton_);
    tabs_ = new QTabWidget;
    tabs_->setObjectName("traceTabs");
    tabs_->setDocumentMode(true);
    tabs_->addTab(tree_, "Summary");
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(buttons);
    layout->addWidget(tabs_, 1);

    // Read on a worker thread; hand the result back through the event loop.
    QPointer<TraceFilePage> self(this);
    const std::string file = path.toStdString();
    std::thread([self, file] {
        auto opened = PerfDataReader::open(file);
        auto result = std::make_shared<Expected<PerfDataReader>>(std::move(opened));
        QMetaObject::invokeMethod(
            qApp,
            [self, result] {
                if (!self) return;
                if (!result->ok()) {
                    self->failed_ = true;
                    self->status_->setText("Cannot open: " + QString::fromStdString(result->error().message));
                    self->status_->setStyleSheet("color: #b00020;");
                    emit self->statusMessage(self->status_->text());
                    emit self->loadFinished(false);
                    return;
                }
                self->reader_ = std::make_shared<PerfDataReader>(std::move(result->value()));
                self->populate();
                emit self->loadFinished(true);
            },
            Qt::QueuedConnection);
    }).detach();
}

TraceFilePage::~TraceFilePage() {
    // A decode still running stops at its next batch of segments; it keeps the
    // reader alive until then. So does a timeline being built.
    if (cancel_) *cancel_ = true;
    *timelineCancel_ = true;
}

QTreeWidgetItem* TraceFilePage::section(const QString& title) {
    auto* item = new QTreeWidgetItem(tree_, {title});
    QFont f = item->font(0);
    f.setBold(true);
    item->setFont(0, f);
    return item;
}

void TraceFilePage::populate() {
    const PerfDataReader& r = *reader_;
    tree_->clear();
    ptSection_ = nullptr;
    auto add = [](QTreeWidgetItem* parent, const QString& key, const QString& value) {
        return new QTreeWidgetItem(parent, {key, value});
    };

    auto* file = section("File");
    add(file, "path", path_);
    add(file, "format", r.mode() == PerfDataMode::File ? "perf.data (file mode)" : "perf.data (pipe mode)");
    add(file, "size", QString::number(r.fileSize()) + " bytes");
    add(file, "data section",
        QString("%1 bytes at offset %2%3")
            .arg(r.dataSize())
            .arg(r.dataOffset())
            .arg(r.dataSizeRecovered() ? " (size recovered by scanning: the capture did "
                                         "not finish the file)"
                                       : ""));
    auto* issues = section(QString("Problems (%1)").arg(r.issues().size()));
    for (auto& issue : r.issues()) {
        auto* item = add(issues, issue.error ? "error" : "warning", QString::fromStdString(issue.message));
        if (issue.error) item->setForeground(1, QColor("#b00020"));
    }

    auto* events = section(QString("Events (%1)").arg(r.attrs().size()));
    for (auto& a : r.attrs()) {
        QString name = a.name.empty() ? QString("type %1 config %2").arg(a.attr.type).arg(hex(a.attr.config))
                                      : QString::fromStdString(a.name);
        add(events, name,
            QString("type %1, config %2, sample_type %3, %4 ids")
                .arg(a.attr.type)
                .arg(hex(a.attr.config))
                .arg(hex(a.attr.sample_type))
                .arg(a.ids.size()));
    }

    const PerfFeatures& f = r.features();
    auto* features = section(QString("Features (%1)").arg(f.present.size()));
    auto opt = [&](const char* key, const std::optional<std::string>& v) {
        if (v) add(features, key, QString::fromStdString(*v));
    };
    opt("hostname", f.hostname);
    opt("os release", f.osRelease);
    opt("perf version", f.version);
    opt("arch", f.arch);
    opt("cpu", f.cpuDesc);
    opt("cpuid", f.cpuId);
    if (f.nrCpus)
        add(features, "cpus", QString("%1 online of %2").arg(f.nrCpus->online).arg(f.nrCpus->available));
    if (f.totalMemKb) add(features, "memory", QString("%1 kB").arg(*f.totalMemKb));
    if (f.cmdline) {
        QStringList words;
        for (auto& w : *f.cmdline)
            words << QString::fromStdString(w);
        add(features, "command line", words.join(' '));
    }
    if (f.buildIds) add(features, "build ids", QString::number(f.buildIds->size()));
    if (f.auxtraceIndex) add(features, "AUXTRACE index", QString("%1 buffers").arg(f.auxtraceIndex->size()));
    if (f.compressed) add(features, "compressed", "zstd");
    QStringList present;
    for (unsigned id : f.present)
        present << QString::fromStdString(perfFeatureName(id));
    add(features, "sections", present.join(", "));

    const PerfDataSummary& s = r.summary();
    auto* records = section(QString("Records (%1)").arg(s.records));
    for (auto& [type, n] : s.recordsByType)
        add(records, QString::fromStdString(perfRecordTypeName(type)), QString::number(n));

    auto* cpus = section(QString("Per CPU (%1)").arg(s.cpus.size()));
    uint64_t lost = 0, lostSamples = 0;
    for (auto& [cpu, c] : s.cpus) {
        auto* item = add(cpus, cpu < 0 ? "no CPU" : QString("CPU %1").arg(cpu),
                         QString("%1 lost records, %2 lost samples").arg(c.lost).arg(c.lostSamples));
        lost += c.lost, lostSamples += c.lostSamples;
        if (c.lost || c.lostSamples) item->setForeground(1, QColor("#b00020"));
        for (auto& [type, n] : c.recordsByType)
            add(item, QString::fromStdString(perfRecordTypeName(type)), QString::number(n));
        if (c.aux.records)
            add(item, "AUX records",
                QString("%1 (%2 bytes): %3").arg(c.aux.records).arg(c.aux.bytes).arg(auxFlags(c.aux)));
        if (c.auxtraceBuffers)
            add(item, "AUXTRACE buffers",
                QString("%1 (%2 bytes)").arg(c.auxtraceBuffers).arg(c.auxtraceBytes));
    }
    for (const PerfRawFeature& raw : f.raw) {
        if (raw.id != kFeatAuxscopeCaptureStats) continue;
        auto history =
            decodeCaptureStatsFeature(raw.bytes, r.path() + ": offset " + std::to_string(raw.offset));
        auto* stats = section("Capture statistics");
        if (!history) {
            add(stats, "error", QString::fromStdString(history.error().message))
                ->setForeground(1, QColor("#b00020"));
            continue;
        }
        std::map<int32_t, StatsSample> last;
        std::map<int32_t, float> maxFill;
        for (const StatsSample& st : *history) {
            last[st.cpu] = st;
            maxFill[st.cpu] = std::max(maxFill[st.cpu], st.fillPeakPercent);
        }
        for (auto& [cpu, st] : last)
            add(stats, QString("CPU %1").arg(cpu),
                QString("max data ring fill %1%, %2 lost records, kernel count of lost %3")
                    .arg(double(maxFill[cpu]), 0, 'f', 1)
                    .arg(st.lostRecords)
                    .arg(st.kernelLost));
    }
    if (!s.auxAreas.empty()) {
        // Per AUX area: what the AUX records announce, what the AUXTRACE records hold, what is missing.
        auto* aux = section(QString("AUX data (%1 areas)").arg(s.auxAreas.size()));
        for (const PerfAuxArea& a : s.auxAreas) {
            QString value;
            if (a.snapshot)
                value = QString("snapshot mode: %1 bytes in %2 AUXTRACE records (overwritten by design)")
                            .arg(a.presentBytes)
                            .arg(a.auxtraceRecords);
            else if (a.missingBytes)
                value = QString("%1 bytes announced, %2 in the file, %3 missing in %4 %5")
                            .arg(a.announcedBytes)
                            .arg(a.presentBytes)
                            .arg(a.missingBytes)
                            .arg(a.gaps.size())
                            .arg(a.gaps.size() == 1 ? "gap" : "gaps");
            else
                value = QString("%1 bytes announced, %2 in the file, none missing")
                            .arg(a.announcedBytes)
                            .arg(a.presentBytes);
            if (a.truncated || a.partial || a.collision)
                value += QString("; kernel: truncated %1, partial %2, collision %3")
                             .arg(a.truncated)
                             .arg(a.partial)
                             .arg(a.collision);
            auto* item = add(aux, QString::fromStdString(perfAuxAreaName(a)), value);
            if (a.missingBytes) item->setForeground(1, QColor("#b00020"));
            constexpr size_t kListed = 50;
            for (size_t i = 0; i < a.gaps.size() && i < kListed; ++i) {
                const PerfAuxGap& g = a.gaps[i];
                add(item, QString("missing at AUX offset %1").arg(hex(g.auxOffset)),
                    QString("%1 bytes, %2 %3")
                        .arg(g.size)
                        .arg(g.afterAuxtrace ? "after the AUXTRACE record at offset"
                                             : "announced by the AUX record at offset")
                        .arg(g.afterAuxtrace ? g.fileOffset : g.auxRecordOffset))
                    ->setForeground(1, QColor("#b00020"));
            }
            if (a.gaps.size() > kListed)
                add(item, QString("… %1 more gaps").arg(a.gaps.size() - kListed), {});
            for (const PerfAuxGap& g : a.damage)
                add(item,
                    QString("%1 at AUX offset %2")
                        .arg(g.kind == PerfAuxGapKind::Overlap ? "held again" : "out of order")
                        .arg(hex(g.auxOffset)),
                    QString("%1 bytes, AUXTRACE record at offset %2").arg(g.size).arg(g.fileOffset));
        }
    }
    if (!s.auxtraceErrors.empty()) {
        auto* errs = section(QString("AUX trace errors (%1)").arg(s.auxtraceErrors.size()));
        for (auto& e : s.auxtraceErrors)
            add(errs, QString("offset %1").arg(e.fileOffset), QString::fromStdString(e.message));
    }
    tree_->expandToDepth(0);
    QString text = QString("%1: %2 records on %3 CPUs, %4 lost records, %5 lost samples, %6 problems")
                       .arg(QFileInfo(path_).fileName())
                       .arg(s.records)
                       .arg(std::count_if(s.cpus.begin(), s.cpus.end(), [](auto& c) { return c.first >= 0; }))
                       .arg(lost)
                       .arg(lostSamples)
                       .arg(r.issues().size());
    auxMissing_ = auxMissingLine(s);
    if (!auxMissing_.isEmpty()) text += "; " + auxMissing_;
    status_->setText(text);
    if (r.hasErrors()) status_->setStyleSheet("color: #b00020;");
    for (auto* b : {exportPerfetto_, exportCsv_})
        b->setEnabled(true);
    emit statusMessage(text);

    hasPt_ = hasDecodableAuxTrace(r);
    traceKind_ = auxTraceKindName(auxTraceKind(r));
    decode_->setText("Decode " + traceKind_);
    decode_->setToolTip("Decode the " + traceKind_ +
                        " trace into per-thread call stacks (on a worker thread)");
    decode_->setVisible(hasPt_);
    decode_->setEnabled(hasPt_);
    openTimeline();
    if (hasPt_ && autoDecodeBytes_ && auxTraceBytes(r) <= autoDecodeBytes_) {
        // Let the caller see the page first (and change the limit) before deciding.
        QMetaObject::invokeMethod(
            this,
            [this] {
                if (!decoding_ && !decoded_ && autoDecodeBytes_ &&
                    auxTraceBytes(*reader_) <= autoDecodeBytes_)
                    startDecode();
            },
            Qt::QueuedConnection);
    }
}

bool TraceFilePage::startDecode() {
    if (!reader_ || !hasPt_ || decoding_) return false;
    decoding_ = true;
    decode_->setEnabled(false);
    progress_->setRange(0, 0);  // busy until the first report
    progress_->setVisible(true);
    status_->setText("Decoding " + traceKind_ + "…");
    status_->setStyleSheet("");
    emit statusMessage(status_->text());
    if (cancel_) *cancel_ = true;
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    QPointer<TraceFilePage> self(this);
    std::thread([self, reader = reader_, cancel = cancel_] {
        const auto started = std::chrono::steady_clock::now();
        auto report = [&](size_t done, size_t total) {
            QMetaObject::invokeMethod(
                qApp,
                [self, done, total] {
                    if (!self || !self->decoding_) return;
                    self->progress_->setRange(0, int(std::max<size_t>(total, 1)));
                    self->progress_->setValue(int(done));
                },
                Qt::QueuedConnection);
            return !*cancel;
        };
        auto decoded = decodeAuxTraceSpans(*reader, {}, {}, 0, report);
        auto spans = std::make_shared<std::shared_ptr<const AuxTraceSpans>>();
        auto summary = std::make_shared<PtSpanSummary>();
        std::string error;
        if (decoded) {
            *summary = summarize(*decoded);
            *spans = std::make_shared<const AuxTraceSpans>(std::move(*decoded));
        } else {
            error = decoded.error().message;
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QMetaObject::invokeMethod(
            qApp,
            [self, spans, summary, error, seconds] {
                if (!self) return;
                self->decoding_ = false;
                self->progress_->setVisible(false);
                self->decode_->setEnabled(true);
                if (!*spans) {
                    const QString text =
                        self->traceKind_ + " decode failed: " + QString::fromStdString(error);
                    self->status_->setText(text);
                    self->status_->setStyleSheet("color: #b00020;");
                    emit self->statusMessage(text);
                    emit self->decodeFinished(false);
                    return;
                }
                self->decoded_ = *spans;
                self->showDecoded(*summary, seconds);
                emit self->decodeFinished(true);
            },
            Qt::QueuedConnection);
    }).detach();
    return true;
}

void TraceFilePage::showDecoded(const PtSpanSummary& summary, double seconds) {
    delete ptSection_;
    uint64_t gaps = 0;
    for (const auto& [reason, n] : summary.stats.gaps)
        gaps += n;
    ptSection_ = new QTreeWidgetItem({QString("%1 (%2 threads, %3 spans)")
                                          .arg(traceKind_)
                                          .arg(summary.threads.size())
                                          .arg(summary.spans)});
    tree_->insertTopLevelItem(0, ptSection_);
    QFont bold = ptSection_->font(0);
    bold.setBold(true);
    ptSection_->setFont(0, bold);
    auto add = [](QTreeWidgetItem* parent, const QString& key, const QString& value) {
        return new QTreeWidgetItem(parent, {key, value});
    };
    const DecodeStats& st = summary.stats;
    add(ptSection_, "decode",
        QString("%1 segments, %2 trace bytes, %3 instructions in %4 s")
            .arg(st.segments)
            .arg(st.traceBytes)
            .arg(st.instructions)
            .arg(seconds, 0, 'f', 2));
    for (const std::string& note : summary.notes)
        add(ptSection_, "note", QString::fromStdString(note));
    for (const auto& [file, n] : st.missingImages)
        add(ptSection_, "missing image", QString("%1 (%2 gaps)").arg(QString::fromStdString(file)).arg(n))
            ->setForeground(1, QColor("#b00020"));
    for (const PtSpanSummary::Thread& t : summary.threads) {
        uint64_t threadGaps = 0;
        for (const auto& [reason, g] : t.gaps)
            threadGaps += g.count;
        auto* thread =
            add(ptSection_,
                QString("thread %1 (%2), pid %3").arg(t.tid).arg(QString::fromStdString(t.name)).arg(t.pid),
                QString("%1 spans, %2 instructions, %3 functions, %4 gaps")
                    .arg(t.spans)
                    .arg(t.instructions)
                    .arg(t.functions)
                    .arg(threadGaps));
        thread->setData(0, Qt::UserRole, t.tid);
        for (const auto& f : t.top) {
            auto* item = add(thread, QString::fromStdString(f.name),
                             QString("%1 instructions in %2 calls").arg(f.instructions).arg(f.calls));
            item->setData(1, Qt::UserRole, QVariant::fromValue<qulonglong>(f.calls));
        }
        if (t.functions > t.top.size())
            add(thread, QString("… %1 more functions").arg(t.functions - t.top.size()), {});
        for (const auto& [reason, g] : t.gaps) {
            auto* item =
                add(thread, QString::fromStdString(perfettoGapName(reason)), QString::number(g.count));
            item->setData(1, Qt::UserRole, QVariant::fromValue<qulonglong>(g.count));
            if (reason != GapReason::Untraced) item->setForeground(0, QColor("#b00020"));
            for (const std::string& example : g.examples)
                add(item, "cause", QString::fromStdString(example));
        }
    }
    ptSection_->setExpanded(true);
    for (int i = 0; i < ptSection_->childCount(); ++i)
        ptSection_->child(i)->setExpanded(true);
    QString text = QString("%1: decoded %2 %3 spans in %4 threads, %5 gaps (%6 s)")
                       .arg(QFileInfo(path_).fileName())
                       .arg(summary.spans)
                       .arg(traceKind_)
                       .arg(summary.threads.size())
                       .arg(gaps)
                       .arg(seconds, 0, 'f', 2);
    if (!auxMissing_.isEmpty()) text += "; " + auxMissing_;
    status_->setText(text);
    status_->setStyleSheet(st.decodeErrors || !auxMissing_.isEmpty() ? "color: #b00020;" : "");
    emit statusMessage(text);
}

// ---- The timeline ----

namespace {

std::string eventName(const PerfAttr& a) {
    if (!a.name.empty()) return a.name;
    return "type " + std::to_string(a.attr.type) + " config " + std::to_string(a.attr.config);
}

QString relative(uint64_t t, uint64_t origin) {
    const double ns = double(t) - double(origin);
    if (ns < 1e6) return QString("%1 µs").arg(ns / 1e3, 0, 'f', 1);
    if (ns < 1e9) return QString("%1 ms").arg(ns / 1e6, 0, 'f', 3);
    return QString("%1 s").arg(ns / 1e9, 0, 'f', 4);
}

const QString kDecodingHint = QStringLiteral("decoding…");

QString megabytes(uint64_t bytes) {
    return QString::number(double(bytes) / double(1 << 20), 'f', bytes < (10u << 20) ? 1 : 0) + " MB";
}

}  // namespace

void TraceFilePage::updateSelectionLine() {
    if (!selectionLine_ || !timeline_) return;
    const uint64_t origin = timeline_->data() ? timeline_->data()->begin : 0;
    QStringList parts;
    if (auto r = timeline_->timeSelection())
        parts << QString("Selection: +%1 … +%2, %3 (F zooms to it, M marks it, Esc clears)")
                     .arg(relative(r->begin, origin))
                     .arg(relative(r->end, origin))
                     .arg(formatNs(double(r->end - r->begin)));
    const TimelineHit& hit = timeline_->selection();
    if (hit.valid()) parts << TimelineView::describe(hit, origin).replace('\n', "  ·  ");
    if (const size_t n = timeline_->marks().size())
        parts << QString("%1 mark%2").arg(n).arg(n == 1 ? "" : "s");
    if (parts.isEmpty()) parts << "Shift+drag: select a range · / search · ? keys";
    selectionLine_->setText(parts.join("   |   "));
}

void TraceFilePage::setTimelineStatus(const QString& text, bool error) {
    timelineStatus_->setText(text);
    timelineStatus_->setStyleSheet(error ? "color: #b00020;" : "");
}

void TraceFilePage::openTimeline() {
    if (timeline_) return;
    auto* page = new QWidget;
    timelineStatus_ = new QLabel(hasPt_ ? "Opening the " + traceKind_ + " trace…" : "Building the timeline…");
    timelineStatus_->setObjectName("timelineStatus");
    timelineStatus_->setWordWrap(true);
    timelineStatus_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    timeline_ = new TimelineView;
    timeline_->setObjectName("timeline");
    auto* selection = new QLabel;
    selection->setObjectName("timelineSelection");
    selection->setTextInteractionFlags(Qt::TextSelectableByMouse);
    selectionLine_ = selection;
    search_ = new SearchBar(timeline_);
    search_->hide();
    rangeStats_ = new RangeStatsPane;
    rangeStats_->setObjectName("rangeStats");
    spanDetails_ = new SpanDetailsPane;
    spanDetails_->setObjectName("spanDetailsPane");
    codeView_ = new CodeView;
    codeView_->setObjectName("codeView");
    analysisTabs_ = new QTabWidget;
    analysisTabs_->setObjectName("analysisTabs");
    analysisTabs_->setDocumentMode(true);
    analysisTabs_->addTab(rangeStats_, "Selection");
    analysisTabs_->addTab(spanDetails_, "Span");
    analysisTabs_->addTab(codeView_, "Code");
    timelineProgress_ = new QProgressBar;
    timelineProgress_->setObjectName("timelineProgress");
    timelineProgress_->setRange(0, 100);
    timelineProgress_->setMaximumWidth(220);
    timelineProgress_->setTextVisible(true);
    timelineCancelButton_ = new QPushButton("Cancel");
    timelineCancelButton_->setObjectName("timelineCancel");
    timelineCancelButton_->setToolTip("Stop opening the timeline, or decoding the window in view");
    timelineCancelButton_->setVisible(false);
    connect(timelineCancelButton_, &QPushButton::clicked, this, [this] { cancelTimeline(); });
    overview_ = new OverviewStrip;
    overview_->setObjectName("overviewStrip");
    auto* statusRow = new QHBoxLayout;
    statusRow->addWidget(timelineStatus_, 1);
    statusRow->addWidget(timelineProgress_);
    statusRow->addWidget(timelineCancelButton_);
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 4, 0, 0);
    layout->addLayout(statusRow);
    layout->addWidget(search_);
    auto* top = new QWidget;
    auto* topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->setSpacing(2);
    topLayout->addWidget(overview_);
    // Filter, order, collapse and pin lanes; the choice is kept per file (QSettings).
    auto* laneBar = new LaneBar(timeline_);
    laneBar->setObjectName("laneBar");
    laneBar->setFile(path_);
    topLayout->addWidget(laneBar);
    topLayout->addWidget(timeline_, 1);
    topLayout->addWidget(selection);
    auto* split = new QSplitter(Qt::Vertical);
    split->setObjectName("timelineSplit");
    split->addWidget(top);
    split->addWidget(analysisTabs_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    selection->setText("Shift+drag or drag on the time axis: select a range · / search · ? keys");
    layout->addWidget(split, 1);
    auto* find = new QShortcut(QKeySequence("/"), page);
    find->setContext(Qt::WidgetWithChildrenShortcut);
    connect(find, &QShortcut::activated, search_, &SearchBar::activate);
    connect(timeline_, &TimelineView::searchRequested, search_, &SearchBar::activate);
    tabs_->insertTab(0, page, "Timeline");
    tabs_->setCurrentIndex(0);
    connect(timeline_, &TimelineView::visibleRangeChanged, this, &TraceFilePage::timelineRangeChanged);
    // The strip follows the view: at once when it asks, ~150 ms after the view
    // settles (visibleRangeChanged), and every 30 ms while the view is being
    // moved with the mouse, wheel or keys (the view's signal waits until it settles).
    connect(timeline_, &TimelineView::visibleRangeChanged, this, [this] { syncOverview(); });
    connect(overview_, &OverviewStrip::rangeRequested, this, [this](quint64 begin, quint64 end) {
        timeline_->setVisibleRange(begin, end);
        syncOverview();
    });
    overviewSync_ = new QTimer(this);
    overviewSync_->setInterval(30);
    connect(overviewSync_, &QTimer::timeout, this, [this] {
        syncOverview();
        if (!(QApplication::mouseButtons() & Qt::LeftButton) && ++overviewIdleTicks_ > 20)
            overviewSync_->stop();
    });
    timeline_->installEventFilter(this);
    connect(timeline_, &TimelineView::dataShown, this, [this] {
        // Shown (large data: once the view has summarized it).
        if (timeline_->undecodedHint() == kDecodingHint) timeline_->setUndecodedHint({});
        syncOverview();
        emit timelineUpdated();
    });
    connect(timeline_, &TimelineView::spanSelected, this, [this](const TimelineHit& hit) {
        spanDetails_->setData(timeline_->data());
        spanDetails_->showHit(hit);
        if (hit.kind == TimelineHit::ThreadSpan && analysisTabs_->currentWidget() != codeView_)
            analysisTabs_->setCurrentWidget(spanDetails_);
        updateSelectionLine();
    });
    connect(timeline_, &TimelineView::timeSelectionDragged, this, [this] { updateSelectionLine(); });
    connect(timeline_, &TimelineView::timeSelectionChanged, this, [this](quint64 begin, quint64 end) {
        updateSelectionLine();
        rangeStats_->setData(timeline_->data());
        rangeStats_->setRange(begin, end);
        if (end > begin) analysisTabs_->setCurrentWidget(rangeStats_);
    });
    connect(timeline_, &TimelineView::marksChanged, this, [this] { updateSelectionLine(); });
    connect(timeline_, &TimelineView::dataShown, this, [this] {
        rangeStats_->setData(timeline_->data());
        spanDetails_->setData(timeline_->data());
    });
    connect(rangeStats_, &RangeStatsPane::exportRequested, this,
            [this](const QString& format, quint64 begin, quint64 end) { exportRange(format, begin, end); });
    connect(rangeStats_, &RangeStatsPane::functionActivated, this, [this](uint32_t function) {
        if (auto r = timeline_->timeSelection())
            showCode(rangeStats_->shownThread(), function, r->begin, r->end);
    });
    connect(spanDetails_, &SpanDetailsPane::codeRequested, this,
            [this](int32_t tid, uint32_t function, quint64 begin, quint64 end) {
                // The selected range when there is one (counts over it), else the span's own time.
                if (auto r = timeline_->timeSelection(); r && r->begin <= begin && r->end >= end)
                    showCode(tid, function, r->begin, r->end);
                else
                    showCode(tid, function, begin, end);
            });
    connect(spanDetails_, &SpanDetailsPane::spanRequested, this,
            [this](int32_t tid, qulonglong index) { timeline_->selectSpan(tid, size_t(index)); });

    if (!hasPt_) {
        buildSidebandTimeline();
        return;
    }
    // Open the session and build the lanes and the overview on a worker thread;
    // the first frame shows them, and the decode of a first window follows.
    timelineBusy_ = true;
    ptOpening_ = true;
    showTimelineBusy(true);
    timelineProgress_->setRange(0, 0);  // busy: the session opens in one step
    timelineProgress_->setFormat("Opening %p%");
    staleTimeline();
    QPointer<TraceFilePage> self(this);
    std::thread([self, reader = reader_, lock = sessionLock_, cancel = timelineCancel_] {
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
                        if (self && self->ptOpening_) self->setTimelineProgress(percent, phase);
                    },
                    Qt::QueuedConnection);
            }
            return !*cancel;
        };
        auto opened = AuxTraceSession::open(*reader);
        std::shared_ptr<AuxTraceSession> session;
        std::shared_ptr<const TimelineData> base;
        std::shared_ptr<const TimelineOverview> overview;
        std::string error;
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
            options.progress = [&](uint64_t done, uint64_t total) {
                return report(int(100 * done / std::max<uint64_t>(total, 1)), "Resolving samples");
            };
            auto lanes = buildSidebandLanes(session->sideband(), options);
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
            }
        } else {
            error = opened.error().message;
        }
        guard.unlock();
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QMetaObject::invokeMethod(
            qApp,
            [self, session, base, overview, error, seconds] {
                if (!self) return;
                self->timelineBusy_ = false;
                self->ptOpening_ = false;
                self->showTimelineBusy(false);
                if (!session) {
                    if (error == "cancelled") {
                        self->setTimelineStatus("Cancelled: the timeline was not built.", true);
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
                // The first frame: the whole recording, every lane, the overview; nothing decoded yet.
                self->overview_->setOverview(overview);
                if (auto* l = self->overview_->parentWidget()->layout())
                    l->activate();  // its height, before painting
                self->timeline_->setData(base);
                self->syncOverview();
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
                                   .arg(relative(base->end, base->begin));
                for (const std::string& note : base->notes)
                    text += "\n" + QString::fromStdString(note);
                self->setTimelineStatus(text);
                emit self->timelineOpened();
                // Then what the view was moved to while opening, or the whole recording when its
                // trace fits the budget, else its first 1/1000 (the rest as the view zooms in).
                if (self->pendingWindow_) {
                    self->timelineRangeChanged(self->pendingWindow_->begin, self->pendingWindow_->end);
                } else if (wholeBytes <= self->timelineBudget_) {
                    self->timelineRangeChanged(whole.begin, whole.end);
                } else {
                    const DecodeWindow first = firstFrameWindow(*session);
                    self->pendingWindow_ = Window{first.begin, first.end};
                    self->timeline_->setUndecodedHint(QString("only the first 1/1000 is decoded: zoom in to "
                                                              "decode more (%1 of trace in the recording)")
                                                          .arg(megabytes(wholeBytes)));
                    self->runTimelineDecode();
                }
            },
            Qt::QueuedConnection);
    }).detach();
}

void TraceFilePage::setTimelineProgress(int percent, const QString& phase) {
    if (!timelineProgress_) return;
    timelineProgress_->setRange(0, 100);
    timelineProgress_->setValue(percent);
    timelineProgress_->setFormat(phase + " %p%");
}

// A file without a decodable AUX trace: the lanes are all there is, built once.
void TraceFilePage::buildSidebandTimeline() {
    timelineBusy_ = true;
    showTimelineBusy(true);
    setTimelineProgress(0, "Reading the sideband");
    QPointer<TraceFilePage> self(this);
    std::thread([self, reader = reader_, cancel = timelineCancel_] {
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
                        if (self) self->setTimelineProgress(percent, text);
                    },
                    Qt::QueuedConnection);
            }
            return !*cancel;
        };
        std::shared_ptr<TimelineData> data;
        std::shared_ptr<const TimelineOverview> overview;
        std::string error;
        std::vector<std::string> notes;
        auto sideband = Sideband::load(*reader, [&](uint64_t done, uint64_t total) {
            return report(total ? int(70 * done / total) : 0, "Reading the sideband");
        });
        if (sideband) {
            report(70, "Loading symbols");
            // The samples' IPs resolve through the decoders' symbol code.
            auto functions = std::make_shared<FunctionTable>();
            ImageResolver images(*sideband, *functions, ImageOptions{});
            images.prepare();
            SidebandLanesOptions options;
            for (const PerfAttr& a : reader->attrs())
                options.events.push_back(eventName(a));
            options.functions = functions;
            options.functionAt = [&images](int32_t pid, uint64_t ip) { return images.functionAt(pid, ip); };
            options.progress = [&](uint64_t done, uint64_t total) {
                return report(80 + int(20 * done / std::max<uint64_t>(total, 1)), "Resolving samples");
            };
            auto lanes = buildSidebandLanes(*sideband, options);
            if (lanes) {
                data = std::make_shared<TimelineData>();
                setTimelineCpus(*data, *sideband);
                data->functions = functions;
                setTimelineLanes(*data, lanes);
                overview = buildTimelineOverview(*data, {});
            } else {
                error = "cancelled";
            }
        } else {
            error = sideband.error().message;
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QMetaObject::invokeMethod(
            qApp,
            [self, data, overview, error, seconds] {
                if (!self) return;
                self->timelineBusy_ = false;
                self->showTimelineBusy(false);
                const QString note = self->timelineNote_.isEmpty() ? QString() : self->timelineNote_ + "\n";
                if (!data) {
                    self->setTimelineStatus(
                        note + (error == "cancelled"
                                    ? QString("Cancelled: the timeline was not built.")
                                    : "Cannot build the timeline: " + QString::fromStdString(error)),
                        true);
                    return;
                }
                self->overview_->setOverview(overview);
                if (auto* l = self->overview_->parentWidget()->layout())
                    l->activate();  // its height, before painting
                self->timeline_->setData(data);
                self->syncOverview();
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
                                   .arg(relative(data->end, data->begin))
                                   .arg(seconds, 0, 'f', 2);
                if (data->cpus.empty()) text = "No CPU in the sideband: " + text;
                self->setTimelineStatus(note + text, losses > 0 || !note.isEmpty());
                emit self->timelineOpened();
                emit self->timelineUpdated();
            },
            Qt::QueuedConnection);
    }).detach();
}

void TraceFilePage::timelineRangeChanged(quint64 begin, quint64 end) {
    if (!session_ && !ptOpening_) return;
    if (begin >= decodedWindow_.begin && end <= decodedWindow_.end) {
        // Already shown: whatever was asked for since is not needed any more.
        if (session_ && (timelineBusy_ || pendingWindow_)) staleTimeline();
        pendingWindow_.reset();
        timeline_->setUndecodedHint({});
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
            timeline_->setUndecodedHint(hint);
            setTimelineStatus(
                QString("Not decoded: %1 of trace in view, more than the %2 budget; zoom in to decode.")
                    .arg(megabytes(bytes))
                    .arg(megabytes(timelineBudget_)));
            return;
        }
    }
    timeline_->setUndecodedHint(kDecodingHint);
    pendingWindow_ = Window{begin, end};
    if (!timelineBusy_) runTimelineDecode();
}

void TraceFilePage::runTimelineDecode() {
    if (!session_ || !pendingWindow_ || timelineBusy_) return;
    const Window w = *pendingWindow_;
    pendingWindow_.reset();
    timelineBusy_ = true;
    const uint64_t generation = timelineGeneration_;
    DecodeWindow window;
    window.begin = w.begin, window.end = w.end;
    const uint64_t origin = timelineBase_->begin;
    const uint64_t bytes = windowTraceBytes(*session_, window);
    setTimelineStatus(QString("Decoding +%1 … +%2 (%3 of trace)…")
                          .arg(relative(w.begin, origin))
                          .arg(relative(w.end, origin))
                          .arg(megabytes(bytes)));
    showTimelineBusy(true);
    timelineProgress_->setRange(0, 0);  // busy until the first batch
    timelineProgress_->setFormat("Decoding %p%");
    std::vector<int32_t> seen(seenTids_.begin(), seenTids_.end());
    QPointer<TraceFilePage> self(this);
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
                        self->timelineProgress_->setRange(0, 1000);
                        self->timelineProgress_->setValue(permille);
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
                self->showTimelineBusy(false);
                if (data && generation == self->timelineGeneration_) {
                    // The newest request: show it (a stale one is dropped).
                    for (const auto& t : data->threads)
                        self->seenTids_.insert(t.tid);
                    self->decodedWindow_ = {window.begin, window.end};
                    self->timeline_->setData(data);
                    size_t spans = 0;
                    for (const auto& t : data->threads)
                        spans += t.spans.size();
                    self->setTimelineStatus(
                        QString("Decoded +%1 … +%2: %3 spans in %4 s (%5 segments decoded, "
                                "%6 from cache)")
                            .arg(relative(window.begin, data->begin))
                            .arg(relative(window.end, data->begin))
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

void TraceFilePage::showTimelineBusy(bool on) {
    timelineProgress_->setVisible(on);
    timelineCancelButton_->setVisible(on);
}

void TraceFilePage::staleTimeline() {
    ++timelineGeneration_;
    liveGeneration_->store(timelineGeneration_);
}

void TraceFilePage::cancelTimeline() {
    if (ptOpening_ || (!session_ && timelineBusy_)) {
        // Opening or building the lanes: the worker stops at its next progress report.
        *timelineCancel_ = true;
        setTimelineStatus("Cancelling…");
        return;
    }
    if (!timelineBusy_ && !pendingWindow_) return;
    // A window's decode: stop it between batches and forget the window; moving the view asks again.
    pendingWindow_.reset();
    staleTimeline();
    timeline_->setUndecodedHint("decode cancelled: move or zoom the view to decode again");
    setTimelineStatus("Decode cancelled.");
}

void TraceFilePage::syncOverview() {
    if (!overview_ || !timeline_) return;
    const TimelineView::Range r = timeline_->visibleRange();
    if (r.begin != overview_->visibleBegin() || r.end != overview_->visibleEnd()) {
        overview_->setVisibleRange(r.begin, r.end);
        overviewIdleTicks_ = 0;
    }
    // Line the strip's plot up with the view's (its label column and scroll bar).
    overview_->setPlotMargins(timeline_->plotLeft(),
                              timeline_->width() - timeline_->plotLeft() - timeline_->plotWidth());
}

bool TraceFilePage::eventFilter(QObject* watched, QEvent* event) {
    if (watched == timeline_) {
        switch (event->type()) {
            case QEvent::MouseButtonPress:
            case QEvent::MouseMove:
            case QEvent::Wheel:
            case QEvent::KeyPress:
                // The view is being moved: follow it until it rests.
                overviewIdleTicks_ = 0;
                if (overviewSync_ && !overviewSync_->isActive()) overviewSync_->start();
                break;
            case QEvent::Resize:
                QMetaObject::invokeMethod(
                    this, [this] { syncOverview(); }, Qt::QueuedConnection);
                break;
            default:
                break;
        }
    }
    return QWidget::eventFilter(watched, event);
}

void TraceFilePage::showCode(int32_t tid, uint32_t function, uint64_t begin, uint64_t end) {
    if (!codeView_) return;
    analysisTabs_->setCurrentWidget(codeView_);
    const auto data = timeline_ ? timeline_->data() : nullptr;
    const QString name = data && data->functions && function < data->functions->size()
                             ? QString::fromStdString((*data->functions)[function].name)
                             : QString("function %1").arg(function);
    if (!session_) {
        codeView_->showMessage("No decoder for this file's trace: no code to show.", true);
        return;
    }
    if (end <= begin) end = begin + 1;  // a span that took no time on the clock: its instant
    DecodeWindow window;
    window.begin = begin, window.end = end;
    if (tid >= 0) window.tid = tid;
    const uint64_t bytes = windowTraceBytes(*session_, window);
    if (bytes > timelineBudget_) {
        codeView_->showMessage(
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
    codeView_->showMessage(
        QString("Decoding the flow of %1 (%2) to count its instructions…").arg(name, context));
    const uint64_t request = ++codeGeneration_;
    QPointer<TraceFilePage> self(this);
    std::thread([self, session = session_, lock = sessionLock_, window, function, request, context] {
        // Blocks of the function, counted per distinct (ip, endIp), in the first process that ran it.
        std::map<std::pair<uint64_t, uint64_t>, std::pair<uint64_t, uint64_t>> counts;  // -> (count, insns)
        int32_t pid = -1;
        {
            std::lock_guard guard(*lock);
            session->forEachBlock(window, [&](const FlowBlock& b) {
                if (b.function != function) return;
                const int32_t p = session->sideband().pidOf(b.tid);
                if (pid == -1) pid = p;
                if (p != pid) return;
                auto& c = counts[{b.ip, b.endIp}];
                ++c.first;
                c.second = b.instructions;
            });
        }
        std::vector<ExecutedBlock> blocks;
        blocks.reserve(counts.size());
        for (const auto& [key, c] : counts)
            blocks.push_back({key.first, key.second, c.second, c.first});
        auto code = std::make_shared<Expected<AnnotatedCode>>(
            annotateFunction(session->images(), session->functions(), pid, function, blocks));
        QMetaObject::invokeMethod(
            qApp,
            [self, code, request, context] {
                if (!self || request != self->codeGeneration_) return;
                if (!*code)
                    self->codeView_->showMessage(QString::fromStdString(code->error().message), true);
                else
                    self->codeView_->showCode(code->value(), context);
            },
            Qt::QueuedConnection);
    }).detach();
}

bool TraceFilePage::exportRange(const QString& format, uint64_t begin, uint64_t end, QString outPath) {
    if (!reader_ || end <= begin || exporting_) return false;
    const bool csv = format == "csv";
    const auto data = timeline_ ? timeline_->data() : nullptr;
    const uint64_t origin = data ? data->begin : 0;
    if (outPath.isEmpty()) {
        QFileInfo in(path_);
        const QString suffix = QString("-%1-%2ms")
                                   .arg(double(begin - origin) / 1e6, 0, 'f', 3)
                                   .arg(double(end - origin) / 1e6, 0, 'f', 3);
        QString suggestion = in.dir().filePath(in.completeBaseName() + suffix + (csv ? ".csv" : ".pftrace"));
        outPath = QFileDialog::getSaveFileName(
            this, csv ? "Export the range as CSV" : "Export the range to Perfetto", suggestion,
            csv ? "CSV (*.csv)" : "Perfetto trace (*.pftrace *.perfetto-trace)");
        if (outPath.isEmpty()) return false;
    }
    // The worker keeps what it reads alive: the reader, the timeline's data, the session.
    auto loadedError = std::make_shared<QString>();
    auto spanCount = std::make_shared<uint64_t>(0);
    ExportJob job = [reader = reader_, data, session = session_, begin, end, csv, loadedError, spanCount,
                     out = outPath.toStdString()](const std::function<bool(uint64_t, uint64_t)>& progress) {
        TraceModel model;
        auto loaded = loadTraceModel(*reader, model);
        if (!loaded) *loadedError = QString::fromStdString(loaded.error().message);
        ExportOptions options;
        options.begin = begin, options.end = end;
        options.progress = progress;
        // The timeline's decoded spans that overlap the range (the exporter clips them).
        std::map<int32_t, SpanStore> threads;
        ExportSpans spans;
        if (data && data->functions) {
            for (const auto& t : data->threads)
                if (!t.spans.empty()) threads[t.tid].appendStore(t.spans, begin, end);
            for (const auto& [tid, store] : threads)
                *spanCount += store.size();
            spans.threads = &threads;
            spans.functions = data->functions.get();
            spans.pidOf = [session](int32_t tid) { return session ? session->sideband().pidOf(tid) : -1; };
            options.spans = &spans;
        }
        return csv ? exportCsv(model, out, options) : exportPerfetto(model, out, options);
    };
    return startExport(std::move(job), [this, begin, end, origin, outPath, loadedError,
                                        spanCount](const Expected<void>& written) {
        QString text = written ? QString("Exported +%1 … +%2 (%3 spans overlapping it, clipped) to %4")
                                     .arg(relative(begin, origin))
                                     .arg(relative(end, origin))
                                     .arg(*spanCount)
                                     .arg(outPath)
                               : "Export failed: " + QString::fromStdString(written.error().message);
        if (written && !loadedError->isEmpty()) text += " (stopped early: " + *loadedError + ")";
        setTimelineStatus(text, !written || !loadedError->isEmpty());
        emit statusMessage(text);
        emit exportFinished(written.ok(), text);
    });
}

void TraceFilePage::cancelExport() {
    if (exportCancel_) exportCancel_->store(true);
}

bool TraceFilePage::startExport(ExportJob job, std::function<void(const Expected<void>&)> done) {
    if (exporting_) return false;
    exporting_ = true;
    exportCancel_ = std::make_shared<std::atomic<bool>>(false);
    exportProgress_->setRange(0, 0);  // busy until the first report
    exportProgress_->setVisible(true);
    exportCancelButton_->setVisible(true);
    for (auto* b : {exportPerfetto_, exportCsv_})
        b->setEnabled(false);
    QPointer<TraceFilePage> self(this);
    std::thread([self, job = std::move(job), done = std::move(done), cancel = exportCancel_] {
        auto progress = [self, cancel](uint64_t written, uint64_t total) {
            const int permille = total ? int(std::min<uint64_t>(1000, written * 1000 / total)) : 0;
            QMetaObject::invokeMethod(
                qApp,
                [self, permille] {
                    if (!self || !self->exporting_) return;
                    self->exportProgress_->setRange(0, 1000);
                    self->exportProgress_->setValue(permille);
                },
                Qt::QueuedConnection);
            return !cancel->load();
        };
        auto written = job(progress);  // cancelled after its last report: it is complete, and kept
        QMetaObject::invokeMethod(
            qApp,
            [self, done, written = std::move(written)] {
                if (!self) return;
                self->exporting_ = false;
                self->exportProgress_->setVisible(false);
                self->exportCancelButton_->setVisible(false);
                for (auto* b : {self->exportPerfetto_, self->exportCsv_})
                    b->setEnabled(self->loaded());
                done(written);
            },
            Qt::QueuedConnection);
    }).detach();
    return true;
}

bool TraceFilePage::exportTo(const QString& format, QString outPath) {
    if (!reader_ || exporting_) return false;
    const bool csv = format == "csv";
    if (outPath.isEmpty()) {
        QFileInfo in(path_);
        QString suggestion = in.dir().filePath(in.completeBaseName() + (csv ? ".csv" : ".pftrace"));
        outPath =
            QFileDialog::getSaveFileName(this, csv ? "Export CSV" : "Export to Perfetto", suggestion,
                                         csv ? "CSV (*.csv)" : "Perfetto trace (*.pftrace *.perfetto-trace)");
        if (outPath.isEmpty()) return false;
    }
    struct Counts {
        size_t runSlices = 0, samples = 0;
        QString loadedError;
    };
    auto counts = std::make_shared<Counts>();
    ExportJob job = [reader = reader_, decoded = decoded_, csv, counts,
                     out = outPath.toStdString()](const std::function<bool(uint64_t, uint64_t)>& progress) {
        TraceModel model;
        auto loaded = loadTraceModel(*reader, model);
        if (!loaded) counts->loadedError = QString::fromStdString(loaded.error().message);
        counts->runSlices = model.runSlices().size();
        counts->samples = model.samples().size();
        ExportOptions options;
        options.progress = progress;
        ExportSpans spans;
        if (decoded) {
            spans = decoded->exportView();
            options.spans = &spans;
        }
        return csv ? exportCsv(model, out, options) : exportPerfetto(model, out, options);
    };
    return startExport(std::move(job), [this, counts, outPath,
                                        decoded = decoded_](const Expected<void>& written) {
        QString text;
        if (!written) {
            text = "Export failed: " + QString::fromStdString(written.error().message);
        } else {
            text = QString("Exported %1 run slices, %2 samples%3 to %4")
                       .arg(counts->runSlices)
                       .arg(counts->samples)
                       .arg(decoded ? QString(" and %1 %2 spans").arg(decoded->spanCount()).arg(traceKind_)
                                    : QString())
                       .arg(outPath);
            if (!counts->loadedError.isEmpty()) text += " (stopped early: " + counts->loadedError + ")";
        }
        status_->setText(text);
        status_->setStyleSheet(written && counts->loadedError.isEmpty() ? "" : "color: #b00020;");
        emit statusMessage(text);
        emit exportFinished(written.ok(), text);
    });
}

}  // namespace auxscope
