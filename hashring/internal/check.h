// HASHRING_CHECK: aborts on a programmer error (a broken invariant or
// precondition, never bad input). Debian's Abseil ships no absl/log, and
// hashring/ depends on nothing else in latentd, hence this small macro.
#ifndef LATENTD_HASHRING_INTERNAL_CHECK_H_
#define LATENTD_HASHRING_INTERNAL_CHECK_H_

#include <cstdio>
#include <cstdlib>

// Evaluates `cond` once, in every build type; on false prints
// "file:line: CHECK failed: cond" to stderr and aborts.
#define HASHRING_CHECK(cond)                                                \
  do {                                                                      \
    if (__builtin_expect(!(cond), 0)) {                                     \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

#endif  // LATENTD_HASHRING_INTERNAL_CHECK_H_
