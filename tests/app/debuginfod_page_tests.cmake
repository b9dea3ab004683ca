# SPDX-License-Identifier: GPL-3.0-or-later
# debuginfod on the trace page (issue 27), offscreen, with a real
# /usr/bin/debuginfod on 127.0.0.1 serving the look-up tests' stripped program's
# debug file (tests/images/image_lookup_tests.cmake builds it), a perf record of
# that program opened with the server's URL: names after the background fetch,
# the GUI thread never blocked, Cancel, a stopped server's note. Skips without
# debuginfod or perf record (fails with CI=true). include()d after image_lookup_tests.cmake.
if(TARGET lookup_images)
  set(CMAKE_AUTOMOC ON)
  add_executable(debuginfod_page_tests ${CMAKE_CURRENT_LIST_DIR}/DebuginfodPageTest.cpp)
  target_link_libraries(debuginfod_page_tests PRIVATE auxscope_app Qt6::Test)
  add_dependencies(debuginfod_page_tests lookup_images)
  target_compile_definitions(debuginfod_page_tests PRIVATE AUXSCOPE_LOOKUP_IMAGES="${_lookup_dir}")
  # Serial: it starts a server and runs perf record.
  auxscope_add_qt_test(debuginfod_page_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 300 RUN_SERIAL)
endif()
