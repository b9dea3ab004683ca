// SPDX-License-Identifier: GPL-3.0-or-later
// Where the real trace data is and what to say when it is not there. The folder
// is compiled into this one file only, so pointing AUXSCOPE_TEST_DATA_DIR
// elsewhere rebuilds nothing else. tests/support/with_test_data.sh says the same
// for the command-line tests; keep the two lines alike.
#include "TestData.h"

#include <strings.h>
#include <sys/stat.h>

#include <cstdlib>

#ifndef AUXSCOPE_TEST_DATA_DIR
#error "AUXSCOPE_TEST_DATA_DIR must be defined (tests/support/test_data.cmake)"
#endif

namespace auxscope::test_support {

namespace {

bool envIs(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v && strcasecmp(v, value) == 0;
}

// Which setting makes the data required, as the line names it; empty when none does.
std::string requiredBy() {
    if (envIs("CI", "true") || envIs("CI", "1")) return "CI=true";
    if (envIs("AUXSCOPE_REQUIRE_TEST_DATA", "1") || envIs("AUXSCOPE_REQUIRE_TEST_DATA", "true"))
        return "AUXSCOPE_REQUIRE_TEST_DATA=1";
    return {};
}

}  // namespace

const std::string& testDataDir() {
    static const std::string dir = AUXSCOPE_TEST_DATA_DIR;
    return dir;
}

std::string testDataPath(const std::string& rel) {
    return testDataDir() + "/" + rel;
}

bool testDataRequired() {
    return !requiredBy().empty();
}

std::string testDataMissingLine() {
    struct stat st {};
    if (stat(testDataDir().c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};
    const std::string what =
        "test data folder " + testDataDir() + " is missing (clone shared/ beside the repo; see README)";
    const std::string by = requiredBy();
    return by.empty() ? "skipped: " + what : "failed: " + what + "; " + by + " requires it";
}

}  // namespace auxscope::test_support
