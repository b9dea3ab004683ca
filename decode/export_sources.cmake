# SPDX-License-Identifier: GPL-3.0-or-later
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/TraceModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TraceExport.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TraceModelLoader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/IntelPtSpans.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CaptureStatsFeature.cpp
)
