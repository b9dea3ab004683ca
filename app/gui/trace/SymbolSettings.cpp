// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/trace/SymbolSettings.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFileInfo>
#include <QSettings>

#include <algorithm>

namespace auxscope {
namespace {

const char* const kDefaultsKey = "symbols/defaults";

QString canonical(const QString& path) {
    const QString c = QFileInfo(path).canonicalFilePath();
    return c.isEmpty() ? QFileInfo(path).absoluteFilePath() : c;
}

}  // namespace

QStringList toQStringList(const std::vector<std::string>& v) {
    QStringList out;
    for (const std::string& s : v)
        out << QString::fromStdString(s);
    return out;
}

std::vector<std::string> toStdStrings(const QStringList& list) {
    std::vector<std::string> out;
    for (const QString& s : list)
        if (!s.trimmed().isEmpty()) out.push_back(s.trimmed().toStdString());
    return out;
}

QString SymbolSettings::settingsKey(const QString& path) {
    const QByteArray hash = QCryptographicHash::hash(canonical(path).toUtf8(), QCryptographicHash::Sha1);
    return "symbols/" + QString::fromLatin1(hash.toHex());
}

QString SymbolSettings::fileFolder(const QString& path) {
    return QFileInfo(canonical(path)).absolutePath();
}

SymbolSettings SymbolSettings::defaults() {
    const QVariant saved = QSettings().value(kDefaultsKey);
    return saved.isValid() ? fromVariant(saved.toMap()) : SymbolSettings{};
}

SymbolSettings SymbolSettings::forFile(const QString& path) {
    const QVariant saved = QSettings().value(settingsKey(path));
    if (!saved.isValid()) return defaults();
    SymbolSettings s = fromVariant(saved.toMap());
    s.ownEntry = true;
    return s;
}

void SymbolSettings::saveForFile(const QString& path, const SymbolSettings& s) {
    QVariantMap entry = s.toVariant();
    entry["path"] = canonical(path);  // for whoever reads the settings file
    QSettings().setValue(settingsKey(path), entry);
}

void SymbolSettings::saveDefaults(const SymbolSettings& s) {
    QSettings().setValue(kDefaultsKey, s.toVariant());
}

void SymbolSettings::forgetFile(const QString& path) {
    QSettings().remove(settingsKey(path));
}

ImageOptions SymbolSettings::effective(const QString& path) const {
    ImageOptions o = options;
    if (searchFileFolder && !path.isEmpty()) {
        const std::string folder = fileFolder(path).toStdString();
        if (std::find(o.binaryDirs.begin(), o.binaryDirs.end(), folder) == o.binaryDirs.end())
            o.binaryDirs.insert(o.binaryDirs.begin(), folder);
    }
    return o;
}

QVariantMap SymbolSettings::toVariant() const {
    QVariantMap m;
    m["symfs"] = QString::fromStdString(options.symfs);
    m["vmlinux"] = QString::fromStdString(options.vmlinux);
    m["kcore"] = QString::fromStdString(options.kcore);
    m["kallsyms"] = QString::fromStdString(options.kallsyms);
    m["binaryDirs"] = toQStringList(options.binaryDirs);
    m["debugDirs"] = toQStringList(options.debugDirs);
    m["debuginfodUrls"] = toQStringList(options.debuginfodUrls);
    m["debuginfod"] = options.debuginfod;
    m["jitDumps"] = toQStringList(options.jitDumps);
    m["perfMaps"] = toQStringList(options.perfMaps);
    m["searchFileFolder"] = searchFileFolder;
    return m;
}

SymbolSettings SymbolSettings::fromVariant(const QVariantMap& m) {
    SymbolSettings s;
    s.options.symfs = m.value("symfs").toString().toStdString();
    s.options.vmlinux = m.value("vmlinux").toString().toStdString();
    s.options.kcore = m.value("kcore").toString().toStdString();
    s.options.kallsyms = m.value("kallsyms").toString().toStdString();
    s.options.binaryDirs = toStdStrings(m.value("binaryDirs").toStringList());
    s.options.debugDirs = toStdStrings(m.value("debugDirs").toStringList());
    s.options.debuginfodUrls = toStdStrings(m.value("debuginfodUrls").toStringList());
    s.options.debuginfod = m.value("debuginfod", true).toBool();
    s.options.jitDumps = toStdStrings(m.value("jitDumps").toStringList());
    s.options.perfMaps = toStdStrings(m.value("perfMaps").toStringList());
    s.searchFileFolder = m.value("searchFileFolder", true).toBool();
    return s;
}

bool SymbolSettings::operator==(const SymbolSettings& o) const {
    return toVariant() == o.toVariant();
}

}  // namespace auxscope
