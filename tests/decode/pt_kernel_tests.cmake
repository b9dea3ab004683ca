# SPDX-License-Identifier: GPL-3.0-or-later
# Kernel code in the Intel PT decode (include()d by tests/CMakeLists.txt): a tiny
# "kernel" linked at kernel addresses (and again KASLR-shifted, as a kcore's
# run-time copy) traced with libipt's encoder; /proc/kallsyms and /proc/kcore of
# the running kernel when readable. And the AUX loss flags (TRUNCATED) of a
# simulated capture fed real Intel PT bytes, which split the trace into runs.
set(_pt_kernel_fixture ${CMAKE_CURRENT_LIST_DIR}/PtKernelFixture.S)
set(_pt_kernel_shift 0x2a00000)
set(_pt_kernel_link -nostdlib -static -no-pie -Wl,--build-id -Wl,-e,kentry)
add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/pt_kernel_vmlinux ${CMAKE_CURRENT_BINARY_DIR}/pt_kernel_kcore
  COMMAND ${CMAKE_C_COMPILER} ${_pt_kernel_link} -Wl,-Ttext=0xffffffff81000000
          -Wl,--section-start=.modtext=0xffffffffc0000000 ${_pt_kernel_fixture}
          -o ${CMAKE_CURRENT_BINARY_DIR}/pt_kernel_vmlinux
  COMMAND ${CMAKE_C_COMPILER} ${_pt_kernel_link} -Wl,-Ttext=0xffffffff83a00000
          -Wl,--section-start=.modtext=0xffffffffc2a00000 ${_pt_kernel_fixture}
          -o ${CMAKE_CURRENT_BINARY_DIR}/pt_kernel_kcore
  DEPENDS ${_pt_kernel_fixture}
  COMMENT "Linking the kernel-address fixture (vmlinux and its KASLR-shifted kcore)")
add_custom_target(pt_kernel_fixture DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/pt_kernel_vmlinux
                                            ${CMAKE_CURRENT_BINARY_DIR}/pt_kernel_kcore)

add_executable(pt_kernel_tests ${CMAKE_CURRENT_LIST_DIR}/PtKernelTest.cpp)
add_dependencies(pt_kernel_tests pt_kernel_fixture auxscope)
target_compile_definitions(pt_kernel_tests PRIVATE
  AUXSCOPE_KERNEL_VMLINUX="${CMAKE_CURRENT_BINARY_DIR}/pt_kernel_vmlinux"
  AUXSCOPE_KERNEL_SHIFTED="${CMAKE_CURRENT_BINARY_DIR}/pt_kernel_kcore"
  AUXSCOPE_KERNEL_SHIFT=${_pt_kernel_shift}
  AUXSCOPE_BIN="$<TARGET_FILE:auxscope>")
target_link_libraries(pt_kernel_tests PRIVATE auxscope_ptsynth auxscope_decode libipt::libipt GTest::gtest_main)
gtest_discover_tests(pt_kernel_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 120)

# AUX loss flags: the simulated capture writes TRUNCATED records over real PT bytes
# (the Skylake trace from AUXSCOPE_TEST_DATA_DIR).
add_executable(pt_aux_loss_tests ${CMAKE_CURRENT_LIST_DIR}/PtAuxLossTest.cpp
                                 ${CMAKE_CURRENT_LIST_DIR}/WriterTestSupport.cpp)
target_include_directories(pt_aux_loss_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR})
add_dependencies(pt_aux_loss_tests auxscope)
target_compile_definitions(pt_aux_loss_tests PRIVATE AUXSCOPE_BIN="$<TARGET_FILE:auxscope>")
target_link_libraries(pt_aux_loss_tests PRIVATE auxscope_capture auxscope_decode auxscope_test_data
                                                GTest::gtest_main)
gtest_discover_tests(pt_aux_loss_tests DISCOVERY_TIMEOUT 30 PROPERTIES TIMEOUT 180)
