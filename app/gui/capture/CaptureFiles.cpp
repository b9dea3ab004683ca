// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/capture/CaptureFiles.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>

namespace auxscope {
namespace {

constexpr const char* kFolderKey = "captures/folder";
constexpr const char* kRecentKey = "recent/files";

}  // namespace

QString CaptureFiles::defaultCapturesFolder() {
    // GenericDataLocation, not AppDataLocation: the folder must not depend on the
    // name the running binary gives the application (tests, other front ends).
    QString base = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
    if (base.isEmpty()) base = QDir::home().filePath(".local/share");
    return QDir(base).filePath("auxscope/captures");
}

QString CaptureFiles::capturesFolder() {
    const QString chosen = QSettings().value(kFolderKey).toString();
    return chosen.isEmpty() ? defaultCapturesFolder() : chosen;
}

void CaptureFiles::setCapturesFolder(const QString& folder) {
    QSettings settings;
    if (folder.isEmpty() || QDir::cleanPath(folder) == defaultCapturesFolder())
        settings.remove(kFolderKey);
    else
        settings.setValue(kFolderKey, QDir::cleanPath(QFileInfo(folder).absoluteFilePath()));
}

QString CaptureFiles::captureFileName(const QDateTime& when, const QString& target) {
    QString safe;
    for (QChar c : target) {
        const bool keep = (c.isLetterOrNumber() && c.unicode() < 128) || c == '.' || c == '-' || c == '_';
        if (keep && !(c == '-' && safe.endsWith('-')))
            safe += c;
        else if (!safe.endsWith('-'))
            safe += '-';
    }
    while (safe.startsWith('-') || safe.startsWith('.'))
        safe.remove(0, 1);
    safe.truncate(48);
    while (safe.endsWith('-'))
        safe.chop(1);
    if (safe.isEmpty()) safe = "capture";
    return when.toString("yyyy-MM-dd_HH-mm-ss") + "_" + safe + ".data";
}

QString CaptureFiles::newCapturePath(const QString& folder, const QString& target, QString* error) {
    QDir dir(folder);
    if (!dir.mkpath(".")) {
        if (error) *error = "cannot create the captures folder " + folder;
        return {};
    }
    const QString name = captureFileName(QDateTime::currentDateTime(), target);
    QString path = dir.filePath(name);
    for (int n = 2; QFileInfo::exists(path); ++n)
        path = dir.filePath(name.chopped(5) + QString("_%1.data").arg(n));
    return path;
}

QStringList CaptureFiles::recentFiles() {
    return QSettings().value(kRecentKey).toStringList();
}

void CaptureFiles::addRecent(const QString& path) {
    const QString absolute = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
    QStringList list = recentFiles();
    list.removeAll(absolute);
    list.prepend(absolute);
    while (list.size() > kMaxRecent)
        list.removeLast();
    QSettings().setValue(kRecentKey, list);
}

int CaptureFiles::pruneMissing() {
    QStringList list = recentFiles();
    const qsizetype before = list.size();
    list.removeIf([](const QString& p) { return !QFileInfo::exists(p); });
    QSettings().setValue(kRecentKey, list);
    return int(before - list.size());
}

void CaptureFiles::clearRecent() {
    QSettings().remove(kRecentKey);
}

}  // namespace auxscope
