# SPDX-License-Identifier: GPL-3.0-or-later
# The same analysis over samples in the GUI (issue 25): captures perf records
# here of tests/samples/stacks_prog.c opened on a trace page, offscreen: the
# selection's views from the sampled profile, the source choice, off-CPU time,
# a sample's stack on hover, the code view's sample counts (include()d by
# tests/CMakeLists.txt). Serial: perf samples a running program.
set(CMAKE_AUTOMOC ON)
add_executable(sample_analysis_tests ${CMAKE_CURRENT_LIST_DIR}/SampleAnalysisTest.cpp)
target_link_libraries(sample_analysis_tests PRIVATE auxscope_app Qt6::Test)
add_dependencies(sample_analysis_tests stacks_prog_fp)
target_compile_definitions(sample_analysis_tests PRIVATE AUXSCOPE_STACKS_PROG_FP="$<TARGET_FILE:stacks_prog_fp>")
auxscope_add_qt_test(sample_analysis_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen RUN_SERIAL TIMEOUT 300)
