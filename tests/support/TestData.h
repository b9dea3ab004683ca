// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The real trace data the golden tests read in place: ../shared/data beside the
// clone, or wherever the CMake cache variable AUXSCOPE_TEST_DATA_DIR points
// (tests/support/test_data.cmake; link auxscope_test_data). A person who cloned
// the repository without it gets those tests skipped with one line naming the
// folder; with CI=true or AUXSCOPE_REQUIRE_TEST_DATA=1 in the environment its
// absence fails them instead, so CI can never pass by skipping.
//
// At the top of a GoogleTest body (or its fixture's SetUp):  AUXSCOPE_NEED_TEST_DATA();
// at the top of a QtTest slot (or initTestCase):              AUXSCOPE_QNEED_TEST_DATA();
// The command-line tests in CMake go through auxscope_add_data_test(), which says the same.
#include <string>

namespace auxscope::test_support {

// The configured folder, whether or not it exists.
const std::string& testDataDir();
// testDataDir() + "/" + rel.
std::string testDataPath(const std::string& rel);
// Empty when the folder is there. Otherwise the one line to print:
// "skipped: test data folder DIR is missing (clone shared/ beside the repo; see README)",
// or "failed: ... ; CI=true requires it" when testDataRequired().
std::string testDataMissingLine();
// CI=true or AUXSCOPE_REQUIRE_TEST_DATA=1 in the environment: a missing folder is a failure.
bool testDataRequired();

}  // namespace auxscope::test_support

// GoogleTest: skips the test (or fails it where the data is required) when the folder is missing.
#define AUXSCOPE_NEED_TEST_DATA()                                                                  \
    do {                                                                                           \
        if (const std::string auxscope_missing_ = ::auxscope::test_support::testDataMissingLine(); \
            !auxscope_missing_.empty()) {                                                          \
            if (::auxscope::test_support::testDataRequired()) GTEST_FAIL() << auxscope_missing_;   \
            GTEST_SKIP() << auxscope_missing_;                                                     \
        }                                                                                          \
    } while (0)

// QtTest: the same with QSKIP / QFAIL (in initTestCase it covers every slot).
#define AUXSCOPE_QNEED_TEST_DATA()                                                                 \
    do {                                                                                           \
        if (const std::string auxscope_missing_ = ::auxscope::test_support::testDataMissingLine(); \
            !auxscope_missing_.empty()) {                                                          \
            if (::auxscope::test_support::testDataRequired()) QFAIL(auxscope_missing_.c_str());    \
            QSKIP(auxscope_missing_.c_str());                                                      \
        }                                                                                          \
    } while (0)
