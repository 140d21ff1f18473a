// UpperBound: the sampling kernels' search of a running sum of masses.
//
// Thread-safety: a pure function.
#ifndef LATENTD_SAMPLER_INTERNAL_UPPER_BOUND_H_
#define LATENTD_SAMPLER_INTERNAL_UPPER_BOUND_H_

#include <algorithm>
#include <cstdint>

namespace latentd::internal {

// The first i < n with cum[i] > u (n − 1 if none). REQUIRES: n > 0, cum
// ascending. The comparisons of a draw are unpredictable, so every path is
// branch-free: short rows count the sums <= u; rows up to 256 slots count
// the ends of 8-slot blocks first, then the slots of one block (independent
// loads, unlike a bisection's chain); longer rows bisect with a conditional
// move.
inline uint32_t UpperBound(const double* cum, uint32_t n, double u) {
  if (n <= 16) {
    uint32_t j = 0;
    for (uint32_t i = 0; i + 1 < n; ++i) j += cum[i] <= u;
    return j;
  }
  if (n <= 256) {
    uint32_t block = 0;
    for (uint32_t end = 7; end + 1 < n; end += 8) block += cum[end] <= u;
    const uint32_t first = 8 * block;
    const uint32_t last = std::min(first + 8, n - 1);
    uint32_t j = first;
    for (uint32_t i = first; i < last; ++i) j += cum[i] <= u;
    return j;
  }
  const double* base = cum;
  uint32_t len = n;
  while (len > 1) {
    const uint32_t half = len / 2;
    base += static_cast<uint32_t>(base[half - 1] <= u) * half;
    len -= half;
  }
  return static_cast<uint32_t>(base - cum);
}

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_UPPER_BOUND_H_
