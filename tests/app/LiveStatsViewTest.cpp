// SPDX-License-Identifier: GPL-3.0-or-later
// The capture page's per-CPU table (LiveStatsView): every counter the drain
// thread keeps about a record it could not keep or deliver is on the row of its
// CPU, the total in the cell and each cause in the tooltip.
#include <QHeaderView>
#include <QTableWidget>
#include <QtTest>

#include "gui/capture/LiveStatsView.h"

using namespace auxscope;

class LiveStatsViewTest : public QObject {
    Q_OBJECT
private slots:
    void errorsColumnSplitsItsCauses() {
        LiveStatsView view;
        view.begin({0, 3}, false, nullptr);
        QTableWidget* table = view.table();
        int col = -1;
        for (int c = 0; c < table->columnCount(); ++c)
            if (table->horizontalHeaderItem(c)->text() == "Errors") col = c;
        QVERIFY2(col >= 0, "no Errors column");
        QVERIFY(table->horizontalHeaderItem(col)->toolTip().contains("undelivered"));

        std::vector<CpuStatsSnapshot> snaps(2);
        snaps[0].cpu = 0;
        snaps[1].cpu = 3;
        snaps[1].totals.parseErrors = 7;
        snaps[1].totals.parseErrorsUnknownEvent = 2;
        snaps[1].totals.corruptBytes = 24;
        snaps[1].totals.undeliveredRecords = 5;
        snaps[1].totals.undeliveredBytes = 160;
        snaps[1].totals.undeliveredAuxBytes = 4096;
        view.show(snaps, 1.0);

        QCOMPARE(table->item(0, col)->text(), QString("0"));
        QCOMPARE(table->item(1, col)->text(), QString("12"));
        const QString tip = table->item(1, col)->toolTip();
        QVERIFY2(tip.contains(
                     "did not parse: 7 (a sample of no event of the capture: 2, too short for its type: 5)"),
                 qPrintable(tip));
        QVERIFY2(tip.contains("corrupt bytes skipped: 24"), qPrintable(tip));
        QVERIFY2(tip.contains("5 records, 160 bytes, 4096 AUX bytes"), qPrintable(tip));
    }
};

QTEST_MAIN(LiveStatsViewTest)
#include "LiveStatsViewTest.moc"
