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
set(_epf_sources ${CMAKE_CURRENT_LIST_DIR}/EtmPerfDataFuzzer.cpp ${PROJECT_SOURCE_DIR}/decode/LibraryVersions.cpp)
set(_epf_headers)
foreach(dir capture decode/perfdata decode/record decode/sideband decode/spans decode/images decode/etm decode/spe
            decode/pt decode/samples decode/export decode/auxtrace)
  file(GLOB _cpp ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
  file(GLOB _h ${PROJECT_SOURCE_DIR}/${dir}/*.h)
  list(APPEND _epf_sources ${_cpp})
  list(APPEND _epf_headers ${_h})
endforeach()
auxscope_add_fuzzer(NAME etm_perfdata_fuzz TARGET etm_perfdata_fuzzer
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_etm_perfdata_fuzzer.sh
  SOURCES ${_epf_sources}
  HEADERS ${_epf_headers}
  INCLUDES ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture
  LIBS -lopencsd_c_api -lopencsd -lipt -ldw -ldebuginfod -lelf -lzstd -lcapstone)
