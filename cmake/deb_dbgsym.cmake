# deb_dbgsym.cmake: run by CPack after it built the packages
# (CPACK_POST_BUILD_SCRIPTS, cmake/install.cmake): finishes the debug
# symbols' package NAME-dbgsym_*.ddeb as Debian's own (dh_strip's) are,
# where CPack 3.25 leaves it short:
#
#   - DEBIAN/md5sums names each file by its path in the package
#     (usr/lib/debug/...), not by its path in CPack's staging directory;
#   - /usr/share/doc/NAME-dbgsym is a symbolic link to NAME, the package it
#     depends on (= its version), whose copyright and changelog it shares.
#
# The package is rebuilt with dpkg-deb, files owned by root.
foreach(pkg IN LISTS CPACK_PACKAGE_FILES)
  if(NOT pkg MATCHES "/([^/_]+)-dbgsym_[^/]*\\.ddeb$")
    continue()
  endif()
  set(name ${CMAKE_MATCH_1})
  set(root ${CPACK_TOPLEVEL_DIRECTORY}/dbgsym-root)
  file(REMOVE_RECURSE ${root})
  execute_process(COMMAND dpkg-deb --raw-extract ${pkg} ${root} COMMAND_ERROR_IS_FATAL ANY)
  file(READ ${root}/DEBIAN/md5sums sums)
  string(REGEX REPLACE "([0-9a-f]+)  [^\n]*/(usr/lib/debug/)" "\\1  \\2" sums "${sums}")
  file(WRITE ${root}/DEBIAN/md5sums "${sums}")
  file(MAKE_DIRECTORY ${root}/usr/share/doc)
  file(CREATE_LINK ${name} ${root}/usr/share/doc/${name}-dbgsym SYMBOLIC)
  execute_process(COMMAND dpkg-deb --root-owner-group --build ${root} ${pkg}
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  file(REMOVE_RECURSE ${root})
  message(STATUS "deb_dbgsym: ${pkg}: md5sums by package path, /usr/share/doc/${name}-dbgsym -> ${name}")
endforeach()
