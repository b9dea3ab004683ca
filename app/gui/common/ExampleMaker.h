// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The examples a person with no trace hardware opens or replays (issue 33):
// a small Intel PT recording made by the bundled synthesizer auxscope-ptsynth,
// a CoreSight (ETMv4) one made by auxscope-etmsnap, and an Arm SPE one made by
// auxscope-spesynth. Each is made once into
// the per-user examples folder (examplesFolder(), which outlives the window) by
// running its generator in a QProcess, never on the GUI thread's time, and made
// again only when the generator is newer than the file. Help > Open an example,
// the capture page's "Open an example" and the Replay row's "Example" all ask
// the one ExampleMaker, so two asks of one example run one generator.
#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

#include <functional>
#include <vector>

class QProcess;

namespace auxscope {

enum class ExampleKind { IntelPt, CoreSight, ArmSpe };

// "Intel PT example", "CoreSight (ETMv4) example", "Arm SPE example": the menu's words.
QString exampleTitle(ExampleKind kind);
// The file's name in the examples folder: "intel-pt-example.data", "coresight-example.data",
// "arm-spe-example.data".
QString exampleFileName(ExampleKind kind);
// Where the examples are made: QStandardPaths' AppLocalDataLocation + "/examples".
QString examplesFolder();

// The one place that says how each example is made: the generator's program
// name (looked up with findTool) and its arguments writing the perf.data `out`
// (its companion files beside it).
struct ExampleCommand {
    QString program;
    QStringList args;
};
ExampleCommand exampleCommand(ExampleKind kind, const QString& out);

// A bundled tool found (path), or not (error, naming every place looked in).
struct ToolLookup {
    QString path;
    QStringList lookedIn;  // the folders, in the order they were looked in
    QString error;
    bool found() const { return !path.isEmpty(); }
};
// Looks for the executable `name` beside the program (`appDir`: in the package,
// /usr/lib/auxscope beside `auxscope`), then in `appDir`/tools (the build
// tree's layout), then in each folder of `pathDirs` (the PATH).
ToolLookup findTool(const QString& name, const QString& appDir, const QStringList& pathDirs);
// The same for this program: QCoreApplication::applicationDirPath() and $PATH.
ToolLookup findTool(const QString& name);

class ExampleMaker : public QObject {
    Q_OBJECT
public:
    // The application's one maker (a child of the QCoreApplication).
    static ExampleMaker& instance();

    // The example's perf.data, made (or reused) in examplesFolder(), then
    // `done(path, error)` on the GUI thread: path set when it is ready, else an
    // error that says what failed (the tool not found and where it was looked
    // for, or the generator's exit and its stderr). Never called when `context`
    // is gone; never called before make() returns.
    using Done = std::function<void(const QString& path, const QString& error)>;
    void make(ExampleKind kind, QObject* context, Done done);
    // Whether the example is being made now.
    bool busy(ExampleKind kind) const;
    // Longest a generator may run before it is stopped (and said so).
    void setTimeoutMs(int ms) { timeoutMs_ = ms; }

signals:
    // Making `kind` started (with the line to show: "Making the Intel PT example…") or ended.
    void started(ExampleKind kind, const QString& message);
    void finished(ExampleKind kind, const QString& path, const QString& error);

private:
    explicit ExampleMaker(QObject* parent);
    struct Waiter {
        QPointer<QObject> context;
        Done done;
    };
    struct Job {
        ExampleKind kind;
        std::vector<Waiter> waiters;
    };
    void finish(ExampleKind kind, const QString& path, const QString& error);
    Job* job(ExampleKind kind);

    std::vector<Job> jobs_;
    int timeoutMs_ = 120000;
};

}  // namespace auxscope
