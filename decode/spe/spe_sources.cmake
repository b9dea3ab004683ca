# SPDX-License-Identifier: GPL-3.0-or-later
# Arm SPE (include()d by decode/CMakeLists.txt): packets, records, the file's records.
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/SpePacket.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SpeDecoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SpeRecordCsv.cpp
)
