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

# Raw (unformatted) trace: the frame deformatter on hand-built frames and garbage
# (self-contained); every snapshot's formatted buffers deformatted per trace ID
# and decoded raw against the formatted decode; perf_etm.data written back as a
# raw-flagged perf.data (EtmRawPerfData.h) read by auxscope info and perf report -D.
add_executable(etm_raw_tests
  ${CMAKE_CURRENT_LIST_DIR}/etm_raw_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmRawPerfData.cpp
  ${CMAKE_CURRENT_LIST_DIR}/WriterTestSupport.cpp
)
target_link_libraries(etm_raw_tests PRIVATE auxscope_decode auxscope_test_data GTest::gtest_main)
target_compile_definitions(etm_raw_tests PRIVATE AUXSCOPE_TEST_BINARY="$<TARGET_FILE:auxscope>")
add_dependencies(etm_raw_tests auxscope)
gtest_discover_tests(etm_raw_tests TEST_PREFIX "etm_raw_tests." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/etm_fuzz.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/etm_perfdata_fuzz.cmake)

# `auxscope decode SNAPSHOT_DIR` end to end (app/cli/DecodeCommand.cpp).
set(_etm_snapshots "${AUXSCOPE_TEST_DATA_DIR}/coresight/opencsd-snapshots")
auxscope_add_data_test(NAME etm_cli_decode_snapshot_ranges COMMAND auxscope decode "${_etm_snapshots}/juno_r1_1")
set_tests_properties(etm_cli_decode_snapshot_ranges PROPERTIES PASS_REGULAR_EXPRESSION
  "# buffer ETB_0: cstrace.bin, coresight, 65536 bytes\n.*\n0x10 0xffffffc000096a00 0xffffffc000096a0c 4 A64\n.*ETB_0: trace ID 0x10: 6336 ranges, 38212 instructions")
auxscope_add_data_test(NAME etm_cli_decode_snapshot_packets COMMAND auxscope decode --format packets "${_etm_snapshots}/TC2")
set_tests_properties(etm_cli_decode_snapshot_packets PROPERTIES PASS_REGULAR_EXPRESSION
  "Idx:[0-9]+; ID:13;\t[A-Z_]+.*ID:10\tEND OF TRACE DATA.*note: ETB_0: trace source ITM_0 \\(ITM\\) is not decoded.*ETB_0: trace ID 0x13: [1-9][0-9]* packets")
auxscope_add_data_test(NAME etm_cli_decode_snapshot_bad_format COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> decode "${_etm_snapshots}/TC2" --format spans)
set_tests_properties(etm_cli_decode_snapshot_bad_format PROPERTIES PASS_REGULAR_EXPRESSION
  "--format spans: a snapshot decodes to ranges or packets")
auxscope_expect_exit(etm_cli_decode_snapshot_bad_format)
add_test(NAME etm_cli_decode_usage COMMAND auxscope decode --help)
set_tests_properties(etm_cli_decode_usage PROPERTIES PASS_REGULAR_EXPRESSION
  "auxscope decode SNAPSHOT_DIR \\[--format ranges\\|packets\\].*OpenCSD / DS-5 CoreSight trace snapshot")

# perf.data with cs_etm AUX (simpleperf's test files): ranges, perf script's branches, spans, loss, modules.
add_executable(etm_perfdata_tests ${CMAKE_CURRENT_LIST_DIR}/etm_perfdata_test.cpp)
target_link_libraries(etm_perfdata_tests PRIVATE auxscope_decode auxscope_test_data GTest::gtest_main)
gtest_discover_tests(etm_perfdata_tests TEST_PREFIX "etm_perfdata_tests." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)

# Decode cut at sync points (etm/EtmSyncIndex): a big buffer of repeated
# perf_etm.data copies, formatted and raw, decodes to the same ranges whole and
# cut at every A-sync, on several threads.
add_executable(etm_segment_tests
  ${CMAKE_CURRENT_LIST_DIR}/etm_segment_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmRawPerfData.cpp
)
target_link_libraries(etm_segment_tests PRIVATE auxscope_decode auxscope_etmsnap auxscope_test_data GTest::gtest_main)
gtest_discover_tests(etm_segment_tests TEST_PREFIX "etm_segment_tests." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)
