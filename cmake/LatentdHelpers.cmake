# Small helpers so each module's CMakeLists lists its sources explicitly and
# gets the same warnings and include root.

set(LATENTD_WARNINGS -Wall -Wextra)

# latentd_options(target [TEST]): TEST for a target that links GoogleTest
# (it reuses the test PCH, cmake/LatentdPch.cmake).
function(latentd_options target)
  cmake_parse_arguments(ARG "TEST" "" "" ${ARGN})
  target_compile_options(${target} PRIVATE ${LATENTD_WARNINGS})
  if(LATENTD_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY" OR type STREQUAL "MODULE_LIBRARY")
    # PIC code: not the PCH's (cmake/LatentdPch.cmake).
  elseif(ARG_TEST AND TARGET latentd_test_pch)  # cmake/LatentdPch.cmake
    target_precompile_headers(${target} REUSE_FROM latentd_test_pch)
    target_compile_options(${target} PRIVATE ${LATENTD_PCH_WARNINGS})
  elseif(NOT ARG_TEST AND TARGET latentd_pch)
    target_precompile_headers(${target} REUSE_FROM latentd_pch)
    target_compile_options(${target} PRIVATE ${LATENTD_PCH_WARNINGS})
  endif()
endfunction()

# latentd_library(NAME SRCS a.cc b.cc DEPS x y)
function(latentd_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}
                                            ${PROJECT_BINARY_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  latentd_options(${name})
endfunction()

# latentd_test(NAME SRCS a_test.cc DEPS lib LABELS unit [TIMEOUT s])
# Registers each GoogleTest binary with ctest as one test carrying LABELS.
function(latentd_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest
                                        GTest::gtest_main Threads::Threads)
  latentd_options(${name} TEST)
  add_test(NAME ${name} COMMAND ${name}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  # A unit GoogleTest binary also gets the label unit_gtest and joins the
  # target unit_gtests: what the sanitizer run of ops/test.sh builds and runs
  # (the unit tests that are scripts around latentd are left to the main run).
  if("unit" IN_LIST ARG_LABELS)
    list(APPEND ARG_LABELS unit_gtest)
    set_property(GLOBAL APPEND PROPERTY LATENTD_UNIT_GTESTS ${name})
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}"
                       TIMEOUT ${ARG_TIMEOUT}
                       ENVIRONMENT "LATENTD_DATA_DIR=${PROJECT_SOURCE_DIR}/../shared/data")
endfunction()

# latentd_benchmark(NAME SRCS a_benchmark.cc DEPS lib)
function(latentd_benchmark name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark
                                        Threads::Threads)
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
