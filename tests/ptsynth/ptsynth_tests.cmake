# SPDX-License-Identifier: GPL-3.0-or-later
# auxscope-ptsynth (include()d by tests/CMakeLists.txt): small programs traced
# under single-step and generated programs, each decoded by perf script and by
# auxscope's decoder and compared with the ground truth.
foreach(_prog fib switch_calls signals)
  add_executable(ptsynth_prog_${_prog} ${CMAKE_CURRENT_LIST_DIR}/programs/${_prog}.c)
  target_compile_options(ptsynth_prog_${_prog} PRIVATE -O1)
  target_link_options(ptsynth_prog_${_prog} PRIVATE -static)
endforeach()
add_executable(ptsynth_prog_dynamic ${CMAKE_CURRENT_LIST_DIR}/programs/dynamic.c)
target_compile_options(ptsynth_prog_dynamic PRIVATE -O1)
# C++ exceptions need the unwinder: dynamically linked (libstdc++, libgcc_s).
add_executable(ptsynth_prog_exceptions ${CMAKE_CURRENT_LIST_DIR}/programs/exceptions.cpp)
target_compile_options(ptsynth_prog_exceptions PRIVATE -O1)

add_executable(ptsynth_tests ${CMAKE_CURRENT_LIST_DIR}/PtSynthTest.cpp)
target_link_libraries(ptsynth_tests PRIVATE auxscope_ptsynth auxscope_decode auxscope_test_data GTest::gtest_main)
add_dependencies(ptsynth_tests auxscope-ptsynth ptsynth_prog_fib ptsynth_prog_switch_calls
                 ptsynth_prog_signals ptsynth_prog_dynamic ptsynth_prog_exceptions)
target_compile_definitions(ptsynth_tests PRIVATE
  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
  AUXSCOPE_PTSYNTH_FIB="$<TARGET_FILE:ptsynth_prog_fib>"
  AUXSCOPE_PTSYNTH_SWITCH="$<TARGET_FILE:ptsynth_prog_switch_calls>"
  AUXSCOPE_PTSYNTH_SIGNALS="$<TARGET_FILE:ptsynth_prog_signals>"
  AUXSCOPE_PTSYNTH_DYNAMIC="$<TARGET_FILE:ptsynth_prog_dynamic>"
  AUXSCOPE_PTSYNTH_EXCEPTIONS="$<TARGET_FILE:ptsynth_prog_exceptions>")
gtest_discover_tests(ptsynth_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 300)
