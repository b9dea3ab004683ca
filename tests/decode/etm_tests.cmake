# SPDX-License-Identifier: GPL-3.0-or-later
# CoreSight ETM/ETE decode (include()d by tests/CMakeLists.txt). ctest names
# start with etm_ (ctest -R etm):
#  - etm_unit_tests.*: the snapshot .ini parser and reader on hostile input, the
#    memory cache, decoder creation and garbage trace (self-contained);
#  - etm_snapshot_tests.*: every snapshot of coresight/opencsd-snapshots against
#    trc_pkt_lister (Debian libopencsd-bin), run in the test, read in place from
#    AUXSCOPE_TEST_DATA_DIR (skipped without it, failed where CI=true).
add_executable(etm_unit_tests ${CMAKE_CURRENT_LIST_DIR}/etm_ini_test.cpp)
target_link_libraries(etm_unit_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(etm_unit_tests TEST_PREFIX "etm_unit_tests." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)

add_executable(etm_snapshot_tests ${CMAKE_CURRENT_LIST_DIR}/etm_golden_test.cpp)
target_link_libraries(etm_snapshot_tests PRIVATE auxscope_decode auxscope_test_data GTest::gtest_main)
gtest_discover_tests(etm_snapshot_tests TEST_PREFIX "etm_snapshot_tests." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/etm_fuzz.cmake)
