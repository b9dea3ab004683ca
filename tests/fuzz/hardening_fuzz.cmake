# SPDX-License-Identifier: GPL-3.0-or-later
# libFuzzer targets for the parsers of outside data issue 17 adds (include()d by
# tests/CMakeLists.txt), beside reader_fuzz, etm_fuzz and etm_perfdata_fuzz:
#  - pt_perfdata_fuzz: the Intel PT path from a perf.data (PerfDataReader::open
#    on a memfd, AuxTraceSession::open, decodeSpans on 1 thread, the packet
#    listing) over the shared Skylake perf.data and a small auxscope-ptsynth
#    --generate file made at test time;
#  - elf_fuzz: the ELF/image loader (images/ElfSymbols, ImageResolver with the
#    file as a process image, a vmlinux or a kcore) over small ELF files copied
#    at test time from the build tree, /usr/bin and the shared data;
#  - control_fifo_fuzz: the --control fifo:CTL,ACK parser (capture/CaptureControl)
#    over real FIFOs, seeds written by the run script.
# Each links the layers it needs as objects shared between the fuzzers
# (auxscope_fuzz_objects), runs bounded in the suite (fixed seed, run cap), and
# replays its tests/fuzz/<target>-crashes/ inputs (NAME_crashes).
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
set(_hf_capture_sources)
set(_hf_decode_sources ${PROJECT_SOURCE_DIR}/decode/LibraryVersions.cpp)
file(GLOB _hf_capture_sources ${PROJECT_SOURCE_DIR}/capture/*.cpp)
foreach(dir perfdata record sideband spans images etm pt spe samples export auxtrace)
  file(GLOB _cpp ${PROJECT_SOURCE_DIR}/decode/${dir}/*.cpp)
  list(APPEND _hf_decode_sources ${_cpp})
endforeach()
if(AUXSCOPE_FUZZ_REASON STREQUAL "")
  auxscope_fuzz_objects(_hf_capture_objects ${_hf_capture_sources})
  auxscope_fuzz_objects(_hf_decode_objects ${_hf_decode_sources})
endif()
set(_hf_decode_libs -lopencsd_c_api -lopencsd -lipt -ldw -ldebuginfod -lelf -lzstd -lcapstone -lpthread)

auxscope_add_fuzzer(NAME pt_perfdata_fuzz TARGET pt_perfdata_fuzzer
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_pt_perfdata_fuzzer.sh
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/PtPerfDataFuzzer.cpp
  INCLUDES ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture
  OBJECTS ${_hf_decode_objects} ${_hf_capture_objects}
  LIBS ${_hf_decode_libs}
  SCRIPT_ARGS $<TARGET_FILE:auxscope-ptsynth>
  DEPENDS auxscope-ptsynth
  CRASHES ${CMAKE_CURRENT_LIST_DIR}/pt_perfdata_fuzzer-crashes)

auxscope_add_fuzzer(NAME elf_fuzz TARGET elf_fuzzer
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_elf_fuzzer.sh
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ElfFuzzer.cpp
  INCLUDES ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture
  OBJECTS ${_hf_decode_objects} ${_hf_capture_objects}
  LIBS ${_hf_decode_libs}
  SCRIPT_ARGS $<TARGET_FILE:auxscope-ptsynth>
  DEPENDS auxscope-ptsynth
  CRASHES ${CMAKE_CURRENT_LIST_DIR}/elf_fuzzer-crashes)

auxscope_add_fuzzer(NAME control_fifo_fuzz TARGET control_fifo_fuzzer
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_control_fifo_fuzzer.sh
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ControlFifoFuzzer.cpp
  INCLUDES ${PROJECT_SOURCE_DIR}/capture
  OBJECTS ${_hf_capture_objects}
  LIBS -lelf -lpthread
  CRASHES ${CMAKE_CURRENT_LIST_DIR}/control_fifo_fuzzer-crashes)

# helper_protocol_fuzz: what an unprivileged GUI sends the root capture helper
# (capture/HelperProtocol, app/helper/CaptureHelper served on a socket pair).
auxscope_add_fuzzer(NAME helper_protocol_fuzz TARGET helper_protocol_fuzzer
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_helper_protocol_fuzzer.sh
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/HelperProtocolFuzzer.cpp ${PROJECT_SOURCE_DIR}/app/helper/CaptureHelper.cpp
  INCLUDES ${PROJECT_SOURCE_DIR}/capture ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/app/helper
  OBJECTS ${_hf_decode_objects} ${_hf_capture_objects}
  LIBS ${_hf_decode_libs}
  CRASHES ${CMAKE_CURRENT_LIST_DIR}/helper_protocol_fuzzer-crashes)
