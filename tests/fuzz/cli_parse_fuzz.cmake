# SPDX-License-Identifier: GPL-3.0-or-later
# cli_parse_fuzz (issue 32): the command line's parsers (capture/OptionParser.h,
# app/cli's parse functions, decode/pt's parsePtDecodeArguments) fed random
# argument vectors, parse only; seeds written by the run script, no test data.
# Links the layers as the hardening fuzzers do (objects shared between them)
# and app/cli's sources. 10^6 runs: bench/fuzz-long --only cli_parse --runs 1000000.
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
# _hf_*: the layers' objects and libraries, set by hardening_fuzz.cmake (included before this).
if(NOT DEFINED _hf_decode_libs)
  message(FATAL_ERROR "include fuzz/hardening_fuzz.cmake before fuzz/cli_parse_fuzz.cmake")
endif()
# RecordCommand.cpp needs AUXSCOPE_VERSION (DEFINES): compiled with the harness;
# the others as shared objects (in parallel, each rebuilt alone).
set(_cli_sources)
foreach(src InfoCommand ExportCommand DecodeCommand DecodeOptions JsonString ReportCommand CompareCommand)
  list(APPEND _cli_sources ${PROJECT_SOURCE_DIR}/app/cli/${src}.cpp)
endforeach()
if(AUXSCOPE_FUZZ_REASON STREQUAL "")
  auxscope_fuzz_objects(_cli_objects ${_cli_sources})
endif()
auxscope_add_fuzzer(NAME cli_parse_fuzz TARGET cli_parse_fuzzer NO_DATA
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_cli_parse_fuzzer.sh
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/CliParseFuzzer.cpp ${PROJECT_SOURCE_DIR}/app/cli/RecordCommand.cpp
  HEADERS ${PROJECT_SOURCE_DIR}/capture/OptionParser.h
  INCLUDES ${PROJECT_SOURCE_DIR}/app ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture
  DEFINES AUXSCOPE_VERSION="fuzz"
  OBJECTS ${_cli_objects} ${_hf_decode_objects} ${_hf_capture_objects}
  LIBS ${_hf_decode_libs})
