# SPDX-License-Identifier: GPL-3.0-or-later
# libFuzzer target for the CoreSight path from a perf.data (include()d by
# tests/decode/etm_tests.cmake): PerfDataReader::open, AuxTraceSession::open and
# decodeSpans of a cs_etm file (tests/fuzz/EtmPerfDataFuzzer.cpp).
#
# auxtrace/ links every decoder (Intel PT's too), the sideband, images, spans,
# record/ (the live decoder's AUXTRACE_INFO) and capture/, so every source of
# those folders is compiled in, with the system OpenCSD, libipt, libdw/libelf,
# zstd and capstone (not instrumented), over seeds copied at test time from the
# simpleperf cs_etm files.
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
# The layers are linked as objects shared between the fuzzers (auxscope_fuzz_objects:
# each source compiled once per build tree, in parallel; pt_perfdata_fuzz links the same).
set(_epf_sources ${PROJECT_SOURCE_DIR}/decode/LibraryVersions.cpp)
foreach(dir capture decode/perfdata decode/record decode/sideband decode/spans decode/images decode/etm decode/spe
            decode/pt decode/samples decode/export decode/auxtrace)
  file(GLOB _cpp ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
  list(APPEND _epf_sources ${_cpp})
endforeach()
set(_epf_objects)
if(AUXSCOPE_FUZZ_REASON STREQUAL "")
  auxscope_fuzz_objects(_epf_objects ${_epf_sources})
endif()
auxscope_add_fuzzer(NAME etm_perfdata_fuzz TARGET etm_perfdata_fuzzer
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_etm_perfdata_fuzzer.sh
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/EtmPerfDataFuzzer.cpp
  INCLUDES ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture
  OBJECTS ${_epf_objects}
  CRASHES ${CMAKE_CURRENT_LIST_DIR}/etm_perfdata_fuzzer-crashes
  LIBS -lopencsd_c_api -lopencsd -lipt -ldw -ldebuginfod -lelf -lzstd -lcapstone)
