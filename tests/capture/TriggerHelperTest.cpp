// SPDX-License-Identifier: GPL-3.0-or-later
// Snapshot triggers through the privileged capture helper: the Start request
// carries them (round trip, refusals), and the helper, running as root for
// another user, refuses a binary that user may not read before anything starts;
// a trigger on a binary the user may read fires in the helper's capture.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "CaptureHelper.h"
#include "HelperProtocol.h"
#include "PerfEvent.h"
#include "TriggerSpec.h"
#include "support/TestSupport.h"

namespace auxscope::helper {
namespace {

const char* kProg = TRIGGER_PROG_PATH;

TEST(TriggerHelperProtocol, TriggersRoundTripInStart) {
    CaptureOptions o;
    o.target = TargetKind::Command;
    o.command = {"/bin/prog", "calls"};
    o.overwrite = true;
    TriggerSettings t;
    t.specs = {*parseTriggerSpec("handle>5ms"), *parseTriggerSpec("usdt:app:done@/bin/app")};
    t.postNs = 5'000'000;
    t.max = 3;
    t.gapNs = 100'000'000;
    t.tids = {42, 43};
    const std::string payload = encodeStartRequest(o, t);
    auto opts = parseStartRequest(payload, StartLimits{});
    ASSERT_TRUE(opts) << opts.error().message;
    EXPECT_TRUE(opts->overwrite);
    auto back = parseStartTriggers(payload, StartLimits{});
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_EQ(back->specs.size(), 2u);
    EXPECT_EQ(back->specs[0].thresholdNs, 5'000'000u);
    EXPECT_EQ(back->specs[1].usdtName, "done");
    EXPECT_EQ(back->postNs, t.postNs);
    EXPECT_EQ(back->max, 3u);
    EXPECT_EQ(back->gapNs, t.gapNs);
    EXPECT_EQ(back->tids, t.tids);
    EXPECT_EQ(back->mode, TriggerMode::Snapshot);
    // None given: none parsed.
    auto none = parseStartTriggers(encodeStartRequest(o), StartLimits{});
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->specs.empty());
}

TEST(TriggerHelperProtocol, BadTriggersAreRefusedNamingWhy) {
    auto expectError = [](const std::string& payload, const char* needle) {
        auto t = parseStartTriggers(payload, StartLimits{});
        ASSERT_FALSE(t) << payload;
        EXPECT_NE(t.error().message.find(needle), std::string::npos) << t.error().message;
    };
    expectError("target=system\ntrigger=handle>0ms\n", "out of range");
    expectError("target=system\ntrigger-max=3\n", "without a trigger=");
    expectError("target=system\ntrigger=f\ntrigger-max=0\n", "trigger-max=0");
    expectError("target=system\ntrigger=f\ntrigger-post-ns=x\n", "trigger-post-ns=x");
    expectError("target=system\ntrigger=f\ntrigger-mode=resume\n", "trigger-mode='resume'");
    std::string many = "target=system\n";
    for (int i = 0; i < 17; ++i)
        many += "trigger=f" + std::to_string(i) + "\n";
    expectError(many, "more than 16 triggers");
}

using Pair = auxscope::test_support::SocketPair;

std::optional<Message> readOne(MessageReader& r) {
    while (true) {
        if (auto m = r.next()) return m;
        if (!r.fill(true)) return r.next();
    }
}

std::string reasonOf(const Message& m) {
    auto kv = parseKeyValues(m.payload);
    if (!kv) return m.payload;
    auto r = singleValue(*kv, "reason");
    return r && *r ? **r : m.payload;
}

// A helper serving `user` on a thread.
struct Served {
    Pair pair;
    std::thread thread;
    std::unique_ptr<MessageReader> reader;
    explicit Served(uid_t user) {
        HelperConfig c;
        c.user = user;
        thread = std::thread([this, c] { serveCaptureHelper(pair.a, c); });
        reader = std::make_unique<MessageReader>(pair.b);
        auto ready = readOne(*reader);
        EXPECT_TRUE(ready && ready->type == MsgType::Ready);
    }
    ~Served() {
        shutdown(pair.b, SHUT_WR);
        thread.join();
    }
    void send(MsgType t, const std::string& payload = {}, int fd = -1) {
        ASSERT_TRUE(sendMessage(pair.b, Message{t, payload, fd}).ok());
    }
    std::optional<Message> next() {
        while (auto m = readOne(*reader))
            if (m->type != MsgType::Stats) return m;
        return std::nullopt;
    }
};

// The helper runs as root for nobody: a copy of trigger_prog with mode 0700,
// owned by root, is refused (nobody may not read it) before the capture starts;
// trigger_prog itself (mode 0755) is armed and fires.
TEST(TriggerHelperServe, UnreadableBinaryIsRefusedForTheServedUser) {
    if (geteuid() != 0) GTEST_SKIP() << "not root: the helper cannot serve another user here";
    if (auto reason = perfCaptureUnavailableReason()) GTEST_SKIP() << "perf capture unavailable: " << *reason;
    if (!std::filesystem::exists("/sys/bus/event_source/devices/uprobe/type"))
        GTEST_SKIP() << "uprobes are not available";
    const passwd* nobody = getpwnam("nobody");
    if (!nobody) GTEST_SKIP() << "no user nobody";
    const uid_t user = nobody->pw_uid;
    const std::string dir = ::testing::TempDir() + "trigger-helper-" + std::to_string(getpid());
    std::filesystem::create_directories(dir);
    ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
    const std::string locked = dir + "/locked_prog";
    std::filesystem::copy_file(kProg, locked, std::filesystem::copy_options::overwrite_existing);
    ASSERT_EQ(chown(locked.c_str(), 0, 0), 0);
    ASSERT_EQ(chmod(locked.c_str(), 0700), 0);

    // The resolver alone, for that user and for root.
    TriggerResolveOptions ro;
    ro.readableBy = user;
    auto refused = resolveTrigger(*parseTriggerSpec("handle@" + locked), ro);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("cannot read '" + locked + "' as uid " + std::to_string(user)),
              std::string::npos)
        << refused.error().message;
    EXPECT_NE(refused.error().message.find("mode 0700"), std::string::npos) << refused.error().message;
    ro.readableBy = 0;
    EXPECT_TRUE(resolveTrigger(*parseTriggerSpec("handle@" + locked), ro));

    auto outFile = [&](const std::string& name) {
        const std::string path = dir + "/" + name;
        std::remove(path.c_str());
        const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        EXPECT_GE(fd, 0);
        EXPECT_EQ(fchown(fd, user, nobody->pw_gid), 0);
        return fd;
    };
    {
        Served h(user);
        h.send(MsgType::Hello, "version=1\n");
        const int fd = outFile("refused.data");
        h.send(MsgType::File, {}, fd);
        close(fd);
        h.send(MsgType::Start,
               "target=system\nevent=cpu-clock\noverwrite=1\ntrigger=handle@" + locked + "\n");
        auto m = h.next();
        ASSERT_TRUE(m);
        ASSERT_EQ(int(m->type), int(MsgType::Rejected)) << m->payload;
        const std::string why = reasonOf(*m);
        EXPECT_NE(why.find("Start: trigger 'handle@" + locked + "': cannot read '" + locked + "' as uid " +
                           std::to_string(user)),
                  std::string::npos)
            << why;
    }
    {
        // A binary nobody may read: armed, the command runs as nobody and fires.
        Served h(user);
        h.send(MsgType::Hello, "version=1\n");
        const int fd = outFile("fired.data");
        h.send(MsgType::File, {}, fd);
        close(fd);
        h.send(MsgType::Start,
               std::string("target=command\narg=") + kProg +
                   "\narg=marker\narg=3\ncwd=/\nevent=cpu-clock\noverwrite=1\ntrigger=marker\n");
        auto started = h.next();
        ASSERT_TRUE(started);
        ASSERT_EQ(int(started->type), int(MsgType::Started)) << reasonOf(*started);
        auto fin = h.next();
        ASSERT_TRUE(fin);
        ASSERT_EQ(int(fin->type), int(MsgType::Finished)) << fin->payload;
        auto rep = decodeFinished(fin->payload);
        ASSERT_TRUE(rep.ok());
        EXPECT_TRUE(rep->summary.commandExited);
        EXPECT_GE(rep->summary.snapshots, 1u) << "the marker's firings took snapshots";
    }
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace auxscope::helper
