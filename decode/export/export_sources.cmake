# SPDX-License-Identifier: GPL-3.0-or-later
# export/: the Perfetto and CSV exporters.
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/PerfettoPacketStream.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TraceExport.cpp
)
