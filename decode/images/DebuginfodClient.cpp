// SPDX-License-Identifier: GPL-3.0-or-later
#include "images/DebuginfodClient.h"

#include <elfutils/debuginfod.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "images/ImageResolver.h"

namespace auxscope {

namespace {

std::mutex gQueryMutex;  // one query at a time: each may set DEBUGINFOD_URLS
std::atomic<uint64_t> gQueries{0};

std::string hexOf(std::span<const uint8_t> bytes) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (uint8_t b : bytes)
        s += digits[b >> 4], s += digits[b & 15];
    return s;
}

struct QueryState {
    const DebuginfodClient::Progress* progress = nullptr;
    std::chrono::milliseconds timeout;
    std::chrono::steady_clock::time_point deadline;  // moved on while bytes arrive
    long done = -1;
    bool cancelled = false, timedOut = false;
};

// libdebuginfod calls this about once a second while a query runs: before a
// server has answered with `done` counting its loops and `total` 0, then with
// the bytes received of the file's size. A non-zero return ends the query.
// The timeout runs from the start until a server answers, then from the last
// bytes received (a large debug file on a slow link is not cut off).
int onProgress(debuginfod_client* client, long done, long total) {
    auto* state = static_cast<QueryState*>(debuginfod_get_user_data(client));
    if (!state) return 0;
    const auto now = std::chrono::steady_clock::now();
    const bool receiving = total > 0;
    if (receiving && done > state->done) state->done = done, state->deadline = now + state->timeout;
    if (now > state->deadline) {
        state->timedOut = true;
        return 1;
    }
    if (state->progress && *state->progress &&
        !(*state->progress)(receiving ? int64_t(done) : 0, receiving ? int64_t(total) : 0)) {
        state->cancelled = true;
        return 1;
    }
    return 0;
}

// Sets an environment variable for a scope (under gQueryMutex), restoring it after.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const std::string& value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (old_ && *old_ == value) return;
        ::setenv(name, value.c_str(), 1);
        changed_ = true;
    }
    ~ScopedEnv() {
        if (!changed_) return;
        if (old_)
            ::setenv(name_, old_->c_str(), 1);
        else
            ::unsetenv(name_);
    }

private:
    const char* name_;
    std::optional<std::string> old_;
    bool changed_ = false;
};

}  // namespace

DebuginfodClient::DebuginfodClient(std::vector<std::string> urls, bool enabled) {
    if (!enabled) return;
    for (const std::string& u : urls)
        if (!u.empty()) urls_ += (urls_.empty() ? "" : " ") + u;
    if (urls_.empty())
        if (const char* env = std::getenv("DEBUGINFOD_URLS")) urls_ = env;
    // Only blanks: nothing configured.
    if (urls_.find_first_not_of(" \t\n") == std::string::npos) urls_.clear();
}

DebuginfodClient DebuginfodClient::fromOptions(const ImageOptions& options) {
    return DebuginfodClient(options.debuginfodUrls, options.debuginfod);
}

uint64_t DebuginfodClient::queries() {
    return gQueries.load();
}

Expected<std::string> DebuginfodClient::find(Kind kind, std::span<const uint8_t> buildId,
                                             const Progress& progress) const {
    const std::string id = hexOf(buildId);
    const char* what = kind == Kind::Debuginfo ? "debug file" : "executable";
    if (urls_.empty())
        return makeError("debuginfod: no URL configured: " + std::string(what) + " of " + id +
                         " not asked for");
    if (buildId.empty()) return makeError("debuginfod: no build-id to ask for");
    std::lock_guard lock(gQueryMutex);
    ScopedEnv env("DEBUGINFOD_URLS", urls_);
    debuginfod_client* client = debuginfod_begin();
    if (!client)
        return makeError("debuginfod: cannot start a client (libdebuginfod): " +
                         std::string(std::strerror(errno)));
    QueryState state;
    state.progress = &progress;
    state.timeout = timeout_;
    state.deadline = std::chrono::steady_clock::now() + timeout_;
    debuginfod_set_user_data(client, &state);
    debuginfod_set_progressfn(client, onProgress);
    char* path = nullptr;
    ++gQueries;
    const int fd = kind == Kind::Debuginfo
                       ? debuginfod_find_debuginfo(client, buildId.data(), int(buildId.size()), &path)
                       : debuginfod_find_executable(client, buildId.data(), int(buildId.size()), &path);
    debuginfod_end(client);
    if (fd >= 0) {
        ::close(fd);
        std::string result = path ? path : "";
        std::free(path);
        if (result.empty()) return makeError("debuginfod " + urls_ + ": " + id + ": no path in the cache");
        return result;
    }
    std::free(path);
    const std::string where = "debuginfod " + urls_ + ": " + what + " of " + id + ": ";
    if (state.timedOut)
        return makeError(where + "timed out: nothing received for " + std::to_string(timeout_.count()) +
                         " ms (server unreachable or stalled; offline?)");
    if (state.cancelled) return makeError(where + "cancelled");
    switch (-fd) {
        case ENOENT:
            return makeError(where + "not found on the server(s)");
        case ECONNREFUSED:
        case EHOSTUNREACH:
        case ENETUNREACH:
        case ETIME:
        case ETIMEDOUT:
            return makeError(where + "cannot reach the server(s) (" + std::strerror(-fd) + "): offline?");
        case EINTR:
            return makeError(where + "cancelled");
        default:
            return makeError(where + std::strerror(-fd));
    }
}

}  // namespace auxscope
