# SPDX-License-Identifier: GPL-3.0-or-later
# perf.data writer tests (include()d by tests/CMakeLists.txt). Debian's perf, where
# installed, reads the files as an oracle; without it those checks skip.

# No kernel capture: queue, drop accounting, layout, features, AUXTRACE, -z.
add_executable(writer_unit_tests
  ${CMAKE_CURRENT_LIST_DIR}/WriterUnitTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/WriterTestSupport.cpp
)
target_link_libraries(writer_unit_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(writer_unit_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)

# The workload the capture tests launch: spins in its own code and makes syscalls.
add_executable(writer_spin ${CMAKE_CURRENT_LIST_DIR}/WriterSpin.cpp)
target_compile_options(writer_spin PRIVATE -O1)

# Real captures written to perf.data and read back by perf; the auxscope binary
# for the command-line cases (SIGKILL, full disk). Serial: they capture system-wide.
add_executable(writer_kernel_tests
  ${CMAKE_CURRENT_LIST_DIR}/WriterCaptureTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/WriterTestSupport.cpp
)
target_link_libraries(writer_kernel_tests PRIVATE auxscope_decode GTest::gtest_main)
target_compile_definitions(writer_kernel_tests PRIVATE
  AUXSCOPE_TEST_BINARY="$<TARGET_FILE:auxscope>"
  AUXSCOPE_TEST_SPIN="$<TARGET_FILE:writer_spin>")
add_dependencies(writer_kernel_tests auxscope writer_spin)
gtest_discover_tests(writer_kernel_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 120)

# AUXTRACE_INFO private blocks (Intel PT, CoreSight): round trips, files perf -D
# reads back, and the shared traces' blocks (AUXSCOPE_TEST_DATA_DIR) against perf's own dump of them.
add_executable(auxtrace_info_tests
  ${CMAKE_CURRENT_LIST_DIR}/AuxtraceInfoTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CaptureAuxtraceInfoTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/WriterTestSupport.cpp
)
target_link_libraries(auxtrace_info_tests PRIVATE auxscope_decode auxscope_test_data GTest::gtest_main)
gtest_discover_tests(auxtrace_info_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)
