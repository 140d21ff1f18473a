// ln Γ(x), safe to call from several threads at once.
//
// std::lgamma is not: POSIX has it store the sign of Γ(x) in the global
// `signgam`, so two threads calling it race on that int (ThreadSanitizer
// reported it between the workers of WordLogLikelihood's parallel_reduce).
// lgamma_r (glibc) returns the sign through a pointer instead.
//
// Thread-safety: a pure function.
#ifndef LATENTD_BASE_LOG_GAMMA_H_
#define LATENTD_BASE_LOG_GAMMA_H_

#include <math.h>

namespace latentd {

inline double LogGamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

}  // namespace latentd

#endif  // LATENTD_BASE_LOG_GAMMA_H_
