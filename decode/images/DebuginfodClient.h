// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Files by build-id from debuginfod servers, through elfutils' libdebuginfod:
// the debug file (names, source lines) of a stripped image, or the image
// itself (its code) when no copy of it is found here.
//
// The servers are ImageOptions::debuginfodUrls, else $DEBUGINFOD_URLS; with
// neither (or ImageOptions::debuginfod false) no request is ever made.
// libdebuginfod keeps what it fetched in its cache ($DEBUGINFOD_CACHE_PATH,
// else $XDG_CACHE_HOME/debuginfod_client) and answers from there without a
// request the next time. Every query is bounded in time: it ends when nothing
// arrives for kTimeout (unless the caller sets another), and hears a progress callback that may cancel it, so
// a caller can run it on a worker thread with a progress bar and Cancel.
//
// libdebuginfod reads the server list from the environment only: a query with
// explicit URLs sets DEBUGINFOD_URLS for its duration. Queries are therefore
// serialized (one at a time in the process) and the previous value restored.
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope {

struct ImageOptions;

class DebuginfodClient {
public:
    static constexpr std::chrono::seconds kTimeout{15};
    // What a query has received so far: `done` of `total` bytes (total 0: not
    // known yet). Returning false cancels the query.
    using Progress = std::function<bool(int64_t done, int64_t total)>;

    // Servers from `urls`; empty: $DEBUGINFOD_URLS (read now). `enabled` false:
    // none, whatever the environment says.
    explicit DebuginfodClient(std::vector<std::string> urls = {}, bool enabled = true);
    static DebuginfodClient fromOptions(const ImageOptions& options);

    // The space-separated server list a query uses ("" : no query is made).
    const std::string& urls() const { return urls_; }
    bool configured() const { return !urls_.empty(); }
    void setTimeout(std::chrono::milliseconds t) { timeout_ = t; }

    enum class Kind { Debuginfo, Executable };
    // The path of the file in libdebuginfod's cache. Errors name the build-id,
    // the servers and the cause: "not found on ...", "cannot reach ...: Connection
    // refused", "timed out after 30 s", "cancelled", "no debuginfod URL configured".
    Expected<std::string> find(Kind kind, std::span<const uint8_t> buildId,
                               const Progress& progress = {}) const;

    // How many queries reached libdebuginfod (answered from its cache or a server) in this process.
    static uint64_t queries();

private:
    std::string urls_;
    std::chrono::milliseconds timeout_ = kTimeout;
};

}  // namespace auxscope
