# SPDX-License-Identifier: GPL-3.0-or-later
# export/: the Perfetto and CSV exporters (with sampled profiles' stacks).
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/CompareCsv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/FoldedStacks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/LineBuffer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PerfettoPacketStream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PerfettoSampleWriter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SpanListing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TraceExport.cpp
)
