// The graph factorization objective, evaluated exactly (docs/design.md,
// "Graph factorization"):
//
//   F(Z) = Σ_{(a,b,y,w) ∈ pairs} (w/2)(y − ⟨z_a, z_b⟩_s)² + (λ/2) Σ_i ‖z_i‖²
//          [+ (μ/2) Σ_i ‖z_i − t_i‖² for a consensus target t]
//
// where ⟨·,·⟩_s is the inner product with signature s (signature.h: the
// last negative_dims coordinates count negatively) and the pairs are the edges
// (y = 1, w = the edge's weight) and, per edge, `negatives` sampled non-edges
// (y = 0, w = 1). Training resamples the negatives every epoch; the objective
// it prints uses one fixed draw (seeded), so that epochs are comparable.
//
// Thread-safety: const methods may be called concurrently.
#ifndef LATENTD_SAMPLER_GRAPH_GRAPH_OBJECTIVE_H_
#define LATENTD_SAMPLER_GRAPH_GRAPH_OBJECTIVE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "sampler/graph/graph_data.h"

namespace latentd {

struct PairTerm {
  VertexId a = 0;
  VertexId b = 0;
  float y = 0;
  float w = 1;
};

// Vertices with at least one edge in `graph`: the pool negatives are drawn
// from (a node of a cluster knows only the vertices its edges touch).
std::vector<VertexId> NegativePool(const GraphData& graph);

// Expected touches of each vertex's vector in one epoch over `graph`'s
// edges with `negatives` per edge: its edges (1 + negatives/2 each: the
// edge and the negatives drawn from its side) plus its uniform draws from
// NegativePool (negatives · edges / pool size); 0 for a vertex without an
// edge. The λ and μ terms are spread over these touches, and a cluster
// node weighs its copy of a vertex by them.
std::vector<double> ExpectedTouches(const GraphData& graph, int negatives);

// The negatives of edge `edge_index` for one pass, appended to *out: for
// q < negatives, side a = src (q even) or dst (q odd), b uniform from
// `pool`; a draw equal to either endpoint is skipped (so an edge may get
// fewer). Deterministic in (seed, stream, edge_index).
void DrawNegatives(const GraphEdge& edge, uint64_t edge_index, int negatives,
                   std::span<const VertexId> pool, uint64_t seed,
                   uint64_t stream, std::vector<PairTerm>* out);

class ObjectiveEvaluator {
 public:
  // Draws the fixed pairs: every edge of `graph`, then its negatives
  // (DrawNegatives with stream 0 from NegativePool(graph)).
  ObjectiveEvaluator(const GraphData& graph, int negatives, uint64_t seed);

  struct Value {
    double loss = 0;            // the pair terms
    double regularization = 0;  // (λ/2) Σ ‖z‖²
    double total() const { return loss + regularization; }
  };
  // F at z (num_vertices × dim, row-major). Runs in parallel (oneTBB, in
  // the caller's arena). REQUIRES: negative_dims <= dim.
  Value Evaluate(std::span<const float> z, uint32_t dim, uint32_t negative_dims,
                 double lambda) const;
  const std::vector<PairTerm>& pairs() const { return pairs_; }

 private:
  size_t num_vertices_;
  std::vector<PairTerm> pairs_;
};

// The exact gradient of F over `pairs` (with μ and target t if t is not
// empty), computed with the trainer's kernels (each vertex's share is one
// over its touches in `pairs`; a vertex in no pair gets its whole term),
// into *grad (resized to z's size). Returns F. For the gradient check.
// REQUIRES: negative_dims <= dim.
double ObjectiveGradient(std::span<const PairTerm> pairs,
                         std::span<const float> z, uint32_t dim,
                         uint32_t negative_dims, double lambda, double mu,
                         std::span<const float> t, std::vector<float>* grad);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_GRAPH_GRAPH_OBJECTIVE_H_
