# SPDX-License-Identifier: GPL-3.0-or-later
# auxscope-spesynth (include()d by tests/CMakeLists.txt): its files against perf
# report -D and perf script (the oracle), --records, bad CSVs, speed.
add_executable(spesynth_tests ${CMAKE_CURRENT_LIST_DIR}/SpeSynthTest.cpp)
target_link_libraries(spesynth_tests PRIVATE auxscope_spesynth GTest::gtest_main)
add_dependencies(spesynth_tests auxscope-spesynth)
target_compile_definitions(spesynth_tests PRIVATE AUXSCOPE_SPESYNTH="$<TARGET_FILE:auxscope-spesynth>")
gtest_discover_tests(spesynth_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 300)
