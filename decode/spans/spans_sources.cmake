# SPDX-License-Identifier: GPL-3.0-or-later
# spans/: the decoder-independent flow -> spans builder, the span store, the
# function table and the timeline data every decoder feeds, and the range
# statistics (call tree, top functions) over spans.
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/SpanStore.cpp
  ${CMAKE_CURRENT_LIST_DIR}/DecodeTypes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/FunctionTable.cpp
  ${CMAKE_CURRENT_LIST_DIR}/FlowToSpans.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SegmentedDecode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/IsolatedDecode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TimelineData.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SidebandLanes.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TimelineOverview.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RangeStats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RangeCompare.cpp
)
