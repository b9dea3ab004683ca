// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/common/ExampleMaker.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>
#include <QTimer>

#include <algorithm>

namespace auxscope {

QString exampleTitle(ExampleKind kind) {
    switch (kind) {
        case ExampleKind::IntelPt:
            return QStringLiteral("Intel PT example");
        case ExampleKind::CoreSight:
            return QStringLiteral("CoreSight (ETMv4) example");
        case ExampleKind::ArmSpe:
            break;
    }
    return QStringLiteral("Arm SPE example");
}

QString exampleFileName(ExampleKind kind) {
    switch (kind) {
        case ExampleKind::IntelPt:
            return QStringLiteral("intel-pt-example.data");
        case ExampleKind::CoreSight:
            return QStringLiteral("coresight-example.data");
        case ExampleKind::ArmSpe:
            break;
    }
    return QStringLiteral("arm-spe-example.data");
}

QString examplesFolder() {
    return QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) + "/examples";
}

ExampleCommand exampleCommand(ExampleKind kind, const QString& out) {
    if (kind == ExampleKind::IntelPt)
        // A generated program (recursion, a few threads) traced with its sideband and samples.
        return {"auxscope-ptsynth", {"--example", "-q", "-o", out}};
    if (kind == ExampleKind::CoreSight)
        // A small ETMv4 recording as a cs_etm perf.data, its code beside it.
        return {"auxscope-etmsnap", {"--example", "-q", "-o", out}};
    // 20,000 SPE records of six threads on four CPUs (loads, stores, branches;
    // latencies and data sources from L1D to DRAM), their AArch64 code beside them.
    return {"auxscope-spesynth", {"--generate", "20000", "--seed", "1", "--no-truth", "-q", "-o", out}};
}

ToolLookup findTool(const QString& name, const QString& appDir, const QStringList& pathDirs) {
    ToolLookup r;
    QStringList dirs;
    if (!appDir.isEmpty()) dirs << appDir << appDir + "/tools";
    for (const QString& d : pathDirs)
        if (!d.isEmpty()) dirs << d;
    for (const QString& d : dirs) {
        const QString dir = QDir::cleanPath(d);
        if (r.lookedIn.contains(dir)) continue;
        r.lookedIn << dir;
        const QFileInfo f(dir + "/" + name);
        if (f.isFile() && f.isExecutable()) {
            r.path = f.absoluteFilePath();
            return r;
        }
    }
    r.error = QString(
                  "%1 was not found: looked beside the program and in its tools/ folder, then on the "
                  "PATH (%2). It is installed with auxscope (in /usr/lib/auxscope), or built with it "
                  "(cmake --build --preset release --target %1).")
                  .arg(name, r.lookedIn.join(", "));
    return r;
}

ToolLookup findTool(const QString& name) {
    return findTool(name, QCoreApplication::applicationDirPath(),
                    qEnvironmentVariable("PATH").split(':', Qt::SkipEmptyParts));
}

namespace {

// Written beside the example once its generator succeeded: a file without it
// (a generator stopped halfway) is made again.
QString stampOf(const QString& out) {
    return out + ".made";
}

}  // namespace

ExampleMaker::ExampleMaker(QObject* parent) : QObject(parent) {}

ExampleMaker& ExampleMaker::instance() {
    static QPointer<ExampleMaker> maker;
    if (!maker) maker = new ExampleMaker(QCoreApplication::instance());
    return *maker;
}

ExampleMaker::Job* ExampleMaker::job(ExampleKind kind) {
    for (Job& j : jobs_)
        if (j.kind == kind) return &j;
    return nullptr;
}

bool ExampleMaker::busy(ExampleKind kind) const {
    return std::any_of(jobs_.begin(), jobs_.end(), [kind](const Job& j) { return j.kind == kind; });
}

void ExampleMaker::make(ExampleKind kind, QObject* context, Done done) {
    if (Job* running = job(kind)) {
        running->waiters.push_back({context, std::move(done)});
        return;
    }
    jobs_.push_back({kind, {{context, std::move(done)}}});
    const QString folder = examplesFolder();
    const QString out = folder + "/" + exampleFileName(kind);
    const ExampleCommand command = exampleCommand(kind, out);
    const ToolLookup tool = findTool(command.program);
    // Always answered from the event loop, even when nothing has to run.
    auto later = [this, kind](const QString& path, const QString& error) {
        QTimer::singleShot(0, this, [this, kind, path, error] { finish(kind, path, error); });
    };
    const QFileInfo made(stampOf(out));
    if (made.exists() && QFileInfo::exists(out) &&
        (!tool.found() || made.lastModified() >= QFileInfo(tool.path).lastModified())) {
        later(out, {});  // made before by this generator (or it is gone: keep what is there)
        return;
    }
    if (!tool.found()) {
        later({}, tool.error);
        return;
    }
    if (!QDir().mkpath(folder)) {
        later({}, "Cannot create the examples folder " + folder);
        return;
    }
    QFile::remove(stampOf(out));
    emit started(kind,
                 QString("Making the %1 (%2)…").arg(exampleTitle(kind), QFileInfo(tool.path).fileName()));
    auto* process = new QProcess(this);
    process->setWorkingDirectory(folder);
    process->setStandardInputFile(QProcess::nullDevice());
    auto* timeout = new QTimer(process);
    timeout->setSingleShot(true);
    connect(timeout, &QTimer::timeout, process, [process] { process->kill(); });
    const QString shown = tool.path + " " + command.args.join(' ');
    connect(process, &QProcess::finished, this,
            [this, kind, process, timeout, out, shown](int code, QProcess::ExitStatus status) {
                const bool timedOut = !timeout->isActive();
                const QString err = QString::fromLocal8Bit(process->readAllStandardError()).trimmed();
                process->deleteLater();
                if (status == QProcess::NormalExit && code == 0 && QFileInfo(out).size() > 0) {
                    QFile stamp(stampOf(out));
                    if (stamp.open(QIODevice::WriteOnly)) stamp.write(shown.toUtf8() + "\n");
                    finish(kind, out, {});
                    return;
                }
                QFile::remove(out);
                QString why = timedOut ? QString("stopped after %1 s").arg(timeoutMs_ / 1000)
                              : status != QProcess::NormalExit ? QString("crashed")
                              : code != 0                      ? QString("exited with status %1").arg(code)
                                                               : QString("wrote no file at %1").arg(out);
                finish(kind, {},
                       QString("Making the %1 failed: %2 %3%4")
                           .arg(exampleTitle(kind), shown, why, err.isEmpty() ? QString() : ":\n" + err));
            });
    connect(process, &QProcess::errorOccurred, this, [this, kind, process, shown](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;  // the others end in finished()
        process->deleteLater();
        finish(kind, {},
               QString("Making the %1 failed: cannot run %2: %3")
                   .arg(exampleTitle(kind), shown, process->errorString()));
    });
    timeout->start(timeoutMs_);
    process->start(tool.path, command.args);
}

void ExampleMaker::finish(ExampleKind kind, const QString& path, const QString& error) {
    std::vector<Waiter> waiters;
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
        if (it->kind == kind) {
            waiters = std::move(it->waiters);
            jobs_.erase(it);
            break;
        }
    emit finished(kind, path, error);
    for (Waiter& w : waiters)
        if (w.context) w.done(path, error);
}

}  // namespace auxscope
