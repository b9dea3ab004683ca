# SPDX-License-Identifier: GPL-3.0-or-later
# sideband/: threads, processes, mappings, who ran where when, samples, losses, counters.
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/Sideband.cpp
  ${CMAKE_CURRENT_LIST_DIR}/LiveSideband.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TraceModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TraceModelLoader.cpp
)
