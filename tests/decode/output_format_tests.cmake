# SPDX-License-Identifier: GPL-3.0-or-later
# Output at decode speed (issue 34): LineBuffer against snprintf, chunks written
# in order on threads, and `auxscope decode --format spans|insn|ranges` / `export
# --format csv` byte for byte as before on a ptsynth trace and the shared traces
# (read in place from AUXSCOPE_TEST_DATA_DIR; skipped without it, failed where CI=true).
add_executable(output_format_tests ${CMAKE_CURRENT_LIST_DIR}/OutputFormatTest.cpp)
target_link_libraries(output_format_tests PRIVATE auxscope_decode auxscope_test_data GTest::gtest_main)
target_compile_definitions(output_format_tests PRIVATE AUXSCOPE_TEST_BINARY="$<TARGET_FILE:auxscope>"
  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>")
add_dependencies(output_format_tests auxscope auxscope-ptsynth)
gtest_discover_tests(output_format_tests TEST_PREFIX "output_format_tests." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 180)
