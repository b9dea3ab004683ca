# SPDX-License-Identifier: GPL-3.0-or-later
# The perf.data reader (include()d by decode/CMakeLists.txt).
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/PerfDataReader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/PerfDataReaderFeatures.cpp
)
