# SPDX-License-Identifier: GPL-3.0-or-later
# Intel PT decode of perf.data into spans (include()d by tests/CMakeLists.txt):
# FlowToSpans on hand-made flows, a real perf-recorded Skylake trace read in
# place from AUXSCOPE_TEST_DATA_DIR (skipped without it), and a synthetic
# perf.data whose trace runs through a tiny ELF built here.

# Static, position-dependent, no C runtime: its addresses are fixed and known.
add_executable(pt_decode_fixture_elf ${CMAKE_CURRENT_LIST_DIR}/PtDecodeFixtureProgram.cpp)
target_compile_options(pt_decode_fixture_elf PRIVATE -fno-pie -fcf-protection=none)
target_link_options(pt_decode_fixture_elf PRIVATE -nostdlib -static -no-pie -Wl,-e,main)

add_executable(pt_decode_tests ${CMAKE_CURRENT_LIST_DIR}/PtDecodeTest.cpp)
# auxscope-ptsynth (tools/) synthesizes a trace of a generated program with its ground truth.
add_dependencies(pt_decode_tests pt_decode_fixture_elf auxscope-ptsynth)
target_compile_definitions(pt_decode_tests PRIVATE
  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
  AUXSCOPE_PT_FIXTURE_ELF="$<TARGET_FILE:pt_decode_fixture_elf>")
target_link_libraries(pt_decode_tests PRIVATE auxscope_decode auxscope_test_data libipt::libipt GTest::gtest_main)
gtest_discover_tests(pt_decode_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

# `auxscope decode FILE` on a perf.data: spans (all gaps without the binaries) and packets.
set(_pt_skylake "${AUXSCOPE_TEST_DATA_DIR}/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14")
auxscope_add_data_test(NAME cli_decode_perf_spans COMMAND sh -c "$<TARGET_FILE:auxscope> decode '${_pt_skylake}' --cpu 0 2>&1")
set_tests_properties(cli_decode_perf_spans PROPERTIES PASS_REGULAR_EXPRESSION
  "missing image \\[kernel.kallsyms\\]_text.*decoded 1 segments, 12240 trace bytes")
auxscope_add_data_test(NAME cli_decode_perf_packets COMMAND auxscope decode "${_pt_skylake}" --format packets --cpu 0)
set_tests_properties(cli_decode_perf_packets PROPERTIES PASS_REGULAR_EXPRESSION
  "cpu 0: 12240 bytes in 1 AUXTRACE buffers, 1 runs, 1 PSBs\n.*cpu 0 packets:.* fup 10 tip 505 .*tnt.8 8242 .*pip 15 .*mtc 325")

# Call stacks across segment cuts: a ptsynth trace cut at every PSB decodes to
# the uncut decode's span tree and the truth's costs, whole, windowed and cached.
add_executable(pt_segment_stack_tests ${CMAKE_CURRENT_LIST_DIR}/PtSegmentStackTest.cpp)
add_dependencies(pt_segment_stack_tests auxscope-ptsynth)
target_link_libraries(pt_segment_stack_tests PRIVATE auxscope_ptsynth auxscope_decode auxscope_test_data GTest::gtest_main)
target_compile_definitions(pt_segment_stack_tests PRIVATE AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>")
gtest_discover_tests(pt_segment_stack_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 180)
# The same test of big span arrays with the opt-in huge-page allocation (spans/SpanStore.h).
add_test(NAME SpanStoreBig.HugePages COMMAND pt_segment_stack_tests --gtest_filter=SpanStoreBig.*)
set_tests_properties(SpanStoreBig.HugePages PROPERTIES ENVIRONMENT AUXSCOPE_SPAN_ARRAYS_HUGE=1 TIMEOUT 180)
