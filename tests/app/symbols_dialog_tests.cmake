# SPDX-License-Identifier: GPL-3.0-or-later
# The Symbols & binaries dialog (issue 27), offscreen, on simpleperf's CoreSight
# file from ../shared/data: the file's folder searched automatically, the
# header naming missing images, the dialog re-decoding the file, settings kept
# per file and as defaults (include()d by tests/CMakeLists.txt).
set(CMAKE_AUTOMOC ON)
add_executable(symbols_dialog_tests ${CMAKE_CURRENT_LIST_DIR}/SymbolsDialogTest.cpp)
target_link_libraries(symbols_dialog_tests PRIVATE auxscope_app auxscope_test_data Qt6::Test)
add_dependencies(symbols_dialog_tests auxscope)
target_compile_definitions(symbols_dialog_tests PRIVATE AUXSCOPE_BINARY="$<TARGET_FILE:auxscope>")
auxscope_add_qt_test(symbols_dialog_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 300)

# What the GUI remembers between runs: window geometry, splitter sizes, dialog folders (issue 33).
add_executable(window_memory_tests ${CMAKE_CURRENT_LIST_DIR}/WindowMemoryTest.cpp)
target_link_libraries(window_memory_tests PRIVATE auxscope_app Qt6::Test)
auxscope_add_qt_test(window_memory_tests ENVIRONMENT QT_QPA_PLATFORM=offscreen TIMEOUT 60)
