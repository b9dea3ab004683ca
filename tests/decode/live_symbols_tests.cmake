# SPDX-License-Identifier: GPL-3.0-or-later
# The live timeline's symbols (issue 25; include()d by tests/CMakeLists.txt):
# LiveSideband's mappings and preamble order, LiveSymbols naming a launched
# stacks_prog_fp's samples while it runs. Real kernel, serial (captures).
add_executable(live_symbols_tests ${CMAKE_CURRENT_LIST_DIR}/LiveSymbolsTest.cpp)
target_link_libraries(live_symbols_tests PRIVATE auxscope_decode GTest::gtest_main)
target_compile_definitions(live_symbols_tests PRIVATE AUXSCOPE_STACKS_PROG_FP="$<TARGET_FILE:stacks_prog_fp>")
add_dependencies(live_symbols_tests stacks_prog_fp)
gtest_discover_tests(live_symbols_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 120)
