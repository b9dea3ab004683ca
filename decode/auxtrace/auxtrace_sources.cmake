# SPDX-License-Identifier: GPL-3.0-or-later
# auxtrace/: the one AUX-trace decode entry point the app calls; picks the decoder from the file.
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/AuxTraceDecode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PtAuxTrace.cpp
  ${CMAKE_CURRENT_LIST_DIR}/LiveTraceDecoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmAuxTrace.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SpeAuxTrace.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SpeSamples.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SpeAnalysis.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SpeExportNames.cpp
)
