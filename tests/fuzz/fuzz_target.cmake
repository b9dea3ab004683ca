# SPDX-License-Identifier: GPL-3.0-or-later
# auxscope_add_fuzzer(): one libFuzzer target and its bounded ctest run, the same
# way for every parser of outside data (included once by the *_fuzz.cmake files).
#
# libFuzzer needs clang while the main build uses g++: a target's sources are
# compiled here directly with clang++ -fsanitize=fuzzer,address,undefined (the
# system libraries it links, e.g. OpenCSD, stay uninstrumented). The ctest runs
# SCRIPT (which makes a corpus from the test data, AUXSCOPE_TEST_DATA_DIR, in a
# temp dir and calls tests/fuzz/fuzz_run.sh) for 45 s. Without clang++ or
# libFuzzer, or without the data, the test is skipped with the reason.
include_guard(GLOBAL)

set(AUXSCOPE_FUZZ_REASON "")
find_program(AUXSCOPE_FUZZ_CXX NAMES clang++-14 clang++ DOC "clang++ with libFuzzer, for the fuzz targets")
if(NOT AUXSCOPE_FUZZ_CXX)
  set(AUXSCOPE_FUZZ_REASON "clang++ not found (install clang-14 and libclang-rt-14-dev to build the fuzzers)")
else()
  # libFuzzer ships in libclang-rt-*-dev; check that a trivial harness links.
  set(_probe_dir ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe)
  file(MAKE_DIRECTORY ${_probe_dir})
  file(WRITE ${_probe_dir}/probe.cpp
    "#include <cstdint>\n#include <cstddef>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(COMMAND ${AUXSCOPE_FUZZ_CXX} -fsanitize=fuzzer ${_probe_dir}/probe.cpp -o ${_probe_dir}/probe
                  RESULT_VARIABLE _probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT _probe_rc EQUAL 0)
    set(AUXSCOPE_FUZZ_REASON "${AUXSCOPE_FUZZ_CXX} cannot link -fsanitize=fuzzer (libclang-rt-dev missing?)")
  endif()
endif()
if(NOT AUXSCOPE_FUZZ_REASON STREQUAL "")
  message(STATUS "fuzz tests will be skipped: ${AUXSCOPE_FUZZ_REASON}")
endif()

# auxscope_add_fuzzer(NAME test-name TARGET fuzzer-target SCRIPT run-script
#                     SOURCES ... [HEADERS ...] [INCLUDES ...] [LIBS ...])
function(auxscope_add_fuzzer)
  cmake_parse_arguments(F "" "NAME;TARGET;SCRIPT" "SOURCES;HEADERS;INCLUDES;LIBS" ${ARGN})
  if(AUXSCOPE_FUZZ_REASON STREQUAL "")
    file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
    set(_fuzzer ${CMAKE_CURRENT_BINARY_DIR}/fuzz/${F_TARGET})
    set(_includes)
    foreach(dir ${F_INCLUDES})
      list(APPEND _includes -I${dir})
    endforeach()
    add_custom_command(OUTPUT ${_fuzzer}
      COMMAND ${AUXSCOPE_FUZZ_CXX} -std=c++20 -g -O1 -fno-omit-frame-pointer
              -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
              ${_includes} ${F_SOURCES} ${F_LIBS} -o ${_fuzzer}
      DEPENDS ${F_SOURCES} ${F_HEADERS}
      COMMENT "Building ${F_TARGET} with ${AUXSCOPE_FUZZ_CXX}"
      VERBATIM)
    add_custom_target(${F_TARGET} ALL DEPENDS ${_fuzzer})
    auxscope_add_data_test(NAME ${F_NAME} COMMAND sh ${F_SCRIPT} "${AUXSCOPE_TEST_DATA_DIR}" 45 ${_fuzzer})
  else()
    auxscope_add_data_test(NAME ${F_NAME} COMMAND sh ${F_SCRIPT} "${AUXSCOPE_TEST_DATA_DIR}" 45
      --skip "${AUXSCOPE_FUZZ_REASON}")
  endif()
  set_tests_properties(${F_NAME} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
endfunction()
