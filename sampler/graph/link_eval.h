// Link-prediction evaluation: ROC AUC and average precision of a pair
// scorer over a held-out split (graph_data.h), and the baselines an
// embedding is compared with, computed from the training edges only:
// common neighbours, Adamic-Adar, and a truncated SVD of the adjacency
// matrix (for a symmetric matrix, its rank-r eigen-decomposition by
// |eigenvalue|, computed here by subspace iteration; no library).
//
// Thread-safety: plain values; const methods may be called concurrently.
#ifndef LATENTD_SAMPLER_GRAPH_LINK_EVAL_H_
#define LATENTD_SAMPLER_GRAPH_LINK_EVAL_H_

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "sampler/graph/graph_data.h"

namespace latentd {

struct LinkScores {
  double auc = 0;                // ties count one half
  double average_precision = 0;  // ties broken pessimistically
};

// REQUIRES: both non-empty.
LinkScores ScoreRanking(std::span<const double> positives,
                        std::span<const double> negatives);

using PairScorer = std::function<double(VertexId, VertexId)>;
// Scores every held-out pair of `split` with `scorer`.
LinkScores EvaluateLinks(const LinkSplit& split, const PairScorer& scorer);
// The same with ⟨z_a, z_b⟩_s as the score, the inner product with the
// signature of `negative_dims` (signature.h), z num_vertices × dim
// (row-major). REQUIRES: negative_dims < dim.
LinkScores EvaluateEmbedding(const LinkSplit& split, std::span<const float> z,
                             uint32_t dim, uint32_t negative_dims);

// Neighbour-set heuristics over a graph's edges.
class NeighborIndex {
 public:
  explicit NeighborIndex(const GraphData& graph);
  // |N(a) ∩ N(b)|.
  double CommonNeighbors(VertexId a, VertexId b) const;
  // Σ over common neighbours w of 1 / log(deg w).
  double AdamicAdar(VertexId a, VertexId b) const;

 private:
  // Sorted neighbour lists, CSR.
  std::vector<uint64_t> offsets_;
  std::vector<VertexId> neighbors_;
  template <typename F>
  void ForCommon(VertexId a, VertexId b, F f) const;
};

// The rank-r truncation of the (weighted, symmetric) adjacency matrix A:
// A ≈ U diag(values) Uᵀ; Score(a, b) = Σ_k values[k] U[a][k] U[b][k].
struct SpectralEmbedding {
  int rank = 0;
  std::vector<double> values;   // by |value|, descending
  std::vector<double> vectors;  // n × rank, row-major
  double Score(VertexId a, VertexId b) const;
};

// Subspace iteration with `iterations` multiplications by A on rank + 10
// columns, then Rayleigh-Ritz. kInvalidArgument unless 0 < rank < n.
absl::StatusOr<SpectralEmbedding> TruncatedSvd(const GraphData& graph, int rank,
                                               int iterations, uint64_t seed);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_GRAPH_LINK_EVAL_H_
