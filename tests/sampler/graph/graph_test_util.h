// Shared by the graph tests: a planted-partition random graph and the
// held-out AUC of an embedding.
#ifndef LATENTD_TESTS_SAMPLER_GRAPH_GRAPH_TEST_UTIL_H_
#define LATENTD_TESTS_SAMPLER_GRAPH_GRAPH_TEST_UTIL_H_

#include <set>
#include <span>
#include <string>
#include <utility>

#include "base/random.h"
#include "corpora/edge_list.h"
#include "sampler/graph/graph_data.h"
#include "sampler/graph/link_eval.h"

namespace latentd::testing {

// `groups` communities of `size` vertices; each pair is an edge with
// probability p_in inside a community, p_out across. Vertex keys are
// spread over the 64-bit range.
inline EdgeList PlantedPartition(int groups, int size, double p_in,
                                 double p_out, uint64_t seed) {
  Rng rng(seed);
  EdgeList list;
  const int n = groups * size;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      const double p = (i / size == j / size) ? p_in : p_out;
      if (rng.Uniform() < p) {
        list.edges.push_back({Mix64(i), Mix64(j), 1.0f});
      }
    }
  }
  return list;
}

// A bipartite stochastic block model: `users` users (keys 0..users) and
// `items` items (keys users..), in `communities` blocks; each user draws
// `degree` items, 90% from its own block (a repeat is dropped). Edges join
// users to items only.
inline EdgeList BipartiteBlocks(uint32_t users, uint32_t items,
                                uint32_t communities, uint32_t degree,
                                uint64_t seed) {
  Rng rng(seed);
  std::set<std::pair<uint64_t, uint64_t>> pairs;
  const uint32_t per = items / communities;
  for (uint32_t u = 0; u < users; ++u) {
    const uint32_t block = u % communities;
    for (uint32_t e = 0; e < degree; ++e) {
      const uint64_t item = rng.Uniform() < 0.9
                                ? block * per + rng.UniformInt(per)
                                : rng.UniformInt(items);
      pairs.insert({u, users + item});
    }
  }
  EdgeList list;
  for (const auto& [a, b] : pairs) list.edges.push_back({a, b, 1.0f});
  return list;
}

// The held-out ROC AUC of ⟨z_a, z_b⟩ on `split` (z: the split's training
// graph's vertices × dim).
inline double EmbeddingAuc(const LinkSplit& split, std::span<const float> z,
                           uint32_t dim, uint32_t negative_dims = 0) {
  return EvaluateEmbedding(split, z, dim, negative_dims).auc;
}

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_SAMPLER_GRAPH_GRAPH_TEST_UTIL_H_
