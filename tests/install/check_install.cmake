# Installs the build tree into a scratch prefix, then builds a tiny outside program
# against it twice: with pkg-config and a plain C compiler, and with find_package(cfuser).
set(prefix ${BIN}/install-test/prefix)
file(REMOVE_RECURSE ${BIN}/install-test)
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BIN} --prefix ${prefix}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed")
endif()
set(consumer ${SRC}/tests/install/consumer)
# 1. pkg-config
find_program(PKGCONFIG pkg-config REQUIRED)
# prepended: cfuser's own dependencies (libffi) are found where the system keeps them
set(ENV{PKG_CONFIG_PATH} "${prefix}/lib/pkgconfig:${prefix}/lib64/pkgconfig:$ENV{PKG_CONFIG_PATH}")
execute_process(COMMAND ${PKGCONFIG} --cflags --libs cfuser OUTPUT_VARIABLE flags
                RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs cfuser failed")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND cc -std=c11 ${consumer}/main.c ${flags} -o ${BIN}/install-test/by_pkgconfig
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer with pkg-config flags failed")
endif()
set(ENV{LD_LIBRARY_PATH} ${prefix}/lib:${prefix}/lib64)
execute_process(COMMAND ${BIN}/install-test/by_pkgconfig RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "T1_g_float")
  message(FATAL_ERROR "the pkg-config consumer failed (${rc}): ${out}")
endif()
# 2. find_package
execute_process(COMMAND ${CMAKE_COMMAND} -S ${consumer} -B ${BIN}/install-test/cmake-build
                        -DCMAKE_PREFIX_PATH=${prefix} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the find_package consumer failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN}/install-test/cmake-build
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the find_package consumer failed")
endif()
execute_process(COMMAND ${BIN}/install-test/cmake-build/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "T1_g_float")
  message(FATAL_ERROR "the find_package consumer failed (${rc}): ${out}")
endif()
message(STATUS "install consumers: pkg-config and find_package both build and run")
