# SPDX-License-Identifier: GPL-3.0-or-later
# sample_profile_fuzz (include()d by tests/decode/sample_profile_tests.cmake):
# libFuzzer over whole perf.data files read as sampled profiles
# (tests/fuzz/SampleProfileFuzzer.cpp), seeded with perf recordings of
# stacks_prog_fp the run script makes; bounded in the suite like the other
# fuzzers (fuzz_target.cmake). It reuses unwind_fuzz's objects of the same folders.
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
auxscope_add_fuzzer(NAME sample_profile_fuzz TARGET sample_profile_fuzzer NO_DATA
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_sample_profile_fuzzer.sh
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/SampleProfileFuzzer.cpp
  INCLUDES ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture
  OBJECTS ${_uf_decode_objects} ${_uf_capture_objects}
  LIBS -lopencsd_c_api -lopencsd -lipt -ldw -ldebuginfod -lelf -lzstd -lcapstone -lpthread
  SCRIPT_ARGS $<TARGET_FILE:stacks_prog_fp>
  DEPENDS stacks_prog_fp
  CRASHES ${CMAKE_CURRENT_LIST_DIR}/sample_profile_fuzzer-crashes)
