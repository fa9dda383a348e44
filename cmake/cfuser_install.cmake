# Install rules: headers, both libraries, the program, a pkg-config file and a CMake
# package config, so that `pkg-config --cflags --libs cfuser` and `find_package(cfuser)`
# both work after `cmake --install`.
include(CMakePackageConfigHelpers)
install(TARGETS cfuser cfuser_static EXPORT cfuserTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS cfuser_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES include/cfuser.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/cfuser DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT cfuserTargets NAMESPACE cfuser::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cfuser)
configure_package_config_file(cmake/cfuserConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cfuserConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cfuser)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cfuserConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cfuserConfig.cmake ${CMAKE_BINARY_DIR}/cfuserConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cfuser)
configure_file(cmake/cfuser.pc.in ${CMAKE_BINARY_DIR}/cfuser.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cfuser.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
