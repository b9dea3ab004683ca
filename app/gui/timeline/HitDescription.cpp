// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/HitDescription.h"

#include <QLocale>
#include <QStringList>

#include "gui/timeline/TimeFormat.h"

namespace auxscope {

QString describeHit(const TimelineHit& hit, uint64_t recordingBegin) {
    if (!hit.valid()) return {};
    QStringList lines;
    auto thread = [&] {
        QString text = QString("Thread: %1 (tid %2, pid %3)").arg(hit.threadName).arg(hit.tid).arg(hit.pid);
        if (!hit.processName.isEmpty()) text += QString(" in %1").arg(hit.processName);
        return text;
    };
    if (hit.kind == TimelineHit::CpuNote) {
        return QString("CPU %1: %2").arg(hit.cpu).arg(cpuNoteText(hit.loss));
    }
    if (hit.kind == TimelineHit::Health) {
        const SidebandLanes::Health& h = hit.health;
        auto at = [&](uint64_t t) { return "+" + formatNs(double(t) - double(recordingBegin)); };
        auto count = [](uint64_t n) { return QLocale(QLocale::English).toString(qulonglong(n)); };
        lines << QString("CPU %1 capture health at %2").arg(hit.cpu).arg(at(h.time));
        if (hit.end > hit.start)
            lines << QString("Ring fill: %1 % (the peak since %2)")
                         .arg(double(h.ringFill), 0, 'f', 1)
                         .arg(at(hit.start));
        else
            lines << QString("Ring fill: %1 %").arg(double(h.ringFill), 0, 'f', 1);
        lines << (h.auxFill >= 0 ? QString("AUX fill: %1 %").arg(double(h.auxFill), 0, 'f', 1)
                                 : QString("AUX fill: no AUX area on this CPU"));
        lines << QString("Throughput: %1 MiB/s").arg(double(h.mibPerSec), 0, 'f', 2);
        lines << QString("Lost so far: %1 records, %2 samples, %3 AUX records")
                     .arg(count(h.lostRecords), count(h.lostSamples), count(h.auxLost));
        if (hit.lostRecordsHere + hit.lostSamplesHere + hit.auxLostHere > 0) {
            const QString when = hit.end > hit.start
                                     ? QString("between %1 and %2").arg(at(hit.start), at(hit.end))
                                     : QString("by %1").arg(at(hit.end));
            lines << QString("Lost %1: %2 records, %3 samples, %4 AUX records (ring fill then %5 %)")
                         .arg(when, count(hit.lostRecordsHere), count(hit.lostSamplesHere),
                              count(hit.auxLostHere))
                         .arg(double(h.ringFill), 0, 'f', 1);
        }
        return lines.join('\n');
    }
    if (hit.kind == TimelineHit::Loss) {
        lines << QString("CPU %1: %2").arg(hit.cpu).arg(hit.loss);
        lines << QString("At: +%1").arg(formatNs(double(hit.start) - double(recordingBegin)));
        if (hit.end > hit.start)
            lines << QString("Until: +%1").arg(formatNs(double(hit.end) - double(recordingBegin)));
        return lines.join('\n');
    }
    if (hit.kind == TimelineHit::Sample) {
        lines << QString("Sample: %1").arg(hit.event.isEmpty() ? QString("(unnamed event)") : hit.event);
        lines << QString("Function: %1").arg(hit.function.isEmpty() ? QString("[unknown]") : hit.function);
        if (!hit.file.isEmpty()) lines << QString("File: %1").arg(hit.file);
        lines << QString("IP: 0x%1").arg(hit.ip, 0, 16);
        lines << QString("CPU %1, at +%2")
                     .arg(hit.cpu)
                     .arg(formatNs(double(hit.start) - double(recordingBegin)));
        if (hit.samplesHere > 1) lines << QString("%1 samples of this thread here").arg(hit.samplesHere);
        lines << thread();
        if (!hit.stack.isEmpty()) {
            lines << QString("Stack (leaf first):");
            for (const QString& f : hit.stack)
                lines << "  " + f;
            if (hit.stackMore) lines << QString("  … %1 more").arg(hit.stackMore);
        }
        return lines.join('\n');
    }
    if (hit.kind == TimelineHit::CpuIdle) {
        lines << QString("CPU %1: idle").arg(hit.cpu);
    } else if (hit.kind == TimelineHit::ThreadRun) {
        lines << QString("%1 ran on CPU %2").arg(hit.threadName).arg(hit.cpu);
        lines << thread();
    } else if (hit.kind == TimelineHit::CpuSlice) {
        lines << QString("CPU %1: %2").arg(hit.cpu).arg(hit.threadName.isEmpty() ? "thread" : hit.threadName);
        lines << QString("tid %1, pid %2").arg(hit.tid).arg(hit.pid);
        if (!hit.processName.isEmpty()) lines << QString("Process: %1").arg(hit.processName);
    } else if (hit.span.isGap()) {
        lines << QString("Gap: %1").arg(hit.gapReason);
        if (!hit.gapDetail.isEmpty()) lines << hit.gapDetail;
    } else {
        lines << hit.function;
        if (!hit.file.isEmpty()) lines << QString("File: %1").arg(hit.file);
    }
    lines << QString("Start: +%1").arg(formatNs(double(hit.start) - double(recordingBegin)));
    lines << QString("Duration: %1").arg(formatNs(double(hit.end - hit.start)));
    if (hit.kind == TimelineHit::ThreadSpan) {
        if (!hit.span.isGap()) lines << QString("Instructions: %1").arg(hit.span.instructions);
        lines << QString("Depth: %1").arg(hit.span.depth);
        lines << QString("Thread: %1 (tid %2, pid %3)").arg(hit.threadName).arg(hit.tid).arg(hit.pid);
    }
    return lines.join('\n');
}

QString cpuNoteText(const QString& note) {
    if (note == "offline")
        return "offline: the machine has this CPU, but it was not online during the capture\n"
               "Nothing can have run on it, so its lane is empty.";
    if (note == "not traced")
        return "not traced: this CPU was online, but the capture did not record it\n"
               "Its CPU list left it out: what ran there is unknown, not idle.";
    return note + "\nThe file says so about this CPU; nothing was recorded on it.";
}

}  // namespace auxscope
