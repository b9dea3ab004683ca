# SPDX-License-Identifier: GPL-3.0-or-later
# `auxscope record -o` under faults (issue 17; include()d by tests/CMakeLists.txt):
# a launched command that exits at once, SIGTERM/SIGINT during a system-wide
# capture, a CPU going offline during one. Real kernel, software events; Debian's
# perf reads every file as the oracle. Serial: system-wide captures, and one
# takes a CPU offline for a second.
add_executable(record_fault_tests
  ${CMAKE_CURRENT_LIST_DIR}/RecordFaultTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../decode/WriterTestSupport.cpp
)
target_include_directories(record_fault_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../decode)
target_link_libraries(record_fault_tests PRIVATE auxscope_decode GTest::gtest_main)
target_compile_definitions(record_fault_tests PRIVATE AUXSCOPE_TEST_BINARY="$<TARGET_FILE:auxscope>")
add_dependencies(record_fault_tests auxscope)
gtest_discover_tests(record_fault_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 180)
