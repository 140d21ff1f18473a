// sparse_similarity_bench: SparseMixtureIndex (similarity/
// sparse_mixture_index.h, the daemon's index above --similarity-max-topics)
// against the dense exact scan of SimilarityIndex on the same documents,
// in the same run, ratio printed.
//
// --items documents of --length tokens, each token's topic drawn from the
// document's θ ~ Dirichlet(--doc-alpha) over --dim topics: what a model's
// per-document counts look like. Both indexes smooth them with α = 50/K:
// the sparse one keeps the counts, the dense one the K floats of θ. The
// same --queries documents (by mixture) go to both: queries/s each, their
// ratio, the share of the dense top 10 the sparse one returns (1 up to
// ties) and each index's bytes.
//
// Usage: sparse_similarity_bench [--items 20000] [--dim 10000]
//        [--length 150] [--doc-alpha 0.01] [--queries 50] [--seed 1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_set.h"
#include "base/random.h"
#include "corpora/synthetic_corpus.h"
#include "similarity/similarity_index.h"
#include "similarity/sparse_mixture_index.h"

namespace {

using latentd::SparseMixtureIndex;
using Clock = std::chrono::steady_clock;
using Counts = std::vector<SparseMixtureIndex::TopicCount>;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A document's topic counts: `length` draws from θ ~ Dirichlet(doc_alpha).
Counts Document(latentd::Rng& rng, double doc_alpha, uint32_t length,
                std::vector<double>& theta, std::vector<uint64_t>& dense) {
  latentd::SampleDirichlet(rng, doc_alpha, theta);
  std::partial_sum(theta.begin(), theta.end(), theta.begin());
  Counts counts;
  for (uint32_t i = 0; i < length; ++i) {
    const double u = rng.Uniform() * theta.back();
    const uint32_t k = static_cast<uint32_t>(std::min<size_t>(
        std::upper_bound(theta.begin(), theta.end(), u) - theta.begin(),
        theta.size() - 1));
    if (dense[k]++ == 0) counts.emplace_back(k, 0);
  }
  for (auto& [k, n] : counts) {
    n = dense[k];
    dense[k] = 0;
  }
  return counts;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sparse_similarity_bench: sparse against dense exact scan"};
  size_t items = 20000, num_queries = 50;
  uint32_t dim = 10000, length = 150;
  double doc_alpha = 0.01;
  uint64_t seed = 1;
  app.add_option("--items", items, "documents")->check(CLI::PositiveNumber);
  app.add_option("--dim", dim, "topics K")->check(CLI::Range(2u, 100000u));
  app.add_option("--length", length, "tokens per document")
      ->check(CLI::Range(1u, 100000u));
  app.add_option("--doc-alpha", doc_alpha, "documents' Dirichlet")
      ->check(CLI::PositiveNumber);
  app.add_option("--queries", num_queries, "queries")
      ->check(CLI::Range(size_t{1}, size_t{100000}));
  app.add_option("--seed", seed, "random seed");
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  const std::vector<double> alpha(dim, 50.0 / dim);
  auto sparse = SparseMixtureIndex::Create(alpha);
  latentd::SimilarityOptions options;
  options.dim = dim;
  options.exact_threshold = items + 1;  // the scan answers
  auto dense = latentd::SimilarityIndex::Create(options);
  if (!sparse.ok() || !dense.ok()) return 1;
  latentd::Rng rng = latentd::Rng::ForStream(seed, 1, items);
  std::vector<double> theta(dim);
  std::vector<uint64_t> scratch(dim);
  std::vector<std::vector<float>> queries;
  size_t nonzeros = 0;
  for (size_t i = 0; i < items; ++i) {
    const Counts counts = Document(rng, doc_alpha, length, theta, scratch);
    nonzeros += counts.size();
    const std::vector<float> smoothed =
        latentd::SmoothedMixture(counts, length, alpha);
    if (!(*sparse)->Upsert(i, counts, length, 1).ok() ||
        !(*dense)->Upsert(i, smoothed, 1).ok()) {
      return 1;
    }
    if (queries.size() < num_queries && i % (items / num_queries + 1) == 0) {
      queries.push_back(smoothed);
    }
  }
  std::printf("%zu documents of %u tokens, K=%u: %.1f non-zero topics each\n",
              items, length, dim, double(nonzeros) / items);
  std::printf("bytes: sparse %.1f MiB, dense %.1f MiB\n",
              (*sparse)->bytes() / double(1 << 20),
              (*dense)->Stats().store_bytes / double(1 << 20));
  std::vector<absl::flat_hash_set<uint64_t>> truth(queries.size());
  Clock::time_point t = Clock::now();
  for (size_t q = 0; q < queries.size(); ++q) {
    auto answer = (*dense)->Query(queries[q], 10, latentd::SearchMode::kExact);
    if (!answer.ok()) return 1;
    for (const auto& hit : answer->items) truth[q].insert(hit.id);
  }
  const double dense_qps = queries.size() / Since(t);
  size_t found = 0, total = 0, done = 0;
  t = Clock::now();
  for (int pass = 0; pass == 0 || Since(t) < 1.0; ++pass) {
    for (size_t q = 0; q < queries.size(); ++q, ++done) {
      auto answer = (*sparse)->Query(queries[q], 10);
      if (!answer.ok()) return 1;
      if (pass > 0) continue;
      for (const auto& hit : answer->items) found += truth[q].count(hit.id);
      total += truth[q].size();
    }
  }
  const double sparse_qps = done / Since(t);
  std::printf(
      "queries/s: sparse %.1f, dense scan %.1f; ratio sparse/dense "
      "%.1fx; top-10 agreement %.4f\n",
      sparse_qps, dense_qps, sparse_qps / dense_qps, double(found) / total);
  return 0;
}
