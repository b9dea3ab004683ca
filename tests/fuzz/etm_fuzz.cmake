# SPDX-License-Identifier: GPL-3.0-or-later
# libFuzzer target for the CoreSight path (include()d by tests/decode/etm_tests.cmake):
# the snapshot .ini parser, the snapshot reader and decode, and the OpenCSD
# decoders fed fuzzed trace with fixed configurations.
#
# libFuzzer needs clang while the main build uses g++: decode/etm's sources are
# compiled here directly with clang++ -fsanitize=fuzzer,address,undefined and
# linked with the system OpenCSD (not instrumented). The ctest runs it for a
# bounded time over seeds made at test time from the shared snapshots
# (AUXSCOPE_TEST_DATA_DIR). Without clang++/libFuzzer, or without the data, the
# test is skipped with the reason.
set(_etm_fuzz_reason "")
find_program(AUXSCOPE_FUZZ_CXX NAMES clang++-14 clang++ DOC "clang++ with libFuzzer, for the fuzz targets")
if(NOT AUXSCOPE_FUZZ_CXX)
  set(_etm_fuzz_reason "clang++ not found (install clang-14 and libclang-rt-14-dev to build the fuzzers)")
else()
  set(_etm_probe_dir ${CMAKE_CURRENT_BINARY_DIR}/etm_fuzz_probe)
  file(MAKE_DIRECTORY ${_etm_probe_dir})
  file(WRITE ${_etm_probe_dir}/probe.cpp
    "#include <cstdint>\n#include <cstddef>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(COMMAND ${AUXSCOPE_FUZZ_CXX} -fsanitize=fuzzer ${_etm_probe_dir}/probe.cpp -o ${_etm_probe_dir}/probe
                  RESULT_VARIABLE _etm_probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT _etm_probe_rc EQUAL 0)
    set(_etm_fuzz_reason "${AUXSCOPE_FUZZ_CXX} cannot link -fsanitize=fuzzer (libclang-rt-dev missing?)")
  endif()
endif()

set(_etm_fuzz_script ${CMAKE_CURRENT_LIST_DIR}/run_etm_fuzzer.sh)
if(_etm_fuzz_reason STREQUAL "")
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
  set(_etm_fuzzer ${CMAKE_CURRENT_BINARY_DIR}/fuzz/etm_fuzzer)
  set(_etm_dir ${PROJECT_SOURCE_DIR}/decode/etm)
  file(GLOB _etm_fuzz_headers ${_etm_dir}/*.h)
  set(_etm_fuzz_sources
    ${CMAKE_CURRENT_LIST_DIR}/EtmFuzzer.cpp
    ${_etm_dir}/SnapshotIni.cpp
    ${_etm_dir}/EtmSourceConfig.cpp
    ${_etm_dir}/EtmElement.cpp
    ${_etm_dir}/EtmMemory.cpp
    ${_etm_dir}/EtmDecoder.cpp
    ${_etm_dir}/EtmSnapshot.cpp
    ${_etm_dir}/EtmSnapshotDecode.cpp)
  add_custom_command(OUTPUT ${_etm_fuzzer}
    COMMAND ${AUXSCOPE_FUZZ_CXX} -std=c++20 -g -O1 -fno-omit-frame-pointer
            -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
            -I${PROJECT_SOURCE_DIR}/decode -I${PROJECT_SOURCE_DIR}/capture
            ${_etm_fuzz_sources} -lopencsd_c_api -lopencsd -o ${_etm_fuzzer}
    DEPENDS ${_etm_fuzz_sources} ${_etm_fuzz_headers}
    COMMENT "Building the CoreSight fuzzer with ${AUXSCOPE_FUZZ_CXX}"
    VERBATIM)
  add_custom_target(etm_fuzzer ALL DEPENDS ${_etm_fuzzer})
  auxscope_add_data_test(NAME etm_fuzz COMMAND sh ${_etm_fuzz_script} "${AUXSCOPE_TEST_DATA_DIR}" 45 ${_etm_fuzzer})
else()
  message(STATUS "etm fuzz test will be skipped: ${_etm_fuzz_reason}")
  auxscope_add_data_test(NAME etm_fuzz COMMAND sh ${_etm_fuzz_script} "${AUXSCOPE_TEST_DATA_DIR}" 45
    --skip "${_etm_fuzz_reason}")
endif()
set_tests_properties(etm_fuzz PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
