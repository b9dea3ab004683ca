# SPDX-License-Identifier: GPL-3.0-or-later
# A first run without trace hardware (issue 33), offscreen: Help > Open an
# example, the capture page's button and the Replay row's "Example", the tour of
# the timeline's keys, the generators' lookup (include()d by tests/CMakeLists.txt).
# The built generators are found on the PATH the test sets from these folders.
set(CMAKE_AUTOMOC ON)
add_executable(example_tests ${CMAKE_CURRENT_LIST_DIR}/ExampleTest.cpp)
target_link_libraries(example_tests PRIVATE auxscope_app Qt6::Test)
target_compile_definitions(example_tests PRIVATE AUXSCOPE_PTSYNTH_DIR="$<TARGET_FILE_DIR:auxscope-ptsynth>"
                                                 AUXSCOPE_ETMSNAP_DIR="$<TARGET_FILE_DIR:auxscope-etmsnap>")
add_dependencies(example_tests auxscope-ptsynth auxscope-etmsnap auxscope-spesynth)
auxscope_add_qt_test(example_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen RUN_SERIAL TIMEOUT 300)
