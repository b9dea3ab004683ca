# SPDX-License-Identifier: GPL-3.0-or-later
# Intel PT decode conformance (include()d by tests/CMakeLists.txt): libipt's own
# ptdump/ptxed expectations and a real Skylake trace, read in place from
# AUXSCOPE_TEST_DATA_DIR (../shared/data, never copied into the repo). Without
# the data those tests skip, or fail where CI=true (tests/support/test_data.cmake).
add_executable(pt_conformance_tests ${CMAKE_CURRENT_LIST_DIR}/PtConformanceTest.cpp)
target_link_libraries(pt_conformance_tests PRIVATE auxscope_decode auxscope_test_data GTest::gtest_main)
gtest_discover_tests(pt_conformance_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

# `auxscope decode` end to end: a clean decode, and a damaged trace whose error
# names the file and the offset, keeps the output around it and exits non-zero.
set(_pt_synthetic "${AUXSCOPE_TEST_DATA_DIR}/intel-pt/libipt-ptt-synthetic")
auxscope_add_data_test(NAME cli_decode_ptxed COMMAND auxscope decode --pt "${_pt_synthetic}/apl11.pt"
  --raw "${_pt_synthetic}/apl11.bin:0x1000" --cpu 6/122 --format ptxed)
set_tests_properties(cli_decode_ptxed PROPERTIES PASS_REGULAR_EXPRESSION
  "^\\[overflow\\]\n\\[enabled\\]\n\\[exec mode: 64-bit\\]\n0000000000001002\n\\[disabled\\]\n$")
auxscope_add_data_test(NAME cli_decode_ptxed_unmapped COMMAND sh -c
  "$<TARGET_FILE:auxscope> decode --raw '${_pt_synthetic}/pip-pip_mov_cr3-fail.bin:0x100000' --pt '${_pt_synthetic}/pip-pip_mov_cr3-fail.pt' 2>&1; echo \"exit=$?\"")
set_tests_properties(cli_decode_ptxed_unmapped PROPERTIES PASS_REGULAR_EXPRESSION
  "0000000000100003\n\\[2b, 100004: error: no memory mapped at this address\\]\n.*auxscope decode: [^\n]*pip-pip_mov_cr3-fail.pt: offset 0x2b \\(43\\): ip 100004: error: no memory mapped at this address\nexit=1")
auxscope_add_data_test(NAME cli_decode_packets_bad_opcode COMMAND sh -c
  "$<TARGET_FILE:auxscope> decode --format packets '${_pt_synthetic}/ptdump-bad_opc-resync.pt' 2>&1; echo \"exit=$?\"")
set_tests_properties(cli_decode_packets_bad_opcode PROPERTIES PASS_REGULAR_EXPRESSION
  "psb\n\\[17: error decoding packet: unknown opcode\\].*psbend.*auxscope decode: [^\n]*ptdump-bad_opc-resync.pt: offset 0x17 \\(23\\): error decoding packet: unknown opcode.*exit=1")
# Perf-event sideband: records shown by time, per-process images switched at SWITCH.IN
# (ptxed's expectation for this test is in the manifest; sideband names files relative to the data dir).
auxscope_add_data_test(NAME cli_decode_ptxed_sideband COMMAND auxscope decode --raw pevent-tip_pgd-switch-tsc-tip_pge.bin:0x1000
  --sb:compact --sb:offset --sb:switch --pt pevent-tip_pgd-switch-tsc-tip_pge.pt --pevent:sample-type 0x6
  --pevent:primary "pevent-tip_pgd-switch-tsc-tip_pge-pevent-primary,sample-type=0x6,time-zero=0x0,time-shift=0x0,time-mult=0x1.sb"
  WORKING_DIRECTORY "${_pt_synthetic}")
set_tests_properties(cli_decode_ptxed_sideband PROPERTIES PASS_REGULAR_EXPRESSION
  "ITRACE_START  1/1  { 1/1 0 }\n\\[context: pid-1\\]\n0000000000001000\n\\[disabled\\]\n\\[enabled\\]\n.*SWITCH.IN  { 2/2 3 }\n\\[context: pid-2\\]\n0000000000002000\n\\[disabled\\]\n$")
add_test(NAME cli_decode_missing_file COMMAND ${AUXSCOPE_EXPECT_EXIT} 1 $<TARGET_FILE:auxscope> decode --format packets /nonexistent/trace.pt)
set_tests_properties(cli_decode_missing_file PROPERTIES PASS_REGULAR_EXPRESSION
  "auxscope decode: /nonexistent/trace.pt: cannot open the trace")
auxscope_expect_exit(cli_decode_missing_file)
add_test(NAME cli_decode_usage COMMAND auxscope decode --help)
set_tests_properties(cli_decode_usage PROPERTIES PASS_REGULAR_EXPRESSION "usage: auxscope decode")
