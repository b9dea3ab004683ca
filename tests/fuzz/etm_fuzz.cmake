# SPDX-License-Identifier: GPL-3.0-or-later
# libFuzzer target for the CoreSight path (include()d by tests/decode/etm_tests.cmake):
# the snapshot .ini parser, the snapshot reader and decode, and the OpenCSD
# decoders fed fuzzed trace with fixed configurations.
#
# decode/etm's sources linked with the system OpenCSD (not instrumented), over
# seeds made at test time from the shared snapshots.
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
set(_etm_dir ${PROJECT_SOURCE_DIR}/decode/etm)
file(GLOB _etm_fuzz_headers ${_etm_dir}/*.h)
auxscope_add_fuzzer(NAME etm_fuzz TARGET etm_fuzzer SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_etm_fuzzer.sh
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/EtmFuzzer.cpp
    ${_etm_dir}/SnapshotIni.cpp
    ${_etm_dir}/EtmSourceConfig.cpp
    ${_etm_dir}/EtmElement.cpp
    ${_etm_dir}/EtmMemory.cpp
    ${_etm_dir}/EtmDecoder.cpp
    ${_etm_dir}/EtmSnapshot.cpp
    ${_etm_dir}/EtmSnapshotDecode.cpp
    ${PROJECT_SOURCE_DIR}/decode/spans/IsolatedDecode.cpp
    ${PROJECT_SOURCE_DIR}/decode/spans/SpanStore.cpp
  HEADERS ${_etm_fuzz_headers}
  CRASHES ${CMAKE_CURRENT_LIST_DIR}/etm_fuzzer-crashes
  INCLUDES ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture
  LIBS -lopencsd_c_api -lopencsd)

# A crash inside libopencsd counts as the library's only when OpenCSD's own
# trc_pkt_lister crashes on the same trace (tests/fuzz/opencsd_reproduce.sh): the
# known OpenCSD 1.3.3 crash input is reproduced that way, and an input the library
# decodes cleanly is not.
if(AUXSCOPE_FUZZ_REASON STREQUAL "")
  # Each checks the exit status and the line: sh -c 'SCRIPT' REPRO FUZZER INPUT.
  foreach(_crash "" -2 -3)
    string(REPLACE "-" "_" _name "${_crash}")
    add_test(NAME opencsd_crash_reproduced_by_its_own_tool${_name}
      COMMAND sh -c "out=$(sh \"$0\" \"$1\" \"$2\"); rc=$?; echo \"$out\"; [ $rc -eq 0 ] &&
echo \"$out\" | grep -q \"^reproduced: OpenCSD's trc_pkt_lister killed by signal\""
              ${CMAKE_CURRENT_LIST_DIR}/opencsd_reproduce.sh ${CMAKE_CURRENT_BINARY_DIR}/fuzz/etm_fuzzer
              ${CMAKE_CURRENT_LIST_DIR}/opencsd-1.3.3-crashes/etmv4-mispredict-atom${_crash}.bin)
  endforeach()
  add_test(NAME opencsd_clean_trace_is_not_the_library_s
    COMMAND sh -c "printf '\\002\\003\\000\\000' >\"$2\" && out=$(sh \"$0\" \"$1\" \"$2\"); rc=$?;
rm -f \"$2\"; echo \"$out\"; [ $rc -eq 1 ] &&
echo \"$out\" | grep -q \"^not reproduced: OpenCSD's trc_pkt_lister decodes the same trace without crashing\""
            ${CMAKE_CURRENT_LIST_DIR}/opencsd_reproduce.sh ${CMAKE_CURRENT_BINARY_DIR}/fuzz/etm_fuzzer
            ${CMAKE_CURRENT_BINARY_DIR}/opencsd-clean-input.bin)
  set_tests_properties(opencsd_crash_reproduced_by_its_own_tool opencsd_crash_reproduced_by_its_own_tool_2
    opencsd_crash_reproduced_by_its_own_tool_3
    opencsd_clean_trace_is_not_the_library_s
    PROPERTIES TIMEOUT 120)
endif()
