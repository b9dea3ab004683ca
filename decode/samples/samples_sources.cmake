# SPDX-License-Identifier: GPL-3.0-or-later
# samples/: call stacks of samples (callchains, DWARF unwinding of user stack
# copies), their symbolization, and sampled profiles as costs the range
# statistics aggregate.
target_sources(auxscope_decode PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/Callchain.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SampleProfile.cpp
  ${CMAKE_CURRENT_LIST_DIR}/DwarfUnwinder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ElfCfi.cpp
  ${CMAKE_CURRENT_LIST_DIR}/UnwindStep.cpp
  ${CMAKE_CURRENT_LIST_DIR}/UserRegisters.cpp
)
