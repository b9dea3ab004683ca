# SPDX-License-Identifier: GPL-3.0-or-later
# Call stacks on samples (issue 25: auxscope record -g / --call-graph), include()d by
# tests/CMakeLists.txt after tests/samples/samples_programs.cmake:
#  - callgraph_unit_tests: perf's --call-graph spellings and refusals, the attr bits per
#    mode, perf's user register masks per architecture, and where lbr is refused
#    (fake sysfs trees: software event, no core PMU, AMD, Intel without LBR);
#  - callgraph_kernel_tests: real captures of tests/samples/stacks_prog_{fp,nofp}
#    read back by perf (perf script's stacks, perf evlist's attrs) and by auxscope's
#    reader, a system-wide -a -g second, the LOST count, and the bad options' exit
#    status and text. Serial: they capture system-wide and measure loss.
add_executable(callgraph_unit_tests ${CMAKE_CURRENT_LIST_DIR}/CallGraphConfigTest.cpp)
target_link_libraries(callgraph_unit_tests PRIVATE auxscope_capture GTest::gtest_main)
gtest_discover_tests(callgraph_unit_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)

add_executable(callgraph_kernel_tests
  ${CMAKE_CURRENT_LIST_DIR}/CallGraphKernelTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../decode/WriterTestSupport.cpp
)
target_include_directories(callgraph_kernel_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../decode)
target_link_libraries(callgraph_kernel_tests PRIVATE auxscope_decode GTest::gtest_main)
target_compile_definitions(callgraph_kernel_tests PRIVATE
  AUXSCOPE_TEST_BINARY="$<TARGET_FILE:auxscope>"
  STACKS_PROG_FP="$<TARGET_FILE:stacks_prog_fp>"
  STACKS_PROG_NOFP="$<TARGET_FILE:stacks_prog_nofp>")
add_dependencies(callgraph_kernel_tests auxscope stacks_prog_fp stacks_prog_nofp)
gtest_discover_tests(callgraph_kernel_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 180)
