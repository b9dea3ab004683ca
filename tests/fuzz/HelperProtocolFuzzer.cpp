// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for the privileged capture helper's protocol (issue 17):
// what the user's GUI sends, a root helper reads. The first byte picks what the
// rest is:
//   0: a Start payload for parseStartRequest (and, when accepted, its
//      re-encoding must parse to the same options);
//   1: a Stats or Finished payload the GUI decodes;
//   2: a byte stream cut into reads of the second byte's size, through
//      MessageReader (every message's key=value payload parsed);
//   3: a byte stream served by a real helper on a socket pair (no descriptor
//      can come with it, so no capture starts: every path up to that point).
// Refusals must be values with a reason; nothing may crash or hang.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include "CaptureHelper.h"
#include "HelperProtocol.h"

using namespace auxscope;
using namespace auxscope::helper;

namespace {

void drain(int fd) {
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const uint8_t mode = data[0] % 4;
    const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
    StartLimits limits;
    limits.cpuCount = 8;
    switch (mode) {
        case 0: {
            auto o = parseStartRequest(rest, limits);
            if (o) {
                auto again = parseStartRequest(encodeStartRequest(*o), limits);
                if (!again || again->events != o->events || again->command != o->command ||
                    again->cpus != o->cpus || again->target != o->target || again->dataPages != o->dataPages)
                    std::abort();  // what was accepted must survive its own encoding
            } else if (o.error().message.empty()) {
                std::abort();  // a refusal names its reason
            }
            break;
        }
        case 1: {
            (void)decodeStats(rest);
            (void)decodeFinished(rest);
            break;
        }
        case 2: {
            if (rest.empty()) break;
            const size_t piece = 1 + uint8_t(rest[0]) % 64;
            int sv[2];
            if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) break;
            MessageReader reader(sv[1]);
            for (size_t pos = 1; pos < rest.size(); pos += piece) {
                const size_t n = std::min(piece, rest.size() - pos);
                if (write(sv[0], rest.data() + pos, n) != ssize_t(n)) break;
                reader.fill(true);
                while (auto m = reader.next()) {
                    if (m->fd >= 0) close(m->fd);
                    (void)parseKeyValues(m->payload);
                }
                if (reader.ended()) break;
            }
            close(sv[0]);
            while (reader.fill(true))
                while (auto m = reader.next())
                    if (m->fd >= 0) close(m->fd);
            close(sv[1]);
            break;
        }
        case 3: {
            int sv[2];
            if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) break;
            HelperConfig config;
            config.user = getuid();
            config.limits = limits;
            std::thread helper([&] { serveCaptureHelper(sv[0], config); });
            std::thread reader([&] { drain(sv[1]); });
            (void)!write(sv[1], rest.data(), rest.size());
            shutdown(sv[1], SHUT_WR);
            helper.join();
            shutdown(sv[0], SHUT_RDWR);
            reader.join();
            close(sv[0]);
            close(sv[1]);
            break;
        }
    }
    return 0;
}
