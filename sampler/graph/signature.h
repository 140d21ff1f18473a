// The signature of a graph factorization's inner product: the link score of
// vertices a and b is
//
//   score(a, b) = Σ_{k < d−p} z_ak z_bk  −  Σ_{k ≥ d−p} z_ak z_bk
//
// with p = negative_dims, the last p coordinates counted negatively. With
// p = 0 it is the plain ⟨z_a, z_b⟩, a positive semi-definite Gram matrix;
// with p > 0 the score matrix may have negative eigenvalues, as a truncated
// SVD's does, so that two vertices alike (two users of one community in a
// bipartite graph) can score low although their vectors are close.
// Thread-safety: pure functions.
#ifndef LATENTD_SAMPLER_GRAPH_SIGNATURE_H_
#define LATENTD_SAMPLER_GRAPH_SIGNATURE_H_

#include <cstdint>

namespace latentd {

// score(a, b) in double precision. REQUIRES: negative_dims <= dim.
inline double SignedDot(const float* a, const float* b, uint32_t dim,
                        uint32_t negative_dims) {
  const uint32_t positive = dim - negative_dims;
  double plus = 0, minus = 0;
  for (uint32_t k = 0; k < positive; ++k) plus += double{a[k]} * b[k];
  for (uint32_t k = positive; k < dim; ++k) minus += double{a[k]} * b[k];
  return plus - minus;
}

}  // namespace latentd

#endif  // LATENTD_SAMPLER_GRAPH_SIGNATURE_H_
