// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/trace/TraceSummaryTree.h"

#include <QFileInfo>
#include <QHeaderView>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "auxtrace/AuxTraceDecode.h"
#include "export/TraceExport.h"
#include "gui/timeline/TimeFormat.h"
#include "perfdata/CaptureStatsFeature.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/TriggerFeature.h"
#include "sideband/Sideband.h"

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

}  // namespace

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

namespace {
constexpr size_t kTopFunctions = 15, kGapExamples = 5;
}  // namespace

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

TraceSummaryTree::TraceSummaryTree(QWidget* parent) : QTreeWidget(parent) {
    setObjectName("traceTree");
    setColumnCount(2);
    setHeaderLabels({"", "Value"});
    header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
}

QTreeWidgetItem* TraceSummaryTree::section(const QString& title) {
    auto* item = new QTreeWidgetItem(this, {title});
    QFont f = item->font(0);
    f.setBold(true);
    item->setFont(0, f);
    return item;
}

QString TraceSummaryTree::showFile(const PerfDataReader& r, const QString& path) {
    clear();
    ptSection_ = nullptr;
    auto add = [](QTreeWidgetItem* parent, const QString& key, const QString& value) {
        return new QTreeWidgetItem(parent, {key, value});
    };

    auto* file = section("File");
    add(file, "path", path);
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
    // Snapshot triggers (auxscope record --trigger, the capture page's): per trigger its
    // firings, the options, the skips by reason (the firings themselves: the Triggers tab).
    for (const PerfRawFeature& raw : f.raw) {
        if (raw.id != kFeatAuxscopeTriggers) continue;
        auto t = decodeTriggerFeature(raw.bytes, r.path() + ": offset " + std::to_string(raw.offset));
        auto* triggers = section("Snapshot triggers");
        if (!t) {
            add(triggers, "error", QString::fromStdString(t.error().message))
                ->setForeground(1, QColor("#b00020"));
            continue;
        }
        const TriggerReport& tr = t->report;
        triggers->setText(1, QString("%1 firings, %2 of %3 snapshots taken")
                                 .arg(tr.firings.size())
                                 .arg(tr.snapshotsTaken)
                                 .arg(tr.snapshotsRequested));
        for (size_t i = 0; i < tr.triggers.size(); ++i)
            add(triggers, QString::fromStdString(tr.triggers[i]),
                QString("%1 firings").arg(i < tr.perTrigger.size() ? tr.perTrigger[i] : 0));
        add(triggers, "options",
            QString("keep tracing %1 after a firing; %2; at least %3 between two snapshots' firings")
                .arg(formatNs(double(t->postNs)))
                .arg(t->max ? QString("at most %1 snapshots").arg(t->max) : QString("no limit on snapshots"))
                .arg(formatNs(double(t->gapNs))));
        for (size_t i = 0; i < tr.skipped.size(); ++i)
            if (tr.skipped[i])
                add(triggers, "skipped",
                    QString("%1: %2").arg(tr.skipped[i]).arg(triggerSkipName(TriggerSkip(i))));
        if (tr.unmatchedEnds || tr.lost || tr.depthOverflows)
            add(triggers, "not matched",
                QString("%1 returns without their entry, %2 trigger samples lost, %3 entries past the "
                        "nesting limit")
                    .arg(tr.unmatchedEnds)
                    .arg(tr.lost)
                    .arg(tr.depthOverflows));
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
    expandToDepth(0);
    return QString("%1: %2 records on %3 CPUs, %4 lost records, %5 lost samples, %6 problems")
        .arg(QFileInfo(path).fileName())
        .arg(s.records)
        .arg(std::count_if(s.cpus.begin(), s.cpus.end(), [](auto& c) { return c.first >= 0; }))
        .arg(lost)
        .arg(lostSamples)
        .arg(r.issues().size());
}

QString TraceSummaryTree::showDecoded(const PtSpanSummary& summary, const QString& traceKind, double seconds,
                                      const QString& fileName) {
    delete ptSection_;
    uint64_t gaps = 0;
    for (const auto& [reason, n] : summary.stats.gaps)
        gaps += n;
    ptSection_ = new QTreeWidgetItem(
        {QString("%1 (%2 threads, %3 spans)").arg(traceKind).arg(summary.threads.size()).arg(summary.spans)});
    insertTopLevelItem(0, ptSection_);
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
    return QString("%1: decoded %2 %3 spans in %4 threads, %5 gaps (%6 s)")
        .arg(fileName)
        .arg(summary.spans)
        .arg(traceKind)
        .arg(summary.threads.size())
        .arg(gaps)
        .arg(seconds, 0, 'f', 2);
}

}  // namespace auxscope
