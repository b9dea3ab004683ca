# SPDX-License-Identifier: GPL-3.0-or-later
# Perfetto and CSV export. protoc (Debian protobuf-compiler) decodes exported
# traces against the Perfetto schema subset beside this file.
find_program(PROTOC_EXECUTABLE protoc REQUIRED)
add_executable(export_tests
  ${CMAKE_CURRENT_LIST_DIR}/ExportTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/RoundTripTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../capture/KernelTestSupport.cpp
)
target_include_directories(export_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../capture)
target_compile_definitions(export_tests PRIVATE
  AUXSCOPE_PROTOC="${PROTOC_EXECUTABLE}"
  AUXSCOPE_PERFETTO_PROTO_DIR="${CMAKE_CURRENT_LIST_DIR}")
target_link_libraries(export_tests PRIVATE auxscope_decode GTest::gtest_main)
gtest_discover_tests(export_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 120)
