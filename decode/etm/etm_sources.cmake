# SPDX-License-Identifier: GPL-3.0-or-later
# CoreSight ETM/ETE decode with OpenCSD (include()d by decode/CMakeLists.txt):
# snapshot directories, the decode tree wrapper, memory images with a cache.
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/SnapshotIni.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmSourceConfig.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmElement.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmMemory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmDecoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/FrameDeformatter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmSnapshot.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmSnapshotDecode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmTraceSource.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmSyncIndex.cpp
  ${CMAKE_CURRENT_LIST_DIR}/EtmSession.cpp
)
