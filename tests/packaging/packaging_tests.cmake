# SPDX-License-Identifier: GPL-3.0-or-later
# What the package installs beside the programs (issue 33), checked against the
# built programs (include()d by tests/CMakeLists.txt).

# bash completion read from the program itself.
add_test(NAME bash_completion COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/completion_test.sh
         ${PROJECT_SOURCE_DIR}/resources/completion/auxscope.bash $<TARGET_FILE:auxscope>)
set_tests_properties(bash_completion PROPERTIES TIMEOUT 60)

# Man pages made from --help: rendered by man(1), every option of the help in its page.
add_test(NAME man_pages COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/man_pages_test.sh ${PROJECT_BINARY_DIR}/man
         $<TARGET_FILE:auxscope> $<TARGET_FILE:auxscope-ptsynth> $<TARGET_FILE:auxscope-etmsnap>
         $<TARGET_FILE:auxscope-spesynth>)
set_tests_properties(man_pages PROPERTIES TIMEOUT 60)
