# SPDX-License-Identifier: GPL-3.0-or-later
# Arm SPE in the GUI (issue 31): a file auxscope-spesynth generates with its
# truth, opened on a trace page offscreen: the arm_spe events, top functions,
# latency histogram and memory map against the truth (include()d by tests/CMakeLists.txt).
set(CMAKE_AUTOMOC ON)
add_executable(spe_views_tests ${CMAKE_CURRENT_LIST_DIR}/SpeViewsTest.cpp)
target_link_libraries(spe_views_tests PRIVATE auxscope_app Qt6::Test)
add_dependencies(spe_views_tests auxscope-spesynth)
target_compile_definitions(spe_views_tests PRIVATE AUXSCOPE_SPESYNTH="$<TARGET_FILE:auxscope-spesynth>")
auxscope_add_qt_test(spe_views_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 300)

# auxscope report --event 'arm_spe: ...': samples per event and the top function against the truth.
add_test(NAME cli_report_spe_events
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/spe_report_check.sh $<TARGET_FILE:auxscope> $<TARGET_FILE:auxscope-spesynth>)
set_tests_properties(cli_report_spe_events PROPERTIES TIMEOUT 120)
