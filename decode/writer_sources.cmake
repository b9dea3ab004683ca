# SPDX-License-Identifier: GPL-3.0-or-later
# The perf.data writer (include()d by decode/CMakeLists.txt).
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/FeatureWriter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/FeatureWriterBuildId.cpp
  ${CMAKE_CURRENT_LIST_DIR}/FeatureWriterTracing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PerfDataWriter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PerfDataWriterCapture.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PerfDataWriterSink.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ProcSynth.cpp
)
# PERF_RECORD_AUXTRACE_INFO private blocks (Intel PT, CoreSight ETM/ETE).
target_sources(auxscope_decode PRIVATE ${CMAKE_CURRENT_LIST_DIR}/AuxtraceInfo.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CaptureAuxtraceInfo.cpp)
