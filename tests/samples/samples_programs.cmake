# SPDX-License-Identifier: GPL-3.0-or-later
# The sampled-stacks test program (tests/samples/stacks_prog.c) in two builds:
# with frame pointers (perf record -g walks them) and without (only
# --call-graph dwarf unwinds it), each calling into a shared library.
foreach(variant fp nofp)
  if(variant STREQUAL "fp")
    set(flags -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer)
  else()
    set(flags -O2 -g -fomit-frame-pointer)
  endif()
  add_library(stacks_lib_${variant} SHARED ${CMAKE_CURRENT_LIST_DIR}/stacks_lib.c)
  target_compile_options(stacks_lib_${variant} PRIVATE ${flags})
  target_link_libraries(stacks_lib_${variant} PRIVATE m)
  add_executable(stacks_prog_${variant} ${CMAKE_CURRENT_LIST_DIR}/stacks_prog.c)
  target_compile_options(stacks_prog_${variant} PRIVATE ${flags})
  target_link_libraries(stacks_prog_${variant} PRIVATE stacks_lib_${variant} m Threads::Threads)
endforeach()
