# Precompiled headers for every latentd target (the Release and sanitizer
# trees of ops/test.sh, the dev build). Parsing the standard library,
# Abseil, protobuf and GoogleTest headers was over half of each translation
# unit's compile time (daemon_test.cc: 6.5 s of 10), paid again in each of
# ~400 units. Two PCHs, each built once and reused (REUSE_FROM) by every
# target of its kind with the flags of latentd_options: latentd_pch for
# libraries and programs, latentd_test_pch (the same plus gtest.h, whose
# GTEST_HAS_PTHREAD definition comes only with GTest::gtest) for tests.
# GCC falls back to parsing the headers if a target's flags make a PCH
# unusable (a -Winvalid-pch warning); clang accepts a PCH whose macros a
# target's extend or lack and refuses one they contradict (an error), so
# every definition the PCH sees is the same for all targets. Shared
# libraries (PIC) do not use it. -DLATENTD_PCH=OFF builds every unit from
# its own includes, which catches a missing #include the PCH would hide;
# no tree of ops/test.sh does (it cost the TSan tree about 40% more
# compile time).
option(LATENTD_PCH "Precompile the common third-party headers" ON)

if(LATENTD_PCH AND CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang)$")
  # hiredis's pkg-config flags define _FILE_OFFSET_BITS=64 for the targets
  # that use it, and glibc's headers in the PCH test it: defined for every
  # target, one PCH fits them all (a no-op on 64-bit Debian, where off_t is
  # 64 bits either way).
  add_compile_definitions(_FILE_OFFSET_BITS=64)
  # GCC 12 reports its known false positives inside libstdc++'s
  # std::string (-Warray-bounds, -Wstringop-overread, -Wstringop-overflow
  # on moving or copying a short string; GCC bugs 105545, 105651) once
  # those headers come from a PCH: they lose the system-header status that
  # hides them otherwise (8 sites here, pushing a string literal into a
  # vector among them). So a GCC PCH build leaves those three out; the
  # clang trees keep clang's own bounds checks, and LATENTD_PCH=OFF
  # restores them in a GCC build.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(LATENTD_PCH_WARNINGS -Wno-array-bounds -Wno-stringop-overread
                             -Wno-stringop-overflow)
  endif()
  set(pch_headers
    <algorithm> <atomic> <chrono> <cmath> <cstdint> <cstdio> <cstdlib>
    <cstring> <filesystem> <fstream> <functional> <map> <memory> <mutex>
    <optional> <random> <sstream> <string> <string_view> <thread> <utility>
    <vector>
    <absl/container/flat_hash_map.h> <absl/container/flat_hash_set.h>
    <absl/status/status.h> <absl/status/statusor.h>
    <absl/strings/str_cat.h> <absl/strings/str_format.h>
    <absl/strings/str_split.h> <absl/synchronization/mutex.h>
    <absl/time/time.h> <google/protobuf/message.h>)
  set(pch_deps absl::status absl::statusor absl::strings absl::str_format
      absl::synchronization absl::time absl::flat_hash_map
      absl::flat_hash_set protobuf::libprotobuf)
  # COLD: compiled with LATENTD_COLD_OPT (a PCH serves only units of its
  # own -O level).
  function(latentd_pch_target name)
    cmake_parse_arguments(ARG "COLD" "" "HEADERS;DEPS" ${ARGN})
    add_library(${name} OBJECT ${PROJECT_SOURCE_DIR}/cmake/latentd_pch.cc)
    target_precompile_headers(${name} PRIVATE ${ARG_HEADERS})
    target_link_libraries(${name} PRIVATE ${ARG_DEPS})
    target_compile_options(${name} PRIVATE ${LATENTD_WARNINGS})
    if(LATENTD_NATIVE)
      target_compile_options(${name} PRIVATE -march=native)
    endif()
    if(ARG_COLD)
      target_compile_options(${name} PRIVATE ${LATENTD_COLD_OPT})
    endif()
    # Clang stamps a PCH with its headers' mtimes, so ccache (ops/test.sh)
    # would find every unit that includes it new on each build.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      target_compile_options(${name} PRIVATE "SHELL:-Xclang -fno-pch-timestamp")
    endif()
  endfunction()
  latentd_pch_target(latentd_pch HEADERS ${pch_headers} DEPS ${pch_deps})
  if(LATENTD_BUILD_TESTS)
    latentd_pch_target(latentd_test_pch
      HEADERS ${pch_headers} <gtest/gtest.h>
      DEPS ${pch_deps} GTest::gtest)
  endif()
  # Their _cold twins, for the targets of LATENTD_COLD_DIRS.
  if(LATENTD_COLD_DIRS)
    latentd_pch_target(latentd_cold_pch COLD HEADERS ${pch_headers}
                       DEPS ${pch_deps})
    if(LATENTD_BUILD_TESTS)
      latentd_pch_target(latentd_test_cold_pch COLD
        HEADERS ${pch_headers} <gtest/gtest.h>
        DEPS ${pch_deps} GTest::gtest)
    endif()
  endif()
endif()
