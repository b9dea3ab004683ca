# SPDX-License-Identifier: GPL-3.0-or-later
# Sampled profiles (decode/samples/SampleProfile) against perf as the oracle:
# the test program recorded by perf with call stacks, compared with perf report
# and perf script. Serial: they sample a running program.
add_executable(sample_profile_tests ${CMAKE_CURRENT_LIST_DIR}/SampleProfileTest.cpp)
target_link_libraries(sample_profile_tests PRIVATE auxscope_decode GTest::gtest_main)
add_dependencies(sample_profile_tests stacks_prog_fp stacks_prog_nofp)
target_compile_definitions(sample_profile_tests PRIVATE
  AUXSCOPE_STACKS_PROG_FP="$<TARGET_FILE:stacks_prog_fp>"
  AUXSCOPE_STACKS_PROG_NOFP="$<TARGET_FILE:stacks_prog_nofp>")
gtest_discover_tests(sample_profile_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 180)

# samples/Callchain on hand-made callchains and LBR call stacks.
add_executable(callchain_tests ${CMAKE_CURRENT_LIST_DIR}/CallchainTest.cpp)
target_link_libraries(callchain_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(callchain_tests DISCOVERY_TIMEOUT 30)
