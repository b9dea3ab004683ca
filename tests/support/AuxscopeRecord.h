// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// For Qt tests that make a real capture with the auxscope binary (the target
// defines AUXSCOPE_BINARY): runs `auxscope record ARGS` and says why when it
// did not work (an empty string when it did).
#include <QProcess>
#include <QString>
#include <QStringList>

namespace auxscope::test_support {

inline QString auxscopeRecord(const QStringList& args) {
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(AUXSCOPE_BINARY, QStringList{"record"} + args);
    if (!p.waitForFinished(60000)) return "auxscope record did not finish";
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
        return "auxscope record " + args.join(' ') + " failed: " + QString::fromLocal8Bit(p.readAll());
    return {};
}

}  // namespace auxscope::test_support
