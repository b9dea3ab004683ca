// SPDX-License-Identifier: GPL-3.0-or-later
// Where code and names come from (issue 27): ImageResolver's look-up order and
// debuginfod through a real server.
//
// The program (lookup_prog.c) is recorded as mapped from a path that does not
// exist here (/opt/lookup/lookup_prog) with its real build-id, so every file the
// resolver takes comes from a place the look-up order names:
//  - perf's build-id cache, binaryDirs as a sysroot and by name;
//  - another build of the program (other build-id) is rejected, counted and
//    noted, and the right one after it is taken; alone, the file stays missing;
//  - the stripped copy's names from debugDirs (by .build-id path and by its
//    .gnu_debuglink name), none without; a stripped copy with MiniDebugInfo
//    (.gnu_debugdata) named from there;
//  - debuginfod (/usr/bin/debuginfod started here on a free port, indexing the
//    stripped program and its debug file): names and source lines of the stripped
//    program, its code when the program is missing; the second time from
//    libdebuginfod's cache with the server stopped; a stopped server gives a note
//    and no hang, a server that never answers a timeout, a cancel ends a query;
//    no URL (or --no-debuginfod) makes no request at all; auxscope report
//    names a perf record of the stripped program with --debuginfod URL.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "images/CodeAnnotation.h"
#include "images/DebuginfodClient.h"
#include "images/ElfSymbols.h"
#include "images/ImageResolver.h"
#include "sideband/Sideband.h"

using namespace auxscope;
namespace fs = std::filesystem;

namespace {

const std::string kImages = AUXSCOPE_LOOKUP_IMAGES;
const std::string kRecorded = "/opt/lookup/lookup_prog";  // the path the recording names (absent here)
constexpr int32_t kPid = 4242;
constexpr uint64_t kBase = 0x560000000000;

std::string full() {
    return kImages + "/full/lookup_prog";
}
std::string stripped() {
    return kImages + "/stripped/lookup_prog";
}

std::string hexOf(const std::vector<uint8_t>& id) {
    std::string s;
    char b[3];
    for (uint8_t x : id)
        std::snprintf(b, sizeof b, "%02x", x), s += b;
    return s;
}

std::vector<uint8_t> buildIdOf(const std::string& path) {
    auto id = elfBuildId(path);
    return id ? *id : std::vector<uint8_t>{};
}

// A fresh temporary folder, removed with the object.
struct TempDir {
    std::string path;
    TempDir() {
        std::string t = (fs::temp_directory_path() / "auxscope-lookup-XXXXXX").string();
        path = ::mkdtemp(t.data()) ? t : "";
    }
    ~TempDir() {
        std::error_code ec;
        if (!path.empty()) fs::remove_all(path, ec);
    }
};

void copyTo(const std::string& from, const std::string& to) {
    fs::create_directories(fs::path(to).parent_path());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

// The recording: process kPid maps the program (the whole file from offset 0 at kBase) from kRecorded.
Sideband recording(const std::vector<uint8_t>& buildId) {
    std::map<std::string, std::vector<uint8_t>> ids;
    if (!buildId.empty()) ids[kRecorded] = buildId;
    Sideband::Builder b(ids);
    ParsedRecord r;
    r.type = PERF_RECORD_MMAP;
    r.misc = PERF_RECORD_MISC_USER;
    r.pid = r.tid = kPid;
    r.mapStart = kBase, r.mapLen = 0x10000, r.mapPgoff = 0;
    r.filename = kRecorded;
    r.time = 1;
    r.hasSampleId = true;
    b.addRecord(0, r, {});
    return std::move(b).finish();
}

// The runtime address of `symbol` (from the full build) in the recording.
uint64_t addressOf(const char* symbol) {
    auto vaddr = elfSymbolValue(full(), symbol);
    auto segments = elfLoadSegments(full());
    if (!vaddr || !segments) return 0;
    for (const ElfLoadSegment& s : *segments)
        if (*vaddr >= s.vaddr && *vaddr < s.vaddr + s.fileSize) return kBase + s.offset + (*vaddr - s.vaddr);
    return 0;
}

struct Resolved {
    Sideband sideband;
    FunctionTable functions;
    std::unique_ptr<ImageResolver> images;
    const ImageResolver::FileStatus* file() const {
        for (const auto& f : images->files())
            if (f.recorded == kRecorded) return &f;
        return nullptr;
    }
    std::string nameAt(const char* symbol) const {
        const uint32_t id = images->functionAt(kPid, addressOf(symbol));
        return id < functions.size() ? functions[id].name : std::string("(none)");
    }
    std::string notes() const {
        std::string s;
        for (const std::string& n : images->notes())
            s += n + "\n";
        return s;
    }
};

std::unique_ptr<Resolved> resolve(ImageOptions options, const std::vector<uint8_t>& buildId,
                                  const std::string& emptyCache) {
    auto r = std::make_unique<Resolved>();
    r->sideband = recording(buildId);
    options.buildIdCache = options.buildIdCache.empty() ? emptyCache : options.buildIdCache;
    options.runningKernel = false;
    r->images = std::make_unique<ImageResolver>(r->sideband, r->functions, options);
    r->images->prepare();
    return r;
}

class ImageLookup : public ::testing::Test {
protected:
    void SetUp() override {
        ::unsetenv("DEBUGINFOD_URLS");
        ASSERT_TRUE(fs::exists(stripped())) << stripped();
        id_ = buildIdOf(full());
        ASSERT_EQ(id_.size(), 20u) << full() << " has no GNU build-id";
        ASSERT_EQ(buildIdOf(stripped()), id_);
        ASSERT_NE(buildIdOf(kImages + "/other/lookup_prog"), id_) << "the other build has the same build-id";
        ASSERT_FALSE(fs::exists(kRecorded)) << kRecorded << " exists here: the test needs it absent";
        ASSERT_FALSE(elfHasSymtab(stripped()));
    }
    std::vector<uint8_t> id_;
    TempDir cache_;  // an empty perf build-id cache
};

}  // namespace

TEST_F(ImageLookup, BinaryDirByName) {
    ImageOptions o;
    o.binaryDirs = {kImages + "/full"};
    auto r = resolve(o, id_, cache_.path);
    ASSERT_TRUE(r->file());
    EXPECT_EQ(r->file()->resolved, full());
    EXPECT_EQ(r->file()->rejected, 0u);
    EXPECT_EQ(r->nameAt("lookup_alpha"), "lookup_alpha");
    EXPECT_EQ(r->nameAt("lookup_beta"), "lookup_beta");
    EXPECT_EQ(r->images->missingFiles(), 0u);
}

TEST_F(ImageLookup, BinaryDirAsSysroot) {
    TempDir root;
    copyTo(full(), root.path + kRecorded);
    ImageOptions o;
    o.binaryDirs = {root.path};
    auto r = resolve(o, id_, cache_.path);
    ASSERT_TRUE(r->file());
    EXPECT_EQ(r->file()->resolved, root.path + kRecorded);
    EXPECT_EQ(r->nameAt("lookup_alpha"), "lookup_alpha");
}

TEST_F(ImageLookup, BuildIdCacheFirst) {
    TempDir cache;
    const std::string hex = hexOf(id_);
    const std::string elf = cache.path + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + "/elf";
    copyTo(full(), elf);
    ImageOptions o;
    o.buildIdCache = cache.path;
    o.binaryDirs = {kImages + "/stripped"};  // later in the order
    auto r = resolve(o, id_, cache_.path);
    ASSERT_TRUE(r->file());
    EXPECT_EQ(r->file()->resolved, elf);
    EXPECT_EQ(r->nameAt("lookup_alpha"), "lookup_alpha");
}

TEST_F(ImageLookup, OtherBuildIsRejectedWithANote) {
    ImageOptions o;
    o.binaryDirs = {kImages + "/other", kImages + "/full"};
    auto r = resolve(o, id_, cache_.path);
    ASSERT_TRUE(r->file());
    EXPECT_EQ(r->file()->resolved, full());
    EXPECT_EQ(r->file()->rejected, 1u);
    EXPECT_NE(r->notes().find(kImages + "/other/lookup_prog: rejected"), std::string::npos) << r->notes();
    EXPECT_NE(r->notes().find(hexOf(id_)), std::string::npos) << r->notes();
    // Alone, the other build is not taken: the file is missing and says so.
    ImageOptions alone;
    alone.binaryDirs = {kImages + "/other"};
    auto missing = resolve(alone, id_, cache_.path);
    ASSERT_TRUE(missing->file());
    EXPECT_EQ(missing->file()->resolved, "");
    EXPECT_EQ(missing->file()->rejected, 1u);
    EXPECT_EQ(missing->images->missingFiles(), 1u);
    ASSERT_TRUE(missing->images->missingFileAt(kPid, addressOf("lookup_alpha")));
    EXPECT_EQ(*missing->images->missingFileAt(kPid, addressOf("lookup_alpha")), kRecorded);
    // Without a recorded build-id there is nothing to compare: the path decides, as perf does.
    auto unchecked = resolve(alone, {}, cache_.path);
    EXPECT_EQ(unchecked->file()->resolved, kImages + "/other/lookup_prog");
}

TEST_F(ImageLookup, StrippedNamesFromDebugDirs) {
    ImageOptions o;
    o.binaryDirs = {kImages + "/stripped"};
    // No debug file anywhere: .dynsym only, lookup_alpha has no name of its own.
    auto bare = resolve(o, id_, cache_.path);
    ASSERT_TRUE(bare->file());
    EXPECT_EQ(bare->file()->resolved, stripped());
    EXPECT_EQ(bare->file()->debugFile, "");
    EXPECT_NE(bare->nameAt("lookup_alpha"), "lookup_alpha");
    // By its .gnu_debuglink name in a debug folder.
    o.debugDirs = {kImages + "/debug"};
    auto byLink = resolve(o, id_, cache_.path);
    EXPECT_EQ(byLink->file()->resolved, stripped());
    EXPECT_EQ(byLink->file()->debugFile, kImages + "/debug/lookup_prog.debug");
    EXPECT_EQ(byLink->nameAt("lookup_alpha"), "lookup_alpha");
    EXPECT_EQ(byLink->images->debugFileOf(stripped()), kImages + "/debug/lookup_prog.debug");
    // By build-id in a root laid out as /usr/lib/debug.
    TempDir root;
    const std::string hex = hexOf(id_);
    const std::string debug = root.path + "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
    copyTo(kImages + "/debug/lookup_prog.debug", debug);
    o.debugDirs = {root.path};
    auto byId = resolve(o, id_, cache_.path);
    EXPECT_EQ(byId->file()->debugFile, debug);
    EXPECT_EQ(byId->nameAt("lookup_beta"), "lookup_beta");
}

// A 16-byte (MD5) build-id as a recording pads it to perf's 20 bytes with
// zeros (simpleperf's perf_etm.data does): the same id, the file is taken; other
// bytes after the 16 are another id.
TEST_F(ImageLookup, ShortBuildIdPaddedToTwentyBytes) {
    const std::string md5 = kImages + "/md5/lookup_prog";
    std::vector<uint8_t> id = buildIdOf(md5);
    ASSERT_EQ(id.size(), 16u) << md5;
    ImageOptions o;
    o.binaryDirs = {kImages + "/md5"};
    std::vector<uint8_t> padded = id;
    padded.resize(20, 0);
    auto r = resolve(o, padded, cache_.path);
    ASSERT_TRUE(r->file());
    EXPECT_EQ(r->file()->resolved, md5) << r->notes();
    EXPECT_EQ(r->file()->rejected, 0u);
    padded[19] = 1;
    auto other = resolve(o, padded, cache_.path);
    EXPECT_EQ(other->file()->resolved, "");
    EXPECT_EQ(other->file()->rejected, 1u);
}

// MiniDebugInfo: a stripped file whose .symtab is xz-compressed in
// .gnu_debugdata (no separate debug file): its functions are named from there.
TEST_F(ImageLookup, StrippedNamesFromGnuDebugdata) {
    const std::string mini = kImages + "/mini/lookup_prog";
    if (!fs::exists(mini)) GTEST_SKIP() << mini << " was not made (xz is not installed)";
    ASSERT_FALSE(elfHasSymtab(mini));
    ImageOptions o;
    o.binaryDirs = {kImages + "/mini"};
    auto r = resolve(o, id_, cache_.path);
    ASSERT_TRUE(r->file());
    EXPECT_EQ(r->file()->resolved, mini);
    EXPECT_EQ(r->file()->debugFile, "");
    EXPECT_EQ(r->nameAt("lookup_alpha"), "lookup_alpha");
    EXPECT_EQ(r->nameAt("lookup_beta"), "lookup_beta");
}

// ---------------------------------------------------------------- debuginfod

namespace {

// One HTTP GET to 127.0.0.1:port (bounded by `timeout`): the status code and the body.
std::pair<int, std::string> httpGet(int port, const std::string& path,
                                    std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return {0, ""};
    timeval tv{long(timeout.count() / 1000), long(timeout.count() % 1000) * 1000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return {0, ""};
    }
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, request.data(), request.size()) != ssize_t(request.size())) {
        ::close(fd);
        return {0, ""};
    }
    std::string response;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
        response.append(buffer, size_t(n));
    ::close(fd);
    int code = 0;
    if (response.rfind("HTTP/", 0) == 0) code = std::atoi(response.c_str() + response.find(' ') + 1);
    const size_t body = response.find("\r\n\r\n");
    return {code, body == std::string::npos ? "" : response.substr(body + 4)};
}

// A port nothing listens on now.
int freePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ::close(fd);
        return 0;
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

// /usr/bin/debuginfod serving one folder (-F) on a free port, its database in a temporary folder.
class DebuginfodServer {
public:
    DebuginfodServer(const std::string& serve, const std::vector<uint8_t>& buildId) {
        port_ = freePort();
        if (!port_ || state_.path.empty()) {
            why_ = "no free port or temporary folder";
            return;
        }
        const std::string port = std::to_string(port_), db = state_.path + "/db.sqlite",
                          log = state_.path + "/debuginfod.log";
        pid_ = ::fork();
        if (pid_ == 0) {
            const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (out >= 0) ::dup2(out, 1), ::dup2(out, 2);
            ::execl(AUXSCOPE_DEBUGINFOD, "debuginfod", "-F", serve.c_str(), "-p", port.c_str(), "-d",
                    db.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        // Ready once it has scanned the folder: it serves the debug file.
        const std::string probe = "/buildid/" + hexOf(buildId) + "/debuginfo";
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (std::chrono::steady_clock::now() < deadline) {
            if (httpGet(port_, probe).first == 200) return;
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                std::ifstream in(log);
                why_ = "debuginfod exited: " + std::string(std::istreambuf_iterator<char>(in), {});
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        why_ = "debuginfod did not serve " + probe + " within 30 s";
    }
    ~DebuginfodServer() { stop(); }
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        int status = 0;
        for (int i = 0; i < 50 && ::waitpid(pid_, &status, WNOHANG) != pid_; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (::waitpid(pid_, &status, WNOHANG) == 0) ::kill(pid_, SIGKILL), ::waitpid(pid_, &status, 0);
        pid_ = -1;
    }
    bool ok() const { return why_.empty() && pid_ > 0; }
    const std::string& why() const { return why_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    int port() const { return port_; }
    // The requests it answered for files (debuginfo, executable, source, section): its /metrics.
    uint64_t fileRequests() const {
        std::istringstream in(httpGet(port_, "/metrics").second);
        uint64_t total = 0;
        for (std::string line; std::getline(in, line);)
            if (line.rfind("http_requests_total{", 0) == 0 &&
                line.find("type=\"metrics\"") == std::string::npos)
                total += std::strtoull(line.substr(line.rfind(' ') + 1).c_str(), nullptr, 10);
        return total;
    }

private:
    TempDir state_;
    int port_ = 0;
    pid_t pid_ = -1;
    std::string why_;
};

std::string debuginfodMissing() {
    if (std::string(AUXSCOPE_DEBUGINFOD).empty() || ::access(AUXSCOPE_DEBUGINFOD, X_OK) != 0)
        return "debuginfod is not installed (Debian package debuginfod)";
    return {};
}

// `command` through sh -c, stdout and stderr together; its exit status in `status`.
std::string run(const std::string& command, int* status) {
    std::string out;
    FILE* p = ::popen((command + " 2>&1").c_str(), "r");
    if (!p) {
        *status = -1;
        return "cannot run " + command;
    }
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, p)) > 0;)
        out.append(buffer, n);
    const int rc = ::pclose(p);
    *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    return out;
}

bool ciRequires() {
    const char* ci = std::getenv("CI");
    return ci && std::string(ci) == "true";
}

}  // namespace

class DebuginfodLookup : public ImageLookup {
protected:
    void SetUp() override {
        ImageLookup::SetUp();
        if (HasFatalFailure()) return;
        if (std::string why = debuginfodMissing(); !why.empty()) {
            if (ciRequires()) FAIL() << why << "; CI=true requires it";
            GTEST_SKIP() << why;
        }
        // What the server indexes: the stripped program and its debug file.
        copyTo(stripped(), serve_.path + "/lookup_prog");
        copyTo(kImages + "/debug/lookup_prog.debug", serve_.path + "/lookup_prog.debug");
        server_ = std::make_unique<DebuginfodServer>(serve_.path, id_);
        ASSERT_TRUE(server_->ok()) << server_->why();
        ::setenv("DEBUGINFOD_CACHE_PATH", clientCache_.path.c_str(), 1);
    }
    void TearDown() override {
        ::unsetenv("DEBUGINFOD_CACHE_PATH");
        ::unsetenv("DEBUGINFOD_URLS");
    }
    TempDir serve_, clientCache_;
    std::unique_ptr<DebuginfodServer> server_;
};

TEST_F(DebuginfodLookup, NoUrlMakesNoRequest) {
    const uint64_t before = server_->fileRequests(), queries = DebuginfodClient::queries();
    ImageOptions o;
    o.binaryDirs = {kImages + "/stripped"};
    auto r = resolve(o, id_, cache_.path);
    EXPECT_EQ(r->images->debuginfod().urls, "");
    EXPECT_EQ(r->images->debuginfod().asked, 0u);
    EXPECT_NE(r->nameAt("lookup_alpha"), "lookup_alpha");
    // DEBUGINFOD_URLS set but debuginfod turned off (--no-debuginfod): none either.
    ::setenv("DEBUGINFOD_URLS", server_->url().c_str(), 1);
    o.debuginfod = false;
    auto off = resolve(o, id_, cache_.path);
    EXPECT_EQ(off->images->debuginfod().asked, 0u);
    EXPECT_NE(off->nameAt("lookup_alpha"), "lookup_alpha");
    EXPECT_EQ(DebuginfodClient::queries(), queries);
    EXPECT_EQ(server_->fileRequests(), before);
    EXPECT_TRUE(fs::is_empty(clientCache_.path));
}

TEST_F(DebuginfodLookup, NamesLinesAndCodeFromTheServerThenFromTheCache) {
    ImageOptions o;
    o.binaryDirs = {kImages + "/stripped"};
    o.debuginfodUrls = {server_->url()};
    int64_t progressCalls = 0;
    o.debuginfodProgress = [&](const std::string& file, int64_t, int64_t) {
        EXPECT_EQ(file, kRecorded);
        ++progressCalls;
        return true;
    };
    const uint64_t before = server_->fileRequests();
    auto r = resolve(o, id_, cache_.path);
    ASSERT_TRUE(r->file());
    EXPECT_EQ(r->file()->resolved, stripped());
    EXPECT_EQ(r->images->debuginfod().debugFiles, 1u) << r->notes();
    EXPECT_EQ(r->file()->debugFile.rfind(clientCache_.path, 0), 0u) << r->file()->debugFile;
    EXPECT_EQ(r->nameAt("lookup_alpha"), "lookup_alpha");
    EXPECT_EQ(r->nameAt("lookup_beta"), "lookup_beta");
    EXPECT_GT(progressCalls, 0);
    EXPECT_EQ(server_->fileRequests(), before + 1);
    // Source lines in the code view, from the fetched debug file.
    const uint64_t alpha = addressOf("lookup_alpha");
    const uint32_t fn = r->images->functionAt(kPid, alpha);
    auto code = annotateFunction(*r->images, r->functions, kPid, fn, {{alpha, alpha, 1, 1}});
    ASSERT_TRUE(code) << code.error().message;
    size_t withLines = 0;
    for (const AnnotatedInstruction& i : code->instructions)
        if (i.line > 0 && i.file.find("lookup_prog.c") != std::string::npos) ++withLines;
    EXPECT_GT(withLines, 0u) << code->instructions.size()
                             << " instructions; notes: " << (code->notes.empty() ? "" : code->notes[0]);
    EXPECT_NE(code->sourceFile.find("lookup_prog.c"), std::string::npos) << code->sourceFile;

    // The program itself missing here: its code from the server too (executable, then debuginfo).
    ImageOptions missing;
    missing.debuginfodUrls = {server_->url()};
    auto fetched = resolve(missing, id_, cache_.path);
    ASSERT_TRUE(fetched->file());
    EXPECT_EQ(fetched->file()->resolved.rfind(clientCache_.path, 0), 0u) << fetched->notes();
    EXPECT_EQ(fetched->images->debuginfod().executables, 1u);
    EXPECT_EQ(fetched->images->missingFiles(), 0u);
    EXPECT_EQ(fetched->nameAt("lookup_alpha"), "lookup_alpha");
    uint8_t ours[16] = {}, theirs[16] = {};
    ASSERT_TRUE(fetched->images->read(kPid, alpha, ours, sizeof ours));
    {
        std::ifstream in(stripped(), std::ios::binary);
        in.seekg(std::streamoff(alpha - kBase));
        in.read(reinterpret_cast<char*>(theirs), sizeof theirs);
    }
    EXPECT_EQ(std::memcmp(ours, theirs, sizeof ours), 0);

    // Again with the server stopped: libdebuginfod's cache answers, at once.
    server_->stop();
    const auto start = std::chrono::steady_clock::now();
    auto cached = resolve(o, id_, cache_.path);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(cached->nameAt("lookup_alpha"), "lookup_alpha") << cached->notes();
    EXPECT_EQ(cached->images->debuginfod().failed, 0u) << cached->notes();
    EXPECT_LT(seconds, 2.0);
}

// Only the files a view wants are asked for.
TEST_F(DebuginfodLookup, OnlyWantedFilesAreAskedFor) {
    ImageOptions o;
    o.binaryDirs = {kImages + "/stripped"};
    o.debuginfodUrls = {server_->url()};
    o.debuginfodWanted = [](const std::string& recorded) { return recorded != kRecorded; };
    const uint64_t before = server_->fileRequests();
    auto r = resolve(o, id_, cache_.path);
    EXPECT_EQ(r->images->debuginfod().asked, 0u);
    EXPECT_EQ(r->images->debuginfod().notWanted, 1u);
    EXPECT_NE(r->nameAt("lookup_alpha"), "lookup_alpha");
    EXPECT_EQ(server_->fileRequests(), before);
    o.debuginfodWanted = [](const std::string& recorded) { return recorded == kRecorded; };
    auto wanted = resolve(o, id_, cache_.path);
    EXPECT_EQ(wanted->images->debuginfod().asked, 1u);
    EXPECT_EQ(wanted->nameAt("lookup_alpha"), "lookup_alpha");
    EXPECT_EQ(server_->fileRequests(), before + 1);
}

TEST_F(DebuginfodLookup, StoppedServerGivesANoteAndNoHang) {
    const std::string url = server_->url();
    server_->stop();
    ImageOptions o;
    o.binaryDirs = {kImages + "/stripped"};
    o.debuginfodUrls = {url};
    const auto start = std::chrono::steady_clock::now();
    auto r = resolve(o, id_, cache_.path);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 5.0);
    EXPECT_EQ(r->file()->resolved, stripped());  // the local file is kept, with .dynsym's names
    EXPECT_NE(r->nameAt("lookup_alpha"), "lookup_alpha");
    EXPECT_EQ(r->images->debuginfod().failed, 1u);
    EXPECT_NE(r->notes().find("cannot reach"), std::string::npos) << r->notes();
    EXPECT_NE(r->notes().find(url), std::string::npos) << r->notes();
}

// A server that accepts the connection and never answers: the query ends after
// the timeout with a note; a cancel from the progress callback ends it at once.
TEST_F(DebuginfodLookup, SilentServerTimesOutAndCancelEndsAQuery) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(fd, 8), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    DebuginfodClient client({url});
    client.setTimeout(std::chrono::milliseconds(1500));
    auto start = std::chrono::steady_clock::now();
    auto got = client.find(DebuginfodClient::Kind::Debuginfo, id_);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_FALSE(got);
    EXPECT_NE(got.error().message.find("timed out"), std::string::npos) << got.error().message;
    EXPECT_LT(seconds, 6.0);
    EXPECT_GE(seconds, 1.0);
    client.setTimeout(std::chrono::seconds(60));
    // libdebuginfod remembers a failed query (its negative cache): a cache of its own.
    TempDir otherCache;
    ::setenv("DEBUGINFOD_CACHE_PATH", otherCache.path.c_str(), 1);
    start = std::chrono::steady_clock::now();
    got = client.find(DebuginfodClient::Kind::Debuginfo, id_, [](int64_t, int64_t) { return false; });
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_FALSE(got);
    EXPECT_NE(got.error().message.find("cancelled"), std::string::npos) << got.error().message;
    EXPECT_LT(seconds, 5.0);
    ::close(fd);
    // No URL: no query, and says so.
    DebuginfodClient none({}, true);
    auto nothing = none.find(DebuginfodClient::Kind::Debuginfo, id_);
    ASSERT_FALSE(nothing);
    EXPECT_NE(nothing.error().message.find("no URL"), std::string::npos);
}

// The command line: auxscope report names the samples of a stripped program
// with its functions from the server's debug file (--debuginfod URL), and not
// with --no-debuginfod, which asks no server at all.
TEST_F(DebuginfodLookup, ReportNamesAStrippedProgramsSamples) {
    int status = 0;
    const std::string perfCheck = run("perf record -q -N -e cpu-clock -o /dev/null -- true", &status);
    if (status != 0) GTEST_SKIP() << "perf record -e cpu-clock does not work here: " << perfCheck;
    TempDir work;
    const std::string data = work.path + "/stripped.data";
    const std::string recorded =
        run("perf record -q -N -e cpu-clock -F 2000 -o " + data + " -- " + stripped() + " 300", &status);
    ASSERT_EQ(status, 0) << recorded;
    const std::string report = std::string(AUXSCOPE_BIN) + " report " + data + " --source samples --top 0";
    // --no-debuginfod with DEBUGINFOD_URLS set when auxscope starts: no request
    // at all, not even from libdwfl (which reads that variable at start-up) for
    // the inlined frames and lines of the stripped program.
    const uint64_t before = server_->fileRequests();
    const std::string without =
        run("DEBUGINFOD_URLS=" + server_->url() + " " + report + " --no-debuginfod", &status);
    EXPECT_EQ(status, 0) << without;
    EXPECT_EQ(without.find("lookup_alpha"), std::string::npos) << without;
    EXPECT_EQ(without.find("debuginfod "), std::string::npos) << without;
    EXPECT_EQ(server_->fileRequests(), before);
    const std::string with = run(report + " --debuginfod " + server_->url(), &status);
    EXPECT_EQ(status, 0) << with;
    EXPECT_NE(with.find("lookup_beta"), std::string::npos) << with;
    EXPECT_NE(with.find("lookup_alpha"), std::string::npos) << with;
    EXPECT_NE(with.find("1 debug files"), std::string::npos) << with;
}
