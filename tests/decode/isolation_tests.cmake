# SPDX-License-Identifier: GPL-3.0-or-later
# Decoding survives its libraries (decode/spans/IsolatedDecode.h): the OpenCSD
# crash input in a perf.data (library and command line), a hang test double, and
# the same decode with and without isolation (ptsynth, shared PT and ETM files).
add_executable(decoder_isolation_tests
  ${CMAKE_CURRENT_LIST_DIR}/DecoderIsolationTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/OpenCsdCrashFile.cpp
)
target_link_libraries(decoder_isolation_tests PRIVATE auxscope_decode auxscope_etmsnap auxscope_test_data GTest::gtest_main)
target_compile_definitions(decoder_isolation_tests PRIVATE
  AUXSCOPE_TEST_BINARY="$<TARGET_FILE:auxscope>"
  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
  AUXSCOPE_OPENCSD_CRASH_INPUT="${CMAKE_SOURCE_DIR}/tests/fuzz/opencsd-1.3.3-crashes/etmv4-mispredict-atom.bin")
add_dependencies(decoder_isolation_tests auxscope auxscope-ptsynth)
gtest_discover_tests(decoder_isolation_tests TEST_PREFIX "decoder_isolation_tests." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 180)
