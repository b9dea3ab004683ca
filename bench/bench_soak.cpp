// SPDX-License-Identifier: GPL-3.0-or-later
// bench_soak (issue 17): a long capture with the GUI open, as a person leaves it
// running. The main window's capture page captures for --minutes (default 30)
// while a paced workload makes system calls at --rate per second:
//   software (default): system-wide `raw_syscalls:sys_enter` + `sched:sched_switch`
//     (tracepoints), cpu-clock sampling, context switches;
//   --replay FILE: a recorded AUX trace replayed in a loop through the simulated
//     CPUs at --replay-speed (AUX drain, file writer and GUI are the real ones).
// Every --every seconds it prints the process's RSS, the records, bytes and losses
// so far (the capture page's own statistics), the GUI frame times of that interval
// (the whole window repainted every 100 ms: median, p95, max) and the event loop's
// lateness (a 10 ms timer's worst delay), and how many times a second the live
// timeline got new data (live_hz; issue 13's target: >= 10, as the charts). At the end it stops, waits for
// the file, and checks it with auxscope's reader and with `perf report --stats`. Runs under a display or
// offscreen (QT_QPA_PLATFORM=offscreen). Not a test.
//
// usage: bench_soak [--minutes M] [--rate N] [--every S] [--replay FILE]
//                   [--replay-speed 1|10|100|max] [--events SPEC] [--keep FILE]
#include <malloc.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "StallProbe.h"
#include "gui/MainWindow.h"
#include "gui/capture/CapturePage.h"
#include "gui/timeline/TimelineView.h"
#include "perfdata/PerfDataReader.h"

using namespace auxscope;

namespace {

double rssMiB() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
    return 0;
}

// A child that makes `rate` cheap system calls per second (close(-1)), paced per millisecond.
pid_t startWorkload(double rate) {
    const pid_t pid = fork();
    if (pid != 0) return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const auto start = std::chrono::steady_clock::now();
    uint64_t done = 0;
    while (true) {
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const uint64_t due = uint64_t(t * rate);
        while (done < due) {
            close(-1);
            ++done;
        }
        usleep(1000);
    }
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
    double minutes = 30, rate = 100000, every = 60;
    std::string replay, replaySpeed = "1", events = "raw_syscalls:sys_enter,sched:sched_switch", keep;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_soak: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--minutes")
            minutes = std::atof(next().c_str());
        else if (a == "--rate")
            rate = std::atof(next().c_str());
        else if (a == "--every")
            every = std::atof(next().c_str());
        else if (a == "--replay")
            replay = next();
        else if (a == "--replay-speed")
            replaySpeed = next();
        else if (a == "--events")
            events = next();
        else if (a == "--keep")
            keep = next();
        else if (a == "-h" || a == "--help") {
            std::printf(
                "usage: bench_soak [--minutes M] [--rate N] [--every S] [--replay FILE] [--replay-speed "
                "1|10|100|max] [--events SPEC] [--keep FILE]\n");
            return 0;
        } else {
            std::fprintf(stderr, "bench_soak: unknown argument %s\n", a.c_str());
            return 2;
        }
    }
    // The workload first: a fork before Qt starts its threads.
    const pid_t workload = replay.empty() && rate > 0 ? startWorkload(rate) : -1;

    QApplication app(argc, argv);
    MainWindow window;
    window.resize(1400, 900);
    window.show();
    auto* page = window.findChild<CapturePage*>();
    if (!page) {
        std::fprintf(stderr, "bench_soak: no capture page in the main window\n");
        return 1;
    }
    auto* target = page->findChild<QComboBox*>("targetKind");
    auto* value = page->findChild<QLineEdit*>("targetValue");
    auto* status = page->findChild<QLabel*>("status");
    if (replay.empty()) {
        target->setCurrentIndex(0);
        page->findChild<QLineEdit*>("events")->setText(QString::fromStdString(events));
    } else {
        target->setCurrentIndex(4);
        value->setText(QString::fromStdString(replay));
        auto* speed = page->findChild<QComboBox*>("replaySpeed");
        speed->setCurrentIndex(std::max(0, speed->findData(QString::fromStdString(replaySpeed))));
        page->findChild<QCheckBox*>("replayLoop")->setChecked(true);
    }
    std::printf("bench_soak: %s for %.1f min%s, GUI %s, load average %s\n",
                replay.empty() ? ("system-wide " + events).c_str() : ("replay of " + replay).c_str(), minutes,
                workload > 0 ? (", workload " + std::to_string(int64_t(rate)) + " syscalls/s").c_str() : "",
                qPrintable(QApplication::platformName()), [] {
                    static char buf[64] = "?";
                    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
                        if (!std::fgets(buf, sizeof buf, f)) buf[0] = 0;
                        std::fclose(f);
                        buf[std::strcspn(buf, "\n")] = 0;
                    }
                    return buf;
                }());
    std::printf("%8s %9s %12s %10s %10s %9s %9s %9s %9s %8s\n", "t_s", "rss_MiB", "records", "lost",
                "lost_smp", "frame_p50", "frame_p95", "frame_max", "loop_late", "live_hz");
    std::fflush(stdout);

    page->start();
    // A replay's recording is read on a worker first: wait for the capture to start (or fail).
    for (QElapsedTimer opening; !page->capturing() &&
                                !page->findChild<QPushButton*>("startButton")->isEnabled() &&
                                opening.elapsed() < 600'000;)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    if (!page->capturing()) {
        std::fprintf(stderr, "bench_soak: the capture did not start: %s\n", qPrintable(status->text()));
        return 1;
    }
    const double rss0 = rssMiB();
    QElapsedTimer clock;
    clock.start();
    std::vector<double> frames;
    double worstLate = 0, peakRss = rss0;
    // Frames: the whole window repainted every 100 ms (what a person watching sees).
    QTimer paint;
    QObject::connect(&paint, &QTimer::timeout, [&] {
        QElapsedTimer f;
        f.start();
        window.repaint();
        frames.push_back(double(f.nsecsElapsed()) / 1e6);
    });
    paint.start(100);
    // Event loop lateness: how late a 10 ms timer fires.
    QElapsedTimer tick;
    tick.start();
    QTimer probe;
    probe.setTimerType(Qt::PreciseTimer);
    // Why it was late: each stall of 50 ms or more split into running, waiting
    // for a CPU and blocked, with the GUI thread's stacks (bench/StallProbe.h).
    bench::StallProbe stalls(50, 10);
    QObject::connect(&probe, &QTimer::timeout, [&] {
        worstLate = std::max(worstLate, double(tick.nsecsElapsed()) / 1e6 - 10);
        tick.restart();
        stalls.beat();
    });
    double stallMs = 0, stallRunMs = 0, stallWaitMs = 0, stallBlockedMs = 0;
    double sleepFutexMs = 0, sleepPollMs = 0, sleepOtherMs = 0;
    std::map<std::string, double> blockedOn;  // ms the GUI thread slept, by what it waited on
    size_t stallCount = 0;
    probe.start(10);
    // The live timeline's updates (each new TimelineData shown): its rate per interval.
    size_t liveUpdates = 0;
    if (auto* live = page->findChild<TimelineView*>("liveTimeline"))
        QObject::connect(live, &TimelineView::dataShown, [&] { ++liveUpdates; });
    QElapsedTimer interval;
    interval.start();
    QTimer report;
    QObject::connect(&report, &QTimer::timeout, [&] {
        uint64_t records = 0, lost = 0, lostSamples = 0;
        // The capture page's table mirrors the drain thread's statistics.
        auto* table = page->findChild<QTableWidget*>("cpuTable");
        for (int r = 0; table && r < table->rowCount(); ++r) {
            records += table->item(r, 5)->text().toULongLong();
            lost += table->item(r, 6)->text().toULongLong();
            lostSamples += table->item(r, 7)->text().toULongLong();
        }
        const double rss = rssMiB();
        peakRss = std::max(peakRss, rss);
        const double liveHz = double(liveUpdates) / std::max(1e-3, double(interval.restart()) / 1e3);
        std::printf("%8.0f %9.1f %12llu %10llu %10llu %9.2f %9.2f %9.2f %9.1f %8.1f\n",
                    double(clock.elapsed()) / 1e3, rss, (unsigned long long)records, (unsigned long long)lost,
                    (unsigned long long)lostSamples, percentile(frames, 0.5), percentile(frames, 0.95),
                    percentile(frames, 1.0), worstLate, liveHz);
        std::fflush(stdout);
        // The interval's stalls: how many, and the worst one explained.
        const auto late = stalls.take();
        for (const auto& st : late) {
            ++stallCount;
            stallMs += st.ms;
            stallRunMs += st.runMs;
            stallWaitMs += st.waitMs;
            stallBlockedMs += st.blockedMs;
            sleepFutexMs += st.sleepFutexMs;
            sleepPollMs += st.sleepPollMs;
            sleepOtherMs += st.sleepOtherMs;
            bench::StallProbe::addBlockedWaits(st, blockedOn);
        }
        if (!late.empty())
            std::printf("   %zu stall%s >= 50 ms; worst %s\n", late.size(), late.size() == 1 ? "" : "s",
                        bench::StallProbe::describe(late.front()).c_str());
        std::fflush(stdout);
        frames.clear();
        worstLate = 0;
        liveUpdates = 0;
    });
    report.start(int(every * 1000));
    QTimer::singleShot(int(minutes * 60 * 1000), page, [&] { page->stop(); });
    QString file;
    QObject::connect(page, &CapturePage::captureFileReady, [&](const QString& path) {
        file = path;
        app.quit();
    });
    QObject::connect(page, &CapturePage::captureFinished, [&] {
        if (file.isEmpty()) QTimer::singleShot(2000, &app, [&] { app.quit(); });
    });
    app.exec();
    if (workload > 0) {
        kill(workload, SIGKILL);
        waitpid(workload, nullptr, 0);
    }
    std::printf("bench_soak: %s\n", qPrintable(status->text().replace('\n', "\n  ")));
    std::printf(
        "bench_soak: %zu event-loop stalls >= 50 ms, %.0f ms in all: the GUI thread ran %.0f ms, waited for "
        "a CPU %.0f ms, was blocked %.0f ms\n",
        stallCount, stallMs, stallRunMs, stallWaitMs, stallBlockedMs);
    {
        std::vector<std::pair<double, std::string>> waits;
        for (const auto& [what, ms] : blockedOn)
            waits.emplace_back(ms, what);
        std::sort(waits.rbegin(), waits.rend());
        std::printf(
            "bench_soak: seen asleep in those stalls: in futex %.0f ms, in poll %.0f ms, elsewhere %.0f ms\n",
            sleepFutexMs, sleepPollMs, sleepOtherMs);
        std::printf(
            "bench_soak: what the GUI thread slept on in those stalls (ms; [lock]: a lock's wait):\n");
        for (size_t i = 0; i < waits.size() && i < 12; ++i)
            std::printf("  %8.0f  %s\n", waits[i].first, waits[i].second.c_str());
    }
    {
        // The allocator's arenas (threads beyond glibc's limit, 8 per CPU, share
        // them, the GUI thread's main arena included): malloc_info's <heap> count.
        char* text = nullptr;
        size_t size = 0;
        if (FILE* f = open_memstream(&text, &size)) {
            malloc_info(0, f);
            std::fclose(f);
            size_t arenas = 0;
            for (const char* p = text; (p = std::strstr(p, "<heap nr=")); ++p)
                ++arenas;
            std::printf("bench_soak: %zu malloc arenas, %zu threads now\n", arenas,
                        size_t(QDir("/proc/self/task").entryList(QDir::Dirs | QDir::NoDotAndDotDot).size()));
            std::free(text);
        }
    }
    std::printf("bench_soak: RSS %.1f MiB after start, %.1f MiB peak, %.1f MiB at the end\n", rss0, peakRss,
                rssMiB());
    if (file.isEmpty()) {
        std::printf("bench_soak: FAIL: no capture file\n");
        return 1;
    }
    auto reader = PerfDataReader::open(file.toStdString());
    if (!reader) {
        std::printf("bench_soak: FAIL: %s\n", reader.error().message.c_str());
        return 1;
    }
    uint64_t records = 0;
    for (auto& [type, n] : reader->summary().recordsByType)
        records += n;
    std::printf("bench_soak: file %s: %llu bytes, %llu records, reader %s\n", qPrintable(file),
                (unsigned long long)reader->fileSize(), (unsigned long long)records,
                reader->hasErrors() ? "found errors" : "found no errors");
    QProcess perf;
    perf.start("perf", {"report", "--stats", "-i", file});
    perf.waitForFinished(600000);
    const QString out = QString::fromUtf8(perf.readAllStandardOutput());
    const bool perfOk = perf.exitCode() == 0 && out.contains("TOTAL events:");
    for (const QString& line : out.split('\n'))
        if (line.contains("TOTAL events:") || line.contains("LOST events:") ||
            line.contains("SAMPLE events:"))
            std::printf("bench_soak: perf report --stats: %s\n", qPrintable(line.trimmed()));
    std::printf("bench_soak: perf %s the file\n", perfOk ? "reads" : "FAILED to read");
    if (!keep.empty()) QFile::copy(file, QString::fromStdString(keep));
    // The GUI keeps every capture in the captures folder (issue 27); this one
    // was the benchmark's own (--keep copies it).
    QFile::remove(file);
    return perfOk && !reader->hasErrors() ? 0 : 1;
}
