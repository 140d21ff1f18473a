#include "sampler/graph/graph_data.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "base/random.h"

namespace latentd {
namespace {

uint64_t PairKey(VertexId a, VertexId b) {
  if (a > b) std::swap(a, b);
  return (uint64_t{a} << 32) | b;
}

}  // namespace

absl::StatusOr<GraphData> GraphData::FromEdgeList(const EdgeList& list) {
  if (list.edges.empty()) {
    return absl::InvalidArgumentError(
        "the graph has no edges (after dropping self-loops and duplicates)");
  }
  GraphData g;
  auto id = [&g](VertexKey key) -> absl::StatusOr<VertexId> {
    auto [it, added] = g.index_.try_emplace(key, 0);
    if (added) {
      if (g.keys_.size() >= std::numeric_limits<VertexId>::max()) {
        return absl::ResourceExhaustedError(
            "more than 2^32 - 1 vertices in one graph");
      }
      it->second = static_cast<VertexId>(g.keys_.size());
      g.keys_.push_back(key);
    }
    return it->second;
  };
  std::vector<GraphEdge> edges;
  edges.reserve(list.edges.size());
  for (const Edge& e : list.edges) {
    absl::StatusOr<VertexId> a = id(e.src);
    if (!a.ok()) return a.status();
    absl::StatusOr<VertexId> b = id(e.dst);
    if (!b.ok()) return b.status();
    edges.push_back({*a, *b, e.weight});
  }
  g.edges_ = std::move(edges);
  g.edge_set_.reserve(g.edges_.size());
  for (const GraphEdge& e : g.edges_) g.edge_set_.insert(PairKey(e.src, e.dst));
  return g;
}

GraphData GraphData::WithEdges(std::vector<GraphEdge> edges) const {
  GraphData g;
  g.keys_ = keys_;
  g.index_ = index_;
  g.edges_ = std::move(edges);
  g.edge_set_.reserve(g.edges_.size());
  for (const GraphEdge& e : g.edges_) g.edge_set_.insert(PairKey(e.src, e.dst));
  return g;
}

std::optional<VertexId> GraphData::Find(VertexKey key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::vector<uint32_t> GraphData::Degrees() const {
  std::vector<uint32_t> degree(keys_.size(), 0);
  for (const GraphEdge& e : edges_) {
    ++degree[e.src];
    ++degree[e.dst];
  }
  return degree;
}

bool GraphData::HasEdge(VertexId a, VertexId b) const {
  return edge_set_.contains(PairKey(a, b));
}

absl::StatusOr<LinkSplit> SplitHeldout(const GraphData& graph, double fraction,
                                       uint64_t seed) {
  if (!(fraction > 0 && fraction < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("held-out fraction ", fraction, " is not in (0, 1)"));
  }
  const std::vector<GraphEdge>& edges = graph.edges();
  const size_t want = static_cast<size_t>(fraction * edges.size());
  const uint64_t n = graph.num_vertices();
  const uint64_t possible = n * (n - 1) / 2;
  // Negatives are unordered pairs, so subtract the distinct pairs, not the
  // edges: a directed list with both (a, b) and (b, a) has more edges than
  // pairs, and possible - edges wrapped around (then the draw below never
  // ended on a graph without non-edges).
  const uint64_t non_edges = possible - graph.num_pairs();
  if (non_edges < want) {
    return absl::InvalidArgumentError(
        absl::StrCat("the graph has too few non-edges (", non_edges, ") for ",
                     want, " held-out negatives"));
  }
  std::vector<uint32_t> order(edges.size());
  std::iota(order.begin(), order.end(), 0);
  Rng rng(Mix64(seed ^ 0x686f6c646f7574));  // "holdout"
  for (size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[rng.UniformInt(i)]);
  }
  std::vector<uint32_t> degree = graph.Degrees();
  std::vector<bool> held(edges.size(), false);
  LinkSplit split;
  for (uint32_t e : order) {
    if (split.positives.size() >= want) break;
    const GraphEdge& edge = edges[e];
    if (degree[edge.src] < 2 || degree[edge.dst] < 2) continue;
    --degree[edge.src];
    --degree[edge.dst];
    held[e] = true;
    split.positives.push_back({edge.src, edge.dst});
  }
  std::vector<GraphEdge> train;
  train.reserve(edges.size() - split.positives.size());
  for (size_t e = 0; e < edges.size(); ++e) {
    if (!held[e]) train.push_back(edges[e]);
  }
  absl::flat_hash_set<uint64_t> drawn;
  while (split.negatives.size() < split.positives.size()) {
    VertexId a = static_cast<VertexId>(rng.UniformInt(n));
    VertexId b = static_cast<VertexId>(rng.UniformInt(n));
    if (a == b || graph.HasEdge(a, b)) continue;
    if (a > b) std::swap(a, b);
    if (!drawn.insert(PairKey(a, b)).second) continue;
    split.negatives.push_back({a, b});
  }
  split.train = graph.WithEdges(std::move(train));
  return split;
}

}  // namespace latentd
