# `cmake --install` and the .deb (CPack, `./dev package`): docs/deployment.md.
#   bin/relay-egress
#   etc/relay-egress/relay-egress.toml          /etc/relay-egress/ when the prefix is /usr
#   etc/relay-egress/profiles.d/                the operator's own profile platforms (empty)
#   lib/systemd/system/relay-egress.service
#   share/bash-completion/completions/relay-egress
#   share/doc/relay-egress/                     README, docs/*.md, the profiles as examples
include(GNUInstallDirs)
# Not GNUInstallDirs' DOCDIR, which is named after the CMake project (relay_egress).
set(egress_docdir ${CMAKE_INSTALL_DATAROOTDIR}/doc/relay-egress)

install(TARGETS relay-egress RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The config goes to /etc under the /usr prefix (the package), else under the prefix, which is
# what GNUInstallDirs' full sysconfdir does too; computed at install time so that one build tree
# serves both `cmake --install --prefix <dir>` and CPack (which installs with prefix /usr).
install(CODE "set(egress_config_src \"${CMAKE_SOURCE_DIR}/deploy/relay-egress.toml\")")
install(CODE [[
  if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(egress_confdir "/etc/relay-egress")
  else()
    set(egress_confdir "${CMAKE_INSTALL_PREFIX}/etc/relay-egress")
  endif()
  file(INSTALL DESTINATION "${egress_confdir}" TYPE FILE FILES "${egress_config_src}"
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
  # `serve` reads every <platform>.toml here (docs/platforms.md, "Profile platforms").
  file(MAKE_DIRECTORY "${egress_confdir}/profiles.d")
]])
install(FILES deploy/systemd/relay-egress.service DESTINATION lib/systemd/system)
install(FILES deploy/bash-completion/relay-egress
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions)
file(GLOB egress_docs ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES README.md ${egress_docs} DESTINATION ${egress_docdir})
install(DIRECTORY config/profiles DESTINATION ${egress_docdir} FILES_MATCHING
        PATTERN "*.toml")

set(CPACK_PACKAGE_NAME relay-egress)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "relay-egress maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Durable, rate-limit-aware delivery to Slack, Discord, LINE and webhooks")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
# The runtime libraries' packages, from the binary's shared libraries (dpkg-shlibdeps).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/deploy/debian/postinst ${CMAKE_SOURCE_DIR}/deploy/debian/postrm
    ${CMAKE_SOURCE_DIR}/deploy/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
