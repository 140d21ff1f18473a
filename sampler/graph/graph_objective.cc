#include "sampler/graph/graph_objective.h"

#include <algorithm>

#include "base/random.h"
#include "oneapi/tbb/blocked_range.h"
#include "oneapi/tbb/parallel_reduce.h"
#include "sampler/graph/internal/pair_kernel.h"
#include "sampler/graph/signature.h"

namespace latentd {

std::vector<VertexId> NegativePool(const GraphData& graph) {
  const std::vector<uint32_t> degree = graph.Degrees();
  std::vector<VertexId> pool;
  for (size_t v = 0; v < degree.size(); ++v) {
    if (degree[v] > 0) pool.push_back(static_cast<VertexId>(v));
  }
  return pool;
}

std::vector<double> ExpectedTouches(const GraphData& graph, int negatives) {
  const std::vector<uint32_t> degree = graph.Degrees();
  const int n = std::max(negatives, 0);
  const size_t pool = static_cast<size_t>(std::count_if(
      degree.begin(), degree.end(), [](uint32_t d) { return d > 0; }));
  const double uniform =
      pool == 0 ? 0 : static_cast<double>(n) * graph.num_edges() / pool;
  std::vector<double> touches(degree.size(), 0.0);
  for (size_t v = 0; v < degree.size(); ++v) {
    if (degree[v] > 0) touches[v] = degree[v] * (1 + n / 2.0) + uniform;
  }
  return touches;
}

void DrawNegatives(const GraphEdge& edge, uint64_t edge_index, int negatives,
                   std::span<const VertexId> pool, uint64_t seed,
                   uint64_t stream, std::vector<PairTerm>* out) {
  if (negatives <= 0 || pool.empty()) return;
  Rng rng = Rng::ForStream(seed ^ 0x6e6567, stream, edge_index);  // "neg"
  for (int q = 0; q < negatives; ++q) {
    const VertexId side = (q % 2 == 0) ? edge.src : edge.dst;
    const VertexId other = pool[rng.UniformInt(pool.size())];
    if (other == edge.src || other == edge.dst) continue;
    out->push_back({side, other, 0.0f, 1.0f});
  }
}

ObjectiveEvaluator::ObjectiveEvaluator(const GraphData& graph, int negatives,
                                       uint64_t seed)
    : num_vertices_(graph.num_vertices()) {
  const std::vector<VertexId> pool = NegativePool(graph);
  const std::vector<GraphEdge>& edges = graph.edges();
  pairs_.reserve(edges.size() * (1 + std::max(negatives, 0)));
  for (const GraphEdge& e : edges)
    pairs_.push_back({e.src, e.dst, 1.0f, e.weight});
  for (size_t i = 0; i < edges.size(); ++i) {
    DrawNegatives(edges[i], i, negatives, pool, seed, /*stream=*/0, &pairs_);
  }
}

ObjectiveEvaluator::Value ObjectiveEvaluator::Evaluate(std::span<const float> z,
                                                       uint32_t dim,
                                                       uint32_t negative_dims,
                                                       double lambda) const {
  Value v;
  v.loss = tbb::parallel_reduce(
      tbb::blocked_range<size_t>(0, pairs_.size(), 4096), 0.0,
      [&](const tbb::blocked_range<size_t>& r, double acc) {
        for (size_t p = r.begin(); p < r.end(); ++p) {
          const PairTerm& t = pairs_[p];
          const float* a = &z[static_cast<size_t>(t.a) * dim];
          const float* b = &z[static_cast<size_t>(t.b) * dim];
          const double e = t.y - SignedDot(a, b, dim, negative_dims);
          acc += 0.5 * t.w * e * e;
        }
        return acc;
      },
      [](double x, double y) { return x + y; });
  const size_t values = num_vertices_ * dim;
  double sq = tbb::parallel_reduce(
      tbb::blocked_range<size_t>(0, std::min(values, z.size()), 1 << 16), 0.0,
      [&](const tbb::blocked_range<size_t>& r, double acc) {
        for (size_t i = r.begin(); i < r.end(); ++i) acc += double{z[i]} * z[i];
        return acc;
      },
      [](double x, double y) { return x + y; });
  v.regularization = 0.5 * lambda * sq;
  return v;
}

double ObjectiveGradient(std::span<const PairTerm> pairs,
                         std::span<const float> z, uint32_t dim,
                         uint32_t negative_dims, double lambda, double mu,
                         std::span<const float> t, std::vector<float>* grad) {
  const size_t n = z.size() / dim;
  grad->assign(z.size(), 0.0f);
  std::vector<uint32_t> touches(n, 0);
  double f = 0;
  for (const PairTerm& p : pairs) {
    f += internal::PairGradient(
        &z[size_t{p.a} * dim], &z[size_t{p.b} * dim], dim, negative_dims, p.y,
        p.w, &(*grad)[size_t{p.a} * dim], &(*grad)[size_t{p.b} * dim]);
    ++touches[p.a];
    ++touches[p.b];
  }
  for (size_t i = 0; i < n; ++i) {
    const float* zi = &z[i * dim];
    const float* ti = t.empty() ? nullptr : &t[i * dim];
    double sq = 0, dist = 0;
    for (uint32_t k = 0; k < dim; ++k) {
      sq += double{zi[k]} * zi[k];
      if (ti != nullptr) dist += double{zi[k] - ti[k]} * (zi[k] - ti[k]);
    }
    f += 0.5 * lambda * sq + 0.5 * mu * dist;
    // The trainer's way: the term spread over the vertex's touches.
    const uint32_t times = std::max<uint32_t>(touches[i], 1);
    const float share = 1.0f / static_cast<float>(times);
    for (uint32_t k = 0; k < times; ++k) {
      internal::VertexTermGradient(
          zi, ti, dim, static_cast<float>(lambda) * share,
          static_cast<float>(mu) * share, &(*grad)[i * dim]);
    }
  }
  return f;
}

}  // namespace latentd
