// The arithmetic of the graph factorization objective (docs/design.md, "Graph
// factorization"), shared by the trainer's workers and the gradient check
// so that the check covers the code that trains:
//
//   F(Z) = Σ_pairs (w/2)(y − ⟨z_a, z_b⟩_s)²  +  (λ/2) Σ_i ‖z_i‖²
//          + (μ/2) Σ_i ‖z_i − t_i‖²          (consensus term, t = target)
//
// ⟨·,·⟩_s is the inner product with the signature s (signature.h): the
// last negative_dims coordinates count negatively.
// The two per-vertex terms are spread over the vertex's touches: a touch
// of vertex i adds share_i · (λ z_i + μ (z_i − t_i)) to its gradient, with
// share_i = 1 / (touches of i per pass), so one pass adds the whole term.
// Thread-safety: pure functions.
#ifndef LATENTD_SAMPLER_GRAPH_INTERNAL_PAIR_KERNEL_H_
#define LATENTD_SAMPLER_GRAPH_INTERNAL_PAIR_KERNEL_H_

#include <cstdint>

namespace latentd::internal {

// Adds the gradient of (w/2)(y − ⟨a, b⟩_s)² to ga (wrt a) and gb (wrt b);
// returns the term. ga and gb may not alias a or b (they may alias each
// other only if a == b, which callers never pass).
// REQUIRES: negative_dims <= dim.
inline double PairGradient(const float* a, const float* b, uint32_t dim,
                           uint32_t negative_dims, float y, float w, float* ga,
                           float* gb) {
  const uint32_t positive = dim - negative_dims;
  float plus = 0, minus = 0;
  for (uint32_t k = 0; k < positive; ++k) plus += a[k] * b[k];
  for (uint32_t k = positive; k < dim; ++k) minus += a[k] * b[k];
  const float e = y - (plus - minus);
  const float s = -w * e;
  for (uint32_t k = 0; k < positive; ++k) {
    ga[k] += s * b[k];
    gb[k] += s * a[k];
  }
  for (uint32_t k = positive; k < dim; ++k) {
    ga[k] -= s * b[k];
    gb[k] -= s * a[k];
  }
  return 0.5 * static_cast<double>(w) * e * e;
}

// Adds times · share · (λ z + μ (z − t)) to g; t may be null (μ unused).
inline void VertexTermGradient(const float* z, const float* t, uint32_t dim,
                               float lambda_share, float mu_share, float* g) {
  for (uint32_t k = 0; k < dim; ++k) g[k] += lambda_share * z[k];
  if (t != nullptr && mu_share != 0) {
    for (uint32_t k = 0; k < dim; ++k) g[k] += mu_share * (z[k] - t[k]);
  }
}

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_GRAPH_INTERNAL_PAIR_KERNEL_H_
