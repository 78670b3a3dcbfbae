# install.cmake: what `cmake --install` puts where, and the Debian package
# CPack builds from it (cpack -G DEB; docs/deployment.md).
#
#   PREFIX/bin/parleyd, parley-loadgen      the daemon and the load generator
#   PREFIX/share/man/man8/parleyd.8.gz      help2man of parleyd --help
#   PREFIX/share/doc/parley/                README.md and docs/*.md
#   PREFIX/lib/systemd/system/parleyd.service
#   PREFIX/lib/sysusers.d/parley.conf       the parley system user
#   SYSCONFDIR/parley.conf                  the config file the unit reads (0640)
#
# With CMAKE_INSTALL_PREFIX=/usr (the package), SYSCONFDIR is /etc.
include(GNUInstallDirs)

install(TARGETS parleyd parley-loadgen RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The man page, generated from --help and --version at build time, so it
# lists exactly the options of the binary (the option table of config.c).
find_program(HELP2MAN help2man REQUIRED)
set(PARLEY_MAN ${CMAKE_BINARY_DIR}/parleyd.8)
add_custom_command(
  OUTPUT ${PARLEY_MAN}.gz
  COMMAND ${HELP2MAN} --no-info --section=8 --source=parley
          "--name=conversation archive for AI agents, served over MCP"
          --include=${CMAKE_SOURCE_DIR}/packaging/parleyd.h2m --output=${PARLEY_MAN}
          $<TARGET_FILE:parleyd>
  COMMAND gzip -9nf ${PARLEY_MAN}
  DEPENDS parleyd ${CMAKE_SOURCE_DIR}/packaging/parleyd.h2m
  COMMENT "Generating the man page parleyd.8 (help2man)")
add_custom_target(parley_man ALL DEPENDS ${PARLEY_MAN}.gz)
install(FILES ${PARLEY_MAN}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)

file(GLOB PARLEY_DOCS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES README.md ${PARLEY_DOCS} DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The unit names the installed binary and config file.
configure_file(${CMAKE_SOURCE_DIR}/packaging/parleyd.service.in
               ${CMAKE_BINARY_DIR}/packaging/parleyd.service @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/packaging/parleyd.service
        DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
install(FILES packaging/parley.sysusers DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/sysusers.d
        RENAME parley.conf)
# 0640: it may hold secrets (parleyd refuses a config with a secret that
# others can read); the Debian package's postinst makes it root:parley.
install(FILES packaging/parley.conf DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
# dpkg keeps a changed config file across upgrades (a conffile).
file(WRITE ${CMAKE_BINARY_DIR}/packaging/conffiles "${CMAKE_INSTALL_FULL_SYSCONFDIR}/parley.conf\n")

# ---- the Debian package: cpack -G DEB ----------------------------------------
set(CPACK_PACKAGE_NAME parley)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "parley maintainers <parley@localhost>")
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
# The shared libraries' packages come from dpkg-shlibdeps (libuv1, libpq5,
# libcurl4, libssl3, libjansson4, libh2o, libyajl2, libsqlite3-0,
# libsystemd0 ...); the rest is what parleyd runs or its scripts call:
# the embedded default's PostgreSQL 15 (pg_bindir) and adduser.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "postgresql-15, adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/packaging/debian/postinst ${CMAKE_SOURCE_DIR}/packaging/debian/prerm
    ${CMAKE_SOURCE_DIR}/packaging/debian/postrm ${CMAKE_BINARY_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
