# SPDX-License-Identifier: GPL-3.0-or-later
# images/: ELF images, symbols, build-ids, kernel images; decoder-neutral.
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/DebuginfodClient.cpp
  ${CMAKE_CURRENT_LIST_DIR}/DwflDebugFile.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ElfSymbols.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ElfDataSymbols.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ImageResolver.cpp
  ${CMAKE_CURRENT_LIST_DIR}/InlineFrames.cpp
)
# The live timeline's samples resolved while capturing: one ImageResolver kept across ticks.
target_sources(auxscope_decode PRIVATE ${CMAKE_CURRENT_LIST_DIR}/LiveSymbols.cpp)
# The code view: capstone disassembly with per-instruction counts, libdw source lines.
target_sources(auxscope_decode PRIVATE ${CMAKE_CURRENT_LIST_DIR}/CodeAnnotation.cpp)
# JIT code: perf maps and jitdumps (names, and code bytes for the decoders).
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/JitCode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ImageResolverJit.cpp
)
