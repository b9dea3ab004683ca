# SPDX-License-Identifier: GPL-3.0-or-later
# ElfSymbolCache (decode/images/ElfSymbols.h), which the fuzz targets use to read
# each code file's symbols once per process (include()d by tests/CMakeLists.txt).
add_executable(elf_symbol_cache_tests ${CMAKE_CURRENT_LIST_DIR}/ElfSymbolCacheTest.cpp)
target_link_libraries(elf_symbol_cache_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(elf_symbol_cache_tests DISCOVERY_TIMEOUT 30)
