# SPDX-License-Identifier: GPL-3.0-or-later
# Where code and names come from (issue 27; include()d by tests/CMakeLists.txt):
# ImageResolver's look-up order (build-id cache, binaryDirs as a sysroot and by
# name, a candidate of another build rejected with a note, debugDirs by
# build-id and by .gnu_debuglink name) and debuginfod through a real server
# (/usr/bin/debuginfod on 127.0.0.1, started by the test: names and source
# lines of a stripped program from its debug file, its code when the program is
# missing, the cache reused with the server stopped, a note and no hang when no
# server answers, no request without a URL; auxscope report --debuginfod URL
# naming a perf record of the stripped program, which needs perf). Without debuginfod installed those
# skip with the reason (fail with CI=true).
find_program(AUXSCOPE_OBJCOPY objcopy)
find_program(AUXSCOPE_STRIP strip)
find_program(AUXSCOPE_DEBUGINFOD debuginfod PATHS /usr/bin)
if(NOT AUXSCOPE_DEBUGINFOD)
  set(AUXSCOPE_DEBUGINFOD "")
endif()
if(AUXSCOPE_OBJCOPY AND AUXSCOPE_STRIP)
  add_executable(lookup_prog ${CMAKE_CURRENT_LIST_DIR}/lookup_prog.c)
  target_compile_options(lookup_prog PRIVATE -O1 -g)
  target_link_options(lookup_prog PRIVATE -Wl,--build-id)
  add_executable(lookup_prog_other ${CMAKE_CURRENT_LIST_DIR}/lookup_prog.c)
  target_compile_options(lookup_prog_other PRIVATE -O1 -g)
  target_compile_definitions(lookup_prog_other PRIVATE LOOKUP_OTHER_BUILD)
  target_link_options(lookup_prog_other PRIVATE -Wl,--build-id)
  # A 16-byte (MD5) build-id, as simpleperf's recordings pad to perf's 20.
  add_executable(lookup_prog_md5 ${CMAKE_CURRENT_LIST_DIR}/lookup_prog.c)
  target_compile_options(lookup_prog_md5 PRIVATE -O1 -g)
  target_link_options(lookup_prog_md5 PRIVATE -Wl,--build-id=md5)
  set(_lookup_dir ${CMAKE_CURRENT_BINARY_DIR}/lookup_images)
  add_custom_command(OUTPUT ${_lookup_dir}/stripped/lookup_prog
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/make_lookup_images.sh $<TARGET_FILE:lookup_prog>
            $<TARGET_FILE:lookup_prog_other> ${_lookup_dir}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_lookup_dir}/md5
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:lookup_prog_md5> ${_lookup_dir}/md5/lookup_prog
    DEPENDS lookup_prog lookup_prog_other lookup_prog_md5 ${CMAKE_CURRENT_LIST_DIR}/make_lookup_images.sh
    COMMENT "lookup_images: the look-up tests' program, stripped, its debug file, another build"
    VERBATIM)
  add_custom_target(lookup_images ALL DEPENDS ${_lookup_dir}/stripped/lookup_prog)

  add_executable(image_lookup_tests ${CMAKE_CURRENT_LIST_DIR}/ImageLookupTest.cpp)
  target_link_libraries(image_lookup_tests PRIVATE auxscope_decode GTest::gtest_main)
  target_compile_definitions(image_lookup_tests PRIVATE AUXSCOPE_LOOKUP_IMAGES="${_lookup_dir}"
                             AUXSCOPE_DEBUGINFOD="${AUXSCOPE_DEBUGINFOD}" AUXSCOPE_BIN="$<TARGET_FILE:auxscope>")
  add_dependencies(image_lookup_tests lookup_images auxscope)
  # Serial: the debuginfod tests start a server and set DEBUGINFOD_* in the process.
  gtest_discover_tests(image_lookup_tests DISCOVERY_TIMEOUT 30 PROPERTIES RUN_SERIAL TRUE TIMEOUT 120)
endif()
