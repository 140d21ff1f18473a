// similarity_bench: the nearest-neighbour index of similarity/ (issue 34)
// against the exact scan of the same index, in the same run, ratio printed.
//
// For each size in --items: that many topic mixtures θ ~ Dirichlet(--alpha)
// over --dim topics go into one SimilarityIndex (Hellinger distance: √θ,
// Euclidean search); --queries fresh mixtures are answered by the exact
// scan (SearchMode::kExact: every item read, top 10 kept), which gives
// both the scan's queries/s and the true top 10; then the HNSW graph is
// built by Rebuild() with --threads threads (build seconds; memory as
// computed from hnswlib's sizes and as the growth of the resident set),
// and for each --ef the same queries through the graph: recall@10 against
// the scan, queries/s, and the ratio to the scan's queries/s. Queries run
// on one thread, each side; the graph's are repeated for at least a second.
//
// Usage: similarity_bench [--items 100000,1000000] [--dim 100]
//        [--alpha 0.1] [--queries 200] [--m 32] [--ef-construction 100]
//        [--ef 64,128,256] [--threads 2] [--seed 1]
// Ends with one line per size: the ratio at the smallest --ef whose recall
// reaches 0.95 (or at the largest --ef if none does).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_set.h"
#include "base/random.h"
#include "corpora/synthetic_corpus.h"
#include "similarity/similarity_index.h"

namespace {

using latentd::SearchMode;
using latentd::SimilarityIndex;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double ResidentMiB() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * sysconf(_SC_PAGESIZE) / (1 << 20);
}

std::vector<float> Mixture(latentd::Rng& rng, double alpha,
                           std::vector<double>& scratch) {
  latentd::SampleDirichlet(rng, alpha, scratch);
  return std::vector<float>(scratch.begin(), scratch.end());
}

struct Row {
  uint32_t ef;
  double recall;
  double qps;
};

int Run(size_t items, uint32_t dim, double alpha, size_t num_queries,
        const latentd::HnswParams& hnsw, const std::vector<uint32_t>& efs,
        int threads, uint64_t seed) {
  latentd::SimilarityOptions options;
  options.dim = dim;
  options.hnsw = hnsw;
  options.exact_threshold = 0;  // the graph answers kAuto at every size
  options.build_threads = threads;
  auto created = SimilarityIndex::Create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
    return 1;
  }
  SimilarityIndex& index = **created;
  std::vector<double> scratch(dim);
  latentd::Rng item_rng = latentd::Rng::ForStream(seed, 1, items);
  Clock::time_point t = Clock::now();
  for (size_t i = 0; i < items; ++i) {
    const absl::Status s =
        index.Upsert(i, Mixture(item_rng, alpha, scratch), /*version=*/1);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
  std::printf("\n%zu items, K=%u, alpha %.3g: stored in %.1f s (%.0f MiB)\n",
              items, dim, alpha, Since(t),
              index.Stats().store_bytes / double(1 << 20));
  latentd::Rng query_rng = latentd::Rng::ForStream(seed, 2, items);
  std::vector<std::vector<float>> queries;
  for (size_t q = 0; q < num_queries; ++q) {
    queries.push_back(Mixture(query_rng, alpha, scratch));
  }

  // The exact scan: the baseline and the truth.
  std::vector<absl::flat_hash_set<uint64_t>> truth(queries.size());
  t = Clock::now();
  for (size_t q = 0; q < queries.size(); ++q) {
    auto answer = index.Query(queries[q], 10, SearchMode::kExact);
    if (!answer.ok()) return 1;
    for (const auto& hit : answer->items) truth[q].insert(hit.id);
  }
  const double exact_qps = queries.size() / Since(t);

  const double rss_before = ResidentMiB();
  t = Clock::now();
  const absl::Status built = index.Rebuild();
  const double build_s = Since(t);
  if (!built.ok()) {
    std::fprintf(stderr, "%s\n", built.ToString().c_str());
    return 1;
  }
  const double rss_growth = ResidentMiB() - rss_before;
  std::printf(
      "HNSW M=%u ef_construction=%u, %d threads: built in %.1f s (%.0f "
      "items/s); graph %.0f MiB computed, resident set +%.0f MiB\n",
      hnsw.m, hnsw.ef_construction, threads, build_s, items / build_s,
      index.Stats().graph_bytes / double(1 << 20), rss_growth);
  std::printf("%-6s %-10s %-12s %-12s %s\n", "ef", "recall@10", "graph q/s",
              "exact q/s", "ratio");
  std::vector<Row> rows;
  for (uint32_t ef : efs) {
    index.SetEfSearch(ef);
    size_t found = 0, total = 0, done = 0;
    t = Clock::now();
    for (int pass = 0; pass == 0 || Since(t) < 1.0; ++pass) {
      for (size_t q = 0; q < queries.size(); ++q, ++done) {
        auto answer = index.Query(queries[q], 10);
        if (!answer.ok() || answer->exact) return 1;
        if (pass > 0) continue;
        for (const auto& hit : answer->items) found += truth[q].count(hit.id);
        total += truth[q].size();
      }
    }
    const Row row{ef, double(found) / total, done / Since(t)};
    rows.push_back(row);
    std::printf("%-6u %-10.4f %-12.0f %-12.1f %.1fx\n", ef, row.recall, row.qps,
                exact_qps, row.qps / exact_qps);
  }
  const Row* pick = &rows.back();
  for (const Row& row : rows) {
    if (row.recall >= 0.95) {
      pick = &row;
      break;
    }
  }
  std::printf(
      "%zu items: ratio graph/exact q/s: %.1f at recall@10 %.4f (ef %u)\n",
      items, pick->qps / exact_qps, pick->recall, pick->ef);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"similarity_bench: HNSW against the exact scan"};
  std::vector<size_t> items = {100000, 1000000};
  uint32_t dim = 100;
  double alpha = 0.1;
  size_t queries = 200;
  latentd::HnswParams hnsw;
  std::vector<uint32_t> efs = {64, 128, 256};
  int threads = 2;
  uint64_t seed = 1;
  app.add_option("--items", items, "index sizes")->delimiter(',');
  app.add_option("--dim", dim, "topics K")->check(CLI::Range(1u, 100000u));
  app.add_option("--alpha", alpha, "Dirichlet concentration")
      ->check(CLI::PositiveNumber);
  app.add_option("--queries", queries, "queries per size")
      ->check(CLI::Range(size_t{1}, size_t{100000}));
  app.add_option("--m", hnsw.m, "HNSW links per node");
  app.add_option("--ef-construction", hnsw.ef_construction,
                 "HNSW build breadth");
  app.add_option("--ef", efs, "HNSW search breadths")->delimiter(',');
  app.add_option("--threads", threads, "build threads")
      ->check(CLI::Range(1, 256));
  app.add_option("--seed", seed, "random seed");
  CLI11_PARSE(app, argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each row as it comes
  for (size_t n : items) {
    if (Run(n, dim, alpha, queries, hnsw, efs, threads, seed) != 0) return 1;
  }
  return 0;
}
