# SPDX-License-Identifier: GPL-3.0-or-later
# perf.data reader tests (include()d by tests/CMakeLists.txt).
#
# The real traces are read in place from AUXSCOPE_TEST_DATA_DIR (../shared/data,
# tests/support/test_data.cmake); without them those tests skip with a line saying so.
add_library(reader_test_support STATIC ${CMAKE_CURRENT_LIST_DIR}/ReaderTestSupport.cpp)
target_include_directories(reader_test_support PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(reader_test_support PUBLIC auxscope_decode auxscope_test_data GTest::gtest)

# Fast and self-contained: the parser, hand-built files, damaged copies of the shared traces.
add_executable(reader_unit_tests
  ${CMAKE_CURRENT_LIST_DIR}/ReaderRecordParserTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ReaderSyntheticTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ReaderCorruptionTest.cpp
)
target_link_libraries(reader_unit_tests PRIVATE reader_test_support auxscope_decode PkgConfig::zstd GTest::gtest_main)
gtest_discover_tests(reader_unit_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

# With perf as the oracle: the shared traces, and files perf writes here.
add_executable(reader_perf_tests
  ${CMAKE_CURRENT_LIST_DIR}/ReaderSharedDataTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ReaderPerfRecordTest.cpp
)
target_link_libraries(reader_perf_tests PRIVATE reader_test_support auxscope_decode GTest::gtest_main)
gtest_discover_tests(reader_perf_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

# `auxscope info` on the shared traces, end to end.
set(_reader_cs "${AUXSCOPE_TEST_DATA_DIR}/coresight/simpleperf-etm")
auxscope_add_data_test(NAME cli_info_intel_pt COMMAND auxscope info
  "${AUXSCOPE_TEST_DATA_DIR}/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14")
set_tests_properties(cli_info_intel_pt PROPERTIES PASS_REGULAR_EXPRESSION
  "#0 intel_pt//: type 6 \\(intel_pt\\).*records: 257 .*losses:.*none recorded.*cpu 0: 1 records, 12240 bytes announced; AUX flags: truncated 0, partial 0, collision 0, overwrite 0.*AUXTRACE buffers: 2, 149968 bytes.*cpu 0 idx 0 tid 3174 size 12240.*cpu 3 idx 3 tid 3174 size 137728.*problems: 0 errors, 0 warnings")
auxscope_add_data_test(NAME cli_info_coresight_truncated COMMAND auxscope info "${_reader_cs}/perf_kernel.data")
set_tests_properties(cli_info_coresight_truncated PROPERTIES PASS_REGULAR_EXPRESSION
  "#0 cs-etm: type 8.*losses:.*cpu 0: AUX truncated 1.*cpu 6: AUX truncated 1.*AUX flags: truncated 1, partial 0, collision 0, overwrite 0.*flags truncated.*AUXTRACE buffers: 3, 39200 bytes")
auxscope_add_data_test(NAME cli_info_missing_aux_data COMMAND ${AUXSCOPE_EXPECT_EXIT} 1 $<TARGET_FILE:auxscope> info "${_reader_cs}/perf_with_missing_aux_data.data")
set_tests_properties(cli_info_missing_aux_data PROPERTIES PASS_REGULAR_EXPRESSION
  "losses:.*simpleperf record_stat: sample_record_count=0.*AUX records announce 1535344 bytes of trace \\(cpu 4, 7\\) but the file holds no AUXTRACE record: the AUX data is missing.*problems: 1 errors.*error: [^\n]*perf_with_missing_aux_data.data: offset 3224 \\(0xc98\\)")
auxscope_expect_exit(cli_info_missing_aux_data)
auxscope_add_data_test(NAME cli_info_json COMMAND auxscope info --json "${_reader_cs}/perf_kernel.data")
set_tests_properties(cli_info_json PROPERTIES PASS_REGULAR_EXPRESSION
  "^\\{\"file\":.*\"cpu\":6,.*\"aux\":\\{\"records\":2,\"bytes\":22832,\"truncated\":1,\"partial\":0,\"collision\":0,\"overwrite\":0,\"coresight_raw\":0\\}.*\"issues\":\\[\\]\\}")
auxscope_add_data_test(NAME cli_info_not_perf_data COMMAND ${AUXSCOPE_EXPECT_EXIT} 1 $<TARGET_FILE:auxscope> info "${_reader_cs}/perf_inject.data")
set_tests_properties(cli_info_not_perf_data PROPERTIES PASS_REGULAR_EXPRESSION
  "perf_inject.data: offset 0 \\(0x0\\): not a perf.data file: wrong magic")
auxscope_expect_exit(cli_info_not_perf_data)
add_test(NAME cli_info_usage COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> info)
set_tests_properties(cli_info_usage PROPERTIES PASS_REGULAR_EXPRESSION "usage: auxscope info")
auxscope_expect_exit(cli_info_usage)

include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/reader_fuzz.cmake)

# AUX bytes missing from the file (issue 16): the reader's accounting per AUX
# area, `auxscope info`, and the Intel PT decode's lost-AUX gaps.
add_executable(reader_aux_gap_tests ${CMAKE_CURRENT_LIST_DIR}/ReaderAuxGapsTest.cpp)
add_dependencies(reader_aux_gap_tests auxscope)
target_compile_definitions(reader_aux_gap_tests PRIVATE AUXSCOPE_BIN="$<TARGET_FILE:auxscope>")
target_link_libraries(reader_aux_gap_tests PRIVATE reader_test_support auxscope_decode PkgConfig::zstd
                                                   GTest::gtest_main)
gtest_discover_tests(reader_aux_gap_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 180)
