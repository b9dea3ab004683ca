# SPDX-License-Identifier: GPL-3.0-or-later
# libFuzzer target for the CoreSight path (include()d by tests/decode/etm_tests.cmake):
# the snapshot .ini parser, the snapshot reader and decode, and the OpenCSD
# decoders fed fuzzed trace with fixed configurations.
#
# decode/etm's sources linked with the system OpenCSD (not instrumented), over
# seeds made at test time from the shared snapshots.
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
set(_etm_dir ${PROJECT_SOURCE_DIR}/decode/etm)
file(GLOB _etm_fuzz_headers ${_etm_dir}/*.h)
auxscope_add_fuzzer(NAME etm_fuzz TARGET etm_fuzzer SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_etm_fuzzer.sh
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/EtmFuzzer.cpp
    ${_etm_dir}/SnapshotIni.cpp
    ${_etm_dir}/EtmSourceConfig.cpp
    ${_etm_dir}/EtmElement.cpp
    ${_etm_dir}/EtmMemory.cpp
    ${_etm_dir}/EtmDecoder.cpp
    ${_etm_dir}/EtmSnapshot.cpp
    ${_etm_dir}/EtmSnapshotDecode.cpp
  HEADERS ${_etm_fuzz_headers}
  INCLUDES ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture
  LIBS -lopencsd_c_api -lopencsd)
