// The approximate index of a SimilarityIndex: an HNSW graph (Malkov &
// Yashunin 2018) from hnswlib (Debian's libhnswlib-dev, header-only),
// keyed by the items' 64-bit ids. hnswlib reports errors by throwing
// std::runtime_error (and std::bad_alloc); every call here catches them and
// returns an absl::Status, so nothing escapes. hnswlib is included by
// hnsw_graph.cc alone: its headers define non-inline functions and globals.
//
// Removal marks an item deleted (hnswlib 0.6 never reuses the slot; a later
// Upsert of the same id revives it); the graph grows by doubling.
//
// Thread-safety: Search may run concurrently with other Search calls, never
// with Upsert, Remove or SetEf (SimilarityIndex holds a reader-writer lock).
#ifndef LATENTD_SIMILARITY_HNSW_GRAPH_H_
#define LATENTD_SIMILARITY_HNSW_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "similarity/vector_metric.h"
#include "similarity/vector_store.h"

namespace latentd {

// Defaults chosen on 10^5 Dirichlet(0.1) mixtures of K=100
// (docs/benchmarks.md): m=32, ef_construction=100 built faster than m=16,
// 200 and reached recall@10 0.98 at ef_search 128 (m=16: 0.93).
struct HnswParams {
  uint32_t m = 32;                 // links per node (2m on the base layer)
  uint32_t ef_construction = 100;  // candidate list while inserting
  uint32_t ef_search = 128;        // candidate list while searching (>= n)
  uint64_t seed = 100;             // the level draws
};

class HnswGraph {
 public:
  // An empty graph with room for `capacity` items before it first grows.
  // kInvalidArgument for dim 0 or m < 2; kResourceExhausted if hnswlib
  // cannot allocate.
  static absl::StatusOr<std::unique_ptr<HnswGraph>> Create(
      Metric metric, uint32_t dim, const HnswParams& params, size_t capacity);

  // A graph of every item of `store`, inserted by `threads` threads. With
  // one thread the graph depends only on the items and params.seed. More
  // threads insert concurrently as hnswlib's own bindings do (locks per
  // node), with one race hnswlib leaves in: every insert draws its level
  // from one unsynchronized std::default_random_engine. It costs nothing
  // but the levels' exact distribution; ThreadSanitizer reports it, and
  // lock-order inversions between hnswlib's per-node locks, so the paths
  // ops/tsan.sh checks build with one thread.
  static absl::StatusOr<std::unique_ptr<HnswGraph>> Build(
      Metric metric, const HnswParams& params, const VectorStore& store,
      int threads);

  ~HnswGraph();
  HnswGraph(const HnswGraph&) = delete;
  HnswGraph& operator=(const HnswGraph&) = delete;

  // Inserts `prepared` (stored form) under `id`, or replaces the vector of
  // an id already present (deleted or not).
  absl::Status Upsert(uint64_t id, const float* prepared);
  // kNotFound if `id` is not a live item.
  absl::Status Remove(uint64_t id);

  // Up to n live items nearest `query` (stored form), nearest first;
  // `exclude` is skipped. Approximate.
  absl::StatusOr<std::vector<ScoredId>> Search(
      const float* query, size_t n, std::optional<uint64_t> exclude) const;

  void SetEfSearch(uint32_t ef);
  size_t live_items() const;
  size_t deleted_items() const;
  // Bytes held by hnswlib's arrays, link lists, locks and label map
  // (computed from its sizes; the benchmark also measures the RSS).
  size_t MemoryBytes() const;

 private:
  struct Impl;
  explicit HnswGraph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace latentd

#endif  // LATENTD_SIMILARITY_HNSW_GRAPH_H_
