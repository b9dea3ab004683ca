# SPDX-License-Identifier: GPL-3.0-or-later
# Captures are never lost (issue 27), offscreen (include()d by tests/CMakeLists.txt,
# which turns on AUTOMOC): the captures folder and its file names, File > Open
# Recent and the capture page's list, the Keep / Discard / Cancel prompt on
# closing a window or a tab, a capture running at close, and SIGTERM to a GUI
# process while it captures (the test binary runs itself with --child-capture).
# It runs in a temporary XDG_DATA_HOME / XDG_CONFIG_HOME of its own.
add_executable(app_capture_keep_tests ${CMAKE_CURRENT_LIST_DIR}/CaptureKeepTest.cpp)
target_link_libraries(app_capture_keep_tests PRIVATE auxscope_app Qt6::Test)
auxscope_add_qt_test(app_capture_keep_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen RUN_SERIAL TIMEOUT 180)

# auxscope --help lists every command with its main options, the decode of a
# perf.data and of a snapshot folder included.
add_test(NAME cli_help_lists_commands COMMAND auxscope --help)
set_tests_properties(cli_help_lists_commands PROPERTIES PASS_REGULAR_EXPRESSION
  "auxscope record \\[-a.*auxscope info.*auxscope decode PERF\\.DATA \\[--format spans\\|insn\\|ranges\\|packets\\].*auxscope decode SNAPSHOT_DIR \\[--format ranges\\|packets\\].*auxscope decode --pt FILE.*auxscope export FILE.*auxscope report FILE.*auxscope --version")

# What the help and the README say about a CoreSight snapshot folder: it decodes
# to ranges or packets, and to spans once auxscope-etmsnap made a perf.data of it.
auxscope_add_data_test(NAME cli_decode_snapshot_spans_via_etmsnap COMMAND sh -c
  "set -e; d=$(mktemp -d); trap 'rm -rf $d' EXIT; \
   $<TARGET_FILE:auxscope-etmsnap> \"$0\"/coresight/opencsd-snapshots/juno_r1_1 -o $d/juno.data >/dev/null; \
   $<TARGET_FILE:auxscope> decode $d/juno.data --format spans 2>/dev/null | head -1"
  "${AUXSCOPE_TEST_DATA_DIR}")
set_tests_properties(cli_decode_snapshot_spans_via_etmsnap PROPERTIES
  PASS_REGULAR_EXPRESSION "^thread 4242 \\(snapshot\\) pid 4242: [1-9][0-9]* spans")
