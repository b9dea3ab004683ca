# SPDX-License-Identifier: GPL-3.0-or-later
# spe_fuzz (issue 31): the Arm SPE path (tests/fuzz/SpeFuzzer.cpp) over seeds the
# run script makes (auxscope-spesynth files, raw packet streams): no test data
# needed. Links the layers as the hardening fuzzers do (objects shared between
# them; include()d after fuzz/hardening_fuzz.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
if(NOT DEFINED _hf_decode_libs)
  message(FATAL_ERROR "include fuzz/hardening_fuzz.cmake before fuzz/spe_fuzz.cmake")
endif()
auxscope_add_fuzzer(NAME spe_fuzz TARGET spe_fuzzer NO_DATA
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_spe_fuzzer.sh
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/SpeFuzzer.cpp
  INCLUDES ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture
  OBJECTS ${_hf_decode_objects} ${_hf_capture_objects}
  LIBS ${_hf_decode_libs}
  SCRIPT_ARGS $<TARGET_FILE:auxscope-spesynth>
  DEPENDS auxscope-spesynth
  CRASHES ${CMAKE_CURRENT_LIST_DIR}/spe_fuzzer-crashes)
