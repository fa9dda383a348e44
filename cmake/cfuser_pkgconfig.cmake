# cfuser_write_pc(OUT LIBDIR INCLUDEDIR): writes the pkg-config file for an install whose
# library and include directories are LIBDIR and INCLUDEDIR (relative to the prefix, as
# GNUInstallDirs gives them: lib, lib64, lib/x86_64-linux-gnu; or absolute). The prefix is
# found from the .pc file's own place (${pcfiledir} and as many ".." as LIBDIR/pkgconfig
# has levels), so an installed tree can move. Used by the install rules, and in script
# mode by the install test for other library directories (cmake -P with OUT, LIBDIR,
# INCLUDEDIR, VERSION, DLPACK, SRC).
function(cfuser_write_pc out libdir includedir)
  if(IS_ABSOLUTE "${libdir}")
    set(CFUSER_PC_PREFIX_FROM_PCDIR "../..") # unused below: every path is absolute
    set(CFUSER_PC_LIBDIR "${libdir}")
  else()
    file(RELATIVE_PATH up "/prefix/${libdir}/pkgconfig" "/prefix")
    string(REGEX REPLACE "/$" "" up "${up}")
    set(CFUSER_PC_PREFIX_FROM_PCDIR "${up}")
    set(CFUSER_PC_LIBDIR "\${prefix}/${libdir}")
  endif()
  if(IS_ABSOLUTE "${includedir}")
    set(CFUSER_PC_INCLUDEDIR "${includedir}")
  else()
    set(CFUSER_PC_INCLUDEDIR "\${prefix}/${includedir}")
  endif()
  configure_file(${CFUSER_PC_TEMPLATE} ${out} @ONLY)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND OUT)
  set(PROJECT_VERSION ${VERSION})
  set(DLPACK_INCLUDE_DIR ${DLPACK})
  set(CFUSER_PC_TEMPLATE ${SRC}/cmake/cfuser.pc.in)
  cfuser_write_pc(${OUT} ${LIBDIR} ${INCLUDEDIR})
endif()
