# SPDX-License-Identifier: GPL-3.0-or-later
# Arm SPE records as samples of the sampled profile, and the SPE views'
# computations (latency histogram, memory map, data symbols), over a perf.data
# written by the test that maps spe_fixture (include()d by tests/CMakeLists.txt).

# Static, position-dependent, no C runtime: its functions and globals sit at fixed addresses.
add_executable(spe_samples_fixture ${CMAKE_CURRENT_LIST_DIR}/spe_fixture.c)
target_compile_options(spe_samples_fixture PRIVATE -O1 -fno-pie -fcf-protection=none)
target_link_options(spe_samples_fixture PRIVATE -nostdlib -static -no-pie -Wl,-e,main)

add_executable(spe_samples_tests ${CMAKE_CURRENT_LIST_DIR}/SpeSamplesTest.cpp)
add_dependencies(spe_samples_tests spe_samples_fixture)
target_compile_definitions(spe_samples_tests PRIVATE AUXSCOPE_SPE_FIXTURE_ELF="$<TARGET_FILE:spe_samples_fixture>")
target_link_libraries(spe_samples_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(spe_samples_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)
