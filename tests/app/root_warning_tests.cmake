# SPDX-License-Identifier: GPL-3.0-or-later
# The GUI warns when it runs as root (issue 17), offscreen (include()d by
# tests/CMakeLists.txt, which turns on AUTOMOC):
#  - app_root_warning_tests: as the user running ctest (root here: the banner
#    is shown and dismissed);
#  - app_root_warning_tests_as_user: the same binary as nobody through setpriv
#    (no banner), skipped with the reason when ctest does not run as root or
#    setpriv is missing.
add_executable(app_root_warning_tests ${CMAKE_CURRENT_LIST_DIR}/RootWarningTest.cpp)
target_link_libraries(app_root_warning_tests PRIVATE auxscope_app Qt6::Test)
auxscope_add_qt_test(app_root_warning_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 60)
add_test(NAME app_root_warning_tests_as_user
  COMMAND sh -c "if [ \"$(id -u)\" != 0 ]; then echo \"SKIPPED: not root: cannot switch to another user\"; exit 77; fi
command -v setpriv >/dev/null || { echo \"SKIPPED: setpriv (util-linux) not found\"; exit 77; }
export HOME=/tmp XDG_RUNTIME_DIR=
exec setpriv --reuid=nobody --regid=nogroup --clear-groups \"$0\"" $<TARGET_FILE:app_root_warning_tests>)
set_tests_properties(app_root_warning_tests_as_user PROPERTIES ENVIRONMENT "QT_QPA_PLATFORM=offscreen"
  TIMEOUT 60 SKIP_RETURN_CODE 77
  SKIP_REGULAR_EXPRESSION "${AUXSCOPE_QT_SKIPPED}")
