# SPDX-License-Identifier: GPL-3.0-or-later
# The timeline view (app/TimelineView), offscreen: synthetic TimelineData painted
# and checked pixel by pixel, zoom/pan/selection/tooltips, level of detail on
# 2 M spans, and a ptsynth-generated perf.data opened on a TraceFilePage
# (include()d by tests/CMakeLists.txt).
set(CMAKE_AUTOMOC ON)
add_executable(timeline_tests ${CMAKE_CURRENT_LIST_DIR}/TimelineViewTest.cpp)
target_link_libraries(timeline_tests PRIVATE auxscope_app Qt6::Test)
add_dependencies(timeline_tests auxscope-ptsynth)
target_compile_definitions(timeline_tests PRIVATE AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>")
auxscope_add_qt_test(timeline_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 180)

# Flame-chart rows deeper than 128 and the CPU lanes' level of detail (issue 13).
add_executable(timeline_depth_tests ${CMAKE_CURRENT_LIST_DIR}/TimelineDepthTest.cpp)
target_link_libraries(timeline_depth_tests PRIVATE auxscope_app Qt6::Test)
auxscope_add_qt_test(timeline_depth_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 120)

# The label cache the flame charts and CPU lanes draw names with (issue 28: deep stacks),
# and a scene painted with it and with the straightforward path (elidedText + drawText).
add_executable(timeline_labels_tests ${CMAKE_CURRENT_LIST_DIR}/TimelineLabelsTest.cpp)
target_link_libraries(timeline_labels_tests PRIVATE auxscope_app Qt6::Test)
auxscope_add_qt_test(timeline_labels_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 60)

# The trace page's word on AUX bytes missing from the file (issue 16).
add_executable(trace_page_aux_tests ${CMAKE_CURRENT_LIST_DIR}/TraceFilePageAuxTest.cpp)
target_link_libraries(trace_page_aux_tests PRIVATE auxscope_app Qt6::Test)
auxscope_add_qt_test(trace_page_aux_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 120)

# Timelines from the sideband alone (issue 13): real software-event captures made
# with `auxscope record` (a workload with named threads; a tiny ring under a
# syscall storm), and perf's Skylake file from ../shared/data. Serial: it captures
# system-wide.
add_executable(tl_workload ${CMAKE_CURRENT_LIST_DIR}/TimelineWorkload.cpp)
target_compile_options(tl_workload PRIVATE -O1 -g)
add_executable(timeline_sideband_tests ${CMAKE_CURRENT_LIST_DIR}/TimelineSidebandTest.cpp)
target_link_libraries(timeline_sideband_tests PRIVATE auxscope_app auxscope_test_data Qt6::Test)
add_dependencies(timeline_sideband_tests auxscope tl_workload)
target_compile_definitions(timeline_sideband_tests PRIVATE AUXSCOPE_BINARY="$<TARGET_FILE:auxscope>"
                                                           AUXSCOPE_TL_WORKLOAD="$<TARGET_FILE:tl_workload>")
auxscope_add_qt_test(timeline_sideband_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen RUN_SERIAL TIMEOUT 180)

# The whole-recording overview strip above the timeline (issue 13): perf's Skylake
# file opened whole, navigation on the strip, a software capture made here. Serial:
# it captures.
add_executable(overview_tests ${CMAKE_CURRENT_LIST_DIR}/OverviewTest.cpp)
target_link_libraries(overview_tests PRIVATE auxscope_app auxscope_test_data Qt6::Test)
add_dependencies(overview_tests auxscope tl_workload auxscope-ptsynth)
target_compile_definitions(overview_tests PRIVATE AUXSCOPE_BINARY="$<TARGET_FILE:auxscope>"
                                                  AUXSCOPE_TL_WORKLOAD="$<TARGET_FILE:tl_workload>"
                                                  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>")
auxscope_add_qt_test(overview_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen RUN_SERIAL TIMEOUT 180)
