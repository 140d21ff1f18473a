#include "sampler/graph/link_eval.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "sampler/graph/signature.h"

namespace latentd {

LinkScores ScoreRanking(std::span<const double> positives,
                        std::span<const double> negatives) {
  std::vector<std::pair<double, bool>> all;
  all.reserve(positives.size() + negatives.size());
  for (double s : positives) all.push_back({s, true});
  for (double s : negatives) all.push_back({s, false});
  // Ascending score; within a tie positives first, so that AP, which
  // walks from the top, meets a tie's negatives before its positives
  // (pessimistic: a scorer that ties everything gets no credit for it).
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : x.second > y.second;
  });
  LinkScores out;
  const double np = static_cast<double>(positives.size());
  const double nn = static_cast<double>(negatives.size());
  // AUC by mid-ranks.
  double rank_sum = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    size_t pos_in_tie = 0;
    while (j < all.size() && all[j].first == all[i].first) {
      pos_in_tie += all[j].second;
      ++j;
    }
    rank_sum += pos_in_tie * (static_cast<double>(i + j + 1) / 2.0);
    i = j;
  }
  out.auc = (rank_sum - np * (np + 1) / 2.0) / (np * nn);
  // AP: walk from the highest score down.
  double hits = 0, ap = 0;
  for (size_t k = 0; k < all.size(); ++k) {
    const auto& item = all[all.size() - 1 - k];
    if (item.second) {
      hits += 1;
      ap += hits / static_cast<double>(k + 1);
    }
  }
  out.average_precision = ap / np;
  return out;
}

LinkScores EvaluateEmbedding(const LinkSplit& split, std::span<const float> z,
                             uint32_t dim, uint32_t negative_dims) {
  return EvaluateLinks(split, [&](VertexId a, VertexId b) {
    return SignedDot(&z[size_t{a} * dim], &z[size_t{b} * dim], dim,
                     negative_dims);
  });
}

LinkScores EvaluateLinks(const LinkSplit& split, const PairScorer& scorer) {
  std::vector<double> pos, neg;
  pos.reserve(split.positives.size());
  neg.reserve(split.negatives.size());
  for (const VertexPair& p : split.positives) {
    pos.push_back(scorer(p.first, p.second));
  }
  for (const VertexPair& p : split.negatives) {
    neg.push_back(scorer(p.first, p.second));
  }
  return ScoreRanking(pos, neg);
}

NeighborIndex::NeighborIndex(const GraphData& graph) {
  const std::vector<uint32_t> degree = graph.Degrees();
  offsets_.assign(graph.num_vertices() + 1, 0);
  for (size_t v = 0; v < degree.size(); ++v) {
    offsets_[v + 1] = offsets_[v] + degree[v];
  }
  neighbors_.resize(offsets_.back());
  std::vector<uint64_t> fill(offsets_.begin(), offsets_.end() - 1);
  for (const GraphEdge& e : graph.edges()) {
    neighbors_[fill[e.src]++] = e.dst;
    neighbors_[fill[e.dst]++] = e.src;
  }
  for (size_t v = 0; v < degree.size(); ++v) {
    std::sort(neighbors_.begin() + offsets_[v],
              neighbors_.begin() + offsets_[v + 1]);
  }
}

template <typename F>
void NeighborIndex::ForCommon(VertexId a, VertexId b, F f) const {
  uint64_t i = offsets_[a], ie = offsets_[a + 1];
  uint64_t j = offsets_[b], je = offsets_[b + 1];
  while (i < ie && j < je) {
    if (neighbors_[i] < neighbors_[j]) {
      ++i;
    } else if (neighbors_[j] < neighbors_[i]) {
      ++j;
    } else {
      f(neighbors_[i]);
      ++i;
      ++j;
    }
  }
}

double NeighborIndex::CommonNeighbors(VertexId a, VertexId b) const {
  double n = 0;
  ForCommon(a, b, [&n](VertexId) { n += 1; });
  return n;
}

double NeighborIndex::AdamicAdar(VertexId a, VertexId b) const {
  double s = 0;
  ForCommon(a, b, [&](VertexId w) {
    // A common neighbour has degree >= 2, so the log is > 0.
    s += 1.0 / std::log(static_cast<double>(offsets_[w + 1] - offsets_[w]));
  });
  return s;
}

double SpectralEmbedding::Score(VertexId a, VertexId b) const {
  double s = 0;
  const double* ua = &vectors[static_cast<size_t>(a) * rank];
  const double* ub = &vectors[static_cast<size_t>(b) * rank];
  for (int k = 0; k < rank; ++k) s += values[k] * ua[k] * ub[k];
  return s;
}

namespace {

// Orthonormalizes the columns of the n × r row-major matrix q (modified
// Gram-Schmidt, twice for stability). A column that vanishes stays zero.
void Orthonormalize(size_t n, int r, std::vector<double>* q) {
  for (int pass = 0; pass < 2; ++pass) {
    for (int c = 0; c < r; ++c) {
      for (int p = 0; p < c; ++p) {
        double dot = 0;
        for (size_t i = 0; i < n; ++i) dot += (*q)[i * r + c] * (*q)[i * r + p];
        for (size_t i = 0; i < n; ++i) (*q)[i * r + c] -= dot * (*q)[i * r + p];
      }
      double norm = 0;
      for (size_t i = 0; i < n; ++i) norm += (*q)[i * r + c] * (*q)[i * r + c];
      norm = std::sqrt(norm);
      if (norm > 0) {
        for (size_t i = 0; i < n; ++i) (*q)[i * r + c] /= norm;
      }
    }
  }
}

// y = A q for the symmetric adjacency of `graph` (q, y: n × r).
void MultiplyAdjacency(const GraphData& graph, int r,
                       const std::vector<double>& q, std::vector<double>* y) {
  std::fill(y->begin(), y->end(), 0.0);
  for (const GraphEdge& e : graph.edges()) {
    const double w = e.weight;
    for (int c = 0; c < r; ++c) {
      (*y)[static_cast<size_t>(e.src) * r + c] +=
          w * q[static_cast<size_t>(e.dst) * r + c];
      (*y)[static_cast<size_t>(e.dst) * r + c] +=
          w * q[static_cast<size_t>(e.src) * r + c];
    }
  }
}

// Eigen-decomposition of the symmetric r × r matrix t (cyclic Jacobi):
// t's diagonal becomes the eigenvalues, v (r × r, row-major) the
// eigenvectors as columns.
void Jacobi(int r, std::vector<double>* t, std::vector<double>* v) {
  v->assign(static_cast<size_t>(r) * r, 0.0);
  for (int i = 0; i < r; ++i) (*v)[i * r + i] = 1;
  auto T = [&](int i, int j) -> double& { return (*t)[i * r + j]; };
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int i = 0; i < r; ++i)
      for (int j = i + 1; j < r; ++j) off += T(i, j) * T(i, j);
    if (off < 1e-22) break;
    for (int p = 0; p < r; ++p) {
      for (int q = p + 1; q < r; ++q) {
        if (std::abs(T(p, q)) < 1e-300) continue;
        const double theta = (T(q, q) - T(p, p)) / (2 * T(p, q));
        const double tt = (theta >= 0 ? 1.0 : -1.0) /
                          (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(tt * tt + 1), s = tt * c;
        for (int k = 0; k < r; ++k) {  // columns p, q
          const double kp = T(k, p), kq = T(k, q);
          T(k, p) = c * kp - s * kq;
          T(k, q) = s * kp + c * kq;
        }
        for (int k = 0; k < r; ++k) {  // rows p, q
          const double pk = T(p, k), qk = T(q, k);
          T(p, k) = c * pk - s * qk;
          T(q, k) = s * pk + c * qk;
        }
        for (int k = 0; k < r; ++k) {
          const double kp = (*v)[k * r + p], kq = (*v)[k * r + q];
          (*v)[k * r + p] = c * kp - s * kq;
          (*v)[k * r + q] = s * kp + c * kq;
        }
      }
    }
  }
}

}  // namespace

absl::StatusOr<SpectralEmbedding> TruncatedSvd(const GraphData& graph, int rank,
                                               int iterations, uint64_t seed) {
  const size_t n = graph.num_vertices();
  if (rank <= 0 || static_cast<size_t>(rank) >= n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SVD rank ", rank, " is not in (0, ", n, ") (the vertex count)"));
  }
  const int r = static_cast<int>(std::min<size_t>(rank + 10, n));
  std::vector<double> q(n * r), y(n * r);
  Rng rng(seed);
  for (double& x : q) x = rng.Normal();
  Orthonormalize(n, r, &q);
  for (int it = 0; it < iterations; ++it) {
    MultiplyAdjacency(graph, r, q, &y);
    std::swap(q, y);
    Orthonormalize(n, r, &q);
  }
  // Rayleigh-Ritz: T = Qᵀ A Q, T = V Λ Vᵀ, U = Q V.
  MultiplyAdjacency(graph, r, q, &y);
  std::vector<double> t(static_cast<size_t>(r) * r, 0.0), v;
  for (size_t i = 0; i < n; ++i) {
    for (int a = 0; a < r; ++a) {
      for (int b = 0; b < r; ++b) t[a * r + b] += q[i * r + a] * y[i * r + b];
    }
  }
  for (int a = 0; a < r; ++a) {  // symmetrize rounding
    for (int b = a + 1; b < r; ++b) {
      t[a * r + b] = t[b * r + a] = (t[a * r + b] + t[b * r + a]) / 2;
    }
  }
  Jacobi(r, &t, &v);
  std::vector<int> order(r);
  for (int k = 0; k < r; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::abs(t[a * r + a]) > std::abs(t[b * r + b]);
  });
  SpectralEmbedding out;
  out.rank = rank;
  out.values.resize(rank);
  out.vectors.assign(n * rank, 0.0);
  for (int k = 0; k < rank; ++k) {
    const int src = order[k];
    out.values[k] = t[src * r + src];
    for (size_t i = 0; i < n; ++i) {
      double u = 0;
      for (int c = 0; c < r; ++c) u += q[i * r + c] * v[c * r + src];
      out.vectors[i * rank + k] = u;
    }
  }
  return out;
}

}  // namespace latentd
