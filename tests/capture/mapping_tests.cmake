# SPDX-License-Identifier: GPL-3.0-or-later
# MappedRegion, the RAII owner of one mmap'd region behind the perf rings: ownership on
# move, no double unmap, the failure message. Anonymous and file mappings only.
add_executable(capture_mapping_tests ${CMAKE_CURRENT_LIST_DIR}/MappedRegionTest.cpp)
target_link_libraries(capture_mapping_tests PRIVATE auxscope_capture GTest::gtest_main)
gtest_discover_tests(capture_mapping_tests TEST_PREFIX "capture_mapping." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)
