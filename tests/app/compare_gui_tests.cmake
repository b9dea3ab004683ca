# SPDX-License-Identifier: GPL-3.0-or-later
# Before and after in the GUI (issue 30): the comparison pane of two ptsynth
# traces equals `auxscope compare A B --format csv`, the differential flame
# graph's colours follow the deltas, two perf cpu-clock recordings (samples), two
# Arm SPE files, two ranges of one file (and by Ctrl+Shift+drag), two timelines
# side by side in step, bad input
# (include()d by tests/CMakeLists.txt).
set(CMAKE_AUTOMOC ON)
add_executable(compare_gui_tests ${CMAKE_CURRENT_LIST_DIR}/CompareGuiTest.cpp)
target_link_libraries(compare_gui_tests PRIVATE auxscope_app Qt6::Test)
# Sampled captures: the two builds of tests/compare's program (compare_tests.cmake, include()d after this file).
add_dependencies(compare_gui_tests auxscope auxscope-ptsynth auxscope-spesynth compare_prog_fast compare_prog_slow)
target_compile_definitions(compare_gui_tests PRIVATE AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
                                                     AUXSCOPE_SPESYNTH="$<TARGET_FILE:auxscope-spesynth>"
                                                     AUXSCOPE_BINARY="$<TARGET_FILE:auxscope>"
                                                     AUXSCOPE_COMPARE_FAST="$<TARGET_FILE:compare_prog_fast>"
                                                     AUXSCOPE_COMPARE_SLOW="$<TARGET_FILE:compare_prog_slow>")
auxscope_add_qt_test(compare_gui_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen ${AUXSCOPE_GUI_TEST_HOME} TIMEOUT 300)
# The GUI's command line: `auxscope FILE --compare-with B`, `auxscope --compare A B`; bad ones refused before a window.
add_test(NAME cli_gui_compare_needs_two COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> -platform offscreen
  --compare a.data)
set_tests_properties(cli_gui_compare_needs_two PROPERTIES
  PASS_REGULAR_EXPRESSION "auxscope: --compare needs two files, A and B")
auxscope_expect_exit(cli_gui_compare_needs_two)
add_test(NAME cli_gui_compare_missing COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> -platform offscreen
  a.data --compare-with /nonexistent/b.data)
set_tests_properties(cli_gui_compare_missing PROPERTIES
  PASS_REGULAR_EXPRESSION "auxscope: /nonexistent/b.data: no such file")
auxscope_expect_exit(cli_gui_compare_missing)
add_test(NAME cli_gui_compare_with_no_file COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> -platform offscreen
  --compare-with b.data)
set_tests_properties(cli_gui_compare_with_no_file PROPERTIES
  PASS_REGULAR_EXPRESSION "auxscope: --compare-with B compares FILE with B: no FILE given")
auxscope_expect_exit(cli_gui_compare_with_no_file)
