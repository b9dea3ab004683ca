# SPDX-License-Identifier: GPL-3.0-or-later
# Range statistics (include()d by tests/CMakeLists.txt): spans/RangeStats on
# hand-made spans, and `auxscope report` end to end.
add_executable(range_stats_tests ${CMAKE_CURRENT_LIST_DIR}/RangeStatsTest.cpp)
target_link_libraries(range_stats_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(range_stats_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

# `auxscope report` on a generated trace: text, csv and json parse and agree.
add_executable(report_cli_tests ${CMAKE_CURRENT_LIST_DIR}/ReportCliTest.cpp)
target_link_libraries(report_cli_tests PRIVATE Qt6::Core auxscope_test_data GTest::gtest_main)
add_dependencies(report_cli_tests auxscope auxscope-ptsynth)
target_compile_definitions(report_cli_tests PRIVATE
  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>" AUXSCOPE_BIN="$<TARGET_FILE:auxscope>")
gtest_discover_tests(report_cli_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

# No crash on real traces: perf's Skylake Intel PT file, simpleperf's CoreSight file.
set(_report_skylake "${AUXSCOPE_TEST_DATA_DIR}/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14")
auxscope_add_data_test(NAME cli_report_skylake COMMAND sh -c
  "$<TARGET_FILE:auxscope> report '${_report_skylake}' --tree --top 10 2>&1; echo exit=$?")
set_tests_properties(cli_report_skylake PROPERTIES PASS_REGULAR_EXPRESSION
  "Intel PT, range .*gaps: missing image: [1-9].*top functions by self.*call tree.*exit=0")
set(_report_etm "${AUXSCOPE_TEST_DATA_DIR}/coresight/simpleperf-etm")
auxscope_add_data_test(NAME cli_report_coresight COMMAND sh -c
  "$<TARGET_FILE:auxscope> report '${_report_etm}/perf_etm.data' --symfs '${_report_etm}/symfs' --tree --format json 2>&1; echo exit=$?")
set_tests_properties(cli_report_coresight PROPERTIES PASS_REGULAR_EXPRESSION
  "\"trace\":\"CoreSight ETM\".*\"instructions\":944,.*\"functions\":\\[\\{.*\"tree\":\\[.*exit=0")
add_test(NAME cli_report_bad_file COMMAND sh -c
  "printf 'not a perf file' > /tmp/auxscope-report-bad.data; $<TARGET_FILE:auxscope> report /tmp/auxscope-report-bad.data; echo exit=$?")
set_tests_properties(cli_report_bad_file PROPERTIES PASS_REGULAR_EXPRESSION
  "auxscope report: .*auxscope-report-bad.data.*exit=1")

# Golden: the range statistics of decoded auxscope-ptsynth traces equal the
# generator's truth (calls, self and total instructions per function, whole
# trace and ranges between PSBs), and single-stepped programs' call trees equal
# the truth's.
add_executable(range_stats_golden_tests ${CMAKE_CURRENT_LIST_DIR}/RangeStatsGoldenTest.cpp)
target_link_libraries(range_stats_golden_tests PRIVATE auxscope_ptsynth auxscope_decode auxscope_test_data GTest::gtest_main)
add_dependencies(range_stats_golden_tests auxscope-ptsynth ptsynth_prog_fib ptsynth_prog_signals
                 ptsynth_prog_exceptions)
target_compile_definitions(range_stats_golden_tests PRIVATE
  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
  AUXSCOPE_PTSYNTH_FIB="$<TARGET_FILE:ptsynth_prog_fib>"
  AUXSCOPE_PTSYNTH_SIGNALS="$<TARGET_FILE:ptsynth_prog_signals>"
  AUXSCOPE_PTSYNTH_EXCEPTIONS="$<TARGET_FILE:ptsynth_prog_exceptions>")
gtest_discover_tests(range_stats_golden_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 300)

# Spans in pre-order and the frames found running (FlowToSpans, SpanStore, RangeStats).
add_executable(flow_to_spans_order_tests ${CMAKE_CURRENT_LIST_DIR}/FlowToSpansOrderTest.cpp)
target_link_libraries(flow_to_spans_order_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(flow_to_spans_order_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)

# spans/RangeCompare on hand-made call trees.
add_executable(range_compare_tests ${CMAKE_CURRENT_LIST_DIR}/RangeCompareTest.cpp)
target_link_libraries(range_compare_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(range_compare_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)
