// SPDX-License-Identifier: GPL-3.0-or-later
// debuginfod on the trace page (issue 27), offscreen, with a real server:
// /usr/bin/debuginfod started on 127.0.0.1 serving the debug file of the
// look-up tests' stripped program (tests/images/lookup_prog.c), and a perf
// record (cpu-clock) of that program opened on a TraceFilePage whose Symbols &
// binaries name the server:
//  - the page opens without debuginfod, then fetches in the background only
//    the images its samples fall in; afterwards the samples are named
//    (lookup_alpha, lookup_beta) and the page says what came; the GUI thread is
//    never late by more than 200 ms meanwhile (a 10 ms QTimer measures it);
//  - Cancel stops it, as the fetch starts or while the resolve asks the
//    server: the page says cancelled and asks nothing more;
//  - a stopped server gives a note on the page, and no hang;
//  - no URL (and no DEBUGINFOD_URLS): nothing is asked;
//  - the live capture's timeline takes the defaults' folders, never debuginfod.
// Skips with one line when debuginfod or perf record cannot run here (fails with CI=true).
#include <QElapsedTimer>
#include <QLabel>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "gui/capture/LiveTimeline.h"
#include "gui/trace/SymbolSettings.h"
#include "gui/trace/TraceFilePage.h"
#include "samples/SampleProfile.h"

using namespace auxscope;

namespace {

const QString kImages = AUXSCOPE_LOOKUP_IMAGES;

bool ciRequires() {
    return qgetenv("CI") == "true";
}

// One HTTP GET to 127.0.0.1:port (2 s at most): the status code (0: no answer).
int httpStatus(int port, const QByteArray& path) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    QByteArray response;
    const QByteArray request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::write(fd, request.data(), size_t(request.size())) == ssize_t(request.size())) {
        char buffer[4096];
        for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
            response.append(buffer, n);
    }
    ::close(fd);
    if (!response.startsWith("HTTP/")) return 0;
    return response.mid(response.indexOf(' ') + 1, 3).toInt();
}

// A port nothing listens on now.
int freePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    ::close(fd);
    return ok ? ntohs(a.sin_port) : 0;
}

QString buildIdHex(const QString& elf) {
    QProcess p;
    p.start("readelf", {"-n", elf});
    p.waitForFinished(10000);
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    const qsizetype at = out.indexOf("Build ID: ");
    return at < 0 ? QString() : out.mid(at + 10).section('\n', 0, 0).trimmed();
}

// Event-loop lateness: a 10 ms timer's largest delay beyond its interval.
class Lateness {
public:
    Lateness() {
        QObject::connect(&timer_, &QTimer::timeout, [this] {
            const qint64 now = clock_.elapsed();
            worst_ = std::max(worst_, now - last_ - 10);
            last_ = now;
        });
        clock_.start();
        timer_.start(10);
    }
    qint64 worst() const { return worst_; }

private:
    QTimer timer_;
    QElapsedTimer clock_;
    qint64 last_ = 0, worst_ = 0;
};

}  // namespace

class DebuginfodPageTest : public QObject {
    Q_OBJECT

    QTemporaryDir settingsDir_, work_, serve_, state_, cache_;
    QProcess server_;
    int port_ = 0;
    QString data_, program_, skip_;

    QString url() const { return QString("http://127.0.0.1:%1").arg(port_); }

    bool startServer() {
        port_ = freePort();
        server_.setProcessChannelMode(QProcess::MergedChannels);
        server_.start("/usr/bin/debuginfod", {"-F", serve_.path(), "-p", QString::number(port_), "-d",
                                              state_.path() + "/db.sqlite"});
        if (!server_.waitForStarted(5000)) return false;
        // Ready once it has scanned the folder: it serves the debug file.
        const QByteArray probe = "/buildid/" + buildIdHex(program_).toLatin1() + "/debuginfo";
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 30000) {
            if (httpStatus(port_, probe) == 200) return true;
            if (server_.state() == QProcess::NotRunning) return false;
            QTest::qWait(100);
        }
        return false;
    }
    void stopServer() {
        if (server_.state() == QProcess::NotRunning) return;
        server_.terminate();
        if (!server_.waitForFinished(5000)) server_.kill(), server_.waitForFinished(5000);
    }

    // A page on the recording with `urls` as its debuginfod servers.
    std::unique_ptr<TraceFilePage> openWith(const QStringList& urls) {
        SymbolSettings s;
        s.options.debuginfodUrls = toStdStrings(urls);
        SymbolSettings::saveForFile(data_, s);
        auto page = std::make_unique<TraceFilePage>(data_);
        page->resize(1400, 900);
        page->show();
        return page;
    }
    static bool finished(const TraceFilePage& p) {
        return p.debuginfodState() == TraceFilePage::Debuginfod::Done ||
               p.debuginfodState() == TraceFilePage::Debuginfod::Cancelled;
    }
    static QStringList sampledNames(const TraceFilePage& p) {
        QStringList names;
        const auto profile = p.sampleProfile();
        if (!profile) return names;
        for (size_t i = 0; i < profile->size(); ++i) {
            const uint32_t f = profile->images().functionAt(profile->pid(i), profile->ip(i));
            names << QString::fromStdString(profile->functions()[f].name);
        }
        names.removeDuplicates();
        return names;
    }

private slots:
    void initTestCase() {
        QSettings::setDefaultFormat(QSettings::IniFormat);
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir_.path());
        QCoreApplication::setOrganizationName("auxscope-debuginfod-page-test");
        QSettings().clear();
        qunsetenv("DEBUGINFOD_URLS");
        qputenv("DEBUGINFOD_CACHE_PATH", cache_.path().toUtf8());
        if (!QFile::exists("/usr/bin/debuginfod")) {
            skip_ = "debuginfod is not installed (Debian package debuginfod)";
            return;
        }
        QProcess check;
        check.start("perf", {"record", "-q", "-N", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"});
        if (!check.waitForFinished(30000) || check.exitStatus() != QProcess::NormalExit || check.exitCode()) {
            skip_ = "perf record -e cpu-clock does not work here: " +
                    QString::fromUtf8(check.readAllStandardError()).trimmed();
            return;
        }
        // The stripped program run from a folder of its own (no debug file beside it).
        program_ = work_.path() + "/lookup_prog";
        QVERIFY(QFile::copy(kImages + "/stripped/lookup_prog", program_));
        QFile(program_).setPermissions(QFile::permissions(program_) | QFileDevice::ExeOwner);
        data_ = work_.path() + "/stripped.data";
        QProcess record;
        record.setProcessChannelMode(QProcess::MergedChannels);
        record.start("perf", {"record", "-q", "-N", "-e", "cpu-clock", "-F", "2000", "-o", data_, "--",
                              program_, "300"});
        QVERIFY(record.waitForFinished(60000));
        QVERIFY2(record.exitCode() == 0, record.readAll().constData());
        // What the server indexes: the stripped program and its debug file.
        QVERIFY(QFile::copy(program_, serve_.path() + "/lookup_prog"));
        QVERIFY(QFile::copy(kImages + "/debug/lookup_prog.debug", serve_.path() + "/lookup_prog.debug"));
        QVERIFY2(startServer(), server_.readAll().constData());
    }
    void init() {
        if (!skip_.isEmpty() && QByteArray(QTest::currentTestFunction()) != "liveTimelineNeverAsks") {
            if (ciRequires()) QFAIL(qPrintable(skip_ + "; CI=true requires it"));
            QSKIP(qPrintable(skip_));
        }
    }
    void cleanupTestCase() { stopServer(); }

    // No URL anywhere: the page never asks.
    void noUrlNoRequest() {
        auto page = openWith({});
        QVERIFY(QTest::qWaitFor([&] { return page->imagesResolved(); }, 60000));
        QTest::qWait(200);
        QCOMPARE(page->debuginfodState(), TraceFilePage::Debuginfod::Off);
        QVERIFY(!sampledNames(*page).contains("lookup_beta"));
        QVERIFY(!page->debuginfodLine()->isVisible());
    }

    // Opened without debuginfod, then fetched in the background: the samples are named.
    void namesAfterTheBackgroundFetch() {
        Lateness lateness;
        auto page = openWith({url()});
        QStringList firstNames;
        bool sawProgressUi = false;
        connect(page.get(), &TraceFilePage::imagesChanged, this, [&] {
            if (firstNames.isEmpty()) firstNames = sampledNames(*page);
        });
        QVERIFY(QTest::qWaitFor(
            [&] {
                sawProgressUi |= page->debuginfodCancelButton()->isVisible();
                return finished(*page) && page->imagesResolved() && !page->timelineDecoding();
            },
            120000));
        QCOMPARE(page->debuginfodState(), TraceFilePage::Debuginfod::Done);
        QVERIFY(sawProgressUi);
        // The first frame, without debuginfod: the stripped program's .dynsym has no lookup_beta.
        QVERIFY2(!firstNames.contains("lookup_beta"), qPrintable(firstNames.join(", ")));
        // Only the images the samples fall in: the program among them, nothing unmapped.
        QVERIFY2(std::any_of(page->debuginfodWanted().begin(), page->debuginfodWanted().end(),
                             [&](const QString& w) { return w.endsWith("/lookup_prog"); }),
                 qPrintable(page->debuginfodWanted().join(", ")));
        const QStringList names = sampledNames(*page);
        QVERIFY2(names.contains("lookup_beta"), qPrintable(names.join(", ")));
        QVERIFY2(names.contains("lookup_alpha"), qPrintable(names.join(", ")));
        const QString line = page->debuginfodLine()->text();
        QVERIFY2(line.contains("1 debug file"), qPrintable(line));
        QVERIFY(page->debuginfodLine()->isVisible());
        QVERIFY(!page->debuginfodCancelButton()->isVisible());
        QVERIFY2(lateness.worst() <= 200,
                 qPrintable(QString("GUI thread late by %1 ms").arg(lateness.worst())));
        qInfo("debuginfod fetch: %s; GUI thread late by at most %lld ms", qPrintable(line), lateness.worst());
    }

    // Cancel as soon as the fetch starts: it stops and says so; nothing is asked later.
    void cancelStopsIt() {
        QDir(cache_.path()).removeRecursively();  // not answered from the cache
        QDir().mkpath(cache_.path());
        auto page = openWith({url()});
        // imagesChanged comes before the page starts the fetch: click on the next turn.
        connect(
            page.get(), &TraceFilePage::imagesChanged, this,
            [&] {
                QTimer::singleShot(0, page.get(), [&] {
                    if (page->debuginfodState() == TraceFilePage::Debuginfod::Fetching)
                        page->debuginfodCancelButton()->click();
                });
            },
            Qt::SingleShotConnection);
        QVERIFY(QTest::qWaitFor([&] { return finished(*page) && !page->timelineDecoding(); }, 120000));
        QCOMPARE(page->debuginfodState(), TraceFilePage::Debuginfod::Cancelled);
        QVERIFY2(page->debuginfodLine()->text().contains("cancel"),
                 qPrintable(page->debuginfodLine()->text()));
        QVERIFY(!page->debuginfodCancelButton()->isVisible());
    }

    // Cancel while the resolve with debuginfod runs (its progress callback answers false).
    void cancelDuringTheResolve() {
        QDir(cache_.path()).removeRecursively();
        QDir().mkpath(cache_.path());
        auto page = openWith({url()});
        bool clicked = false;
        // The second build of the timeline is the one that asks the server.
        QVERIFY(QTest::qWaitFor(
            [&] {
                if (!clicked && page->timelineOpens() == 2 &&
                    page->debuginfodState() == TraceFilePage::Debuginfod::Fetching) {
                    page->debuginfodCancelButton()->click();
                    clicked = true;
                }
                return finished(*page) && !page->timelineDecoding();
            },
            120000));
        QVERIFY(clicked);
        QCOMPARE(page->debuginfodState(), TraceFilePage::Debuginfod::Cancelled);
        QVERIFY2(page->debuginfodLine()->text().contains("cancelled"),
                 qPrintable(page->debuginfodLine()->text()));
        qInfo("cancelled during the resolve: %s", qPrintable(page->debuginfodLine()->text()));
    }

    // The live capture's timeline: the defaults' folders, never debuginfod, the running kernel.
    void liveTimelineNeverAsks() {
        LiveTimeline live;
        ImageOptions d;
        d.binaryDirs = {"/opt/bins"};
        d.debugDirs = {"/opt/debug"};
        d.debuginfodUrls = {url().toStdString()};
        d.debuginfod = true;
        d.kallsyms = "/elsewhere/kallsyms";
        live.setImageOptions([d] { return d; });
        const ImageOptions o = live.liveImageOptions(false);
        QVERIFY(!o.debuginfod);
        QVERIFY(o.debuginfodUrls.empty());
        QCOMPARE(o.binaryDirs, d.binaryDirs);
        QCOMPARE(o.debugDirs, d.debugDirs);
        QCOMPARE(o.kallsyms, std::string("/proc/kallsyms"));
        QVERIFY(!o.runningKernel);
        // From the settings the main window passes: the defaults for every file.
        SymbolSettings s;
        s.options = d;
        SymbolSettings::saveDefaults(s);
        live.setImageOptions([] { return SymbolSettings::defaults().options; });
        QCOMPARE(live.liveImageOptions(true).binaryDirs, d.binaryDirs);
        QVERIFY(!live.liveImageOptions(true).debuginfod);
        QVERIFY(live.liveImageOptions(true).kallsyms.empty());  // a replay: another boot's kernel
        QSettings().remove("symbols/defaults");
    }

    // The server stopped: a note on the page, no hang, the GUI thread never waits.
    void stoppedServerGivesANote() {
        QDir(cache_.path()).removeRecursively();
        QDir().mkpath(cache_.path());
        stopServer();
        Lateness lateness;
        QElapsedTimer t;
        t.start();
        auto page = openWith({url()});
        QVERIFY(QTest::qWaitFor([&] { return finished(*page) && !page->timelineDecoding(); }, 60000));
        QCOMPARE(page->debuginfodState(), TraceFilePage::Debuginfod::Done);
        const QString line = page->debuginfodLine()->text();
        QVERIFY2(line.contains("failed") && line.contains(url()), qPrintable(line));
        QVERIFY(page->debuginfodLine()->isVisible());
        QVERIFY2(!sampledNames(*page).contains("lookup_beta"), qPrintable(sampledNames(*page).join(", ")));
        QVERIFY2(lateness.worst() <= 200,
                 qPrintable(QString("GUI thread late by %1 ms").arg(lateness.worst())));
        qInfo("stopped server: %s (in %lld ms)", qPrintable(line), t.elapsed());
        // For the README's screenshot (under Xvfb): the page with the note.
        const QByteArray shot = qgetenv("AUXSCOPE_SCREENSHOT_DEBUGINFOD");
        if (!shot.isEmpty()) {
            QTest::qWait(300);  // its layout, after the line's last change
            page->grab().save(QString::fromLocal8Bit(shot));
        }
    }
};

QTEST_MAIN(DebuginfodPageTest)
#include "DebuginfodPageTest.moc"
