// SimilarityIndex: the exact scan against distances computed here in
// double, the HNSW graph's recall against the scan, updates, removals and
// versions, writes and queries during a background rebuild, and bad input
// answered with a Status.
#include "similarity/similarity_index.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "base/random.h"
#include "corpora/synthetic_corpus.h"
#include "gtest/gtest.h"

namespace latentd {
namespace {

std::vector<std::vector<double>> DirichletVectors(size_t count, uint32_t dim,
                                                  double alpha, uint64_t seed) {
  Rng rng(seed);
  std::vector<std::vector<double>> out(count, std::vector<double>(dim));
  for (std::vector<double>& v : out) SampleDirichlet(rng, alpha, v);
  return out;
}

double Hellinger(const std::vector<double>& p, const std::vector<double>& q) {
  double bc = 0;  // Bhattacharyya coefficient
  for (size_t i = 0; i < p.size(); ++i) bc += std::sqrt(p[i] * q[i]);
  return std::sqrt(std::max(0.0, 1 - bc));
}

std::unique_ptr<SimilarityIndex> MakeIndex(Metric metric, uint32_t dim,
                                           size_t exact_threshold) {
  SimilarityOptions options;
  options.metric = metric;
  options.dim = dim;
  options.exact_threshold = exact_threshold;
  options.hnsw.ef_construction = 100;
  options.hnsw.ef_search = 64;
  auto index = SimilarityIndex::Create(options);
  EXPECT_TRUE(index.ok()) << index.status();
  return std::move(*index);
}

// Stores items[i] under id i, at version 1.
void UpsertAll(SimilarityIndex& index,
               const std::vector<std::vector<double>>& items) {
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_TRUE(index.Upsert(i, std::span<const double>(items[i]), 1).ok());
  }
}

TEST(SimilarityIndex, ExactScanRanksByHellingerComputedDirectly) {
  const uint32_t dim = 12;
  const auto items = DirichletVectors(300, dim, 0.3, 1);
  const auto queries = DirichletVectors(20, dim, 0.3, 2);
  auto index = MakeIndex(Metric::kHellinger, dim, 1000);
  UpsertAll(*index, items);
  for (const auto& q : queries) {
    auto answer = index->Query(std::span<const double>(q), 10);
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_TRUE(answer->exact);
    ASSERT_EQ(answer->items.size(), 10u);
    std::vector<double> truth;
    for (const auto& item : items) truth.push_back(Hellinger(q, item));
    std::vector<double> sorted = truth;
    std::sort(sorted.begin(), sorted.end());
    for (size_t r = 0; r < 10; ++r) {
      const SimilarItem& hit = answer->items[r];
      EXPECT_NEAR(hit.distance, truth[hit.id], 2e-4) << "rank " << r;
      // Ranked as the double-precision distances rank them (up to float
      // rounding): the r-th hit is no farther than the r-th true distance.
      EXPECT_LE(truth[hit.id], sorted[r] + 1e-5) << "rank " << r;
      if (r > 0) {
        EXPECT_LE(answer->items[r - 1].distance, hit.distance);
      }
    }
  }
}

TEST(SimilarityIndex, InnerProductAndCosineReportOneMinusTheProduct) {
  const uint32_t dim = 8;
  Rng rng(3);
  std::vector<std::vector<float>> items(50, std::vector<float>(dim));
  for (auto& v : items) {
    for (float& x : v) x = static_cast<float>(rng.Normal());
  }
  const std::vector<float>& q = items[0];
  for (Metric metric : {Metric::kInnerProduct, Metric::kCosine}) {
    auto index = MakeIndex(metric, dim, 1000);
    for (size_t i = 0; i < items.size(); ++i) {
      ASSERT_TRUE(index->Upsert(i, items[i], 0).ok());
    }
    auto answer = index->Query(q, 50);
    ASSERT_TRUE(answer.ok()) << answer.status();
    ASSERT_EQ(answer->items.size(), 50u);
    for (const SimilarItem& hit : answer->items) {
      double dot = 0, qq = 0, vv = 0;
      for (uint32_t d = 0; d < dim; ++d) {
        dot += q[d] * items[hit.id][d];
        qq += q[d] * q[d];
        vv += items[hit.id][d] * items[hit.id][d];
      }
      const double expected =
          metric == Metric::kCosine ? 1 - dot / std::sqrt(qq * vv) : 1 - dot;
      EXPECT_NEAR(hit.distance, expected, 1e-4) << MetricName(metric);
    }
    EXPECT_TRUE(std::is_sorted(answer->items.begin(), answer->items.end(),
                               [](const SimilarItem& a, const SimilarItem& b) {
                                 return a.distance < b.distance;
                               }));
    if (metric == Metric::kCosine) {
      EXPECT_EQ(answer->items[0].id, 0u);  // itself, cos = 1
    }
  }
}

// Recall@10 of the graph against the exact scan on vectors it has not seen.
double RecallAt10(const SimilarityIndex& index,
                  const std::vector<std::vector<double>>& queries) {
  size_t found = 0, total = 0;
  for (const auto& q : queries) {
    auto exact =
        index.Query(std::span<const double>(q), 10, SearchMode::kExact);
    auto approx = index.Query(std::span<const double>(q), 10);
    EXPECT_TRUE(exact.ok() && approx.ok());
    EXPECT_TRUE(exact->exact);
    EXPECT_FALSE(approx->exact);
    absl::flat_hash_set<uint64_t> truth;
    for (const SimilarItem& hit : exact->items) truth.insert(hit.id);
    for (const SimilarItem& hit : approx->items) found += truth.count(hit.id);
    total += exact->items.size();
  }
  return static_cast<double>(found) / static_cast<double>(total);
}

TEST(SimilarityIndex, GraphRecallAgainstExactOnRandomMixtures) {
  const uint32_t dim = 20;
  const auto items = DirichletVectors(5000, dim, 0.1, 4);
  const auto queries = DirichletVectors(200, dim, 0.1, 5);
  auto index = MakeIndex(Metric::kHellinger, dim, 0);
  UpsertAll(*index, items);
  EXPECT_TRUE(index->NeedsRebuild());
  ASSERT_TRUE(index->Rebuild().ok());
  EXPECT_FALSE(index->NeedsRebuild());
  const double recall = RecallAt10(*index, queries);
  EXPECT_GE(recall, 0.95);
  // A breadth of 1 is a greedy walk: it must do worse, or the graph is
  // not what answers.
  index->SetEfSearch(1);
  EXPECT_LT(RecallAt10(*index, queries), recall);
}

TEST(SimilarityIndex, UpdatesRemovalsAndVersionsInBothModes) {
  const uint32_t dim = 6;
  const auto items = DirichletVectors(200, dim, 0.5, 6);
  auto index = MakeIndex(Metric::kHellinger, dim, 0);
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_TRUE(
        index->Upsert(i, std::span<const double>(items[i]), 10 + i % 3).ok());
  }
  ASSERT_TRUE(index->Rebuild().ok());
  // Item 7 takes item 100's mixture at a newer version: they become each
  // other's nearest, at distance 0.
  ASSERT_TRUE(index->Upsert(7, std::span<const double>(items[100]), 20).ok());
  for (SearchMode mode : {SearchMode::kExact, SearchMode::kAuto}) {
    auto answer = index->QueryById(100, 3, mode);
    ASSERT_TRUE(answer.ok()) << answer.status();
    ASSERT_EQ(answer->items.size(), 3u);
    EXPECT_EQ(answer->items[0].id, 7u);  // itself (100) left out
    EXPECT_NEAR(answer->items[0].distance, 0, 1e-3);
    EXPECT_EQ(answer->items[0].version, 20u);
    EXPECT_EQ(answer->oldest_version,
              std::min({answer->items[0].version, answer->items[1].version,
                        answer->items[2].version}));
    EXPECT_EQ(answer->index_min_version, 10u);
    EXPECT_EQ(answer->index_max_version, 20u);
  }
  // Removed: gone from both modes; a second removal is NotFound.
  ASSERT_TRUE(index->Remove(7).ok());
  EXPECT_TRUE(absl::IsNotFound(index->Remove(7)));
  EXPECT_TRUE(absl::IsNotFound(index->QueryById(7, 1).status()));
  for (SearchMode mode : {SearchMode::kExact, SearchMode::kAuto}) {
    auto answer = index->QueryById(100, 199, mode);
    ASSERT_TRUE(answer.ok()) << answer.status();
    for (const SimilarItem& hit : answer->items) EXPECT_NE(hit.id, 7u);
  }
  EXPECT_EQ(index->Stats().graph_deleted, 1u);
  EXPECT_EQ(index->size(), 199u);
  // Back again: the graph revives the slot.
  ASSERT_TRUE(index->Upsert(7, std::span<const double>(items[7]), 30).ok());
  EXPECT_EQ(index->Stats().graph_deleted, 0u);
  EXPECT_EQ(index->Stats().graph_live, 200u);
}

TEST(SimilarityIndex, NeedsRebuildAtTheThresholdAndAfterManyRemovals) {
  const uint32_t dim = 4;
  const auto items = DirichletVectors(100, dim, 1.0, 7);
  auto index = MakeIndex(Metric::kHellinger, dim, 100);
  for (size_t i = 0; i < 99; ++i) {
    ASSERT_TRUE(index->Upsert(i, std::span<const double>(items[i]), 1).ok());
  }
  EXPECT_FALSE(index->NeedsRebuild());
  ASSERT_TRUE(index->Upsert(99, std::span<const double>(items[99]), 1).ok());
  EXPECT_TRUE(index->NeedsRebuild());
  ASSERT_TRUE(index->Rebuild().ok());
  EXPECT_FALSE(index->NeedsRebuild());
  for (uint64_t id = 0; id < 30; ++id) ASSERT_TRUE(index->Remove(id).ok());
  // 30 deleted > 70 live / 4; but 70 items are below the threshold, where
  // the scan answers and the graph is not worth rebuilding.
  EXPECT_FALSE(index->NeedsRebuild());
  auto answer = index->Query(std::span<const double>(items[50]), 5);
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer->exact);
  // 30 new ids: 100 items again, and hnswlib revives no slot for a new id,
  // so 30 deleted against 100 live, more than a quarter.
  for (uint64_t id = 0; id < 30; ++id) {
    ASSERT_TRUE(
        index->Upsert(1000 + id, std::span<const double>(items[id]), 1).ok());
  }
  EXPECT_EQ(index->Stats().graph_deleted, 30u);
  EXPECT_TRUE(index->NeedsRebuild());
  ASSERT_TRUE(index->Rebuild().ok());
  EXPECT_EQ(index->Stats().graph_deleted, 0u);
  EXPECT_FALSE(index->NeedsRebuild());
}

TEST(SimilarityIndex, WritesAndQueriesDuringARebuildAreKept) {
  const uint32_t dim = 16;
  const auto items = DirichletVectors(4000, dim, 0.2, 8);
  const auto fresh = DirichletVectors(600, dim, 0.2, 9);
  SimilarityOptions options;
  options.dim = dim;
  options.exact_threshold = 0;
  options.hnsw.ef_construction = 100;
  options.hnsw.ef_search = 64;
  auto created = SimilarityIndex::Create(options);
  ASSERT_TRUE(created.ok());
  SimilarityIndex& index = **created;
  for (size_t i = 0; i < 3000; ++i) {
    ASSERT_TRUE(index.Upsert(i, std::span<const double>(items[i]), 1).ok());
  }
  ASSERT_TRUE(index.Rebuild().ok());

  std::atomic<bool> done{false};
  std::atomic<int> writes_while_rebuilding{0};
  std::atomic<int> query_errors{0};
  std::thread rebuild([&] {
    EXPECT_TRUE(index.Rebuild().ok());
    done = true;
  });
  std::thread writer([&] {
    while (!index.Stats().rebuilding && !done) std::this_thread::yield();
    for (size_t i = 0; i < fresh.size(); ++i) {
      // New items, updated ones (version 2) and removed ones.
      EXPECT_TRUE(
          index.Upsert(10000 + i, std::span<const double>(fresh[i]), 2).ok());
      EXPECT_TRUE(
          index.Upsert(i, std::span<const double>(items[3000 + i]), 2).ok());
      EXPECT_TRUE(index.Remove(2000 + i).ok());
      if (!done) ++writes_while_rebuilding;
    }
  });
  std::thread reader([&] {
    size_t q = 0;
    while (!done) {
      auto answer = index.Query(std::span<const double>(items[q++ % 3000]), 10);
      if (!answer.ok() || answer->items.size() != 10) ++query_errors;
    }
  });
  rebuild.join();
  writer.join();
  reader.join();
  EXPECT_EQ(query_errors, 0);
  std::printf("writes during the rebuild: %d of %zu\n",
              writes_while_rebuilding.load(), fresh.size());

  const SimilarityStats stats = index.Stats();
  EXPECT_EQ(stats.items, 3000u);  // 3000 + 600 new - 600 removed
  EXPECT_EQ(stats.graph_live, 3000u);
  EXPECT_FALSE(stats.rebuilding);
  // Every written vector is found by itself first, at its new version.
  size_t found = 0;
  for (size_t i = 0; i < fresh.size(); ++i) {
    auto answer = index.Query(std::span<const double>(fresh[i]), 1);
    ASSERT_TRUE(answer.ok());
    found += answer->items[0].id == 10000 + i && answer->items[0].version == 2;
    auto moved = index.Query(std::span<const double>(items[3000 + i]), 1);
    ASSERT_TRUE(moved.ok());
    found += moved->items[0].id == i && moved->items[0].version == 2;
    EXPECT_TRUE(absl::IsNotFound(index.QueryById(2000 + i, 1).status()));
  }
  EXPECT_GE(found, 2 * fresh.size() * 99 / 100);
  auto answer = index.Query(std::span<const double>(items[2000]), 3000);
  ASSERT_TRUE(answer.ok());
  for (const SimilarItem& hit : answer->items) {
    EXPECT_FALSE(hit.id >= 2000 && hit.id < 2600) << hit.id;
  }
}

TEST(SimilarityIndex, BadInputIsAStatusNeverACrash) {
  EXPECT_TRUE(absl::IsInvalidArgument(
      SimilarityIndex::Create(SimilarityOptions{}).status()));  // dim 0
  SimilarityOptions bad_m;
  bad_m.dim = 4;
  bad_m.hnsw.m = 1;
  EXPECT_TRUE(absl::IsInvalidArgument(SimilarityIndex::Create(bad_m).status()));

  auto index = MakeIndex(Metric::kHellinger, 4, 0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> bad = {
      {0.5f, 0.5f},            // dimension
      {0.5f, 0.5f, 0, 0, 0},   // dimension
      {0.5f, nan, 0, 0},       // NaN
      {0.5f, inf, 0, 0},       // infinite
      {0.5f, 0.7f, -0.2f, 0},  // negative mass
      {0, 0, 0, 0},            // no mass
  };
  for (const auto& v : bad) {
    EXPECT_TRUE(absl::IsInvalidArgument(index->Upsert(1, v, 1)));
    EXPECT_TRUE(absl::IsInvalidArgument(index->Query(v, 3).status()));
  }
  EXPECT_EQ(index->size(), 0u);
  const std::vector<double> huge = {1e300, 1, 1, 1};  // inf as a float
  EXPECT_TRUE(absl::IsInvalidArgument(
      index->Upsert(1, std::span<const double>(huge), 1)));

  const std::vector<float> good = {0.1f, 0.2f, 0.3f, 0.4f};
  ASSERT_TRUE(index->Upsert(1, good, 1).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(index->Query(good, 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      index->Query(good, SimilarityIndex::kMaxResults + 1).status()));
  EXPECT_TRUE(absl::IsNotFound(index->QueryById(2, 3).status()));
  EXPECT_TRUE(absl::IsNotFound(index->Remove(2)));
  // Fewer items than asked for: all of them, itself left out by id.
  auto answer = index->QueryById(1, 5);
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer->items.empty());
  EXPECT_EQ(answer->oldest_version, 0u);

  // Cosine: a zero vector has no direction; inner product accepts it.
  auto cosine = MakeIndex(Metric::kCosine, 2, 0);
  EXPECT_TRUE(
      absl::IsInvalidArgument(cosine->Upsert(1, std::vector<float>{0, 0}, 1)));
  auto dot = MakeIndex(Metric::kInnerProduct, 2, 0);
  EXPECT_TRUE(dot->Upsert(1, std::vector<float>{0, 0}, 1).ok());
  EXPECT_TRUE(
      absl::IsInvalidArgument(dot->Upsert(2, std::vector<float>{-inf, 0}, 1)));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseMetric("euclid").status()));
  EXPECT_EQ(*ParseMetric("cosine"), Metric::kCosine);
}

}  // namespace
}  // namespace latentd
