# SPDX-License-Identifier: GPL-3.0-or-later
# Snapshot triggers (--trigger): the spec parser and resolver, and captures on the
# real kernel (uprobes, uretprobes, syscall tracepoints) of trigger_prog with the
# sideband flight recorder; then the command line and `auxscope info`. The kernel
# tests skip only where perf_event_open, uprobes or tracepoints are unavailable
# (failing where CI=true); serial, as they time calls in milliseconds.
add_executable(trigger_prog ${CMAKE_CURRENT_LIST_DIR}/trigger_prog.c)
# -g and not stripped: the tests look handle() up in its .symtab.
target_compile_options(trigger_prog PRIVATE -O2 -g)
target_link_libraries(trigger_prog PRIVATE Threads::Threads)

# USDT probes (auxscope:trigger with a semaphore, at two sites; usdt_prog:tick),
# their notes written by the program itself.
add_executable(usdt_prog ${CMAKE_CURRENT_LIST_DIR}/usdt_prog.c)
target_compile_options(usdt_prog PRIVATE -O2 -g)

add_executable(trigger_tests ${CMAKE_CURRENT_LIST_DIR}/TriggerTest.cpp ${CMAKE_CURRENT_LIST_DIR}/KernelTestSupport.cpp)
target_compile_definitions(trigger_tests PRIVATE TRIGGER_PROG_PATH="$<TARGET_FILE:trigger_prog>"
  USDT_PROG_PATH="$<TARGET_FILE:usdt_prog>")
target_link_libraries(trigger_tests PRIVATE auxscope_capture GTest::gtest_main)
add_dependencies(trigger_tests trigger_prog usdt_prog)
gtest_discover_tests(trigger_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 120)

set(_trigger_cli [=[
set -e
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
"$1" record --overwrite -e cpu-clock --trigger 'handle>5ms' --trigger-post 1 -o "$d/t.data" -- "$2" calls
"$1" info "$d/t.data"
]=])
add_test(NAME cli_record_trigger COMMAND sh -c "${_trigger_cli}" sh $<TARGET_FILE:auxscope> $<TARGET_FILE:trigger_prog>)
set_tests_properties(cli_record_trigger PROPERTIES RUN_SERIAL TRUE TIMEOUT 60
  PASS_REGULAR_EXPRESSION "triggers: [1-9][0-9]* firings.*handle>5ms.*firing 0: .0. handle>5ms tid [0-9]+.*took [5-9][.].*AUXSCOPE_TRIGGERS.*triggers: [1-9][0-9]* firings.*firing 19:")
# Refusals before anything starts, naming the option and the cause.
add_test(NAME cli_record_trigger_bad_function COMMAND auxscope record --overwrite --trigger no_such_fn -- $<TARGET_FILE:trigger_prog> calls)
set_tests_properties(cli_record_trigger_bad_function PROPERTIES WILL_FAIL FALSE
  PASS_REGULAR_EXPRESSION "--trigger: trigger 'no_such_fn': no function 'no_such_fn' in '.*trigger_prog'")
add_test(NAME cli_record_trigger_bad_threshold COMMAND auxscope record --overwrite -a --trigger "handle>0ms")
set_tests_properties(cli_record_trigger_bad_threshold PROPERTIES
  PASS_REGULAR_EXPRESSION "--trigger: trigger 'handle>0ms': the threshold '0ms': out of range")
add_test(NAME cli_record_trigger_needs_flight_recorder COMMAND auxscope record -a --trigger handle@/bin/true)
set_tests_properties(cli_record_trigger_needs_flight_recorder PROPERTIES
  PASS_REGULAR_EXPRESSION "--trigger 'handle@/bin/true' takes snapshots: give -S")
add_test(NAME cli_record_trigger_help COMMAND auxscope record --help)
set_tests_properties(cli_record_trigger_help PROPERTIES
  PASS_REGULAR_EXPRESSION "--trigger SPEC.*func>5ms.*usdt:PROV:NAME.*--trigger-post MS.*--trigger-max N.*--trigger-gap MS.*--trigger-mode MODE")
# The marker as the program's USDT probe (auxscope:trigger, its semaphore set by
# the kernel), and a USDT probe the binary does not have: the ones it has are named.
set(_trigger_usdt [=[
set -e
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
"$1" record --overwrite -e cpu-clock --trigger marker -o "$d/t.data" -- "$2" 3
"$1" info "$d/t.data"
]=])
add_test(NAME cli_record_trigger_usdt COMMAND sh -c "${_trigger_usdt}" sh $<TARGET_FILE:auxscope> $<TARGET_FILE:usdt_prog>)
set_tests_properties(cli_record_trigger_usdt PROPERTIES RUN_SERIAL TRUE TIMEOUT 60
  PASS_REGULAR_EXPRESSION "rounds 3 semaphore 3.*triggers: [1-3] firings.*firing 0: .0. marker tid")
add_test(NAME cli_record_trigger_bad_usdt COMMAND auxscope record --overwrite --trigger usdt:app:gone -- $<TARGET_FILE:usdt_prog> 1)
set_tests_properties(cli_record_trigger_bad_usdt PROPERTIES
  PASS_REGULAR_EXPRESSION "--trigger: trigger 'usdt:app:gone': no USDT probe app:gone in '.*usdt_prog' .its USDT probes: auxscope:trigger, usdt_prog:tick.")
# --trigger-mode pause is checked against the kernel and the PMUs before anything
# starts: here (no AUX-area PMU) it is refused naming why.
add_test(NAME cli_record_trigger_mode_pause_refused COMMAND auxscope record -a -S --trigger-mode pause --trigger handle@$<TARGET_FILE:trigger_prog>)
set_tests_properties(cli_record_trigger_mode_pause_refused PROPERTIES
  PASS_REGULAR_EXPRESSION "--trigger-mode pause: (no AUX-area trace PMU on this machine|the kernel|the AUX-area PMU here)")
add_test(NAME cli_record_trigger_mode_bad COMMAND auxscope record -a --overwrite --trigger-mode resume --trigger handle@$<TARGET_FILE:trigger_prog>)
set_tests_properties(cli_record_trigger_mode_bad PROPERTIES
  PASS_REGULAR_EXPRESSION "--trigger-mode: 'resume': expected snapshot or pause")

# Triggers through the capture helper: the Start request's trigger keys, and the
# helper (as root, serving nobody) refusing a binary nobody may not read.
add_executable(trigger_helper_tests ${CMAKE_CURRENT_LIST_DIR}/TriggerHelperTest.cpp)
target_compile_definitions(trigger_helper_tests PRIVATE TRIGGER_PROG_PATH="$<TARGET_FILE:trigger_prog>")
target_include_directories(trigger_helper_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
target_link_libraries(trigger_helper_tests PRIVATE auxscope_helper GTest::gtest_main)
add_dependencies(trigger_helper_tests trigger_prog)
gtest_discover_tests(trigger_helper_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 120)
# The command line as an unprivileged user: a root-owned binary of mode 0700 is
# refused before the capture, naming the file and the cause.
set(_trigger_unreadable [=[
if [ "$(id -u)" != 0 ]; then echo "SKIPPED: not root: cannot make a root-owned file and switch users"; exit 77; fi
command -v setpriv >/dev/null || { echo "SKIPPED: setpriv (util-linux) not found"; exit 77; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
chmod 755 "$d"; cp "$2" "$d/locked"; chmod 0700 "$d/locked"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$1" record --overwrite -a --trigger "handle@$d/locked"
echo "exit $?"
]=])
add_test(NAME cli_record_trigger_unreadable_binary COMMAND sh -c "${_trigger_unreadable}" sh $<TARGET_FILE:auxscope> $<TARGET_FILE:trigger_prog>)
set_tests_properties(cli_record_trigger_unreadable_binary PROPERTIES SKIP_RETURN_CODE 77
  PASS_REGULAR_EXPRESSION "--trigger: trigger 'handle@[^']*/locked': cannot read '[^']*/locked': Permission denied.*exit 2")
