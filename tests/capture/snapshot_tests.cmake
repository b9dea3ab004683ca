# SPDX-License-Identifier: GPL-3.0-or-later
# Flight-recorder (snapshot) mode over simulated AUX CPUs: exact snapshots with
# wrapping and free-running heads, zero-scan after a LOST, consistency under a
# running producer, one AUXTRACE per CPU and snapshot in perf.data (perf report -D
# as the oracle where perf is installed), the control FIFO and SIGUSR2.
add_executable(snapshot_tests
  ${CMAKE_CURRENT_LIST_DIR}/SnapshotTest.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/decode/WriterTestSupport.cpp
)
target_include_directories(snapshot_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/decode)
target_link_libraries(snapshot_tests PRIVATE auxscope_capture auxscope_decode GTest::gtest_main)
gtest_discover_tests(snapshot_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

# The command line: a replayed Intel PT trace as the flight recorder, snapshots
# asked for through the control FIFO and SIGUSR2, the capture stopped through the
# FIFO; --snapshot=e adds the one at the end. Needs the shared traces
# (AUXSCOPE_TEST_DATA_DIR; skipped without them, failed where CI=true).
set(_snapshot_skylake "${AUXSCOPE_TEST_DATA_DIR}/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14")
set(_snapshot_cli [=[
set -e
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
mkfifo "$d/ctl" "$d/ack"
"$1" record --replay "$2" --replay-loop --snapshot=e --control "fifo:$d/ctl,$d/ack" --duration 30 \
  -o "$d/s.data" > "$d/out.txt" 2>&1 &
pid=$!
exec 3>"$d/ctl" 4<"$d/ack"
echo ping >&3; read -r a <&4  # the capture runs
sleep 1  # the replay loops through the file (about 3 ms a pass) into the flight recorder
echo snapshot >&3; read -r a <&4; echo "snapshot: $a"
kill -USR2 $pid
sleep 0.5  # the handler runs when the kernel schedules one of its threads
echo ping >&3; read -r a <&4; echo "ping: $a"
echo evlist >&3; read -r a <&4; echo "evlist: $a"
echo stop >&3; read -r a <&4; echo "stop: $a"
wait $pid
cat "$d/out.txt"
"$1" info "$d/s.data" | grep 'AUXTRACE buffers'
]=])
auxscope_add_data_test(NAME cli_record_snapshot_control_fifo
  COMMAND sh -c "${_snapshot_cli}" sh $<TARGET_FILE:auxscope> ${_snapshot_skylake})
set_tests_properties(cli_record_snapshot_control_fifo PROPERTIES TIMEOUT 60
  PASS_REGULAR_EXPRESSION "snapshot: ack\nping: ack\nevlist: error: 'evlist' is not supported[^\n]*\nstop: ack\n.*AUX snapshots: 3 taken, [1-9][0-9]* copies.*cpu 3 [1-9].*control FIFO [^\n]*: 5 commands, 4 acked, 1 refused.*AUXTRACE buffers: [1-9]")
# Refused while parsing, before the file is opened: runs without the data.
add_test(NAME cli_record_snapshot_bad_size COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> record --replay ${_snapshot_skylake} -S12Q)
set_tests_properties(cli_record_snapshot_bad_size PROPERTIES PASS_REGULAR_EXPRESSION "bad snapshot size '12Q'")
auxscope_expect_exit(cli_record_snapshot_bad_size)
auxscope_add_data_test(NAME cli_record_control_missing_fifo
  COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> record --replay ${_snapshot_skylake} -S
          --control fifo:/nonexistent/auxscope-ctl)
set_tests_properties(cli_record_control_missing_fifo PROPERTIES
  PASS_REGULAR_EXPRESSION "control FIFO '/nonexistent/auxscope-ctl': No such file or directory")
auxscope_expect_exit(cli_record_control_missing_fifo)
add_test(NAME cli_record_snapshot_help COMMAND auxscope record --help)
set_tests_properties(cli_record_snapshot_help PROPERTIES
  PASS_REGULAR_EXPRESSION "-S, --snapshot\\[=\\[e\\]SIZE\\].*--control fifo:CTL\\[,ACK\\]")
