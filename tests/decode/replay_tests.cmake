# SPDX-License-Identifier: GPL-3.0-or-later
# The replay source (include()d by tests/CMakeLists.txt): the shared real traces
# replayed through the simulated producers and the drain thread into perf.data,
# checked byte for byte and against perf report -D. perf is required. Without the
# shared data (AUXSCOPE_TEST_DATA_DIR) the tests that replay it skip, or fail where
# CI=true (tests/support/test_data.cmake).
add_executable(replay_tests
  ${CMAKE_CURRENT_LIST_DIR}/ReplayTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/WriterTestSupport.cpp
)
target_link_libraries(replay_tests PRIVATE auxscope_decode auxscope_test_data GTest::gtest_main)
gtest_discover_tests(replay_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

# The command line: a replay at max speed into a file, summarised as JSON; --help.
set(_replay_skylake "${AUXSCOPE_TEST_DATA_DIR}/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14")
auxscope_add_data_test(NAME cli_record_replay_json COMMAND sh -c
  "set -e; d=$(mktemp -d); $<TARGET_FILE:auxscope> record --replay ${_replay_skylake} --replay-speed max \
   -o $d/r.data --json; $<TARGET_FILE:auxscope> info $d/r.data | grep 'AUXTRACE buffers'; rm -rf $d")
set_tests_properties(cli_record_replay_json PROPERTIES TIMEOUT 60
  PASS_REGULAR_EXPRESSION "\"target\":\"replay of [^\"]*perf.data.intel_pt-4.14\".*\"replay\":\\{[^}]*\"aux_bytes_fed\":149968,\"aux_bytes_total\":149968.*AUXTRACE buffers: [0-9]+, 149968 bytes")
auxscope_add_data_test(NAME cli_record_replay_text COMMAND auxscope record --replay ${_replay_skylake} --replay-speed 0.1)
set_tests_properties(cli_record_replay_text PROPERTIES TIMEOUT 60
  PASS_REGULAR_EXPRESSION "auxscope record: replay of [^\n]*perf.data.intel_pt-4.14, events: intel_pt//.*replay: [^\n]*0.1x recorded speed[^\n]*149968 of 149968 AUX bytes")
add_test(NAME cli_record_replay_help COMMAND auxscope record --help)
set_tests_properties(cli_record_replay_help PROPERTIES
  PASS_REGULAR_EXPRESSION "--replay FILE.*--replay-speed.*--replay-loop")
# Refused while parsing, before the file is opened: runs without the data.
add_test(NAME cli_record_replay_bad_speed COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> record --replay ${_replay_skylake} --replay-speed fast)
set_tests_properties(cli_record_replay_bad_speed PROPERTIES
  PASS_REGULAR_EXPRESSION "bad replay speed 'fast'")
auxscope_expect_exit(cli_record_replay_bad_speed)
auxscope_add_data_test(NAME cli_record_replay_no_aux COMMAND ${AUXSCOPE_EXPECT_EXIT} 1 $<TARGET_FILE:auxscope> record
  --replay ${AUXSCOPE_TEST_DATA_DIR}/coresight/simpleperf-etm/perf_with_missing_aux_data.data)
set_tests_properties(cli_record_replay_no_aux PROPERTIES
  PASS_REGULAR_EXPRESSION "perf_with_missing_aux_data.data: offset [0-9]+: nothing to replay: the file holds no AUX trace data")
auxscope_expect_exit(cli_record_replay_no_aux)
