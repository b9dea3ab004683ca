# SPDX-License-Identifier: GPL-3.0-or-later
# The answers under the timeline (issue 14): range selection -> RangeStats panes
# (top functions, call tree, bottom-up, flame graph), search, span details, code
# view and range export, offscreen on a ptsynth trace and the shared Intel PT
# and CoreSight files (include()d by tests/CMakeLists.txt).
set(CMAKE_AUTOMOC ON)
add_executable(range_analysis_tests ${CMAKE_CURRENT_LIST_DIR}/RangeAnalysisTest.cpp)
target_link_libraries(range_analysis_tests PRIVATE auxscope_app auxscope_test_data Qt6::Test)
# The code view's source pane: a small program with debug information, traced in ptsynth's step mode.
add_executable(cv_workload ${CMAKE_CURRENT_LIST_DIR}/CodeViewWorkload.c)
target_compile_options(cv_workload PRIVATE -O1 -g)
add_dependencies(range_analysis_tests auxscope auxscope-ptsynth auxscope-etmsnap cv_workload)
target_compile_definitions(range_analysis_tests PRIVATE AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
                                                        AUXSCOPE_ETMSNAP="$<TARGET_FILE:auxscope-etmsnap>"
                                                        AUXSCOPE_BINARY="$<TARGET_FILE:auxscope>"
                                                        AUXSCOPE_CV_WORKLOAD="$<TARGET_FILE:cv_workload>"
                                                        AUXSCOPE_CV_SOURCE="${CMAKE_CURRENT_LIST_DIR}/CodeViewWorkload.c")
auxscope_add_qt_test(range_analysis_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 300)
