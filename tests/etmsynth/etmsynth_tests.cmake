# SPDX-License-Identifier: GPL-3.0-or-later
# The generated CoreSight example (auxscope-etmsnap --example; include()d by
# tests/CMakeLists.txt): trc_pkt_lister and auxscope decode it to its truth,
# offline and live (replay).
add_executable(etmsynth_tests ${CMAKE_CURRENT_LIST_DIR}/EtmSynthTest.cpp)
target_link_libraries(etmsynth_tests PRIVATE auxscope_etmsynth auxscope_decode GTest::gtest_main)
add_dependencies(etmsynth_tests auxscope)
target_compile_definitions(etmsynth_tests PRIVATE AUXSCOPE_CLI="$<TARGET_FILE:auxscope>")
gtest_discover_tests(etmsynth_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

# The command line: -q prints nothing and writes the perf.data, its code ELF
# and the snapshot folder; a bad -o fails with one line naming it.
add_test(NAME etmsnap_example_quiet COMMAND sh -c
  "set -e; d=$(mktemp -d); trap 'rm -rf $d' EXIT; \
   out=$($0 --example -q --seed 3 -o $d/coresight-example.data 2>&1); test -z \"$out\"; \
   test -s $d/coresight-example.data; test -x $d/coresight-example-code-0.elf; \
   test -s $d/coresight-example-snapshot/cstrace.bin; test -s $d/coresight-example-snapshot/snapshot.ini; echo ok"
  $<TARGET_FILE:auxscope-etmsnap>)
set_tests_properties(etmsnap_example_quiet PROPERTIES PASS_REGULAR_EXPRESSION "^ok\n$")
add_test(NAME etmsnap_example_bad_output COMMAND sh -c
  "err=$($0 --example -q -o /nonexistent-auxscope-dir/coresight-example.data 2>&1 >/dev/null); st=$?; \
   echo \"status $st lines $(printf '%s\\n' \"$err\" | wc -l): $err\""
  $<TARGET_FILE:auxscope-etmsnap>)
set_tests_properties(etmsnap_example_bad_output PROPERTIES PASS_REGULAR_EXPRESSION
  "^status 1 lines 1: auxscope-etmsnap: /nonexistent-auxscope-dir/coresight-example\\.data: cannot create its snapshot folder [^\n]*: No such file or directory\n$")
add_test(NAME etmsnap_example_help COMMAND $<TARGET_FILE:auxscope-etmsnap> --help)
set_tests_properties(etmsnap_example_help PROPERTIES PASS_REGULAR_EXPRESSION
  "auxscope-etmsnap --example \\[-q\\] \\[--seed N\\] -o OUT\\.data.*--seed N")
