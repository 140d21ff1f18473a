// GraphData: an undirected edge list with its vertices numbered densely
// (VertexId 0..n-1 in order of first appearance), what the graph
// factorization solver trains on; and the held-out split of the link
// prediction protocol (docs/design.md, "Graph factorization").
//
// Thread-safety: plain values; const methods may be called concurrently.
#ifndef LATENTD_SAMPLER_GRAPH_GRAPH_DATA_H_
#define LATENTD_SAMPLER_GRAPH_GRAPH_DATA_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "corpora/edge_list.h"

namespace latentd {

using VertexId = uint32_t;

struct GraphEdge {
  VertexId src = 0;
  VertexId dst = 0;
  float weight = 1.0f;
};

using VertexPair = std::pair<VertexId, VertexId>;

class GraphData {
 public:
  // Numbers the vertices of `list` (undirected, as ReadEdgeList gives it:
  // no self-loops, no repeats). kInvalidArgument if it has no edge;
  // kResourceExhausted past 2^32 - 1 vertices.
  static absl::StatusOr<GraphData> FromEdgeList(const EdgeList& list);

  // A graph over the same vertices (ids and keys) with only `edges`.
  // REQUIRES: every id < num_vertices().
  GraphData WithEdges(std::vector<GraphEdge> edges) const;

  size_t num_vertices() const { return keys_.size(); }
  size_t num_edges() const { return edges_.size(); }
  // Distinct unordered pairs {a, b} among the edges: num_edges() for an
  // undirected list, fewer when a directed one has both (a, b) and (b, a).
  size_t num_pairs() const { return edge_set_.size(); }
  const std::vector<GraphEdge>& edges() const { return edges_; }
  // keys()[v] is the id vertex v had in the file.
  const std::vector<VertexKey>& keys() const { return keys_; }
  std::optional<VertexId> Find(VertexKey key) const;
  // Edges at each vertex.
  std::vector<uint32_t> Degrees() const;
  // True if {a, b} is an edge (either order).
  bool HasEdge(VertexId a, VertexId b) const;

 private:
  std::vector<VertexKey> keys_;
  absl::flat_hash_map<VertexKey, VertexId> index_;
  std::vector<GraphEdge> edges_;
  absl::flat_hash_set<uint64_t> edge_set_;  // (min << 32) | max
};

// The held-out protocol: `fraction` of the edges (rounded down) held out as
// positives, never one whose removal would leave an endpoint without a
// training edge (edges are visited in a seeded random order; one that would
// is kept for training, so fewer may be held out on a tree-like graph), and
// as many negatives: distinct uniformly drawn pairs {a, b}, a != b, that
// are not edges of the whole graph (in either direction: a directed list's
// (a, b) and (b, a) are one pair here).
struct LinkSplit {
  GraphData train;  // every vertex, the training edges
  std::vector<VertexPair> positives;
  std::vector<VertexPair> negatives;
};

// kInvalidArgument unless 0 < fraction < 1, or if the graph is too dense to
// find enough non-edges.
absl::StatusOr<LinkSplit> SplitHeldout(const GraphData& graph, double fraction,
                                       uint64_t seed);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_GRAPH_GRAPH_DATA_H_
