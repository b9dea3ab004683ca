// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The trace page's Summary tab: what a perf.data holds (file, problems the
// reader found with their offsets, events, features, records, per-CPU counts
// and losses, auxscope's capture statistics, AUX areas and what the file lacks
// of them, AUX trace errors), and once the whole trace is decoded ("Decode
// Intel PT") each thread's spans, top functions and gaps by reason.
#include <QString>
#include <QTreeWidget>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "spans/DecodeTypes.h"
#include "spans/SpanStore.h"

namespace auxscope {

class PerfDataReader;
struct AuxTraceSpans;
struct PerfDataSummary;

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
// The summary of a whole decode (on the worker thread).
PtSpanSummary summarize(const AuxTraceSpans& decoded);
// "AUX: 75% of the trace missing from the file (50.3 MB in 2 gaps on cpu 0)"; empty when none is.
QString auxMissingLine(const PerfDataSummary& s);

class TraceSummaryTree : public QTreeWidget {
    Q_OBJECT
public:
    explicit TraceSummaryTree(QWidget* parent = nullptr);
    // Shows what `reader` holds; returns the page's header line ("FILE: N records on C CPUs, …").
    QString showFile(const PerfDataReader& reader, const QString& path);
    // Adds the decode's section on top; returns the page's header line ("FILE: decoded N … spans …").
    QString showDecoded(const PtSpanSummary& summary, const QString& traceKind, double seconds,
                        const QString& fileName);

private:
    QTreeWidgetItem* section(const QString& title);
    QTreeWidgetItem* ptSection_ = nullptr;
};

}  // namespace auxscope
