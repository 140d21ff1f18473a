# What `cmake --install` puts where, besides the binaries (cli/CMakeLists.txt),
# and the Debian package CPack builds from it (`cpack -G DEB` in the build
# directory). Included from the top CMakeLists.txt after GNUInstallDirs;
# include(CPack) comes last there.
#
# Paths follow the configure-time CMAKE_INSTALL_PREFIX, which the generated
# systemd unit names: configure with -DCMAKE_INSTALL_PREFIX=/usr for a system
# install or a .deb (config in /etc/latentd, unit in /usr/lib/systemd/system).
# Stage with DESTDIR=...: `cmake --install --prefix X` does not change the
# paths written into the unit (nor the absolute /etc of the /usr prefix).

set(LATENTD_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING
    "Where the systemd unit goes (relative to the install prefix)")

# The config goes to GNUInstallDirs' sysconfdir, which is /etc for the /usr
# prefix (an absolute destination: DESTDIR still applies) and PREFIX/etc else.
set(LATENTD_CONFIG_FULL_DIR "${CMAKE_INSTALL_FULL_SYSCONFDIR}/latentd")
set(LATENTD_CONFIG_FULL_PATH "${LATENTD_CONFIG_FULL_DIR}/latentd.conf")
set(LATENTD_BIN_FULL_DIR "${CMAKE_INSTALL_FULL_BINDIR}")
set(LATENTD_DOC_FULL_DIR "${CMAKE_INSTALL_FULL_DOCDIR}")
set(LATENTD_SYSTEMD_UNIT_FULL_DIR
    "${CMAKE_INSTALL_PREFIX}/${LATENTD_SYSTEMD_UNIT_DIR}")

configure_file(${PROJECT_SOURCE_DIR}/ops/systemd/latentd.service.in
               ${PROJECT_BINARY_DIR}/ops/systemd/latentd.service @ONLY)

install(FILES ${PROJECT_SOURCE_DIR}/ops/latentd.conf
        DESTINATION ${LATENTD_CONFIG_FULL_DIR}
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(FILES ${PROJECT_BINARY_DIR}/ops/systemd/latentd.service
        DESTINATION ${LATENTD_SYSTEMD_UNIT_DIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# docs/ keeps its name, so that README.md's links hold where it is installed.
install(FILES ${PROJECT_SOURCE_DIR}/docs/design.md
              ${PROJECT_SOURCE_DIR}/docs/operations.md
              ${PROJECT_SOURCE_DIR}/docs/operator-guide.md
              ${PROJECT_SOURCE_DIR}/docs/api.md
              ${PROJECT_SOURCE_DIR}/docs/benchmarks.md
              ${PROJECT_SOURCE_DIR}/docs/testing.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

# --- Debian package -------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME latentd)
set(CPACK_PACKAGE_VENDOR "latentd")
set(CPACK_PACKAGE_CONTACT
    "latentd maintainers <maintainers@users.noreply.a-seed-c444aeb4.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "topic-model (LDA) training and inference daemon")
set(CPACK_PACKAGE_DESCRIPTION
    "latentd trains LDA topic models continuously (collapsed Gibbs sampling \
on a oneTBB pipeline) on what it is fed, alone or as a node of a training \
cluster, and answers topic, inference and user-profile queries over \
HTTP/JSON and framed protobuf/TCP. Includes latentctl (train and query) and \
latentd-cluster-node, and a systemd unit (not enabled on install: set \
corpus in its latentd.conf first).")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # latentd_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# Install with the configure-time prefix, so the unit's paths hold in the
# package; DESTDIR staging keeps the absolute /etc destination inside it.
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)          # Release binaries carry no debug info

# Dependencies from the binaries' ELF needs when dpkg-shlibdeps (dpkg-dev)
# is there; else the Debian 12 runtime packages of what they link.
find_program(LATENTD_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(LATENTD_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "libc6, libstdc++6, libgcc-s1, libtbb12, libabsl20220623, \
libprotobuf32, libcpp-httplib0.11, libhiredis0.14, libzstd1, zlib1g, \
libxxhash0, libsystemd0, libspdlog1.10, libfmt9")
endif()

# The config is a conffile (an upgrade keeps local edits); the maintainer
# scripts reload systemd and stop the service on removal.
file(WRITE ${PROJECT_BINARY_DIR}/ops/debian/conffiles
     "${LATENTD_CONFIG_FULL_PATH}\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/ops/debian/conffiles
    ${PROJECT_SOURCE_DIR}/ops/debian/postinst
    ${PROJECT_SOURCE_DIR}/ops/debian/prerm
    ${PROJECT_SOURCE_DIR}/ops/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
