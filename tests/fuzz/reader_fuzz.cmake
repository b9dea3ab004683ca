# SPDX-License-Identifier: GPL-3.0-or-later
# libFuzzer target for the perf.data reader (include()d by tests/decode/reader_tests.cmake).
#
# The main build uses g++, and libFuzzer needs clang: the reader's sources (with
# capture/RecordParser.cpp and app/cli/InfoCommand.cpp, all Qt-free) are compiled
# here directly with clang++ -fsanitize=fuzzer,address,undefined. The ctest runs
# it for a bounded time over a corpus copied, at test time, from the perf.data
# files of the test data (AUXSCOPE_TEST_DATA_DIR, ../shared/data) into a temp dir.
# Without clang++ or libFuzzer, or without the data, the test is skipped with the reason.
set(_fuzz_reason "")
find_program(AUXSCOPE_FUZZ_CXX NAMES clang++-14 clang++ DOC "clang++ with libFuzzer, for the reader fuzz target")
if(NOT AUXSCOPE_FUZZ_CXX)
  set(_fuzz_reason "clang++ not found (install clang-14 and libclang-rt-14-dev to build the reader fuzzer)")
else()
  # libFuzzer ships in libclang-rt-*-dev; check that a trivial harness links.
  set(_probe_dir ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe)
  file(MAKE_DIRECTORY ${_probe_dir})
  file(WRITE ${_probe_dir}/probe.cpp
    "#include <cstdint>\n#include <cstddef>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(COMMAND ${AUXSCOPE_FUZZ_CXX} -fsanitize=fuzzer ${_probe_dir}/probe.cpp -o ${_probe_dir}/probe
                  RESULT_VARIABLE _probe_rc OUTPUT_QUIET ERROR_VARIABLE _probe_err)
  if(NOT _probe_rc EQUAL 0)
    set(_fuzz_reason "${AUXSCOPE_FUZZ_CXX} cannot link -fsanitize=fuzzer (libclang-rt-dev missing?)")
  endif()
endif()

set(_fuzz_script ${CMAKE_CURRENT_LIST_DIR}/run_reader_fuzzer.sh)
if(_fuzz_reason STREQUAL "")
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
  set(_fuzzer ${CMAKE_CURRENT_BINARY_DIR}/fuzz/reader_fuzzer)
  set(_fuzz_sources
    ${CMAKE_CURRENT_LIST_DIR}/ReaderFuzzer.cpp
    ${PROJECT_SOURCE_DIR}/decode/perfdata/PerfDataReader.cpp
    ${PROJECT_SOURCE_DIR}/decode/perfdata/PerfDataReaderFeatures.cpp
    ${PROJECT_SOURCE_DIR}/capture/RecordParser.cpp
    ${PROJECT_SOURCE_DIR}/decode/perfdata/CaptureStatsFeature.cpp
    ${PROJECT_SOURCE_DIR}/app/cli/InfoCommand.cpp
    ${PROJECT_SOURCE_DIR}/app/cli/JsonString.cpp)
  set(_fuzz_headers
    ${PROJECT_SOURCE_DIR}/decode/perfdata/PerfDataReader.h
    ${PROJECT_SOURCE_DIR}/decode/perfdata/PerfDataReaderInternal.h
    ${PROJECT_SOURCE_DIR}/decode/perfdata/PerfDataFormat.h
    ${PROJECT_SOURCE_DIR}/decode/perfdata/CaptureStatsFeature.h
    ${PROJECT_SOURCE_DIR}/app/cli/JsonString.h
    ${PROJECT_SOURCE_DIR}/capture/CaptureStats.h
    ${PROJECT_SOURCE_DIR}/capture/RecordParser.h
    ${PROJECT_SOURCE_DIR}/capture/Result.h
    ${PROJECT_SOURCE_DIR}/app/cli/InfoCommand.h)
  add_custom_command(OUTPUT ${_fuzzer}
    COMMAND ${AUXSCOPE_FUZZ_CXX} -std=c++20 -g -O1 -fno-omit-frame-pointer
            -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
            -I${PROJECT_SOURCE_DIR}/decode -I${PROJECT_SOURCE_DIR}/capture -I${PROJECT_SOURCE_DIR}/app
            ${_fuzz_sources} -lzstd -o ${_fuzzer}
    DEPENDS ${_fuzz_sources} ${_fuzz_headers}
    COMMENT "Building the perf.data reader fuzzer with ${AUXSCOPE_FUZZ_CXX}"
    VERBATIM)
  add_custom_target(reader_fuzzer ALL DEPENDS ${_fuzzer})
  auxscope_add_data_test(NAME reader_fuzz COMMAND sh ${_fuzz_script} "${AUXSCOPE_TEST_DATA_DIR}" 45 ${_fuzzer})
else()
  message(STATUS "reader fuzz test will be skipped: ${_fuzz_reason}")
  auxscope_add_data_test(NAME reader_fuzz COMMAND sh ${_fuzz_script} "${AUXSCOPE_TEST_DATA_DIR}" 45
    --skip "${_fuzz_reason}")
endif()
set_tests_properties(reader_fuzz PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
