# SPDX-License-Identifier: GPL-3.0-or-later
# The backward (overwritable) data ring, the sideband flight recorder: hand-built
# rings, then the real kernel. Real-kernel tests skip (with the reason) only where
# perf_event_open is denied; run serially, they generate context switches.
add_executable(backward_ring_tests
  ${CMAKE_CURRENT_LIST_DIR}/BackwardRingTest.cpp
)
target_link_libraries(backward_ring_tests PRIVATE auxscope_capture GTest::gtest_main)
gtest_discover_tests(backward_ring_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 60)
