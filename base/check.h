// LATENTD_CHECK: aborts with file and line when a programmer error (a broken
// precondition or invariant, never bad input) is detected. Debian's Abseil
// ships no absl/log, hence this small macro; every module uses this one.
// Thread-safe.
#ifndef LATENTD_BASE_CHECK_H_
#define LATENTD_BASE_CHECK_H_

#include <cstdio>
#include <cstdlib>

// Evaluates `cond` once, in every build type; on false prints
// "file:line: CHECK failed: cond" to stderr and aborts.
#define LATENTD_CHECK(cond)                                                 \
  do {                                                                      \
    if (__builtin_expect(!(cond), 0)) {                                     \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

#endif  // LATENTD_BASE_CHECK_H_
