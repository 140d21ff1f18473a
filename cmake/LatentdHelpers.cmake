# Small helpers so each module's CMakeLists lists its sources explicitly and
# gets the same warnings and include root.

set(LATENTD_WARNINGS -Wall -Wextra)
if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # A unity build #includes each source into one unit, so GCC takes a
  # class that holds a type of its source's anonymous namespace for a
  # header's and warns; with one source per unit (the default build, which
  # keeps the warning) it is fine.
  list(APPEND LATENTD_WARNINGS -Wno-subobject-linkage)
endif()

# Cold code in a test tree: the targets of the top-level folders named in
# LATENTD_COLD_DIRS ("tests": every target that links GoogleTest) compile
# with LATENTD_COLD_OPT instead of the build type's level. ops/test.sh's
# trees only run tests, and a test's own code and the control paths of
# service/, sync/ and cli/ do little work per line: at -O0 clang compiles
# them in about half the time and their tests take about as long. Loops
# that run for seconds (sampler/, hashring/, similarity/, corpora/, and a
# test marked HOT) stay optimised. A normal build leaves the list empty.
set(LATENTD_COLD_DIRS "" CACHE STRING
    "Top-level folders compiled with LATENTD_COLD_OPT (test trees)")
set(LATENTD_COLD_OPT "-O0" CACHE STRING "Optimisation of LATENTD_COLD_DIRS")

# latentd_options(target [TEST] [HOT]): TEST for a target that links
# GoogleTest (it reuses the test PCH, cmake/LatentdPch.cmake); HOT for one
# that stays optimised in LATENTD_COLD_DIRS.
function(latentd_options target)
  cmake_parse_arguments(ARG "TEST;HOT" "" "" ${ARGN})
  target_compile_options(${target} PRIVATE ${LATENTD_WARNINGS})
  if(LATENTD_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(REGEX REPLACE "/.*" "" folder "${folder}")
  set(pch latentd_pch)
  if(ARG_TEST)
    set(folder tests)
    set(pch latentd_test_pch)
  endif()
  if(folder IN_LIST LATENTD_COLD_DIRS AND NOT ARG_HOT)
    target_compile_options(${target} PRIVATE ${LATENTD_COLD_OPT})
    string(REGEX REPLACE "_pch$" "_cold_pch" pch ${pch})
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY" OR type STREQUAL "MODULE_LIBRARY")
    # PIC code: not the PCH's (cmake/LatentdPch.cmake).
  elseif(TARGET ${pch})  # cmake/LatentdPch.cmake
    target_precompile_headers(${target} REUSE_FROM ${pch})
    target_compile_options(${target} PRIVATE ${LATENTD_PCH_WARNINGS})
  endif()
endfunction()

# latentd_library(NAME SRCS a.cc b.cc DEPS x y [HOT])
function(latentd_library name)
  cmake_parse_arguments(ARG "HOT" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}
                                            ${PROJECT_BINARY_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  set(hot)
  if(ARG_HOT)
    set(hot HOT)
  endif()
  latentd_options(${name} ${hot})
endfunction()

# The gate (ops/test.sh) runs the unit GoogleTest binaries under ASan and
# UBSan only: its Release tree sets this OFF, leaving them out of `all`
# (they are about 30% of a Release build), and its Release run leaves the
# label unit_gtest out. The dev build keeps them.
option(LATENTD_UNIT_GTESTS_IN_ALL
       "Build the unit GoogleTest binaries with the default target" ON)

# latentd_test(NAME SRCS a_test.cc DEPS lib LABELS unit [TIMEOUT s] [DATA]
#              [DATA_TESTS filter] [NOT_SANITIZED] [HOT])
# Registers each GoogleTest binary with ctest as one test carrying LABELS.
# HOT: its own code runs loops that take seconds (see LATENTD_COLD_DIRS).
# DATA: it reads the real corpora (see latentd_needs_data). DATA_TESTS: only
# the tests that GoogleTest filter names do; they run as a second ctest
# test, NAME_real_data, and NAME runs the others. NOT_SANITIZED: a unit
# test that the sanitizer run leaves out (it stays in the Release run).
function(latentd_test name)
  cmake_parse_arguments(ARG "DATA;NOT_SANITIZED;HOT" "TIMEOUT;DATA_TESTS"
                        "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest
                                        latentd_gtest_main Threads::Threads)
  set(hot)
  if(ARG_HOT)
    set(hot HOT)
  endif()
  latentd_options(${name} TEST ${hot})
  set(tests ${name})
  if(ARG_DATA_TESTS)
    add_test(NAME ${name} COMMAND ${name} --gtest_filter=-${ARG_DATA_TESTS}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    add_test(NAME ${name}_real_data
             COMMAND ${name} --gtest_filter=${ARG_DATA_TESTS}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    list(APPEND tests ${name}_real_data)
  else()
    add_test(NAME ${name} COMMAND ${name}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  # A unit GoogleTest binary also gets the label unit_gtest and joins the
  # target unit_gtests: what the sanitizer run of ops/test.sh builds and runs
  # (the unit tests that are scripts around latentd are left to the main run).
  if("unit" IN_LIST ARG_LABELS AND NOT ARG_NOT_SANITIZED)
    list(APPEND ARG_LABELS unit_gtest)
    set_property(GLOBAL APPEND PROPERTY LATENTD_UNIT_GTESTS ${name})
    if(NOT LATENTD_UNIT_GTESTS_IN_ALL)
      set_target_properties(${name} PROPERTIES EXCLUDE_FROM_ALL ON)
    endif()
  endif()
  # Exit code 77: nothing failed and a test was skipped (tests/gtest_main.cc).
  set_tests_properties(${tests} PROPERTIES LABELS "${ARG_LABELS}"
                       TIMEOUT ${ARG_TIMEOUT} SKIP_RETURN_CODE 77)
  if(ARG_DATA)
    latentd_needs_data(${name})
  elseif(ARG_DATA_TESTS)
    latentd_needs_data(${name}_real_data)
  endif()
endfunction()

# latentd_needs_data(TEST...): ctest tests that read the real corpora under
# the cache variable LATENTD_DATA_DIR (GoogleTest: tests/data_dir.h). They,
# and no other test, get it in their environment, and the label data
# (`ctest -L data` runs them, `-LE data` leaves them out); where a file they
# need is missing they print "SKIP: <path> ..." and exit 77, which ctest
# reports as skipped. The other tests train on generated corpora
# (tests/testdata).
function(latentd_needs_data)
  foreach(test ${ARGN})
    set_property(TEST ${test} APPEND PROPERTY LABELS data)
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
                 "LATENTD_DATA_DIR=${LATENTD_DATA_DIR}")
    set_property(TEST ${test} PROPERTY SKIP_RETURN_CODE 77)
  endforeach()
endfunction()

# latentd_benchmark(NAME SRCS a_benchmark.cc DEPS lib): a Google Benchmark
# program, with base/'s bench_support (base/bench/).
function(latentd_benchmark name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} bench_support
                                        benchmark::benchmark Threads::Threads)
  latentd_options(${name})
endfunction()

# latentd_protos(TARGET PROTOS dir/a.proto ...) generates C++ for .proto files
# (paths relative to the project root) into ${PROJECT_BINARY_DIR}/dir/a.pb.{h,cc}
# and adds them to TARGET; include them as "dir/a.pb.h". protobuf_generate puts
# CMAKE_CURRENT_SOURCE_DIR first on protoc's import path, which would register
# a file as "a.proto"; generating from the project root registers it as
# "dir/a.proto", the name other .proto files import it by.
function(latentd_protos target)
  cmake_parse_arguments(ARG "" "" "PROTOS" ${ARGN})
  set(CMAKE_CURRENT_SOURCE_DIR ${PROJECT_SOURCE_DIR})
  set(abs_protos)
  foreach(proto ${ARG_PROTOS})
    list(APPEND abs_protos ${PROJECT_SOURCE_DIR}/${proto})
  endforeach()
  protobuf_generate(TARGET ${target} LANGUAGE cpp
    PROTOS ${abs_protos}
    IMPORT_DIRS ${PROJECT_SOURCE_DIR}
    PROTOC_OUT_DIR ${PROJECT_BINARY_DIR})
endfunction()
