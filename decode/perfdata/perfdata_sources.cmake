# SPDX-License-Identifier: GPL-3.0-or-later
# perfdata/: the perf.data format: reader, writer, feature sections, AUXTRACE_INFO blocks.
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/AuxStreams.cpp
  ${CMAKE_CURRENT_LIST_DIR}/AuxtraceInfo.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CaptureStatsFeature.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TriggerFeature.cpp
  ${CMAKE_CURRENT_LIST_DIR}/FeatureWriter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/FeatureWriterBuildId.cpp
  ${CMAKE_CURRENT_LIST_DIR}/FeatureWriterTracing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PerfDataReader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PerfDataReaderFeatures.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PerfDataWriter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TracingData.cpp
)
