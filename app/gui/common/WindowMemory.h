// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QString>

class QSplitter;
class QWidget;

namespace auxscope::window_memory {

// What the GUI remembers between runs (QSettings, under "window/"): the main
// window's geometry, each splitter's sizes, and the folder each kind of file
// dialog was last pointed at.

// Restores the window's geometry (size, position, maximized) when one was saved.
bool restoreWindow(QWidget* window);
void saveWindow(const QWidget* window);

// Restores the splitter's sizes saved under `key` (its widgets must be in it) and
// saves them whenever the person moves a handle. Splitters of one role (every
// trace page's timeline/analysis split) share a key.
void rememberSplitter(QSplitter* splitter, const QString& key);

// The folder a file dialog of `kind` ("open", "save", "export", "replay") starts
// in: the last one a file was chosen in there (when it still exists), else `fallback`.
QString lastFolder(const QString& kind, const QString& fallback = QString());
// Remembers the folder of `chosen` (a file, or a folder) for dialogs of `kind`.
void setLastFolder(const QString& kind, const QString& chosen);
// `name` in lastFolder(kind) when one is remembered, else `suggestion` as it is.
QString inLastFolder(const QString& kind, const QString& suggestion);

}  // namespace auxscope::window_memory
