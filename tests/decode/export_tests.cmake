# SPDX-License-Identifier: GPL-3.0-or-later
# Perfetto and CSV export. protoc (Debian protobuf-compiler) decodes exported
# traces against the Perfetto schema subset beside this file.
find_program(PROTOC_EXECUTABLE protoc REQUIRED)
add_executable(export_tests
  ${CMAKE_CURRENT_LIST_DIR}/ExportTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RoundTripTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../capture/KernelTestSupport.cpp
)
target_include_directories(export_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../capture)
# Decoded Intel PT spans: a ptsynth trace of fib (with its ground truth) and
# perf's Skylake recording read in place from AUXSCOPE_TEST_DATA_DIR (skipped without it).
# Samples with call stacks: the sampled-stacks test program recorded by perf -g.
add_dependencies(export_tests auxscope-ptsynth auxscope-spesynth ptsynth_prog_fib stacks_prog_fp)
target_compile_definitions(export_tests PRIVATE
  AUXSCOPE_STACKS_PROG_FP="$<TARGET_FILE:stacks_prog_fp>"
  AUXSCOPE_PROTOC="${PROTOC_EXECUTABLE}"
  AUXSCOPE_PERFETTO_PROTO_DIR="${CMAKE_CURRENT_LIST_DIR}"
  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
  AUXSCOPE_PTSYNTH_FIB="$<TARGET_FILE:ptsynth_prog_fib>")
target_link_libraries(export_tests PRIVATE auxscope_decode auxscope_test_data GTest::gtest_main)
gtest_discover_tests(export_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 120)

# auxscope export on Intel PT: spans by default, per-thread slices and CSV rows.
add_test(NAME cli_export_pt_spans COMMAND sh -c
  "set -e; d=$(mktemp -d); '$<TARGET_FILE:auxscope-ptsynth>' -q --start main -o $d/fib.data -- '$<TARGET_FILE:ptsynth_prog_fib>'; \
   $<TARGET_FILE:auxscope> export $d/fib.data -o $d/fib.pftrace; \
   $<TARGET_FILE:auxscope> export $d/fib.data --format csv -o $d/fib.csv; \
   echo fib rows: $(grep -c '^span,.*,fib,' $d/fib.csv); \
   $<TARGET_FILE:auxscope> export $d/fib.data --no-decode -o $d/plain.pftrace; rm -rf $d")
set_tests_properties(cli_export_pt_spans PROPERTIES PASS_REGULAR_EXPRESSION
  "wrote .*fib.pftrace \\(perfetto\\): .*, 48[0-9] Intel PT spans in 1 threads \\(1 gaps; untraced 1\\).*fib rows: 465\n.*wrote .*plain.pftrace \\(perfetto\\): [^\n]*loss records\n")
set(_export_skylake "${AUXSCOPE_TEST_DATA_DIR}/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14")
auxscope_add_data_test(NAME cli_export_pt_missing_image COMMAND sh -c
  "set -e; test -f '${_export_skylake}'; d=$(mktemp -d); \
   $<TARGET_FILE:auxscope> export '${_export_skylake}' --cpu 0 -o $d/s.pftrace; rm -rf $d")
set_tests_properties(cli_export_pt_missing_image PROPERTIES PASS_REGULAR_EXPRESSION
  "wrote .*s.pftrace \\(perfetto\\): .* Intel PT spans in [1-9][0-9]* threads \\([1-9][0-9]* gaps;.*missing image [1-9]")

# The trace page's Intel PT decode (tests/app/MainWindowTest.cpp) opens the same ptsynth trace.
add_dependencies(app_mainwindow_tests auxscope-ptsynth ptsynth_prog_fib)
target_compile_definitions(app_mainwindow_tests PRIVATE
  AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
  AUXSCOPE_PTSYNTH_FIB="$<TARGET_FILE:ptsynth_prog_fib>")

# auxscope export of a perf -g capture of the sampled-stacks test program: perf
# samples with their stacks (summary line), CSV sample rows with the folded stack
# in a tenth column, --no-stacks exporting it as a file without stacks; and a
# capture without stacks exports the same with and without --no-stacks (no
# profile is loaded for it). Skipped (77) only where perf cannot record.
add_test(NAME cli_export_stacks COMMAND sh -c
  "command -v perf >/dev/null || { echo 'perf is not installed'; exit 77; }; d=$(mktemp -d); \
   perf record -q -e cpu-clock -c 1000000 -g --switch-events --sample-cpu -o $d/g.data -- '$<TARGET_FILE:stacks_prog_fp>' 300 >$d/log 2>&1 \
     && perf record -q -e cpu-clock -c 1000000 --switch-events --sample-cpu -o $d/p.data -- '$<TARGET_FILE:stacks_prog_fp>' 100 >>$d/log 2>&1 \
     || { echo 'perf record failed:'; cat $d/log; rm -rf $d; exit 77; }; set -e; \
   $<TARGET_FILE:auxscope> export $d/g.data -o $d/g.pftrace; \
   $<TARGET_FILE:auxscope> export $d/g.data --format csv -o $d/g.csv; head -1 $d/g.csv; \
   echo main-hot rows: $(grep -c '^sample,.*main;hot' $d/g.csv); \
   $<TARGET_FILE:auxscope> export $d/g.data --no-stacks --format csv -o $d/n.csv; head -1 $d/n.csv; \
   $<TARGET_FILE:auxscope> export $d/p.data -o $d/p1.pftrace; \
   $<TARGET_FILE:auxscope> export $d/p.data --no-stacks -o $d/p2.pftrace; \
   cmp $d/p1.pftrace $d/p2.pftrace && echo without stacks: same bytes; rm -rf $d")
set_tests_properties(cli_export_stacks PROPERTIES RUN_SERIAL TRUE SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION
  "wrote .*g.pftrace \\(perfetto\\): [^\n]*, [1-9][0-9]* samples with call stacks, [1-9][0-9]* off-CPU stretches\n.*kind,cpu,time_ns,end_ns,pid,tid,name,value,detail,stack\nmain-hot rows: [1-9][0-9]*\n.*wrote .*n.csv \\(csv\\): [^\n]*loss records\n.*kind,cpu,time_ns,end_ns,pid,tid,name,value,detail\n.*without stacks: same bytes")

# auxscope export of an Arm SPE recording (auxscope-spesynth, with its truth):
# every record in Perfetto and as CSV rows; the spe-csv table's fields equal the
# truth's row for row, and names its functions and data symbols; spe-csv of a
# file without SPE is refused.
add_test(NAME cli_export_spe COMMAND sh -c
  "set -e; d=$(mktemp -d); '$<TARGET_FILE:auxscope-spesynth>' -q --generate 3000 --seed 7 -o $d/spe.data; \
   $<TARGET_FILE:auxscope> export $d/spe.data -o $d/spe.pftrace; \
   $<TARGET_FILE:auxscope> export $d/spe.data --format csv -o $d/spe.csv; \
   echo spe rows: $(grep -c '^spe,' $d/spe.csv); \
   $<TARGET_FILE:auxscope> export $d/spe.data --format spe-csv; \
   n=$(head -1 $d/spe.data.truth | tr ',' '\\n' | wc -l); \
   cut -d, -f1-$n $d/spe.spe.csv | cmp - $d/spe.data.truth && echo table equals the truth; \
   echo named functions: $(cut -d, -f$((n+2)) $d/spe.spe.csv | grep -c .); \
   echo data symbols: $(awk -F, -v c=$((n+3)) 'NR>1 && $c ~ /^[a-z_][a-z_0-9]*([+]0x[0-9a-f]+)?$/' $d/spe.spe.csv | wc -l); \
   '$<TARGET_FILE:auxscope-ptsynth>' -q --generate 1 -o $d/pt.data; \
   if $<TARGET_FILE:auxscope> export $d/pt.data --format spe-csv 2>$d/err; then echo accepted; else echo refused: $(cat $d/err); fi; \
   rm -rf $d")
set_tests_properties(cli_export_spe PROPERTIES PASS_REGULAR_EXPRESSION
  "wrote .*spe.pftrace \\(perfetto\\): .*, 3000 Arm SPE records\n.*spe rows: 3000\n.*wrote .*spe.spe.csv \\(spe-csv\\): .*, 3000 Arm SPE records\ntable equals the truth\nnamed functions: 300[01]\ndata symbols: [1-9][0-9]+\n.*refused: auxscope export: --format spe-csv: .*pt.data has no Arm SPE data \\(Intel PT\\)")
