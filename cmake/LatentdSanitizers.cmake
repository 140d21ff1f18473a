# Sanitizer and fuzzing instrumentation (options in the top CMakeLists.txt).
# Global on purpose: ASan, UBSan and TSan only see the code they compiled, so
# every latentd library and program of a sanitizer build gets the same flags.
# A normal build sets neither option and gets none of this.

set(LATENTD_SANITIZE_FLAGS)
if(LATENTD_SANITIZE)
  list(APPEND LATENTD_SANITIZE_FLAGS -fsanitize=${LATENTD_SANITIZE})
endif()
if(LATENTD_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "LATENTD_BUILD_FUZZERS needs clang "
                        "(-DCMAKE_CXX_COMPILER=clang++; Debian: clang, "
                        "libclang-rt-14-dev), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  # Coverage counters for libFuzzer everywhere; the fuzzer runtime itself is
  # linked only into the harnesses (-fsanitize=fuzzer, tests/fuzz/).
  if(LATENTD_FUZZ_COVERAGE)
    list(APPEND LATENTD_SANITIZE_FLAGS -fsanitize=fuzzer-no-link)
  endif()
endif()
if(LATENTD_SANITIZE_FLAGS)
  # UBSan findings are errors (a test fails), not just lines in its log.
  if(LATENTD_SANITIZE MATCHES "undefined")
    list(APPEND LATENTD_SANITIZE_FLAGS -fno-sanitize-recover=all)
    # UBSan's vptr check (the dynamic type behind a member call or a
    # downcast) costs 9% of an ASan+UBSan tree's compile time; the test
    # command builds without it (ops/test.sh).
    if(NOT LATENTD_UBSAN_VPTR)
      list(APPEND LATENTD_SANITIZE_FLAGS -fno-sanitize=vptr)
    endif()
  endif()
  # Line tables are all a sanitizer report needs (file:line per frame);
  # full debug info made the ASan build of ops/test.sh ~10% slower.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    add_compile_options(${LATENTD_SANITIZE_FLAGS} -fno-omit-frame-pointer
                        -gline-tables-only)
  else()
    add_compile_options(${LATENTD_SANITIZE_FLAGS} -fno-omit-frame-pointer -g)
  endif()
  add_link_options(${LATENTD_SANITIZE_FLAGS})
endif()
