# SPDX-License-Identifier: GPL-3.0-or-later
# The drain thread's bounds (issue 32): epoll_pwait2 missing or failing (injected
# through DrainThreadTesting.h) over real cpu-clock events, a sink that never frees
# room at stop, a launched command that ignores SIGTERM, records that do not parse.
# Real-kernel tests skip (with the reason) only where perf_event_open is denied;
# serial, as one measures the drain thread's CPU time.
add_executable(drain_bounds_tests
  ${CMAKE_CURRENT_LIST_DIR}/DrainBoundsTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelTestSupport.cpp
)
target_link_libraries(drain_bounds_tests PRIVATE auxscope_capture GTest::gtest_main)
gtest_discover_tests(drain_bounds_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 60)
