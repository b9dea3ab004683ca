// SPDX-License-Identifier: GPL-3.0-or-later
// The trace page, offscreen, on perf.data files whose AUX records announce more
// AUX data than their AUXTRACE records hold (issue 16): its header line says how
// much of the trace the file misses, in how many gaps on which CPUs (and keeps
// saying it after an Intel PT decode), its summary lists each gap, and a
// complete file says nothing of the kind.
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include "gui/trace/TraceFilePage.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataWriter.h"

using namespace auxscope;

namespace {

constexpr uint64_t kSt = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;

struct Announce {
    uint32_t cpu;
    uint64_t offset, size;
};
struct Hold {
    uint32_t cpu;
    uint64_t offset, size;
};

// A perf.data with an Intel PT-like AUX event: AUX records announcing
// `announce`, AUXTRACE records holding `hold` (PAD bytes), and with `pt` an
// Intel PT AUXTRACE_INFO so the page decodes it.
bool writeFile(const QString& path, const std::vector<Announce>& announce, const std::vector<Hold>& hold,
               bool pt) {
    perf_event_attr a{};
    a.type = 8;
    a.size = sizeof a;
    a.sample_type = kSt;
    a.sample_id_all = 1;
    auto w = PerfDataWriter::create(path.toStdString(), {{"intel_pt//", a, {1, 2, 3, 4}}});
    if (!w) return false;
    uint64_t time = 1000000;
    for (const Announce& x : announce) {
        RecordBuilder b(PERF_RECORD_AUX);
        b.u64(x.offset).u64(x.size).u64(0).sampleId({kSt, x.cpu + 1, x.cpu}, 100, 100, time += 1000);
        if (!(*w)->writeStreamRecord(b.finish())) return false;
    }
    if (pt) {
        IntelPtInfo info;
        info.pmuType = 8;
        info.timeMult = 1;
        info.capUserTimeZero = 1;
        info.perCpuMmaps = 1;
        if (!(*w)->writeAuxtraceInfo(auxtrace::kTypeIntelPt, encodeIntelPtInfo(info))) return false;
    }
    for (const Hold& h : hold) {
        perfdata::AuxtraceRecord head{};
        head.offset = h.offset;
        head.idx = h.cpu;
        head.tid = uint32_t(-1);
        head.cpu = h.cpu;
        std::vector<uint8_t> bytes(h.size, 0);  // PAD packets
        if (!(*w)->writeAuxtrace(head, bytes)) return false;
    }
    return (*w)->finish().ok();
}

QTreeWidgetItem* findSection(QTreeWidget* tree, const QString& prefix) {
    for (int i = 0; i < tree->topLevelItemCount(); ++i)
        if (tree->topLevelItem(i)->text(0).startsWith(prefix)) return tree->topLevelItem(i);
    return nullptr;
}

}  // namespace

class TraceFilePageAuxTest : public QObject {
    Q_OBJECT
private:
    QTemporaryDir dir_;

private slots:
    void headerSaysHowMuchOfTheTraceIsMissing() {
        // cpu 0 announces 4,000,000 bytes and the file holds the first 1,000,000.
        const QString path = dir_.filePath("missing.data");
        QVERIFY(writeFile(path, {{0, 0, 1000000}, {0, 1000000, 1000000}, {0, 2000000, 2000000}},
                          {{0, 0, 1000000}}, false));
        TraceFilePage page(path);
        page.setAutoDecodeLimit(0);
        QSignalSpy loaded(&page, &TraceFilePage::loadFinished);
        QVERIFY(loaded.wait(10000));
        auto* status = page.findChild<QLabel*>("traceStatus");
        QVERIFY(status);
        QVERIFY2(status->text().endsWith(
                     "; AUX: 75% of the trace missing from the file (3.0 MB in 1 gap on cpu 0)"),
                 qPrintable(status->text()));
        QVERIFY2(status->styleSheet().contains("#b00020"), qPrintable(status->styleSheet()));

        // The summary lists the area and its gap.
        QTreeWidgetItem* aux = findSection(page.tree(), "AUX data");
        QVERIFY(aux);
        QCOMPARE(aux->childCount(), 1);
        QCOMPARE(aux->child(0)->text(0), QString("cpu 0"));
        QCOMPARE(aux->child(0)->text(1),
                 QString("4000000 bytes announced, 1000000 in the file, 3000000 missing in 1 gap"));
        QCOMPARE(aux->child(0)->childCount(), 1);
        QCOMPARE(aux->child(0)->child(0)->text(0), QString("missing at AUX offset 0xf4240"));
        QVERIFY(aux->child(0)->child(0)->text(1).startsWith(
            "3000000 bytes, after the AUXTRACE record at offset "));
    }

    void severalCpusAndTheDecodeKeepTheWord() {
        // cpu 0: 1000 bytes missing at the start and 2000 in the middle of 8000; cpu 2: 1000 at the end of
        // 2000.
        const QString path = dir_.filePath("missing-pt.data");
        QVERIFY(writeFile(path, {{0, 0, 8000}, {2, 0, 2000}},
                          {{0, 1000, 3000}, {0, 6000, 2000}, {2, 0, 1000}}, true));
        TraceFilePage page(path);
        QSignalSpy loaded(&page, &TraceFilePage::loadFinished);
        QSignalSpy decoded(&page, &TraceFilePage::decodeFinished);
        QVERIFY(loaded.wait(10000));
        auto* status = page.findChild<QLabel*>("traceStatus");
        QVERIFY(status);
        const QString word = "AUX: 40% of the trace missing from the file (4.0 kB in 3 gaps on cpus 0, 2)";
        QVERIFY2(status->text().endsWith("; " + word), qPrintable(status->text()));
        QVERIFY(page.hasIntelPt());
        QVERIFY(decoded.wait(30000));  // small files decode by themselves
        QVERIFY2(status->text().contains("decoded") && status->text().endsWith("; " + word),
                 qPrintable(status->text()));
    }

    void completeFileSaysNothingOfIt() {
        const QString path = dir_.filePath("whole.data");
        QVERIFY(writeFile(path, {{0, 0, 4096}, {0, 4096, 4096}}, {{0, 0, 8192}}, false));
        TraceFilePage page(path);
        QSignalSpy loaded(&page, &TraceFilePage::loadFinished);
        QVERIFY(loaded.wait(10000));
        auto* status = page.findChild<QLabel*>("traceStatus");
        QVERIFY(status);
        QVERIFY2(!status->text().contains("AUX:"), qPrintable(status->text()));
        QVERIFY2(status->text().endsWith(", 0 problems"), qPrintable(status->text()));
        QTreeWidgetItem* aux = findSection(page.tree(), "AUX data");
        QVERIFY(aux);
        QCOMPARE(aux->child(0)->text(1), QString("8192 bytes announced, 8192 in the file, none missing"));
    }
};

QTEST_MAIN(TraceFilePageAuxTest)
#include "TraceFilePageAuxTest.moc"
