# SPDX-License-Identifier: GPL-3.0-or-later
# `auxscope compare` (include()d by tests/CMakeLists.txt): perf diff as the oracle
# on two builds of one program, the truth of two auxscope-ptsynth traces, and
# bad input.
#
# The program twice, the same file name in two folders (functions are matched
# by name and binary, the binary by its base name, as perf diff matches dsos):
# fast/compare_prog and slow/compare_prog (slow_part twice the work).
foreach(_variant fast slow)
  add_executable(compare_prog_${_variant} ${CMAKE_CURRENT_LIST_DIR}/compare_prog.c)
  target_compile_options(compare_prog_${_variant} PRIVATE -O1 -g)
  if(_variant STREQUAL "slow")
    target_compile_definitions(compare_prog_${_variant} PRIVATE COMPARE_SLOW=2)
  endif()
  set_target_properties(compare_prog_${_variant} PROPERTIES OUTPUT_NAME compare_prog
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/compare_prog_${_variant})
endforeach()

add_executable(compare_cli_tests ${CMAKE_CURRENT_LIST_DIR}/CompareCliTest.cpp)
target_link_libraries(compare_cli_tests PRIVATE auxscope_ptsynth auxscope_decode GTest::gtest_main)
add_dependencies(compare_cli_tests auxscope auxscope-ptsynth compare_prog_fast compare_prog_slow)
target_compile_definitions(compare_cli_tests PRIVATE
  AUXSCOPE_BIN="$<TARGET_FILE:auxscope>" AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
  AUXSCOPE_COMPARE_FAST="$<TARGET_FILE:compare_prog_fast>"
  AUXSCOPE_COMPARE_SLOW="$<TARGET_FILE:compare_prog_slow>")
# Serial: the perf test samples a running program.
gtest_discover_tests(compare_cli_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 300)

# --format json parses (python3's json) and holds both sides, the functions and
# the merged trees; text names how functions were matched.
add_test(NAME cli_compare_json COMMAND sh -c
  "set -e; d=$(mktemp -d); \
   $<TARGET_FILE:auxscope-ptsynth> --generate 1 --seed 4 --max-insns 30000 -q -o $d/a.data; \
   $<TARGET_FILE:auxscope-ptsynth> --generate 1 --seed 4 --max-insns 60000 -q -o $d/b.data; \
   $<TARGET_FILE:auxscope> compare $d/a.data $d/b.data --by-symbol --tree --bottom-up --format json | \
   python3 -c 'import json,sys; d=json.load(sys.stdin); print(\"json\", d[\"kind\"], d[\"match\"], len(d[\"functions\"]) > 5, len(d[\"tree\"]) > 5, len(d[\"bottom_up\"]) > 5, d[\"a\"][\"file\"].endswith(\"a.data\"))'; \
   $<TARGET_FILE:auxscope> compare $d/a.data $d/b.data --limit 3 | head -3 | tail -1; rm -rf $d")
set_tests_properties(cli_compare_json PROPERTIES
  PASS_REGULAR_EXPRESSION "^json trace name True True True True\nmatched by name and binary; normalised: none\n$")
