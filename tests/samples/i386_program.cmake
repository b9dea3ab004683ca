# SPDX-License-Identifier: GPL-3.0-or-later
# stacks_prog32: the freestanding i386 test program (stacks_prog32.c), built with
# clang -m32 and ld -m elf_i386 (no 32-bit libc needed), for the unwinder's
# 32-bit path. Where that does not work here (a probe at configure time), it is
# not built: AUXSCOPE_STACKS_PROG32 is then empty and its test says why.
find_program(AUXSCOPE_CLANG NAMES clang-14 clang)
find_program(AUXSCOPE_LD ld)
set(AUXSCOPE_STACKS_PROG32 "")
set(AUXSCOPE_STACKS_PROG32_REASON "clang or ld not found")
if(AUXSCOPE_CLANG AND AUXSCOPE_LD)
  set(_flags -m32 -O2 -g -ffreestanding -fno-pic -fno-stack-protector -fasynchronous-unwind-tables)
  set(_dir ${CMAKE_CURRENT_BINARY_DIR}/i386)
  file(MAKE_DIRECTORY ${_dir})
  execute_process(COMMAND ${AUXSCOPE_CLANG} ${_flags} -c ${CMAKE_CURRENT_LIST_DIR}/stacks_prog32.c -o ${_dir}/probe.o
                  RESULT_VARIABLE _cc_rc OUTPUT_QUIET ERROR_QUIET)
  if(_cc_rc EQUAL 0)
    execute_process(COMMAND ${AUXSCOPE_LD} -m elf_i386 -static -e _start ${_dir}/probe.o -o ${_dir}/probe
                    RESULT_VARIABLE _ld_rc OUTPUT_QUIET ERROR_QUIET)
  endif()
  if(_cc_rc EQUAL 0 AND _ld_rc EQUAL 0)
    set(AUXSCOPE_STACKS_PROG32 ${_dir}/stacks_prog32)
    add_custom_command(OUTPUT ${AUXSCOPE_STACKS_PROG32}
      COMMAND ${AUXSCOPE_CLANG} ${_flags} -c ${CMAKE_CURRENT_LIST_DIR}/stacks_prog32.c -o ${_dir}/stacks_prog32.o
      COMMAND ${AUXSCOPE_LD} -m elf_i386 -static -e _start ${_dir}/stacks_prog32.o -o ${AUXSCOPE_STACKS_PROG32}
      DEPENDS ${CMAKE_CURRENT_LIST_DIR}/stacks_prog32.c
      COMMENT "stacks_prog32: an i386 program (clang -m32, ld -m elf_i386)"
      VERBATIM)
    add_custom_target(stacks_prog32 ALL DEPENDS ${AUXSCOPE_STACKS_PROG32})
  else()
    set(AUXSCOPE_STACKS_PROG32_REASON "${AUXSCOPE_CLANG} -m32 or ${AUXSCOPE_LD} -m elf_i386 does not build it here")
  endif()
endif()
