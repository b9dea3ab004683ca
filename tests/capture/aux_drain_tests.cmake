# SPDX-License-Identifier: GPL-3.0-or-later
# The drain thread over simulated AUX CPUs: AUX bytes delivered exactly once, the
# AUX event re-enabled after every disable, flags counted, and the bytes written
# to perf.data as PERF_RECORD_AUXTRACE (perf, where installed, as the oracle).
add_executable(aux_drain_tests
  ${CMAKE_CURRENT_LIST_DIR}/AuxDrainTest.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/decode/WriterTestSupport.cpp
)
target_include_directories(aux_drain_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/decode)
target_link_libraries(aux_drain_tests PRIVATE auxscope_capture auxscope_decode GTest::gtest_main)
gtest_discover_tests(aux_drain_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)
