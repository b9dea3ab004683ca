# SPDX-License-Identifier: GPL-3.0-or-later
# Perfetto and CSV export. protoc (Debian protobuf-compiler) decodes exported
# traces against the Perfetto schema subset beside this file.
find_program(PROTOC_EXECUTABLE protoc REQUIRED)
add_executable(export_tests
  ${CMAKE_CURRENT_LIST_DIR}/ExportTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RoundTripTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../capture/KernelTestSupport.cpp
)
target_include_directories(export_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../capture)
# Decoded Intel PT spans: a ptsynth trace of fib (with its ground truth) and
# perf's Skylake recording read in place from AUXSCOPE_TEST_DATA_DIR (skipped without it).
add_dependencies(export_tests auxscope-ptsynth ptsynth_prog_fib)
target_compile_definitions(export_tests PRIVATE
  AUXSCOPE_PROTOC="${PROTOC_EXECUTABLE}"
  AUXSCOPE_PERFETTO_PROTO_DIR="${CMAKE_CURRENT_LIST_DIR}"
  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
  AUXSCOPE_PTSYNTH_FIB="$<TARGET_FILE:ptsynth_prog_fib>")
target_link_libraries(export_tests PRIVATE auxscope_decode auxscope_test_data GTest::gtest_main)
gtest_discover_tests(export_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 120)

# auxscope export on Intel PT: spans by default, per-thread slices and CSV rows.
add_test(NAME cli_export_pt_spans COMMAND sh -c
  "set -e; d=$(mktemp -d); '$<TARGET_FILE:auxscope-ptsynth>' -q --start main -o $d/fib.data -- '$<TARGET_FILE:ptsynth_prog_fib>'; \
   $<TARGET_FILE:auxscope> export $d/fib.data -o $d/fib.pftrace; \
   $<TARGET_FILE:auxscope> export $d/fib.data --format csv -o $d/fib.csv; \
   echo fib rows: $(grep -c '^span,.*,fib,' $d/fib.csv); \
   $<TARGET_FILE:auxscope> export $d/fib.data --no-decode -o $d/plain.pftrace; rm -rf $d")
set_tests_properties(cli_export_pt_spans PROPERTIES PASS_REGULAR_EXPRESSION
  "wrote .*fib.pftrace \\(perfetto\\): .*, 48[0-9] Intel PT spans in 1 threads \\(1 gaps; untraced 1\\).*fib rows: 465\n.*wrote .*plain.pftrace \\(perfetto\\): [^\n]*loss records\n")
set(_export_skylake "${AUXSCOPE_TEST_DATA_DIR}/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14")
auxscope_add_data_test(NAME cli_export_pt_missing_image COMMAND sh -c
  "set -e; test -f '${_export_skylake}'; d=$(mktemp -d); \
   $<TARGET_FILE:auxscope> export '${_export_skylake}' --cpu 0 -o $d/s.pftrace; rm -rf $d")
set_tests_properties(cli_export_pt_missing_image PROPERTIES PASS_REGULAR_EXPRESSION
  "wrote .*s.pftrace \\(perfetto\\): .* Intel PT spans in [1-9][0-9]* threads \\([1-9][0-9]* gaps;.*missing image [1-9]")

# The trace page's Intel PT decode (tests/app/MainWindowTest.cpp) opens the same ptsynth trace.
add_dependencies(app_mainwindow_tests auxscope-ptsynth ptsynth_prog_fib)
target_compile_definitions(app_mainwindow_tests PRIVATE
  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
  AUXSCOPE_PTSYNTH_FIB="$<TARGET_FILE:ptsynth_prog_fib>")
