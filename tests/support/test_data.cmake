# SPDX-License-Identifier: GPL-3.0-or-later
# The real trace data the golden tests read in place (include()d by
# tests/CMakeLists.txt before every test that needs it). One folder for all of
# them, never copied into the repo: ../shared/data beside the clone unless
# -DAUXSCOPE_TEST_DATA_DIR=... says otherwise. Whether it exists is asked when
# the tests run, not here, so building and test discovery never depend on it:
# without it each such test skips with one line naming the folder, and with
# CI=true or AUXSCOPE_REQUIRE_TEST_DATA=1 in the environment it fails instead.
cmake_path(SET _auxscope_default_test_data NORMALIZE "${CMAKE_SOURCE_DIR}/../shared/data")
set(AUXSCOPE_TEST_DATA_DIR "${_auxscope_default_test_data}" CACHE PATH
    "The real trace data the golden tests read (../shared/data beside the clone)")
# A relative path is made absolute (CMake takes one given untyped on the command line from the
# working directory, any other from the source tree); '..' folded so the tests name one path.
cmake_path(ABSOLUTE_PATH AUXSCOPE_TEST_DATA_DIR BASE_DIRECTORY "${CMAKE_SOURCE_DIR}" NORMALIZE)
string(REGEX REPLACE "(.)/$" "\\1" AUXSCOPE_TEST_DATA_DIR "${AUXSCOPE_TEST_DATA_DIR}")

# C++ tests (GoogleTest and QtTest): TestData.h, AUXSCOPE_NEED_TEST_DATA() and
# AUXSCOPE_QNEED_TEST_DATA(). The folder is compiled into TestData.cpp alone.
add_library(auxscope_test_data STATIC ${CMAKE_CURRENT_LIST_DIR}/TestData.cpp)
target_include_directories(auxscope_test_data PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_compile_definitions(auxscope_test_data PRIVATE AUXSCOPE_TEST_DATA_DIR="${AUXSCOPE_TEST_DATA_DIR}")

# Command-line tests: add_test(NAME ... COMMAND ... [WORKING_DIRECTORY ...]) run
# through with_test_data.sh, which prints the line and exits 77 (reported by
# ctest as skipped) or 1 (CI=true / AUXSCOPE_REQUIRE_TEST_DATA=1) when the folder
# is missing. An executable target as the command is replaced by its file, as
# add_test() does; the script changes to WORKING_DIRECTORY itself, since that may
# lie inside the missing folder. Arguments may hold ';' but not be empty.
set(AUXSCOPE_WITH_TEST_DATA sh ${CMAKE_CURRENT_LIST_DIR}/with_test_data.sh "${AUXSCOPE_TEST_DATA_DIR}")
function(auxscope_add_data_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;WORKING_DIRECTORY" "COMMAND")
  if(NOT arg_NAME OR NOT arg_COMMAND OR arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "auxscope_add_data_test(NAME name COMMAND command [args...] [WORKING_DIRECTORY dir])")
  endif()
  # arg_COMMAND keeps a ';' inside an argument escaped; string operations keep it so.
  list(GET arg_COMMAND 0 _first)
  if(TARGET "${_first}")
    string(LENGTH "${_first}" _n)
    string(SUBSTRING "${arg_COMMAND}" ${_n} -1 _rest)
    set(arg_COMMAND "$<TARGET_FILE:${_first}>${_rest}")
  endif()
  set(_cd)
  if(arg_WORKING_DIRECTORY)
    set(_cd -C "${arg_WORKING_DIRECTORY}")
  endif()
  add_test(NAME ${arg_NAME} COMMAND ${AUXSCOPE_WITH_TEST_DATA} ${_cd} ${arg_COMMAND})
  set_tests_properties(${arg_NAME} PROPERTIES SKIP_RETURN_CODE 77)
endfunction()
