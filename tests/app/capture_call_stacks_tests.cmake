# SPDX-License-Identifier: GPL-3.0-or-later
# Call stacks from the capture page (issue 25; include()d by tests/CMakeLists.txt,
# which turns on AUTOMOC), offscreen and serial (real captures):
#  - app_gui_call_stacks_tests: the form's choice into CaptureOptions, LBR only
#    where checkCallGraphFor accepts it, a Frame-pointers capture of a launched
#    stacks_prog_fp (callchains in the file, functions named on the live timeline);
#  - app_gui_call_stacks_helper: the capture page as nobody, the helper as root
#    (capture_helper_harness stands in for pkexec), a system-wide -g capture;
#    skipped (77) when ctest does not run as root.
add_executable(app_gui_call_stacks_tests ${CMAKE_CURRENT_LIST_DIR}/CaptureCallStacksTest.cpp)
target_link_libraries(app_gui_call_stacks_tests PRIVATE auxscope_app Qt6::Test)
target_compile_definitions(app_gui_call_stacks_tests PRIVATE
  AUXSCOPE_STACKS_PROG_FP="$<TARGET_FILE:stacks_prog_fp>")
add_dependencies(app_gui_call_stacks_tests stacks_prog_fp)
auxscope_add_qt_test(app_gui_call_stacks_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen ${AUXSCOPE_GUI_TEST_HOME} RUN_SERIAL TIMEOUT 180
  EXCLUDE framePointersThroughTheHelper)
add_test(NAME app_gui_call_stacks_helper
  COMMAND capture_helper_harness nobody $<TARGET_FILE:auxscope-capture-helper> -- $<TARGET_FILE:app_gui_call_stacks_tests>
          framePointersThroughTheHelper)
set_tests_properties(app_gui_call_stacks_helper PROPERTIES ENVIRONMENT "QT_QPA_PLATFORM=offscreen;TMPDIR=/tmp"
  RUN_SERIAL TRUE TIMEOUT 180 SKIP_RETURN_CODE 77
  SKIP_REGULAR_EXPRESSION "${AUXSCOPE_QT_SKIPPED}")
