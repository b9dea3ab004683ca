# SPDX-License-Identifier: GPL-3.0-or-later
# Arm SPE decode (include()d by tests/CMakeLists.txt). ctest names start with spe_
# (ctest -R spe): packets, records, gaps, AUXTRACE_INFO v1/v2 and whole files
# built in the test (SpeTestFile.h); their packet listing against perf report -D
# (Debian's perf 6.1 as the oracle; skipped with the reason where perf is missing).
add_executable(spe_decoder_tests
  ${CMAKE_CURRENT_LIST_DIR}/SpeDecoderTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SpeTestFile.cpp
  ${CMAKE_CURRENT_LIST_DIR}/WriterTestSupport.cpp
)
target_link_libraries(spe_decoder_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(spe_decoder_tests TEST_PREFIX "spe_decoder_tests." DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 60)

# Synthesized files (auxscope-spesynth) end to end: records equal FILE.truth field
# by field, and the packet listing equals perf report -D's packet lines, for
# AUXTRACE_INFO v1 and v2.
set(_spe_check sh ${CMAKE_CURRENT_LIST_DIR}/spe_synth_check.sh)
foreach(_v 1 2)
  add_test(NAME spe_synth_records_truth_v${_v} COMMAND ${_spe_check} records
    $<TARGET_FILE:auxscope-spesynth> $<TARGET_FILE:auxscope> --info-version ${_v})
  add_test(NAME spe_synth_packets_perf_v${_v} COMMAND ${_spe_check} packets
    $<TARGET_FILE:auxscope-spesynth> $<TARGET_FILE:auxscope> --info-version ${_v} --chunk 65536)
  set_tests_properties(spe_synth_packets_perf_v${_v} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
endforeach()
# Threads from the switch sideband alone, and from CONTEXTIDR_EL2.
add_test(NAME spe_synth_records_truth_no_context COMMAND ${_spe_check} records
  $<TARGET_FILE:auxscope-spesynth> $<TARGET_FILE:auxscope> --no-context --cpus 8 --threads 12)
add_test(NAME spe_synth_records_truth_vhe COMMAND ${_spe_check} records
  $<TARGET_FILE:auxscope-spesynth> $<TARGET_FILE:auxscope> --vhe --info-version 2)

# The command line on a synthesized file: decode's summary (the default for SPE),
# info, report by function and data source, and a --format SPE does not have.
set(_spe_file "${CMAKE_CURRENT_BINARY_DIR}/spe-cli.data")
add_test(NAME spe_cli_make_file COMMAND auxscope-spesynth --generate 5000 --seed 2 --info-version 2 -o ${_spe_file})
set_tests_properties(spe_cli_make_file PROPERTIES FIXTURES_SETUP spe_cli_file)
add_test(NAME spe_cli_decode_summary COMMAND auxscope decode ${_spe_file})
set_tests_properties(spe_cli_decode_summary PROPERTIES FIXTURES_REQUIRED spe_cli_file PASS_REGULAR_EXPRESSION
  "Arm SPE: 5000 records \\([0-9]+ packets, [0-9]+ bytes\\).*records per CPU:\n  cpu 0: [1-9].*records per operation:\n  branch: [1-9].*records per data source:\n  DRAM: [1-9].*gaps: 0 bytes")
add_test(NAME spe_cli_info COMMAND auxscope info ${_spe_file})
set_tests_properties(spe_cli_info PROPERTIES FIXTURES_REQUIRED spe_cli_file PASS_REGULAR_EXPRESSION
  "type 4 \\(Arm SPE\\).*Arm SPE: info version 2, PMU type [0-9]+\n    cpu 0: MIDR 0x413fd0c1.*Arm SPE records: 5000 in [0-9]+ bytes \\([0-9]+ packets\\); gaps: 0 bytes")
add_test(NAME spe_cli_report COMMAND auxscope report ${_spe_file} --top 5)
set_tests_properties(spe_cli_report PROPERTIES FIXTURES_REQUIRED spe_cli_file PASS_REGULAR_EXPRESSION
  "Arm SPE, 5000 of 5000 records.*top functions by records \\(5 of [0-9]+.*  ring_buffer_write\n.*by data source:.*  L1D\n")
add_test(NAME spe_cli_decode_bad_format COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> decode ${_spe_file} --format insn)
set_tests_properties(spe_cli_decode_bad_format PROPERTIES FIXTURES_REQUIRED spe_cli_file PASS_REGULAR_EXPRESSION
  "--format insn: an Arm SPE file decodes to records")
auxscope_expect_exit(spe_cli_decode_bad_format)
