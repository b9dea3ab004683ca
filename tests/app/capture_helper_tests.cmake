# SPDX-License-Identifier: GPL-3.0-or-later
# The privileged capture helper (issue 17), include()d by tests/CMakeLists.txt:
#  - capture_helper_tests: its protocol, validation, and captures served on a
#    socket pair (a launched command as nobody when ctest runs as root);
#  - app_capture_helper_as_user: the capture page as nobody, the helper as root
#    (capture_helper_harness stands in for pkexec), a real system-wide capture;
#  - app_capture_helper_no_polkit: the capture page as nobody with no helper
#    handed over: pkexec cannot authorize here, the page says why and the remedy.
#    Both skip (77) when ctest does not run as root.
add_executable(capture_helper_tests ${CMAKE_CURRENT_LIST_DIR}/CaptureHelperProtocolTest.cpp)
target_include_directories(capture_helper_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
target_link_libraries(capture_helper_tests PRIVATE auxscope_helper GTest::gtest_main)
gtest_discover_tests(capture_helper_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

add_executable(capture_helper_harness ${CMAKE_CURRENT_LIST_DIR}/CaptureHelperHarness.cpp)
add_executable(app_capture_helper_tests ${CMAKE_CURRENT_LIST_DIR}/CaptureHelperGuiTest.cpp)
target_link_libraries(app_capture_helper_tests PRIVATE auxscope_app Qt6::Test)
add_test(NAME app_capture_helper_as_user
  COMMAND capture_helper_harness nobody $<TARGET_FILE:auxscope-capture-helper> -- $<TARGET_FILE:app_capture_helper_tests>
          captureThroughTheHelper)
set_tests_properties(app_capture_helper_as_user PROPERTIES ENVIRONMENT "QT_QPA_PLATFORM=offscreen;TMPDIR=/tmp"
  TIMEOUT 180 SKIP_RETURN_CODE 77
  SKIP_REGULAR_EXPRESSION "${AUXSCOPE_QT_SKIPPED}")
# The same with a snapshot trigger armed in the editor (trigger_prog: capture/trigger_tests.cmake).
target_compile_definitions(app_capture_helper_tests PRIVATE TRIGGER_PROG_PATH="$<TARGET_FILE:trigger_prog>")
add_dependencies(app_capture_helper_tests trigger_prog)
add_test(NAME app_capture_helper_triggers
  COMMAND capture_helper_harness nobody $<TARGET_FILE:auxscope-capture-helper> -- $<TARGET_FILE:app_capture_helper_tests>
          triggersThroughTheHelper)
set_tests_properties(app_capture_helper_triggers PROPERTIES ENVIRONMENT "QT_QPA_PLATFORM=offscreen;TMPDIR=/tmp"
  TIMEOUT 180 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
  SKIP_REGULAR_EXPRESSION "${AUXSCOPE_QT_SKIPPED}")
add_test(NAME app_capture_helper_no_polkit
  COMMAND sh -c "if [ \"$(id -u)\" != 0 ]; then echo \"SKIPPED: not root: cannot switch to another user\"; exit 77; fi
command -v setpriv >/dev/null || { echo \"SKIPPED: setpriv (util-linux) not found\"; exit 77; }
export HOME=/tmp XDG_RUNTIME_DIR= TMPDIR=/tmp
exec setpriv --reuid=nobody --regid=nogroup --clear-groups \"$0\" withoutPolkitTheRemedyIsShown" $<TARGET_FILE:app_capture_helper_tests>)
add_test(NAME app_capture_access_hint
  COMMAND sh -c "if [ \"$(id -u)\" != 0 ]; then echo \"SKIPPED: not root: cannot switch to another user\"; exit 77; fi
command -v setpriv >/dev/null || { echo \"SKIPPED: setpriv (util-linux) not found\"; exit 77; }
export HOME=/tmp XDG_RUNTIME_DIR= TMPDIR=/tmp
exec setpriv --reuid=nobody --regid=nogroup --clear-groups \"$0\" theAccessHintFollowsTheTarget" $<TARGET_FILE:app_capture_helper_tests>)
set_tests_properties(app_capture_access_hint PROPERTIES
  ENVIRONMENT "QT_QPA_PLATFORM=offscreen;AUXSCOPE_CAPTURE_HELPER=$<TARGET_FILE:auxscope-capture-helper>"
  TIMEOUT 60 SKIP_RETURN_CODE 77
  SKIP_REGULAR_EXPRESSION "${AUXSCOPE_QT_SKIPPED}")
set_tests_properties(app_capture_helper_no_polkit PROPERTIES
  ENVIRONMENT "QT_QPA_PLATFORM=offscreen;AUXSCOPE_CAPTURE_HELPER=$<TARGET_FILE:auxscope-capture-helper>"
  TIMEOUT 120 SKIP_RETURN_CODE 77
  SKIP_REGULAR_EXPRESSION "${AUXSCOPE_QT_SKIPPED}")
