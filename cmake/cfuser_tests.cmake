# Test registration: every tests/<dir>/test_*.c and every tutorial/*.c is one Criterion
# executable and one ctest test. Labels: `unit` for tests/, `tutorial` for tutorial/, plus
# any listed on a first line of the form `// labels: gpu slow`. The label `split` makes
# one ctest test per Criterion Test(suite, name) of the file instead, named
# <dir>_<file>.<name>, so that ctest -j runs a long file's tests (the DAG fuzzer's modes)
# side by side; `optimized` keeps the executor's own host compiler flags (below). Tests may
# include internal headers and link the static library so they can reach hidden symbols.
#
# Host kernels compile with CFUSER_TEST_HOST_CFLAGS (-O0) appended to the executor's
# command (the last -O wins over its -O2): the C compiler is 80-95% of every long test
# (tools/test_times.py). -O1 took 20-30% less CPU than -O2 for the compile and the emulated
# run together; -O0 takes 20-40% less again (2026-11-28, 2 cores, fresh caches:
# executor_test_segments 62 -> 48 CPU-s, scheduler_test_norm_sched 56 -> 35, tutorial_tmem
# 48 -> 40; the whole ctest -j2 572 -> 478 s). The fuzzers (label `optimized`) and the
# conformance matrix keep the executor's own flags, so -O2 kernels stay tested on random
# fusions and on every op's special values; -DCFUSER_TEST_HOST_CFLAGS= runs every test
# with them.
set(CFUSER_TEST_HOST_CFLAGS "-O0" CACHE STRING
    "Host C compiler flags the tests' kernels get (CFUSER_HOST_CFLAGS); empty: the executor's default -O2")
find_path(CRITERION_INCLUDE_DIR criterion/criterion.h REQUIRED)
find_library(CRITERION_LIBRARY criterion REQUIRED)

function(cfuser_add_test src base_label)
  get_filename_component(name ${src} NAME_WE)
  get_filename_component(dir ${src} DIRECTORY)
  get_filename_component(dirname ${dir} NAME)
  set(tname "${dirname}_${name}")
  add_executable(${tname} ${src})
  target_include_directories(${tname} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/tests
                                              ${CRITERION_INCLUDE_DIR})
  target_compile_definitions(${tname} PRIVATE _GNU_SOURCE)
  target_link_libraries(${tname} PRIVATE cfuser_static ${CRITERION_LIBRARY} LibFFI::LibFFI
                                         ${CMAKE_DL_LIBS} m pthread)
  cfuser_apply_warnings(${tname})
  file(STRINGS ${src} first LIMIT_COUNT 1)
  set(labels ${base_label})
  if(first MATCHES "^// labels: (.*)$")
    string(REPLACE " " ";" extra "${CMAKE_MATCH_1}")
    list(APPEND labels ${extra})
  endif()
  set(names ${tname})
  set(commands "${tname} --jobs 1")
  if("split" IN_LIST labels)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
    file(STRINGS ${src} decls REGEX "^Test\\([a-z_0-9]+, *[a-z_0-9]+")
    set(names "")
    set(commands "")
    foreach(d ${decls})
      string(REGEX MATCH "^Test\\(([a-z_0-9]+), *([a-z_0-9]+)" _ "${d}")
      list(APPEND names "${tname}.${CMAKE_MATCH_2}")
      list(APPEND commands "${tname} --jobs 1 --filter ${CMAKE_MATCH_1}/${CMAKE_MATCH_2}")
    endforeach()
  endif()
  set(env "CFUSER_BIN=$<TARGET_FILE:cfuser_cli>;CFUSER_SOURCE_DIR=${PROJECT_SOURCE_DIR};CFUSER_VERIFY=1;CFUSER_CC_FLAGS=$<$<BOOL:${CFUSER_SANITIZE}>:-fsanitize=address,undefined>")
  if(NOT "optimized" IN_LIST labels AND CFUSER_TEST_HOST_CFLAGS)
    list(APPEND env "CFUSER_HOST_CFLAGS=${CFUSER_TEST_HOST_CFLAGS}")
  endif()
  foreach(n c IN ZIP_LISTS names commands)
    separate_arguments(c)
    add_test(NAME ${n} COMMAND ${c})
    set_tests_properties(${n} PROPERTIES LABELS "${labels}" ENVIRONMENT "${env}" SKIP_RETURN_CODE 77)
  endforeach()
endfunction()

file(GLOB CFUSER_UNIT_TESTS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/*/test_*.c)
foreach(t ${CFUSER_UNIT_TESTS})
  cfuser_add_test(${t} unit)
endforeach()
file(GLOB CFUSER_TUTORIALS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tutorial/*.c)
foreach(t ${CFUSER_TUTORIALS})
  cfuser_add_test(${t} tutorial)
endforeach()

# The install test builds a tiny outside program against the installed package, through
# pkg-config and through find_package.
add_test(NAME install_consumers
  COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -DBIN=${PROJECT_BINARY_DIR}
          -P ${PROJECT_SOURCE_DIR}/tests/install/check_install.cmake)
set_tests_properties(install_consumers PROPERTIES LABELS "unit;slow")

# The README's tour, extracted from README.md, compiled and run as printed (with the
# sanitizers when the library has them).
set(_tour_flags "")
if(CFUSER_SANITIZE)
  set(_tour_flags "-fsanitize=address,undefined")
endif()
add_test(NAME readme_tour
  COMMAND ${CMAKE_COMMAND} -DSRC=${PROJECT_SOURCE_DIR} -DBIN=${PROJECT_BINARY_DIR}
          -DLIB=$<TARGET_FILE:cfuser> -DDLPACK=${DLPACK_INCLUDE_DIR} -DFLAGS=${_tour_flags}
          -P ${PROJECT_SOURCE_DIR}/tests/readme/check_tour.cmake)
set_tests_properties(readme_tour PROPERTIES LABELS "unit")

# The rendered tutorials (tutorial/x.md) must match their sources (tutorial/x.c).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  # Every C and Python block of the docs runs (tests/readme/check_blocks.py), and
  # python/README.md's ops table is what tools/gen_ops_table.py generates from fd.ops.
  add_test(NAME docs_code_blocks
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/readme/check_blocks.py ${PROJECT_SOURCE_DIR}
            $<TARGET_FILE:cfuser>)
  add_test(NAME python_ops_table_fresh
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/gen_ops_table.py --check)
  set_tests_properties(docs_code_blocks python_ops_table_fresh PROPERTIES LABELS "python"
    ENVIRONMENT "CFUSER_LIBRARY=$<TARGET_FILE:cfuser>")
  foreach(t ${CFUSER_TUTORIALS})
    get_filename_component(name ${t} NAME_WE)
    add_test(NAME tutorial_${name}_markdown_fresh
      COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/render_tutorial.py --check ${t})
    set_tests_properties(tutorial_${name}_markdown_fresh PROPERTIES LABELS "unit")
  endforeach()
endif()

# The host C compiler's flags for the tests' kernels, as an ENVIRONMENT entry (or none).
set(_cf_test_host_env "")
if(CFUSER_TEST_HOST_CFLAGS)
  set(_cf_test_host_env "CFUSER_HOST_CFLAGS=${CFUSER_TEST_HOST_CFLAGS}")
endif()

# The Python frontend's tests (python/tests, pytest) on the built shared library, as
# CFUSER_PYTEST_SHARDS ctest entries python_tests.<i>of<n> that ctest -j runs side by side
# (python/tests/conftest.py: shard i runs every n-th test from the i-th); skipped (77) with
# the reason when no Python with pytest and numpy is found. Not labelled `unit`: the
# sanitized build's library cannot be loaded into an uninstrumented interpreter.
set(CFUSER_PYTEST_SHARDS 4 CACHE STRING "ctest entries the Python tests are split into")
foreach(i RANGE 1 ${CFUSER_PYTEST_SHARDS})
  set(n python_tests.${i}of${CFUSER_PYTEST_SHARDS})
  add_test(NAME ${n} COMMAND ${PROJECT_SOURCE_DIR}/python/tests/run_tests.sh $<TARGET_FILE:cfuser>)
  set_tests_properties(${n} PROPERTIES LABELS "python" SKIP_RETURN_CODE 77
    ENVIRONMENT "CFUSER_PYTEST_SHARD=${i}/${CFUSER_PYTEST_SHARDS};${_cf_test_host_env}")
endforeach()
# The conformance matrix (tests/conformance, pytest): every op of the op table x every dtype
# it takes x (evaluator, host backend, CUDA when present) on special values, against torch's
# semantics computed with NumPy; skipped (77) like python_tests without pytest and numpy.
add_test(NAME conformance_matrix COMMAND ${PROJECT_SOURCE_DIR}/tests/conformance/run.sh $<TARGET_FILE:cfuser>)
set_tests_properties(conformance_matrix PROPERTIES LABELS "python" SKIP_RETURN_CODE 77)
# The same cells on CUDA against torch itself (skipped, with the reason, without torch or a GPU).
if(Python3_FOUND)
  add_test(NAME conformance_torch COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/conformance/torch_matrix.py)
  set_tests_properties(conformance_torch PROPERTIES LABELS "gpu" SKIP_RETURN_CODE 77
                       ENVIRONMENT "CFUSER_LIBRARY=$<TARGET_FILE:cfuser>")
endif()
# A cfuser kernel on a PyTorch stream between two PyTorch ops (skipped without torch or a GPU).
if(Python3_FOUND)
  add_test(NAME executor_torch_stream
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/executor/torch_stream.py $<TARGET_FILE:cfuser>)
  set_tests_properties(executor_torch_stream PROPERTIES LABELS "unit;gpu" SKIP_RETURN_CODE 77)
endif()

# The libFuzzer harness of the layout parser and calculator, briefly (it reports itself
# skipped, with the reason, when clang or libFuzzer is missing); run it long by hand with
# tests/fuzz/run_layout_fuzz.sh SECONDS.
add_test(NAME layout_libfuzzer
  COMMAND ${PROJECT_SOURCE_DIR}/tests/fuzz/run_layout_fuzz.sh 20 ${PROJECT_BINARY_DIR}/layout-fuzz)
set_tests_properties(layout_libfuzzer PROPERTIES LABELS "unit;slow;fuzz" SKIP_RETURN_CODE 77)

# The layout fuzz runs the calculator in-process: it links the calculator's source.
target_sources(layout_test_layout_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/tools/cmd_layout.c)
target_include_directories(layout_test_layout_fuzz PRIVATE ${PROJECT_SOURCE_DIR}/tools)

# In the sanitizer build, part of the random-schedule seeds also run with the generated host
# kernels instrumented (CFUSER_HOST_CFLAGS), so an out-of-bounds access or undefined
# behaviour inside a kernel is a sanitizer report too. A range of its own, away from the
# default seeds; more on demand with CFUSER_FUZZ_FIRST / CFUSER_FUZZ_ITERS.
if(CFUSER_SANITIZE)
  add_test(NAME kernels_random_schedules_instrumented
    COMMAND kernels_test_random_schedules --jobs 1 --filter random_schedules/run_like_the_evaluator)
  set_tests_properties(kernels_random_schedules_instrumented PROPERTIES LABELS "unit"
    ENVIRONMENT "CFUSER_HOST_CFLAGS=-fsanitize=address,undefined -fno-omit-frame-pointer;CFUSER_FUZZ_FIRST=5000;CFUSER_FUZZ_ITERS=30;CFUSER_VERIFY=1")
endif()

# The other tests that compile host kernels on the built library or program get the tests'
# flags too (the top says which keep the executor's own).
foreach(t docs_code_blocks bench_define_and_run_small bench_reduction_sweep_small bench_multidevice_small
          bench_matmul_check bench_sweep_check)
  if(TEST ${t} AND _cf_test_host_env)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "${_cf_test_host_env}")
  endif()
endforeach()

# Long tests first: ctest -j starts tests in decreasing COST (later runs use the times it
# recorded in Testing/Temporary/CTestCostData.txt), so on a fresh build directory these
# would otherwise start in name order and the longest could run alone at the end. Figures:
# CPU seconds of each test (about its wall time on an idle core) with a cold kernel cache,
# from a ctest -j2 run of the whole suite (tools/test_times.py breaks one down); the Python
# shards get a share of the whole Python suite's ~220 s each.
foreach(pair "executor_test_segments:57" "scheduler_test_norm_sched:52" "tutorial_tmem:50" "conformance_matrix:50"
             "executor_test_fusion_execute:44" "nvfuser_test_matmul_ports:34" "scheduler_test_matmul_sched:30"
             "scheduler_test_outer_persistent_sched:28" "bench_reduction_sweep_small:27" "scheduler_test_pointwise_tail:23"
             "kernels_test_random_dags.seeds_that_found_bugs:21"
             "kernels_test_random_dags.hostile_define_and_run_like_the_evaluator:19" "bench_sweep_check:16"
             "kernels_test_reductions:16" "scheduler_test_reduction_sched:15" "scheduler_test_mma:15"
             "kernels_test_random_dags.define_and_run_like_the_evaluator:14" "layout_libfuzzer:14"
             "kernels_test_random_schedules.run_like_the_evaluator:12")
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 cost)
  if(TEST ${name})
    set_tests_properties(${name} PROPERTIES COST ${cost})
  endif()
endforeach()
math(EXPR _cf_shard_cost "220 / ${CFUSER_PYTEST_SHARDS}")
foreach(i RANGE 1 ${CFUSER_PYTEST_SHARDS})
  set_tests_properties(python_tests.${i}of${CFUSER_PYTEST_SHARDS} PROPERTIES COST ${_cf_shard_cost})
endforeach()
