// HnswGraph alone: a graph built by one thread and by two finds the exact
// scan's neighbours (the two-thread build is hnswlib's concurrent insert,
// which ops/tsan.sh leaves out: see hnsw_graph.h); removal and revival;
// bad parameters and what hnswlib throws come back as a Status.
#include "similarity/hnsw_graph.h"

#include <stdexcept>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "base/random.h"
#include "corpora/synthetic_corpus.h"
#include "gtest/gtest.h"
#include "similarity/internal/exception_guard.h"

namespace latentd {
namespace {

VectorStore MixtureStore(size_t count, uint32_t dim, uint64_t seed) {
  VectorStore store(Metric::kHellinger, dim);
  Rng rng(seed);
  std::vector<double> theta(dim);
  std::vector<float> prepared(dim);
  for (size_t i = 0; i < count; ++i) {
    SampleDirichlet(rng, 0.1, theta);
    EXPECT_TRUE(PrepareVector(Metric::kHellinger, dim,
                              std::span<const double>(theta), prepared.data())
                    .ok());
    store.Upsert(1000 + 7 * i, prepared.data(), 1);  // ids are not slots
  }
  return store;
}

double Recall(const HnswGraph& graph, const VectorStore& items,
              const VectorStore& queries) {
  size_t found = 0, total = 0;
  for (size_t q = 0; q < queries.size(); ++q) {
    const std::vector<ScoredId> exact =
        items.Scan(queries.vector_at(q), 10, std::nullopt);
    auto approx = graph.Search(queries.vector_at(q), 10, std::nullopt);
    EXPECT_TRUE(approx.ok()) << approx.status();
    absl::flat_hash_set<uint64_t> truth;
    for (const ScoredId& hit : exact) truth.insert(hit.id);
    for (const ScoredId& hit : *approx) found += truth.count(hit.id);
    total += exact.size();
  }
  return static_cast<double>(found) / static_cast<double>(total);
}

TEST(HnswGraph, OneAndTwoThreadBuildsFindTheExactNeighbours) {
  const VectorStore items = MixtureStore(4000, 24, 1);
  const VectorStore queries = MixtureStore(200, 24, 2);
  HnswParams params;
  params.ef_construction = 100;
  params.ef_search = 64;
  for (int threads : {1, 2}) {
    auto graph = HnswGraph::Build(Metric::kHellinger, params, items, threads);
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ((*graph)->live_items(), items.size());
    EXPECT_GT((*graph)->MemoryBytes(),
              items.size() * 24 * sizeof(float));  // holds the vectors
    const double recall = Recall(**graph, items, queries);
    std::printf("%d thread(s): recall@10 %.4f\n", threads, recall);
    EXPECT_GE(recall, 0.95) << threads << " threads";
  }
}

TEST(HnswGraph, RemovedItemsAreSkippedAndRevivable) {
  const VectorStore items = MixtureStore(300, 8, 3);
  auto graph = HnswGraph::Create(Metric::kHellinger, 8, HnswParams{}, 10);
  ASSERT_TRUE(graph.ok());
  for (size_t i = 0; i < items.size(); ++i) {  // grows past 10 by doubling
    ASSERT_TRUE((*graph)->Upsert(items.id_at(i), items.vector_at(i)).ok());
  }
  const float* probe = items.vector_at(5);
  auto hits = (*graph)->Search(probe, 1, std::nullopt);
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ((*hits)[0].id, items.id_at(5));
  ASSERT_TRUE((*graph)->Remove(items.id_at(5)).ok());
  EXPECT_TRUE(absl::IsNotFound((*graph)->Remove(items.id_at(5))));
  EXPECT_TRUE(absl::IsNotFound((*graph)->Remove(424242)));
  hits = (*graph)->Search(probe, 300, std::nullopt);
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ(hits->size(), 299u);
  for (const ScoredId& hit : *hits) EXPECT_NE(hit.id, items.id_at(5));
  EXPECT_EQ((*graph)->deleted_items(), 1u);
  ASSERT_TRUE((*graph)->Upsert(items.id_at(5), probe).ok());
  EXPECT_EQ((*graph)->deleted_items(), 0u);
  hits = (*graph)->Search(probe, 2, items.id_at(5));  // excluded
  ASSERT_TRUE(hits.ok());
  ASSERT_EQ(hits->size(), 2u);
  EXPECT_NE((*hits)[0].id, items.id_at(5));
}

TEST(HnswGraph, RefusalsAreStatuses) {
  HnswParams params;
  EXPECT_TRUE(absl::IsInvalidArgument(
      HnswGraph::Create(Metric::kCosine, 0, params, 10).status()));
  params.m = 1;
  EXPECT_TRUE(absl::IsInvalidArgument(
      HnswGraph::Create(Metric::kCosine, 4, params, 10).status()));
}

TEST(HnswGraph, WhatHnswlibThrowsBecomesAStatus) {
  EXPECT_TRUE(GuardExceptions("x", [] {}).ok());
  const absl::Status memory = GuardExceptions(
      "hnswlib create", [] { throw std::runtime_error("Not enough memory"); });
  EXPECT_TRUE(absl::IsResourceExhausted(memory)) << memory;
  EXPECT_EQ(memory.message(), "hnswlib create: Not enough memory");
  EXPECT_TRUE(absl::IsResourceExhausted(
      GuardExceptions("x", [] { throw std::bad_alloc(); })));
  const absl::Status other = GuardExceptions(
      "hnswlib search", [] { throw std::runtime_error("cand error"); });
  EXPECT_TRUE(absl::IsInternal(other)) << other;
  EXPECT_EQ(other.message(), "hnswlib search: cand error");
  EXPECT_TRUE(absl::IsInternal(GuardExceptions("x", [] { throw 7; })));
}

}  // namespace
}  // namespace latentd
