# SPDX-License-Identifier: GPL-3.0-or-later
# The command line's option parser and the commands' parse functions (issue 32):
# what perf users type, every refusal's text, numbers as numbers, one --time
# syntax, help texts that list what the parsers take. No capture, no files.
add_executable(cli_parse_tests ${CMAKE_CURRENT_LIST_DIR}/CliParseTest.cpp)
target_link_libraries(cli_parse_tests PRIVATE auxscope_cli GTest::gtest_main)
gtest_discover_tests(cli_parse_tests DISCOVERY_TIMEOUT 30)

# End to end: the refusal's text on stderr and exit status 2, nothing captured.
add_test(NAME cli_record_unknown_option COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> record --foo -a)
set_tests_properties(cli_record_unknown_option PROPERTIES
  PASS_REGULAR_EXPRESSION "^auxscope record: unknown option '--foo' \\(auxscope record --help\\)\n$")
auxscope_expect_exit(cli_record_unknown_option)
add_test(NAME cli_record_bad_pid COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> record -p 1.9)
set_tests_properties(cli_record_bad_pid PROPERTIES
  PASS_REGULAR_EXPRESSION "^auxscope record: -p '1.9': not a decimal integer \\(1 to 2147483647\\)")
auxscope_expect_exit(cli_record_bad_pid)
add_test(NAME cli_record_bad_duration COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> record -a --duration=nan)
set_tests_properties(cli_record_bad_duration PROPERTIES
  PASS_REGULAR_EXPRESSION "^auxscope record: --duration 'nan': not a finite number")
auxscope_expect_exit(cli_record_bad_duration)
add_test(NAME cli_report_bad_time COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> report x.data --time 5)
set_tests_properties(cli_report_bad_time PROPERTIES
  PASS_REGULAR_EXPRESSION "^auxscope report: --time '5': expected A-B, A- or -B")
auxscope_expect_exit(cli_report_bad_time)
# The wrapper itself: the right text with the wrong status fails (WILL_FAIL turns that into a pass).
add_test(NAME cli_expect_exit_wrong_status COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 sh -c "echo 'unknown option'; exit 0")
set_tests_properties(cli_expect_exit_wrong_status PROPERTIES PASS_REGULAR_EXPRESSION "unknown option" WILL_FAIL TRUE)
auxscope_expect_exit(cli_expect_exit_wrong_status)
# record --json with -o: one JSON object, the output file's path escaped by
# jsonString (a quote, a backslash and a tab in it), "output" a member of it.
add_test(NAME cli_record_json_output_path COMMAND sh -c
  "set -e; d=$(mktemp -d); $<TARGET_FILE:auxscope> record -a --duration=0.2 --json -o \"$d/a\\\"b\\\\c$(printf '\\t')t.data\" | \
   python3 -c 'import json,sys; d=json.load(sys.stdin); print(\"path\", d[\"output\"][\"path\"].rsplit(\"/\",1)[1], d[\"output\"][\"ok\"], len(d[\"cpus\"]) > 0)'; \
   rm -rf $d")
set_tests_properties(cli_record_json_output_path PROPERTIES RUN_SERIAL TRUE
  PASS_REGULAR_EXPRESSION "^path a\"b\\\\c\tt.data True True\n$")

# The GUI's own command line: `auxscope [--] [FILE]` plus Qt's options; anything else is refused
# before a window opens, and without a display a file is not silently replaced by a capture.
add_test(NAME cli_gui_unknown_option COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> --foo)
set_tests_properties(cli_gui_unknown_option PROPERTIES ENVIRONMENT QT_QPA_PLATFORM=offscreen
  PASS_REGULAR_EXPRESSION "auxscope: unknown option '--foo' \\(commands and options: auxscope --help\\)\n")
auxscope_expect_exit(cli_gui_unknown_option)
add_test(NAME cli_gui_two_files COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> -platform offscreen a.data b.data)
set_tests_properties(cli_gui_two_files PROPERTIES
  PASS_REGULAR_EXPRESSION "auxscope: one file at a time: 'a.data' and 'b.data' given")
auxscope_expect_exit(cli_gui_two_files)
add_test(NAME cli_gui_file_without_display COMMAND ${AUXSCOPE_EXPECT_EXIT} 2
  env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM $<TARGET_FILE:auxscope> cap.data)
set_tests_properties(cli_gui_file_without_display PROPERTIES
  PASS_REGULAR_EXPRESSION "^auxscope: no display for the GUI .*'cap.data' is not opened; without one: auxscope info FILE")
auxscope_expect_exit(cli_gui_file_without_display)
