# SPDX-License-Identifier: GPL-3.0-or-later
# AUX ring readers against the simulated producer (and one real-kernel refusal).
add_executable(aux_ring_tests ${CMAKE_CURRENT_LIST_DIR}/AuxRingTest.cpp)
target_link_libraries(aux_ring_tests PRIVATE auxscope_capture GTest::gtest_main)
gtest_discover_tests(aux_ring_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)
