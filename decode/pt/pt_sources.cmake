# SPDX-License-Identifier: GPL-3.0-or-later
# pt/: Intel PT decode with libipt.
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/PtConfig.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PtPacketDump.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PtInsnFlow.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PtDecodeRequest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PtSideband.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PtTraceSource.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PsbIndex.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PtImages.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PtSpanDecoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PtFlowWalker.cpp
)
# PtConfig.h hands out libipt's pt_config, so users of the library see intel-pt.h too.
target_link_libraries(auxscope_decode PUBLIC libipt::libipt)
