# SPDX-License-Identifier: GPL-3.0-or-later
# Arm SPE decode (include()d by tests/CMakeLists.txt). ctest names start with spe_
# (ctest -R spe): packets, records, gaps, AUXTRACE_INFO v1/v2 and whole files
# built in the test (SpeTestFile.h); their packet listing against perf report -D
# (Debian's perf 6.1 as the oracle; skipped with the reason where perf is missing).
add_executable(spe_decoder_tests
  ${CMAKE_CURRENT_LIST_DIR}/SpeDecoderTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SpeTestFile.cpp
  ${CMAKE_CURRENT_LIST_DIR}/WriterTestSupport.cpp
)
target_link_libraries(spe_decoder_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(spe_decoder_tests TEST_PREFIX "spe_decoder_tests." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)
