# install.cmake: what `cmake --install` puts where, and the Debian package
# CPack builds from it (cpack -G DEB; docs/deployment.md).
#
#   PREFIX/bin/parleyd, parley-loadgen        the daemon and the load generator
#   PREFIX/share/man/man8/parleyd.8.gz        help2man of parleyd --help
#   PREFIX/share/man/man1/parley-loadgen.1.gz help2man of parley-loadgen --help
#   PREFIX/share/doc/parley/README.md         the docs as the repository holds
#   PREFIX/share/doc/parley/docs/*.md         them, so their links resolve
#   PREFIX/share/doc/parley/bench/README.md   (the benchmark's figures)
#   PREFIX/share/doc/parley/copyright         the license (LICENSE), Debian's format
#   PREFIX/share/doc/parley/changelog.Debian.gz  packaging/debian/changelog
#   PREFIX/share/lintian/overrides/parley     what lintian may say, and why
#   PREFIX/lib/systemd/system/parleyd.service
#   PREFIX/lib/sysusers.d/parley.conf         the parley system user
#   SYSCONFDIR/parley.conf                    the config file the unit reads (0640)
#
# Every destination is relative to the prefix, so `cmake --install build
# --prefix DIR` and DESTDIR=DIR write nothing outside DIR. The one place
# outside the prefix is the config file of a build configured for /usr:
# GNUInstallDirs puts its SYSCONFDIR in /etc (the unit names
# /etc/parley.conf), and it goes there when installed to that prefix (or
# DESTDIR/etc); installed to another prefix it goes to PREFIX/etc.
include(GNUInstallDirs)

install(TARGETS parleyd parley-loadgen RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Each program's man page, generated from its --help and --version at build
# time, so it lists exactly the options of the binary (for parleyd, the
# option table of config.c). packaging/NAME.h2m adds sections (files,
# environment). parley_man(TARGET SECTION "NAME LINE" [H2M])
find_program(HELP2MAN help2man REQUIRED)
function(parley_man target section name)
  set(out ${CMAKE_BINARY_DIR}/${target}.${section})
  set(include "")
  set(depends ${target})
  if(ARGC GREATER 3)
    set(include --include=${CMAKE_SOURCE_DIR}/${ARGV3})
    list(APPEND depends ${CMAKE_SOURCE_DIR}/${ARGV3})
  endif()
  add_custom_command(
    OUTPUT ${out}.gz
    COMMAND ${HELP2MAN} --no-info --section=${section} --source=parley "--name=${name}"
            ${include} --output=${out} $<TARGET_FILE:${target}>
    COMMAND gzip -9nf ${out}
    DEPENDS ${depends}
    COMMENT "Generating the man page ${target}.${section} (help2man)"
    VERBATIM)
  add_custom_target(${target}_man ALL DEPENDS ${out}.gz)
  install(FILES ${out}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endfunction()
parley_man(parleyd 8 "conversation archive for AI agents, served over MCP" packaging/parleyd.h2m)
parley_man(parley-loadgen 1 "load generator for parleyd's MCP endpoints")

# The docs keep the repository's tree (README.md beside docs/), so every
# relative link between them resolves where they are installed.
file(GLOB PARLEY_DOCS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PARLEY_DOCS} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(FILES bench/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/bench)

# ---- the package's metadata: packaging/debian/changelog --------------------
# Its newest entry ("parley (VERSION-REVISION) ...", " -- NAME <ADDRESS>  DATE")
# gives the package's version and maintainer, as dpkg-parsechangelog would;
# VERSION must be the project's (a release adds an entry).
file(STRINGS ${CMAKE_SOURCE_DIR}/packaging/debian/changelog PARLEY_CHANGELOG_TOP LIMIT_COUNT 1)
file(STRINGS ${CMAKE_SOURCE_DIR}/packaging/debian/changelog PARLEY_CHANGELOG_BY REGEX "^ -- ")
list(GET PARLEY_CHANGELOG_BY 0 PARLEY_CHANGELOG_BY)
if(NOT PARLEY_CHANGELOG_TOP MATCHES "^parley \\(([0-9.]+)-([0-9]+)\\) "
   OR NOT CMAKE_MATCH_1 STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "packaging/debian/changelog: its newest entry ('${PARLEY_CHANGELOG_TOP}') "
                      "is not of version ${PROJECT_VERSION}-N: add one for this release")
endif()
set(PARLEY_DEB_REVISION ${CMAKE_MATCH_2})
if(NOT PARLEY_CHANGELOG_BY MATCHES "^ -- (.+ <[^>]+@[^>]+>)  ")
  message(FATAL_ERROR "packaging/debian/changelog: no ' -- NAME <ADDRESS>  DATE' line")
endif()
set(PARLEY_MAINTAINER ${CMAKE_MATCH_1})

# changelog.Debian.gz: the changelog as Debian ships it (gzip -9n: the same
# bytes every build).
set(PARLEY_CHANGELOG_GZ ${CMAKE_BINARY_DIR}/packaging/changelog.Debian.gz)
add_custom_command(
  OUTPUT ${PARLEY_CHANGELOG_GZ}
  COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/packaging/debian/changelog
          ${CMAKE_BINARY_DIR}/packaging/changelog.Debian
  COMMAND gzip -9nf ${CMAKE_BINARY_DIR}/packaging/changelog.Debian
  DEPENDS ${CMAKE_SOURCE_DIR}/packaging/debian/changelog
  COMMENT "Compressing packaging/debian/changelog"
  VERBATIM)
add_custom_target(parley_changelog ALL DEPENDS ${PARLEY_CHANGELOG_GZ})
install(FILES ${PARLEY_CHANGELOG_GZ} DESTINATION ${CMAKE_INSTALL_DOCDIR})

# copyright: LICENSE in Debian's machine-readable format (DEP-5): its
# copyright line, and its text as the Expat license (Debian's name for MIT).
file(READ ${CMAKE_SOURCE_DIR}/LICENSE PARLEY_LICENSE)
if(NOT PARLEY_LICENSE MATCHES "Copyright \\(c\\) ([^\n]+)\n\n(Permission is hereby granted.*)$")
  message(FATAL_ERROR "LICENSE: not the MIT license with a 'Copyright (c) ...' line")
endif()
set(PARLEY_COPYRIGHT ${CMAKE_MATCH_1})
string(STRIP "${CMAKE_MATCH_2}" PARLEY_LICENSE_TEXT)
string(REPLACE "\n\n" "\n.\n" PARLEY_LICENSE_TEXT "${PARLEY_LICENSE_TEXT}")
string(REPLACE "\n" "\n " PARLEY_LICENSE_TEXT "${PARLEY_LICENSE_TEXT}")
file(WRITE ${CMAKE_BINARY_DIR}/packaging/copyright
     "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
     "Upstream-Name: parley\n"
     "Upstream-Contact: ${PARLEY_MAINTAINER}\n"
     "\n"
     "Files: *\n"
     "Copyright: ${PARLEY_COPYRIGHT}\n"
     "License: Expat\n"
     " ${PARLEY_LICENSE_TEXT}\n")
install(FILES ${CMAKE_BINARY_DIR}/packaging/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES packaging/debian/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides
        RENAME parley)

# ---- systemd -----------------------------------------------------------------
# The unit names the installed binary and config file (the configured
# prefix's: give it to cmake -S, not to cmake --install --prefix).
configure_file(${CMAKE_SOURCE_DIR}/packaging/parleyd.service.in
               ${CMAKE_BINARY_DIR}/packaging/parleyd.service @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/packaging/parleyd.service DESTINATION lib/systemd/system)
install(FILES packaging/parley.sysusers DESTINATION lib/sysusers.d RENAME parley.conf)

# The config file, 0640: it may hold secrets (parleyd refuses a config with a
# secret that others can read); the Debian package's postinst makes it
# root:parley. Where: see the top of this file. The install-time prefix is
# compared with the configured one (CODE runs in cmake_install.cmake, which
# honours DESTDIR and records the file in install_manifest.txt).
install(CODE "
  if(CMAKE_INSTALL_PREFIX STREQUAL \"${CMAKE_INSTALL_PREFIX}\")
    set(parley_conf_dir \"${CMAKE_INSTALL_FULL_SYSCONFDIR}\")
  else()
    set(parley_conf_dir \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SYSCONFDIR}\")
  endif()
  file(INSTALL DESTINATION \"\${parley_conf_dir}\" TYPE FILE
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ
       FILES \"${CMAKE_SOURCE_DIR}/packaging/parley.conf\")
")
# dpkg keeps a changed config file across upgrades (a conffile).
file(WRITE ${CMAKE_BINARY_DIR}/packaging/conffiles "${CMAKE_INSTALL_FULL_SYSCONFDIR}/parley.conf\n")

# ---- the Debian package: cpack -G DEB ----------------------------------------
set(CPACK_PACKAGE_NAME parley)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_RELEASE ${PARLEY_DEB_REVISION})
set(CPACK_PACKAGE_CONTACT "${PARLEY_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "conversation archive for AI agents, served over MCP")
set(CPACK_PACKAGE_DESCRIPTION
    "parleyd keeps conversations (Telegram chats, AI-assistant chats, agents' past
sessions, Bluesky posts) in PostgreSQL and serves them to AI agents as an MCP
server. With no database configured it runs a private PostgreSQL cluster.")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The binaries stripped, their debug symbols in parley-dbgsym (a .ddeb
# beside the .deb, found by build id under /usr/lib/debug/.build-id;
# finished by cmake/deb_dbgsym.cmake): a RelWithDebInfo or Debug build has
# them to give.
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
set(CPACK_POST_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/cmake/deb_dbgsym.cmake)
# The shared libraries' packages come from dpkg-shlibdeps (libuv1, libpq5,
# libcurl4, libssl3, libjansson4, libh2o, libyajl2, libsimdjson14, libstdc++6, libsqlite3-0,
# libsystemd0 ...); the rest is what parleyd runs or its scripts call:
# the embedded default's PostgreSQL 15 (pg_bindir) and adduser.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "postgresql-15, adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/packaging/debian/postinst ${CMAKE_SOURCE_DIR}/packaging/debian/prerm
    ${CMAKE_SOURCE_DIR}/packaging/debian/postrm ${CMAKE_BINARY_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
