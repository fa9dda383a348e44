# FindLibFFI: libffi as the imported target LibFFI::LibFFI (pkg-config's hints first, then a
# plain search), for cfuser's build and for its installed package config, whose static
# library links it (find_dependency(LibFFI) there: no absolute path is baked in).
# Sets LibFFI_FOUND, LibFFI_INCLUDE_DIR, LibFFI_LIBRARY, LibFFI_VERSION (when pkg-config knows).
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_LIBFFI QUIET libffi)
endif()
find_path(LibFFI_INCLUDE_DIR ffi.h HINTS ${PC_LIBFFI_INCLUDE_DIRS})
find_library(LibFFI_LIBRARY NAMES ffi HINTS ${PC_LIBFFI_LIBRARY_DIRS})
set(LibFFI_VERSION ${PC_LIBFFI_VERSION})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibFFI REQUIRED_VARS LibFFI_LIBRARY LibFFI_INCLUDE_DIR VERSION_VAR LibFFI_VERSION)
if(LibFFI_FOUND AND NOT TARGET LibFFI::LibFFI)
  add_library(LibFFI::LibFFI UNKNOWN IMPORTED)
  set_target_properties(LibFFI::LibFFI PROPERTIES IMPORTED_LOCATION "${LibFFI_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${LibFFI_INCLUDE_DIR}")
endif()
mark_as_advanced(LibFFI_INCLUDE_DIR LibFFI_LIBRARY)
