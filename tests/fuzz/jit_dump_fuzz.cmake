# SPDX-License-Identifier: GPL-3.0-or-later
# jit_dump_fuzz (include()d by tests/CMakeLists.txt after decode/jit_tests.cmake):
# libFuzzer over the jitdump and perf map readers (decode/images/JitCode.cpp),
# seeded with a real run of the test JIT (jit_prog). Bounded in the suite.
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
auxscope_add_fuzzer(NAME jit_dump_fuzz TARGET jit_dump_fuzzer NO_DATA
  SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_jit_dump_fuzzer.sh
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/JitDumpFuzzer.cpp ${PROJECT_SOURCE_DIR}/decode/images/JitCode.cpp
          ${PROJECT_SOURCE_DIR}/capture/MappedRegion.cpp
  HEADERS ${PROJECT_SOURCE_DIR}/decode/images/JitCode.h
  INCLUDES ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture
  SCRIPT_ARGS $<TARGET_FILE:jit_prog>
  DEPENDS jit_prog)
