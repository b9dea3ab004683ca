# SPDX-License-Identifier: GPL-3.0-or-later
# Decoder-independent flow -> spans: the span store, the flow -> spans builder,
# functions and ELF symbols, the sideband model (include()d by decode/CMakeLists.txt).
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/SpanStore.cpp
  ${CMAKE_CURRENT_LIST_DIR}/FunctionTable.cpp
  ${CMAKE_CURRENT_LIST_DIR}/FlowToSpans.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ElfSymbols.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Sideband.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TimelineData.cpp
)
target_include_directories(auxscope_decode PUBLIC ${CMAKE_CURRENT_LIST_DIR})
