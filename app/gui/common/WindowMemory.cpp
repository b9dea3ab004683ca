// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/common/WindowMemory.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>
#include <QSplitter>
#include <QWidget>

namespace auxscope::window_memory {

bool restoreWindow(QWidget* window) {
    const QByteArray saved = QSettings().value("window/geometry").toByteArray();
    return !saved.isEmpty() && window->restoreGeometry(saved);
}

void saveWindow(const QWidget* window) {
    QSettings().setValue("window/geometry", window->saveGeometry());
}

void rememberSplitter(QSplitter* splitter, const QString& key) {
    const QString settingsKey = "window/splitter/" + key;
    const QByteArray saved = QSettings().value(settingsKey).toByteArray();
    if (!saved.isEmpty()) splitter->restoreState(saved);
    QObject::connect(splitter, &QSplitter::splitterMoved, splitter,
                     [splitter, settingsKey] { QSettings().setValue(settingsKey, splitter->saveState()); });
}

QString lastFolder(const QString& kind, const QString& fallback) {
    const QString saved = QSettings().value("window/folder/" + kind).toString();
    return !saved.isEmpty() && QFileInfo(saved).isDir() ? saved : fallback;
}

void setLastFolder(const QString& kind, const QString& chosen) {
    if (chosen.isEmpty()) return;
    const QFileInfo info(chosen);
    QSettings().setValue("window/folder/" + kind,
                         info.isDir() ? info.absoluteFilePath() : info.absolutePath());
}

QString inLastFolder(const QString& kind, const QString& suggestion) {
    const QString folder = lastFolder(kind);
    return folder.isEmpty() ? suggestion : QDir(folder).filePath(QFileInfo(suggestion).fileName());
}

}  // namespace auxscope::window_memory
