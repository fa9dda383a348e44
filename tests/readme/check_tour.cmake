# The README's tour, as printed: the first ```c block after "## A tour of the C API" in
# README.md is written to a file, compiled with warnings as errors against the built
# shared library, and run; it must exit 0 and print "kernel matches the evaluator".
# Arguments: SRC (source dir), BIN (build dir), LIB (libcfuser.so), DLPACK (its include
# dir), FLAGS (extra compiler flags: the sanitizers of a sanitizer build).
file(READ ${SRC}/README.md readme)
string(FIND "${readme}" "## A tour of the C API" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md has no '## A tour of the C API' section")
endif()
string(SUBSTRING "${readme}" ${at} -1 rest)
string(FIND "${rest}" "```c\n" open)
if(open EQUAL -1)
  message(FATAL_ERROR "the tour section has no ```c block")
endif()
math(EXPR open "${open} + 5")
string(SUBSTRING "${rest}" ${open} -1 rest)
string(FIND "${rest}" "\n```" close)
string(SUBSTRING "${rest}" 0 ${close} program)
set(dir ${BIN}/readme-tour)
file(MAKE_DIRECTORY ${dir})
file(WRITE ${dir}/tour.c "${program}\n")
get_filename_component(libdir ${LIB} DIRECTORY)
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
execute_process(COMMAND cc -std=c11 -Wall -Wextra -Wpedantic -Werror ${flags} ${dir}/tour.c -I${SRC}/include -I${DLPACK}
                        ${LIB} -Wl,-rpath,${libdir} -o ${dir}/tour
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the README's tour does not compile:\n${err}")
endif()
execute_process(COMMAND ${dir}/tour RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "kernel matches the evaluator")
  message(FATAL_ERROR "the README's tour failed (exit ${rc})")
endif()
