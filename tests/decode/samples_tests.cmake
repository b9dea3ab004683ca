# SPDX-License-Identifier: GPL-3.0-or-later
# Call stacks of samples (include()d by tests/CMakeLists.txt), decode/samples/:
#  - samples_unwind_tests: DWARF unwinding of perf's --call-graph dwarf samples of
#    the test programs (tests/samples/stacks_prog, recorded by perf at test time,
#    once per build into AUXSCOPE_SAMPLES_DIR) against perf script's unwinding,
#    both engines against each other, bad input (each a counted stop reason),
#    CFI found only in .gnu_debugdata (stacks_prog_minidebuginfo), and a 32-bit
#    task's samples (stacks_prog32: perf here cannot unwind them, the known stack is the oracle);
#  - samples_inline_tests: inlined frames (images/InlineFrames) where perf script
#    --inline names them.
include(${CMAKE_CURRENT_LIST_DIR}/../samples/minidebuginfo_program.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/../samples/i386_program.cmake)

add_executable(samples_unwind_tests
  ${CMAKE_CURRENT_LIST_DIR}/DwarfUnwindTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/StackCaptures.cpp
)
target_link_libraries(samples_unwind_tests PRIVATE auxscope_decode PkgConfig::libdw PkgConfig::libelf Threads::Threads
  GTest::gtest_main)
target_compile_definitions(samples_unwind_tests PRIVATE
  AUXSCOPE_STACKS_PROG_NOFP="$<TARGET_FILE:stacks_prog_nofp>" AUXSCOPE_STACKS_PROG_FP="$<TARGET_FILE:stacks_prog_fp>"
  AUXSCOPE_STACKS_PROG_MINIDEBUGINFO="${AUXSCOPE_MINIDEBUGINFO_PROG}"
  AUXSCOPE_STACKS_PROG32="${AUXSCOPE_STACKS_PROG32}" AUXSCOPE_STACKS_PROG32_REASON="${AUXSCOPE_STACKS_PROG32_REASON}")
add_dependencies(samples_unwind_tests stacks_prog_nofp stacks_prog_fp)
foreach(program stacks_prog_minidebuginfo stacks_prog32)
  if(TARGET ${program})
    add_dependencies(samples_unwind_tests ${program})
  endif()
endforeach()
gtest_discover_tests(samples_unwind_tests TEST_PREFIX "samples_unwind_tests." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 180
  ENVIRONMENT "AUXSCOPE_SAMPLES_DIR=${CMAKE_CURRENT_BINARY_DIR}/samples-captures")

add_executable(samples_inline_tests
  ${CMAKE_CURRENT_LIST_DIR}/InlineFramesTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/StackCaptures.cpp
)
target_link_libraries(samples_inline_tests PRIVATE auxscope_decode PkgConfig::libdw PkgConfig::libelf Threads::Threads
  GTest::gtest_main)
target_compile_definitions(samples_inline_tests PRIVATE AUXSCOPE_STACKS_PROG_NOFP="$<TARGET_FILE:stacks_prog_nofp>")
add_dependencies(samples_inline_tests stacks_prog_nofp)
gtest_discover_tests(samples_inline_tests TEST_PREFIX "samples_inline_tests." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 180
  ENVIRONMENT "AUXSCOPE_SAMPLES_DIR=${CMAKE_CURRENT_BINARY_DIR}/samples-captures")

include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/unwind_fuzz.cmake)
# Whole perf.data files read as sampled profiles (uses unwind_fuzz's objects, above).
include(${CMAKE_CURRENT_LIST_DIR}/../fuzz/sample_profile_fuzz.cmake)
