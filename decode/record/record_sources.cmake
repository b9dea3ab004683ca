# SPDX-License-Identifier: GPL-3.0-or-later
# record/: a capture into a file (writer sink, capture AUXTRACE_INFO, /proc synthesis)
# and a file back into a capture (the replay source).
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/CaptureAuxtraceInfo.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PerfDataWriterCapture.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PerfDataWriterSink.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ProcSynth.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ReplaySource.cpp
)
