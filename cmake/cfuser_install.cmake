# Install rules: headers, both libraries, the program, a pkg-config file (right for any
# library directory: lib, lib64, lib/x86_64-linux-gnu) and a CMake package config with a
# version file and find_dependency(LibFFI), so that `pkg-config --cflags --libs cfuser` and
# `find_package(cfuser 0.1)` both work after `cmake --install`.
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
  ${PROJECT_BINARY_DIR}/cfuserConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cfuser)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cfuserConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cfuserConfig.cmake ${PROJECT_BINARY_DIR}/cfuserConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindLibFFI.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cfuser)
include(${PROJECT_SOURCE_DIR}/cmake/cfuser_pkgconfig.cmake)
set(CFUSER_PC_TEMPLATE ${PROJECT_SOURCE_DIR}/cmake/cfuser.pc.in)
cfuser_write_pc(${PROJECT_BINARY_DIR}/cfuser.pc ${CMAKE_INSTALL_LIBDIR} ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/cfuser.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
