# SPDX-License-Identifier: GPL-3.0-or-later
# JIT code (include()d by tests/CMakeLists.txt): the perf map and jitdump
# readers on good and bad files, and a small real JIT (JitProgram.c) recorded by
# perf record (sample names as perf report gives them) and single-stepped by
# auxscope-ptsynth (Intel PT decoded through the jitdump's code bytes).
add_executable(jit_prog ${CMAKE_CURRENT_LIST_DIR}/JitProgram.c)
target_compile_options(jit_prog PRIVATE -O1)
target_link_options(jit_prog PRIVATE -static)

add_executable(jit_code_tests ${CMAKE_CURRENT_LIST_DIR}/JitCodeTest.cpp)
target_link_libraries(jit_code_tests PRIVATE auxscope_ptsynth auxscope_decode GTest::gtest_main)
add_dependencies(jit_code_tests auxscope auxscope-ptsynth jit_prog)
target_compile_definitions(jit_code_tests PRIVATE
  AUXSCOPE_BIN="$<TARGET_FILE:auxscope>"
  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
  AUXSCOPE_JIT_PROG="$<TARGET_FILE:jit_prog>")
# Serial: perf record measures a running program.
gtest_discover_tests(jit_code_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 180)
