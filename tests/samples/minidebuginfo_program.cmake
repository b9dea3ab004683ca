# SPDX-License-Identifier: GPL-3.0-or-later
# stacks_prog_minidebuginfo: the sampled-stacks test program without unwind
# tables, its CFI (.debug_frame) only in the xz-compressed MiniDebugInfo
# (.gnu_debugdata) make_minidebuginfo.sh puts there, for the unwinder's
# .gnu_debugdata path. Needs objcopy and xz; without them it is not built
# (AUXSCOPE_MINIDEBUGINFO_PROG is then empty and its test says so).
find_program(AUXSCOPE_OBJCOPY objcopy)
find_program(AUXSCOPE_XZ xz)
set(AUXSCOPE_MINIDEBUGINFO_PROG "")
if(AUXSCOPE_OBJCOPY AND AUXSCOPE_XZ)
  add_executable(stacks_prog_debugframe ${CMAKE_CURRENT_LIST_DIR}/stacks_prog.c)
  target_compile_options(stacks_prog_debugframe PRIVATE -O2 -g -fomit-frame-pointer
                         -fno-asynchronous-unwind-tables -fno-unwind-tables)
  target_link_libraries(stacks_prog_debugframe PRIVATE stacks_lib_nofp m Threads::Threads)
  set(AUXSCOPE_MINIDEBUGINFO_PROG ${CMAKE_CURRENT_BINARY_DIR}/minidebuginfo/stacks_prog_minidebuginfo)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/minidebuginfo)
  add_custom_command(OUTPUT ${AUXSCOPE_MINIDEBUGINFO_PROG}
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/make_minidebuginfo.sh $<TARGET_FILE:stacks_prog_debugframe>
            ${AUXSCOPE_MINIDEBUGINFO_PROG}
    DEPENDS stacks_prog_debugframe ${CMAKE_CURRENT_LIST_DIR}/make_minidebuginfo.sh
    COMMENT "stacks_prog_minidebuginfo: CFI only in .gnu_debugdata"
    VERBATIM)
  add_custom_target(stacks_prog_minidebuginfo ALL DEPENDS ${AUXSCOPE_MINIDEBUGINFO_PROG})
endif()
