# SPDX-License-Identifier: GPL-3.0-or-later
# The replay source: a recorded perf.data's AUX trace fed through the simulated
# producers (include()d by decode/CMakeLists.txt).
target_sources(auxscope_decode PRIVATE ${CMAKE_CURRENT_LIST_DIR}/ReplaySource.cpp)
