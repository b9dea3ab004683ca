# SPDX-License-Identifier: GPL-3.0-or-later
# Command-line tests that check an exit status as well as their output
# (PASS_REGULAR_EXPRESSION alone makes ctest ignore the status):
#   add_test(NAME t COMMAND ${AUXSCOPE_EXPECT_EXIT} 2 $<TARGET_FILE:auxscope> record -m 100 -a)
#   set_tests_properties(t PROPERTIES PASS_REGULAR_EXPRESSION "power of two")
#   auxscope_expect_exit(t)
# The wrapper (expect_exit.sh) passes the output through and, on another
# status, prints the line that FAIL_REGULAR_EXPRESSION fails the test on.
set(AUXSCOPE_EXPECT_EXIT sh ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh)
function(auxscope_expect_exit)
  foreach(test ${ARGN})
    set_tests_properties(${test} PROPERTIES FAIL_REGULAR_EXPRESSION "expect_exit: exit status [0-9]+, expected")
  endforeach()
endfunction()
