# SPDX-License-Identifier: GPL-3.0-or-later
# The trace page on a perf.data that crashes OpenCSD: a "decoder crashed" gap, the app alive.
add_executable(decoder_isolation_gui_tests
  ${CMAKE_CURRENT_LIST_DIR}/DecoderIsolationGuiTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../decode/OpenCsdCrashFile.cpp
)
target_link_libraries(decoder_isolation_gui_tests PRIVATE auxscope_app auxscope_etmsnap Qt6::Test)
target_compile_definitions(decoder_isolation_gui_tests PRIVATE
  AUXSCOPE_OPENCSD_CRASH_INPUT="${CMAKE_SOURCE_DIR}/tests/fuzz/opencsd-1.3.3-crashes/etmv4-mispredict-atom.bin")
auxscope_add_qt_test(decoder_isolation_gui_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 180)
