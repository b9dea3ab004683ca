// SPDX-License-Identifier: GPL-3.0-or-later
// Arm SPE in the GUI (issue 31), offscreen, on a file auxscope-spesynth
// generates here with its ground truth (FILE.truth: one CSV row per record,
// every SpeRecord field):
//   - the file opens on its timeline with an SPE tab, the profile's arm_spe
//     events hold as many samples as the truth's records of each event;
//   - the selection pane over "arm_spe: loads" (and every other event) gives
//     each function (the truth's PC named by the generated ELF's symbols, read
//     here with nm) exactly the truth's count;
//   - the latency histogram's buckets per data source equal the truth's (every
//     function, then one picked function, then one thread);
//   - a click on the memory map's fullest cell lists exactly the truth's
//     loads and stores in that cell, their data addresses as symbol+offset.
// With AUXSCOPE_SPE_SCREENSHOTS=DIR, it saves spe-latency.png and
// spe-memory-map.png of the page there (the README's screenshots).
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QSplitter>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>
#include <QWheelEvent>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "auxtrace/SpeAnalysis.h"
#include "auxtrace/SpeSamples.h"
#include "gui/analysis/RangeStatsPane.h"
#include "gui/analysis/SpeHistogramWidget.h"
#include "gui/analysis/SpeMemoryMapWidget.h"
#include "gui/analysis/SpePane.h"
#include "gui/timeline/TimelineHit.h"
#include "gui/timeline/TimelinePalette.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"
#include "spans/SidebandLanes.h"
#include "spans/TimelineData.h"
#include "spe/SpeDecoder.h"

using namespace auxscope;

namespace {

// FILE.truth's rows as SpeRecords (the header names the fields).
std::vector<spe::SpeRecord> readTruth(const QString& path) {
    std::ifstream in(path.toStdString());
    std::string line;
    std::getline(in, line);
    std::vector<std::string> names;
    {
        std::istringstream h(line);
        for (std::string f; std::getline(h, f, ',');)
            names.push_back(f);
    }
    std::vector<spe::SpeRecord> out;
    while (std::getline(in, line)) {
        std::istringstream l(line);
        std::map<std::string, std::string> v;
        size_t k = 0;
        for (std::string f; std::getline(l, f, ',') && k < names.size(); ++k)
            v[names[k]] = f;
        auto u = [&](const char* n) { return uint64_t(std::stoull(v.count(n) ? v[n] : "0", nullptr, 0)); };
        auto i = [&](const char* n) { return int64_t(std::stoll(v.count(n) ? v[n] : "0", nullptr, 0)); };
        spe::SpeRecord r;
        r.timestamp = u("timestamp"), r.time = u("time");
        r.cpu = int(i("cpu")), r.pid = int32_t(i("pid")), r.tid = int32_t(i("tid"));
        r.opClass = spe::OpClass(u("opClass")), r.opPayload = uint8_t(u("opPayload"));
        r.isLoad = u("isLoad"), r.isStore = u("isStore"), r.isBranch = u("isBranch");
        r.pc = u("pc"), r.pcEl = uint8_t(u("pcEl")), r.hasPc = u("hasPc");
        r.dataVa = u("dataVa"), r.hasDataVa = u("hasDataVa");
        r.totalLatency = uint16_t(u("totalLatency")), r.issueLatency = uint16_t(u("issueLatency"));
        r.translationLatency = uint16_t(u("translationLatency"));
        r.hasTotalLatency = u("hasTotalLatency"), r.hasIssueLatency = u("hasIssueLatency");
        r.hasTranslationLatency = u("hasTranslationLatency");
        r.events = u("events"), r.hasEvents = u("hasEvents");
        r.dataSource = uint16_t(u("dataSource")), r.hasDataSource = u("hasDataSource");
        out.push_back(r);
    }
    return out;
}

// The generated ELF's functions (nm -S): start, end, name.
struct Symbol {
    uint64_t start, end;
    std::string name;
};
std::vector<Symbol> functionSymbols(const QString& elf, const std::string& types = "Tt") {
    QProcess nm;
    nm.start("nm", {"-S", "--defined-only", elf});
    nm.waitForFinished(30000);
    std::vector<Symbol> out;
    std::istringstream in(nm.readAllStandardOutput().toStdString());
    std::string value, size, type, name;
    for (std::string line; std::getline(in, line);) {
        std::istringstream l(line);
        if (!(l >> value >> size >> type >> name)) continue;
        if (type.size() != 1 || types.find(type[0]) == std::string::npos) continue;
        const uint64_t s = std::stoull(value, nullptr, 16);
        out.push_back({s, s + std::stoull(size, nullptr, 16), name});
    }
    return out;
}
std::string functionOf(const std::vector<Symbol>& symbols, uint64_t pc) {
    for (const Symbol& s : symbols)
        if (pc >= s.start && pc < s.end) return s.name;
    return "?";
}

}  // namespace

class SpeViewsTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString path_, elf_;
    std::vector<spe::SpeRecord> truth_;
    std::vector<Symbol> symbols_, globals_;
    std::unique_ptr<TraceFilePage> page_;

    SpePane* pane() const { return page_->timeline() ? page_->findChild<SpePane*>() : nullptr; }
    // The SPE tab's passes (worker threads) all came back.
    bool settled() const {
        return QTest::qWaitFor([&] { return !pane()->busy(); }, 30000);
    }
    // For the screenshots: the tabs under the timeline get most of the height.
    void giveRoomToTheSpeTab() {
        if (auto* split = qobject_cast<QSplitter*>(page_->analysisTabs()->parentWidget())) {
            const int total = split->height();
            split->setSizes({total * 2 / 5, total * 3 / 5});
        }
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        path_ = dir_.filePath("spe.data");
        QProcess synth;
        synth.setProcessChannelMode(QProcess::MergedChannels);
        synth.start(AUXSCOPE_SPESYNTH, {"--generate", "20000", "--seed", "5", "-o", path_});
        QVERIFY(synth.waitForFinished(60000));
        QVERIFY2(synth.exitCode() == 0, synth.readAll().constData());
        truth_ = readTruth(path_ + ".truth");
        QCOMPARE(truth_.size(), size_t(20000));
        for (const QString& f : QDir(dir_.path()).entryList({"*.elf"}))
            elf_ = dir_.filePath(f);
        QVERIFY2(!elf_.isEmpty(), "the generated ELF beside the file");
        symbols_ = functionSymbols(elf_);
        globals_ = functionSymbols(elf_, "DdBb");
        QVERIFY(!globals_.empty());
        QVERIFY(symbols_.size() >= 3);
        page_ = std::make_unique<TraceFilePage>(path_);
        page_->resize(1500, 1000);
        page_->show();
        QVERIFY(QTest::qWaitFor([&] { return page_->loaded() || page_->failed(); }, 30000));
        QVERIFY(page_->loaded());
        QVERIFY(QTest::qWaitFor([&] { return pane() && pane()->data(); }, 60000));
        QVERIFY(settled());
        if (!qgetenv("AUXSCOPE_SPE_SCREENSHOTS").isEmpty()) {
            QTest::qWait(100);
            giveRoomToTheSpeTab();
        }
    }

    void opensWithSpeEvents() {
        const SpeViewData& d = *pane()->data();
        QCOMPARE(d.records.size(), truth_.size());
        auto profile = page_->sampleProfile();
        QVERIFY(profile);
        for (uint32_t e = 0; e < uint32_t(SpeEvent::Count); ++e) {
            const int index = profile->eventIndex(speEventName(SpeEvent(e)));
            QVERIFY(index >= 0);
            uint64_t expected = 0;
            for (const spe::SpeRecord& r : truth_)
                expected += speRecordHasEvent(r, SpeEvent(e));
            QCOMPARE(profile->events()[size_t(index)].samples, expected);
        }
        QVERIFY(page_->timelineStatus()->text().contains("Arm SPE: 20,000 records") ||
                page_->timelineStatus()->text().contains("Arm SPE: 20000 records"));
        QVERIFY(page_->rangeStats()->sourceChoice()->findText("Samples: arm_spe: loads") >= 0);
        // Nothing to decode into spans: the selection answers from the arm_spe samples.
        QVERIFY(!page_->startDecode());
        QCOMPARE(page_->rangeStats()->sourceKind(), RangeSource::Samples);
    }

    void topFunctionsMatchTheTruth() {
        auto profile = page_->sampleProfile();
        RangeStatsPane* stats = page_->rangeStats();
        uint64_t lo = UINT64_MAX, hi = 0;
        for (const spe::SpeRecord& r : truth_)
            lo = std::min(lo, r.time), hi = std::max(hi, r.time);
        for (SpeEvent e : {SpeEvent::Loads, SpeEvent::Stores, SpeEvent::LlcMiss, SpeEvent::AllOps}) {
            const int index = profile->eventIndex(speEventName(e));
            QVERIFY(stats->setSource(RangeSource::Samples, index) ||
                    stats->sourceKind() == RangeSource::Samples);
            QSignalSpy computed(stats, &RangeStatsPane::computed);
            page_->timeline()->setTimeSelection(0, hi + 1);
            QVERIFY(computed.wait(30000) || stats->stats());
            QVERIFY(QTest::qWaitFor(
                [&] { return stats->stats() && stats->stats()->source.event == speEventName(e); }, 30000));
            std::map<std::string, uint64_t> expected;
            for (const spe::SpeRecord& r : truth_)
                if (speRecordHasEvent(r, e)) ++expected[functionOf(symbols_, r.pc)];
            std::map<std::string, uint64_t> shown;
            QTreeWidget* top = stats->topFunctions();
            for (int i = 0; i < top->topLevelItemCount(); ++i)
                shown[top->topLevelItem(i)->text(0).toStdString()] =
                    top->topLevelItem(i)->data(4, Qt::UserRole).toULongLong();
            QCOMPARE(shown, expected);
            page_->timeline()->state()->clearTimeSelection();
        }
    }

    void histogramMatchesTheTruth() {
        SpePane* p = pane();
        page_->analysisTabs()->setCurrentWidget(p);
        p->tabs()->setCurrentIndex(0);
        auto expectedOf = [&](auto&& take) {
            std::map<std::pair<int, int>, uint64_t> out;
            for (const spe::SpeRecord& r : truth_)
                if (r.hasTotalLatency && take(r))
                    ++out[{r.hasDataSource ? int(r.dataSource) : -1, speLatencyBucket(r.totalLatency)}];
            return out;
        };
        auto shown = [&] {
            std::map<std::pair<int, int>, uint64_t> out;
            if (!settled()) return out;
            for (const SpeHistogramSeries& s : p->histogram()->histogram().series)
                for (int b = 0; b < kSpeLatencyBuckets; ++b)
                    if (s.counts[size_t(b)]) out[{s.hasSource ? int(s.source) : -1, b}] = s.counts[size_t(b)];
            return out;
        };
        QCOMPARE(shown(), expectedOf([](const spe::SpeRecord&) { return true; }));
        // The source names the decoder gives.
        for (const SpeHistogramSeries& s : p->histogram()->histogram().series)
            QVERIFY(!s.name.empty());
        // One function: the second in the list (the first with records after "every function").
        QVERIFY(p->functionChoice()->count() > 2);
        p->functionChoice()->setCurrentIndex(1);
        const std::string fn = p->functionChoice()->currentText().section(" (", 0, 0).toStdString();
        QCOMPARE(shown(),
                 expectedOf([&](const spe::SpeRecord& r) { return functionOf(symbols_, r.pc) == fn; }));
        p->functionChoice()->setCurrentIndex(0);
        // One thread.
        p->threadChoice()->setCurrentIndex(2);
        const int32_t tid = p->threadChoice()->currentData().toInt();
        QCOMPARE(shown(), expectedOf([&](const spe::SpeRecord& r) { return r.tid == tid; }));
        p->threadChoice()->setCurrentIndex(0);
        // Loads only, their issue latency.
        p->opsChoice()->setCurrentIndex(p->opsChoice()->findData(1));
        p->latencyChoice()->setCurrentIndex(p->latencyChoice()->findData(int(SpeLatencyKind::Issue)));
        {
            std::map<std::pair<int, int>, uint64_t> expected;
            for (const spe::SpeRecord& r : truth_)
                if (r.isLoad && r.hasIssueLatency)
                    ++expected[{r.hasDataSource ? int(r.dataSource) : -1, speLatencyBucket(r.issueLatency)}];
            QCOMPARE(shown(), expected);
        }
        p->latencyChoice()->setCurrentIndex(0);
        if (const char* shots = qgetenv("AUXSCOPE_SPE_SCREENSHOTS").isEmpty()
                                    ? nullptr
                                    : getenv("AUXSCOPE_SPE_SCREENSHOTS")) {
            QTest::qWait(200);
            page_->grab().save(QString::fromLocal8Bit(shots) + "/spe-latency.png");
        }
    }

    void memoryMapCellListsTheTruthsAccesses() {
        SpePane* p = pane();
        page_->analysisTabs()->setCurrentWidget(p);
        p->tabs()->setCurrentIndex(1);
        QVERIFY(settled());
        SpeMemoryMapWidget* map = p->memoryMap();
        const SpeMemoryMap& m = map->map();
        QVERIFY(m.accesses > 0);
        // The whole recording: every load and store with a time (those without one are not placed).
        uint64_t accesses = 0, lo = UINT64_MAX, hi = 0;
        for (const spe::SpeRecord& r : truth_) {
            accesses += r.hasDataVa && (r.isLoad || r.isStore) && r.time;
            if (r.time) lo = std::min(lo, r.time), hi = std::max(hi, r.time);
        }
        QCOMPARE(m.query.begin, lo);
        QCOMPARE(m.query.end, hi + 1);
        QCOMPARE(m.accesses, accesses);
        // The fullest cell, clicked.
        size_t best = 0;
        for (size_t c = 0; c < m.count.size(); ++c)
            if (m.count[c] > m.count[best]) best = c;
        const int t = int(best % size_t(m.query.timeBins)), a = int(best / size_t(m.query.timeBins));
        QTest::mouseClick(map, Qt::LeftButton, {}, map->cellRect(t, a).center());
        // The truth's records in that cell, by the same axis (built from the truth).
        const SpeAddressAxis axis(truth_);
        std::multiset<std::pair<uint64_t, uint64_t>> expected;  // time, data address
        for (const spe::SpeRecord& r : truth_) {
            int tt = 0, aa = 0;
            if (speMapCell(axis, m.query, r, tt, aa) && tt == t && aa == a)
                expected.insert({r.time, r.dataVa});
        }
        QVERIFY(!expected.empty());
        std::multiset<std::pair<uint64_t, uint64_t>> listed;
        QTreeWidget* list = p->cellList();
        bool named = false;
        for (int i = 0; i < list->topLevelItemCount(); ++i) {
            const size_t k = list->topLevelItem(i)->data(0, Qt::UserRole).toULongLong();
            const spe::SpeRecord& r = p->data()->records[k];
            listed.insert({r.time, r.dataVa});
            named |= !list->topLevelItem(i)->text(4).startsWith("0x");
            QVERIFY(!list->topLevelItem(i)->text(3).startsWith("0x"));  // PCs named by function
        }
        QCOMPARE(listed, expected);
        QVERIFY2(named, "data addresses named by symbol or mapping");
        if (!qgetenv("AUXSCOPE_SPE_SCREENSHOTS").isEmpty()) {
            giveRoomToTheSpeTab();
            QVERIFY(settled());
            QTest::qWait(200);
            page_->grab().save(QString::fromLocal8Bit(qgetenv("AUXSCOPE_SPE_SCREENSHOTS")) +
                               "/spe-memory-map.png");
        }
        // A data address inside a global of the ELF (nm: D, d, B, b) is named symbol+offset.
        size_t inGlobals = 0;
        for (int i = 0; i < list->topLevelItemCount(); ++i) {
            const spe::SpeRecord& r =
                p->data()->records[list->topLevelItem(i)->data(0, Qt::UserRole).toULongLong()];
            for (const Symbol& g : globals_)
                if (r.dataVa >= g.start && r.dataVa < g.end) {
                    const QString want =
                        QString::fromStdString(g.name) +
                        (r.dataVa == g.start ? QString() : "+0x" + QString::number(r.dataVa - g.start, 16));
                    QCOMPARE(list->topLevelItem(i)->text(4), want);
                    ++inGlobals;
                }
        }
        // Every access to a global is named so (the pane's address space, as the list names them).
        size_t checked = 0;
        for (const spe::SpeRecord& r : truth_) {
            if (!r.hasDataVa) continue;
            for (const Symbol& g : globals_)
                if (r.dataVa >= g.start && r.dataVa < g.end) {
                    const std::string want =
                        g.name + (r.dataVa == g.start
                                      ? std::string()
                                      : "+0x" + QString::number(r.dataVa - g.start, 16).toStdString());
                    QCOMPARE(p->data()->space->name(r.pid, r.dataVa), want);
                    ++checked;
                }
        }
        QVERIFY(checked > 100);
        qInfo("%zu accesses to globals named, %zu of them in the clicked cell", checked, inGlobals);
        // Zoomed on the address axis (the lower half of the touched pages): the
        // accesses there, no others.
        const uint64_t half = axis.size() / 2;
        p->setAddressRange(0, half);
        QVERIFY(settled());
        QCOMPARE(map->map().query.posBegin, uint64_t(0));
        QCOMPARE(map->map().query.posEnd, half);
        uint64_t low = 0;
        for (const spe::SpeRecord& r : truth_)
            low += r.hasDataVa && (r.isLoad || r.isStore) && r.time && axis.position(r.dataVa) < half;
        QCOMPARE(map->map().accesses, low);
        // The wheel zooms in at the cursor: half the span, around it.
        QSignalSpy asked(map, &SpeMemoryMapWidget::addressRangeRequested);
        QWheelEvent wheel(QPointF(map->cellRect(5, 10).center()),
                          map->mapToGlobal(QPointF(map->cellRect(5, 10).center())), QPoint(), QPoint(0, 120),
                          Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(map, &wheel);
        QCOMPARE(asked.count(), 1);
        QVERIFY(settled());
        QCOMPARE(map->map().query.posEnd - map->map().query.posBegin, half / 2);
        p->setAddressRange(0, 0);
        QVERIFY(settled());
        QCOMPARE(map->map().query.posEnd, axis.size());
    }

    void laneTicksColouredByLatencyOrSource() {
        const TimelineData* data = page_->timeline()->data().get();
        QVERIFY(data && data->lanes);
        const SidebandLanes& lanes = *data->lanes;
        QVERIFY(lanes.extraEvent >= 0);
        QCOMPARE(QString::fromStdString(lanes.events[size_t(lanes.extraEvent)]), QString("arm_spe"));
        // Every record of a thread is a tick on its lane, with its latency and source.
        std::map<int32_t, std::multiset<std::pair<uint64_t, uint16_t>>> expected, shown;
        for (const spe::SpeRecord& r : truth_)
            if (r.tid > 0) expected[r.tid].insert({r.time, r.hasTotalLatency ? r.totalLatency : uint16_t(0)});
        for (const SidebandLanes::Thread& t : lanes.threads)
            for (size_t i = 0; i < t.samples.size(); ++i)
                if (t.samples[i].event == lanes.extraEvent)
                    shown[t.tid].insert({t.samples[i].time, t.sampleValue[i]});
        QCOMPARE(shown, expected);
        // The ticks' colours follow the choice: by latency, by source, plain.
        TimelineView* view = page_->timeline();
        SpePane* p = pane();
        auto render = [&](int choice) {
            p->laneShadingChoice()->setCurrentIndex(choice);
            return view->grab().toImage();
        };
        const QImage byLatency =
            render(p->laneShadingChoice()->findData(int(TimelineState::SampleShading::Value)));
        const QImage bySource =
            render(p->laneShadingChoice()->findData(int(TimelineState::SampleShading::Key)));
        const QImage plain =
            render(p->laneShadingChoice()->findData(int(TimelineState::SampleShading::Plain)));
        QVERIFY(byLatency != plain);
        QVERIFY(bySource != plain);
        QVERIFY(byLatency != bySource);
        // Plain: the sample colour; by latency: the hottest colour somewhere (latencies reach thousands of
        // cycles).
        auto has = [](const QImage& image, QColor c) {
            for (int y = 0; y < image.height(); ++y)
                for (int x = 0; x < image.width(); ++x)
                    if (image.pixelColor(x, y) == c) return true;
            return false;
        };
        uint16_t maxLatency = 0;
        for (const spe::SpeRecord& r : truth_)
            if (r.tid > 0 && r.time) maxLatency = std::max(maxLatency, r.totalLatency);
        QVERIFY(maxLatency >= 64);
        QVERIFY(!has(plain, palette::sampleValue(4096)) || maxLatency < 4096);
        QVERIFY(has(byLatency, palette::sampleValue(1)) || has(byLatency, palette::sampleValue(8)) ||
                has(byLatency, palette::sampleValue(16)));
        p->laneShadingChoice()->setCurrentIndex(0);
        QCOMPARE(view->state()->sampleShading(), TimelineState::SampleShading::Value);
        // Hovering a tick: the record's function, latency and data source. A load
        // 20 ns from its neighbours, in a 200 ns window (no neighbour within reach).
        const SidebandLanes::Thread* th = nullptr;
        size_t k = 0;
        for (const SidebandLanes::Thread& t : lanes.threads)
            for (size_t i = 1; !th && i + 1 < t.samples.size(); ++i)
                if (t.sampleKey[i] && t.samples[i].time - t.samples[i - 1].time > 20 &&
                    t.samples[i + 1].time - t.samples[i].time > 20)
                    th = &t, k = i;
        QVERIFY(th);
        const SidebandLanes::Sample& s = th->samples[k];
        view->setVisibleRange(s.time - 100, s.time + 100);
        view->scrollToThread(th->tid, -1);
        QTest::qWait(50);
        const int y = view->threadLaneY(th->tid);
        QVERIFY(y >= 0);
        const TimelineHit hit = view->hitAt(QPoint(int(view->xOf(s.time) + 0.5), y + 12));
        QCOMPARE(hit.kind, TimelineHit::Sample);
        QCOMPARE(hit.start, s.time);
        QVERIFY2(hit.event.startsWith(
                     QString("arm_spe, total latency (cycles) %1, source ").arg(th->sampleValue[k])),
                 qPrintable(hit.event));
        QCOMPARE(hit.function.toStdString(), functionOf(symbols_, s.ip));
    }

    // Export to Perfetto / CSV from the page: every record goes out, its
    // function and data symbol named (the CSV's spe rows, in the truth's order).
    void exportsEveryRecord() {
        for (const char* format : {"csv", "perfetto"}) {
            const QString out = dir_.filePath(QString("export.") + format);
            QSignalSpy finished(page_.get(), &TraceFilePage::exportFinished);
            QVERIFY(page_->exportTo(format, out));
            QVERIFY(finished.wait(60000));
            QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(finished.at(0).at(1).toString()));
            QVERIFY2(finished.at(0).at(1).toString().contains("and 20000 Arm SPE records"),
                     qPrintable(finished.at(0).at(1).toString()));
            QVERIFY(QFileInfo(out).size() > 0);
            if (QString(format) != "csv") continue;
            std::ifstream in(out.toStdString());
            size_t rows = 0, named = 0;
            for (std::string line; std::getline(in, line);) {
                if (line.rfind("spe,", 0) != 0) continue;
                const spe::SpeRecord& r = truth_[rows++];
                // spe,CPU,TIME,,PID,TID,OPERATION,LATENCY,FUNCTION
                std::stringstream fields(line);
                std::string kind, cpu, time, end, pid, tid;
                std::getline(fields, kind, ','), std::getline(fields, cpu, ','),
                    std::getline(fields, time, ',');
                std::getline(fields, end, ','), std::getline(fields, pid, ','),
                    std::getline(fields, tid, ',');
                QCOMPARE(std::stoi(cpu), r.cpu);
                QCOMPARE(std::stoi(tid), r.tid);
                if (r.time) QCOMPARE(std::stoull(time), r.time);
                named += line.back() != ',';
            }
            QCOMPARE(rows, truth_.size());
            QVERIFY2(named > rows * 9 / 10,
                     qPrintable(QString("%1 of %2 rows name a function").arg(named).arg(rows)));
        }
    }

    void cleanupTestCase() { page_.reset(); }
};

QTEST_MAIN(SpeViewsTest)
#include "SpeViewsTest.moc"
