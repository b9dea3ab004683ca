# SPDX-License-Identifier: GPL-3.0-or-later
# Desktop integration and the Debian package (include()d by the top-level
# CMakeLists.txt after app/ and tools/):
#  - installed with the program: auxscope-ptsynth, auxscope-etmsnap and auxscope-spesynth beside it
#    (and on the PATH), the .desktop entry, the perf.data MIME type (magic
#    PERFILE2), the icon (SVG and PNG sizes) and the AppStream metainfo;
#  - `cmake --build --preset release --target package` builds auxscope_<version>_<arch>.deb
#    (CPack): prefix /usr, dependencies from dpkg-shlibdeps plus pkexec (the capture
#    helper's way to root), the copyright file and changelog Debian asks for.
#    `apt install ./build/release/auxscope_*.deb` installs it.
set(_desktop ${PROJECT_SOURCE_DIR}/resources/desktop)

set_target_properties(auxscope-ptsynth auxscope-etmsnap auxscope-spesynth PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS auxscope-ptsynth auxscope-etmsnap auxscope-spesynth RUNTIME DESTINATION ${AUXSCOPE_PKG_DIR})
foreach(_tool auxscope-ptsynth auxscope-etmsnap auxscope-spesynth)
  install(CODE "file(CREATE_LINK ../${AUXSCOPE_PKG_DIR}/${_tool} \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/bin/${_tool}\" SYMBOLIC)")
endforeach()

install(FILES ${_desktop}/org.auxscope.auxscope.desktop DESTINATION share/applications)
install(FILES ${PROJECT_SOURCE_DIR}/resources/completion/auxscope.bash
        DESTINATION share/bash-completion/completions RENAME auxscope)
install(FILES ${_desktop}/auxscope-perf-data.xml DESTINATION share/mime/packages)
install(FILES ${_desktop}/icons/auxscope.svg DESTINATION share/icons/hicolor/scalable/apps)
foreach(_size 16 24 32 48 64 128 256)
  install(FILES ${_desktop}/icons/auxscope-${_size}.png DESTINATION share/icons/hicolor/${_size}x${_size}/apps
          RENAME auxscope.png)
endforeach()
# The screenshots' address: where the repository's resources/screenshots are served.
set(AUXSCOPE_SCREENSHOT_URL "https://raw.githubusercontent.com/auxscope/auxscope/main/resources/screenshots"
    CACHE STRING "Where the AppStream metainfo's screenshots are served (the repository's resources/screenshots)")
configure_file(${_desktop}/org.auxscope.auxscope.metainfo.xml.in
               ${PROJECT_BINARY_DIR}/org.auxscope.auxscope.metainfo.xml @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/org.auxscope.auxscope.metainfo.xml DESTINATION share/metainfo)
# A `cmake --install` onto a live system registers the MIME type and icon at once (the
# .deb's triggers do it for a package install).
install(CODE "if(\"\$ENV{DESTDIR}\" STREQUAL \"\")
  find_program(_update_mime update-mime-database)
  if(_update_mime)
    execute_process(COMMAND \${_update_mime} \"\${CMAKE_INSTALL_PREFIX}/share/mime\" OUTPUT_QUIET ERROR_QUIET)
  endif()
endif()")

# Debian's copyright file and changelog, as lintian checks them.
set(AUXSCOPE_PACKAGE_MAINTAINER "auxscope developers <auxscope@users.noreply.github.com>"
    CACHE STRING "The .deb's Maintainer field")
install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright DESTINATION share/doc/auxscope)
set(_changelog ${PROJECT_BINARY_DIR}/packaging/changelog)  # a native package's name for it
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/packaging)
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in ${_changelog} @ONLY)
add_custom_command(OUTPUT ${_changelog}.gz
  COMMAND gzip -9n -c ${_changelog} > ${_changelog}.gz
  DEPENDS ${_changelog} VERBATIM)
add_custom_target(auxscope_changelog ALL DEPENDS ${_changelog}.gz)
install(FILES ${_changelog}.gz DESTINATION share/doc/auxscope)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME auxscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${AUXSCOPE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "capture and browse hardware traces and sampled profiles")
# The synopsis is CPACK_PACKAGE_DESCRIPTION_SUMMARY; this is the extended description.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "auxscope records Intel PT, Arm CoreSight ETM/ETE and sampled profiles
 with call stacks through perf_event_open, shows each CPU's buffer fill and
 losses live, decodes the trace while capturing, and browses per-CPU and
 per-thread timelines with call trees, flame graphs and exact call and
 instruction counts. It opens perf.data files from perf record and simpleperf
 and exports to Perfetto and CSV.")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/auxscope/auxscope")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)  # the prefix the install step runs with (DESTDIR mode)
set(CPACK_SET_DESTDIR ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The libraries of our own that sit beside the program ($ORIGIN): dpkg-shlibdeps finds them there.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR} ${PROJECT_BINARY_DIR}/app
    ${PROJECT_BINARY_DIR}/capture ${PROJECT_BINARY_DIR}/decode)
# pkexec starts the capture helper; linux-perf and trc_pkt_lister are not needed to run.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "pkexec, shared-mime-info")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "linux-perf, debuginfod")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)  # private libraries: no shlibs file, no ldconfig
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)

# Man pages, made at build time from the programs' own --help (packaging/help2roff.sh), so
# `man auxscope-record` and `auxscope record --help` never disagree: auxscope(1), one page
# per command, auxscope-ptsynth(1), auxscope-etmsnap(1) and auxscope-spesynth(1), gzipped as Debian
# installs them.
set(_man ${PROJECT_BINARY_DIR}/man)
file(MAKE_DIRECTORY ${_man})
set(_man_pages)
function(_auxscope_man page target summary)
  set(_out ${_man}/${page}.1.gz)
  list(JOIN ARGN " " _args)
  add_custom_command(OUTPUT ${_out}
    COMMAND sh -c "\"$1\" ${_args} | sh \"$2\" \"$3\" \"$4\" \"$5\" | gzip -9n > \"$6\""
            sh $<TARGET_FILE:${target}> ${PROJECT_SOURCE_DIR}/packaging/help2roff.sh ${page}
            ${PROJECT_VERSION} "${summary}" ${_out}
    DEPENDS ${target} ${PROJECT_SOURCE_DIR}/packaging/help2roff.sh
    COMMENT "man page ${page}(1) from its --help"
    VERBATIM)
  set(_man_pages ${_man_pages} ${_out} PARENT_SCOPE)
endfunction()
_auxscope_man(auxscope auxscope "capture and browse hardware traces and sampled profiles" --help)
foreach(_cmd record info decode export report compare)
  _auxscope_man(auxscope-${_cmd} auxscope "" help ${_cmd})
endforeach()
_auxscope_man(auxscope-ptsynth auxscope-ptsynth "" --help)
_auxscope_man(auxscope-etmsnap auxscope-etmsnap "" --help)
_auxscope_man(auxscope-spesynth auxscope-spesynth "synthesized Arm SPE recordings (perf.data) with a known ground truth" --help)
add_custom_target(auxscope_man_pages ALL DEPENDS ${_man_pages})
install(FILES ${_man_pages} DESTINATION share/man/man1)
