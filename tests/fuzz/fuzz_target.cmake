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

set(AUXSCOPE_FUZZ_FLAGS -std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
                        -fno-sanitize-recover=undefined)
# Every fuzzer target declared (bench/'s run_fuzz_long builds them first).
set_property(GLOBAL PROPERTY AUXSCOPE_FUZZER_TARGETS "")

# auxscope_fuzz_objects(OUT_VAR SOURCES ...): one object per source compiled with
# clang (AUXSCOPE_FUZZ_FLAGS, includes capture/, decode/, app/), each once per
# build tree however many fuzzers link it, in parallel, rebuilt from its
# depfile. For fuzzers that link whole layers (OBJECTS of auxscope_add_fuzzer).
function(auxscope_fuzz_objects out)
  set(_objects)
  foreach(src ${ARGN})
    file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${src})
    set(_obj ${CMAKE_BINARY_DIR}/fuzz-obj/${_rel}.o)
    string(MAKE_C_IDENTIFIER "${_rel}" _key)
    get_property(_done GLOBAL PROPERTY AUXSCOPE_FUZZ_OBJECT_${_key})
    if(NOT _done)
      set_property(GLOBAL PROPERTY AUXSCOPE_FUZZ_OBJECT_${_key} TRUE)
      get_filename_component(_dir ${_obj} DIRECTORY)
      file(MAKE_DIRECTORY ${_dir})
      add_custom_command(OUTPUT ${_obj}
        COMMAND ${AUXSCOPE_FUZZ_CXX} ${AUXSCOPE_FUZZ_FLAGS} -I${PROJECT_SOURCE_DIR}/capture
                -I${PROJECT_SOURCE_DIR}/decode -I${PROJECT_SOURCE_DIR}/app -MD -MF ${_obj}.d -c ${src} -o ${_obj}
        DEPENDS ${src}
        DEPFILE ${_obj}.d
        COMMENT "Compiling ${_rel} for the fuzzers (${AUXSCOPE_FUZZ_CXX})"
        VERBATIM)
    endif()
    list(APPEND _objects ${_obj})
  endforeach()
  set(${out} ${_objects} PARENT_SCOPE)
endfunction()

# auxscope_add_fuzzer(NAME test-name TARGET fuzzer-target SCRIPT run-script
#                     SOURCES ... [HEADERS ...] [INCLUDES ...] [DEFINES ...] [OBJECTS ...] [LIBS ...]
#                     [SCRIPT_ARGS ...] [DEPENDS target ...] [CRASHES dir] [NO_DATA])
# OBJECTS (from auxscope_fuzz_objects) are linked in beside SOURCES; DEFINES
# (NAME=VALUE) are -D flags for SOURCES. SCRIPT_ARGS
# follow the fuzzer on the run script's command line (generator expressions
# allowed); DEPENDS are targets the run script uses. CRASHES: a folder of inputs
# that once crashed the target (tests/fuzz/<target>-crashes), replayed by the
# test NAME_crashes (declared when the folder exists). NO_DATA: the run script
# makes its seeds without the shared test data, so the test runs without it too.
function(auxscope_add_fuzzer)
  cmake_parse_arguments(F "NO_DATA" "NAME;TARGET;SCRIPT;CRASHES"
                        "SOURCES;HEADERS;INCLUDES;DEFINES;OBJECTS;LIBS;SCRIPT_ARGS;DEPENDS" ${ARGN})
  if(AUXSCOPE_FUZZ_REASON STREQUAL "")
    file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
    set(_fuzzer ${CMAKE_CURRENT_BINARY_DIR}/fuzz/${F_TARGET})
    set(_includes)
    foreach(dir ${F_INCLUDES})
      list(APPEND _includes -I${dir})
    endforeach()
    foreach(def ${F_DEFINES})
      list(APPEND _includes -D${def})
    endforeach()
    add_custom_command(OUTPUT ${_fuzzer}
      COMMAND ${AUXSCOPE_FUZZ_CXX} ${AUXSCOPE_FUZZ_FLAGS}
              ${_includes} ${F_SOURCES} ${F_OBJECTS} ${F_LIBS} -o ${_fuzzer}
      DEPENDS ${F_SOURCES} ${F_HEADERS} ${F_OBJECTS}
      COMMENT "Building ${F_TARGET} with ${AUXSCOPE_FUZZ_CXX}"
      VERBATIM)
    add_custom_target(${F_TARGET} ALL DEPENDS ${_fuzzer})
    if(F_DEPENDS)
      add_dependencies(${F_TARGET} ${F_DEPENDS})
    endif()
    if(F_NO_DATA)
      add_test(NAME ${F_NAME} COMMAND sh ${F_SCRIPT} "${AUXSCOPE_TEST_DATA_DIR}" 45 ${_fuzzer} ${F_SCRIPT_ARGS})
    else()
      auxscope_add_data_test(NAME ${F_NAME} COMMAND sh ${F_SCRIPT} "${AUXSCOPE_TEST_DATA_DIR}" 45 ${_fuzzer}
        ${F_SCRIPT_ARGS})
    endif()
    set_property(GLOBAL APPEND PROPERTY AUXSCOPE_FUZZER_TARGETS ${F_TARGET})
    if(F_CRASHES AND EXISTS ${F_CRASHES})
      add_test(NAME ${F_NAME}_crashes COMMAND sh ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/replay_crashes.sh ${_fuzzer} ${F_CRASHES})
      set_tests_properties(${F_NAME}_crashes PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
    endif()
  else()
    if(F_NO_DATA)
      add_test(NAME ${F_NAME} COMMAND sh ${F_SCRIPT} "${AUXSCOPE_TEST_DATA_DIR}" 45 --skip "${AUXSCOPE_FUZZ_REASON}")
    else()
      auxscope_add_data_test(NAME ${F_NAME} COMMAND sh ${F_SCRIPT} "${AUXSCOPE_TEST_DATA_DIR}" 45
        --skip "${AUXSCOPE_FUZZ_REASON}")
    endif()
    if(F_CRASHES AND EXISTS ${F_CRASHES})
      add_test(NAME ${F_NAME}_crashes COMMAND sh -c "echo \"SKIPPED: $0\"; exit 77" "${AUXSCOPE_FUZZ_REASON}")
      set_tests_properties(${F_NAME}_crashes PROPERTIES SKIP_RETURN_CODE 77)
    endif()
  endif()
  set_tests_properties(${F_NAME} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
endfunction()
