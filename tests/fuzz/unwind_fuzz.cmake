# SPDX-License-Identifier: GPL-3.0-or-later
# unwind_fuzz (include()d by tests/decode/samples_tests.cmake): libFuzzer over
# the DWARF unwinder's inputs (tests/fuzz/UnwindFuzzer.cpp), both engines
# compared on every input, against a perf recording of stacks_prog_nofp the run
# script makes; bounded in the suite like the other fuzzers (fuzz_target.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
set(_uf_capture_sources)
set(_uf_decode_sources ${PROJECT_SOURCE_DIR}/decode/LibraryVersions.cpp)
file(GLOB _uf_capture_sources ${PROJECT_SOURCE_DIR}/capture/*.cpp)
foreach(dir perfdata record sideband spans images samples)
  file(GLOB _cpp ${PROJECT_SOURCE_DIR}/decode/${dir}/*.cpp)
  list(APPEND _uf_decode_sources ${_cpp})
endforeach()
if(AUXSCOPE_FUZZ_REASON STREQUAL "")
  auxscope_fuzz_objects(_uf_capture_objects ${_uf_capture_sources})
  auxscope_fuzz_objects(_uf_decode_objects ${_uf_decode_sources})
endif()
auxscope_add_fuzzer(NAME unwind_fuzz TARGET unwind_fuzzer NO_DATA
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_unwind_fuzzer.sh
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/UnwindFuzzer.cpp
  INCLUDES ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture
  OBJECTS ${_uf_decode_objects} ${_uf_capture_objects}
  LIBS -lopencsd_c_api -lopencsd -lipt -ldw -ldebuginfod -lelf -lzstd -lcapstone -lpthread
  SCRIPT_ARGS $<TARGET_FILE:stacks_prog_nofp>
  DEPENDS stacks_prog_nofp
  CRASHES ${CMAKE_CURRENT_LIST_DIR}/unwind_fuzzer-crashes)
