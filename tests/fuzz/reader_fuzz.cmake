# SPDX-License-Identifier: GPL-3.0-or-later
# libFuzzer target for the perf.data reader (include()d by tests/decode/reader_tests.cmake):
# the reader's sources with capture/RecordParser.cpp and app/cli/InfoCommand.cpp
# (all Qt-free), over a corpus copied at test time from the test data's perf.data files.
include(${CMAKE_CURRENT_LIST_DIR}/fuzz_target.cmake)
auxscope_add_fuzzer(NAME reader_fuzz TARGET reader_fuzzer SCRIPT ${CMAKE_CURRENT_LIST_DIR}/run_reader_fuzzer.sh
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/ReaderFuzzer.cpp
    ${PROJECT_SOURCE_DIR}/decode/perfdata/PerfDataReader.cpp
    ${PROJECT_SOURCE_DIR}/decode/perfdata/PerfDataReaderFeatures.cpp
    ${PROJECT_SOURCE_DIR}/capture/RecordParser.cpp
    ${PROJECT_SOURCE_DIR}/decode/perfdata/CaptureStatsFeature.cpp
    ${PROJECT_SOURCE_DIR}/decode/perfdata/TriggerFeature.cpp
    ${PROJECT_SOURCE_DIR}/app/cli/InfoCommand.cpp
    ${PROJECT_SOURCE_DIR}/app/cli/JsonString.cpp
    # info's Arm SPE lines (AUXTRACE_INFO, records, gaps): the SPE decoder and what it reads.
    ${PROJECT_SOURCE_DIR}/decode/perfdata/AuxtraceInfo.cpp
    ${PROJECT_SOURCE_DIR}/capture/Pmu.cpp
    ${PROJECT_SOURCE_DIR}/decode/perfdata/AuxStreams.cpp
    ${PROJECT_SOURCE_DIR}/decode/perfdata/TracingData.cpp
    ${PROJECT_SOURCE_DIR}/decode/sideband/Sideband.cpp
    ${PROJECT_SOURCE_DIR}/decode/sideband/TraceModel.cpp
    ${PROJECT_SOURCE_DIR}/decode/spe/SpeDecoder.cpp
    ${PROJECT_SOURCE_DIR}/decode/spe/SpePacket.cpp
  HEADERS
    ${PROJECT_SOURCE_DIR}/decode/perfdata/PerfDataReader.h
    ${PROJECT_SOURCE_DIR}/decode/perfdata/PerfDataReaderInternal.h
    ${PROJECT_SOURCE_DIR}/decode/perfdata/PerfDataFormat.h
    ${PROJECT_SOURCE_DIR}/decode/perfdata/CaptureStatsFeature.h
    ${PROJECT_SOURCE_DIR}/decode/perfdata/TriggerFeature.h
    ${PROJECT_SOURCE_DIR}/capture/TriggerReport.h
    ${PROJECT_SOURCE_DIR}/app/cli/JsonString.h
    ${PROJECT_SOURCE_DIR}/capture/CaptureStats.h
    ${PROJECT_SOURCE_DIR}/capture/RecordParser.h
    ${PROJECT_SOURCE_DIR}/capture/Result.h
    ${PROJECT_SOURCE_DIR}/app/cli/InfoCommand.h
    ${PROJECT_SOURCE_DIR}/decode/spe/SpeDecoder.h
    ${PROJECT_SOURCE_DIR}/decode/spe/SpePacket.h
    ${PROJECT_SOURCE_DIR}/decode/spe/SpeRecord.h
  INCLUDES ${PROJECT_SOURCE_DIR}/decode ${PROJECT_SOURCE_DIR}/capture ${PROJECT_SOURCE_DIR}/app
  LIBS -lzstd)
