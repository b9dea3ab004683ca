# SPDX-License-Identifier: GPL-3.0-or-later
# The sideband flight recorder (record --overwrite) on the real kernel: records
# only at snapshots, oldest first, each once, overwritten history counted, the
# tail at stop, perf.data read back (perf report -D as the oracle where perf is
# installed); then the command line with a duration and with SIGUSR2. Skips only
# where perf_event_open is denied; serial, as they generate load.
add_executable(overwrite_capture_tests
  ${CMAKE_CURRENT_LIST_DIR}/OverwriteCaptureTest.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/decode/WriterTestSupport.cpp
)
target_include_directories(overwrite_capture_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/decode)
target_link_libraries(overwrite_capture_tests PRIVATE auxscope_capture auxscope_decode GTest::gtest_main)
gtest_discover_tests(overwrite_capture_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 60)

set(_overwrite_cli [=[
set -e
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
"$1" record --overwrite -e cpu-clock -a --duration 1 -o "$d/o.data"
"$1" info "$d/o.data"
]=])
add_test(NAME cli_record_overwrite COMMAND sh -c "${_overwrite_cli}" sh $<TARGET_FILE:auxscope>)
set_tests_properties(cli_record_overwrite PROPERTIES RUN_SERIAL TRUE TIMEOUT 30
  PASS_REGULAR_EXPRESSION "sideband flight recorder: 1 snapshots, [1-9][0-9]* records.*cpu 0: 1 snapshots, [1-9].*SAMPLE[^\n]*[1-9]")

set(_overwrite_usr2 [=[
set -e
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
"$1" record --overwrite -e cpu-clock -a --duration 2 -o "$d/o.data" > "$d/out.txt" 2>&1 &
pid=$!
sleep 0.7
kill -USR2 $pid
wait $pid
cat "$d/out.txt"
]=])
add_test(NAME cli_record_overwrite_sigusr2 COMMAND sh -c "${_overwrite_usr2}" sh $<TARGET_FILE:auxscope>)
set_tests_properties(cli_record_overwrite_sigusr2 PROPERTIES RUN_SERIAL TRUE TIMEOUT 30
  PASS_REGULAR_EXPRESSION "sideband flight recorder: 2 snapshots, [1-9][0-9]* records.*cpu 0: 2 snapshots")
add_test(NAME cli_record_overwrite_help COMMAND auxscope record --help)
set_tests_properties(cli_record_overwrite_help PROPERTIES PASS_REGULAR_EXPRESSION "--overwrite[^\n]*sideband flight recorder")
