# SPDX-License-Identifier: GPL-3.0-or-later
# Decode while capturing (include()d by tests/CMakeLists.txt): recorded Intel PT
# replayed through simulated CPUs into a capture session with the live decoder
# attached, checked against the offline decode of the same file (the Skylake
# trace from AUXSCOPE_TEST_DATA_DIR, and a ptsynth one).
add_executable(live_decode_tests ${CMAKE_CURRENT_LIST_DIR}/LiveDecodeTest.cpp)
add_dependencies(live_decode_tests auxscope-ptsynth auxscope-spesynth)
target_link_libraries(live_decode_tests PRIVATE auxscope_decode auxscope_etmsnap auxscope_test_data GTest::gtest_main)
target_compile_definitions(live_decode_tests PRIVATE AUXSCOPE_PTSYNTH="$<TARGET_FILE:auxscope-ptsynth>"
                                                   AUXSCOPE_SPESYNTH="$<TARGET_FILE:auxscope-spesynth>")
gtest_discover_tests(live_decode_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 180)
