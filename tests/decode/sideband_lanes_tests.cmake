# SPDX-License-Identifier: GPL-3.0-or-later
# The sideband lanes of real captures (include()d by tests/CMakeLists.txt):
# sched_switch tracepoints recorded with perf and with auxscope (checked against
# perf script), capture health from auxscope's statistics, CPU notes of a -C 0
# capture. Serial: it captures system-wide.
add_executable(sideband_lanes_tests ${CMAKE_CURRENT_LIST_DIR}/SidebandLanesTest.cpp)
target_link_libraries(sideband_lanes_tests PRIVATE auxscope_decode GTest::gtest_main)
add_dependencies(sideband_lanes_tests auxscope tl_workload)
target_compile_definitions(sideband_lanes_tests PRIVATE AUXSCOPE_BINARY="$<TARGET_FILE:auxscope>"
                                                        AUXSCOPE_TL_WORKLOAD="$<TARGET_FILE:tl_workload>")
gtest_discover_tests(sideband_lanes_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 120)

# Sideband::Builder over records in file order that is not time order (fork / exec / mmap across CPUs).
add_executable(sideband_order_tests ${CMAKE_CURRENT_LIST_DIR}/SidebandOrderTest.cpp)
target_link_libraries(sideband_order_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(sideband_order_tests DISCOVERY_TIMEOUT 30)

# LiveSideband and the allocator (issue 28): a tick, a rebuild and a reader's drop of
# a snapshot allocate / free no block per record, thread or mapping (operator new
# counted; records made in memory, no capture).
add_executable(live_sideband_alloc_tests ${CMAKE_CURRENT_LIST_DIR}/LiveSidebandAllocTest.cpp)
target_link_libraries(live_sideband_alloc_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(live_sideband_alloc_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)
