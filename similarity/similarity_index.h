// Nearest-neighbour search over vectors keyed by 64-bit ids (documents,
// users, graph vertices): "what is most like this?". Items are ranked by a
// Metric (vector_metric.h): Hellinger distance between topic mixtures, or
// inner product / cosine between embeddings.
//
// Two ways to answer, one result type:
//   exact: a scan of every item (VectorStore). Always used below
//     options.exact_threshold items, and on request (SearchMode::kExact).
//   approximate: an HNSW graph (hnsw_graph.h), once one has been built by
//     Rebuild(); from then on every write also goes to the graph.
// Rebuild() builds a new graph from a copy of the items off to the side,
// without holding the lock, while queries and writes go on; the writes made
// meanwhile are replayed into it before it replaces the old one. Call it
// when NeedsRebuild() says so (the threshold was crossed, or deleted items
// clutter the graph), or after the model moved and the vectors were
// rewritten.
//
// Staleness: an answer reflects every write that returned before the query
// started. Each item carries the model version its vector was computed at
// (the caller's number; e.g. the view a θ was inferred against); an answer
// reports it per item and the oldest over the answer and over the index.
//
// Bad input (wrong dimension, NaN, a negative mixture, an unknown id, n
// outside [1, kMaxResults]) is an absl::Status error; nothing throws.
//
// Thread-safety: every method may be called from any thread. Queries share
// a reader lock and run concurrently; writes take it exclusively, briefly.
// Rebuild() runs at most once at a time (a second one fails with
// kFailedPrecondition) and holds the lock only to copy and to swap.
#ifndef LATENTD_SIMILARITY_SIMILARITY_INDEX_H_
#define LATENTD_SIMILARITY_SIMILARITY_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "similarity/hnsw_graph.h"
#include "similarity/vector_metric.h"
#include "similarity/vector_store.h"

namespace latentd {

struct SimilarityOptions {
  Metric metric = Metric::kHellinger;
  uint32_t dim = 0;  // K for topic mixtures; > 0
  // Below this many items a query scans them all: exact, and cheap (10^4
  // mixtures of K=100: 0.5 ms a query, docs/benchmarks.md).
  size_t exact_threshold = 10000;
  HnswParams hnsw;
  // Threads of Rebuild()'s graph build; more than one: see
  // HnswGraph::Build.
  int build_threads = 1;
};

struct SimilarItem {
  uint64_t id = 0;
  float distance = 0;    // vector_metric.h's reported distance
  uint64_t version = 0;  // the model version the item's vector came from
};

struct SimilarityAnswer {
  std::vector<SimilarItem> items;  // nearest first, ties by id
  bool exact = false;              // a full scan answered (else the graph)
  uint64_t oldest_version = 0;     // min version over items; 0 if none
  uint64_t index_min_version = 0;  // min and max over every stored item
  uint64_t index_max_version = 0;
};

enum class SearchMode {
  kAuto,   // the graph at or above the threshold if one is built
  kExact,  // always the scan
};

struct SimilarityStats {
  size_t items = 0;
  size_t graph_live = 0;     // 0 when no graph
  size_t graph_deleted = 0;  // removed items still in the graph
  bool has_graph = false;
  bool rebuilding = false;
  size_t store_bytes = 0;  // the vectors and id maps (exact scan)
  size_t graph_bytes = 0;  // hnswlib's structures, vectors included
};

class SimilarityIndex {
 public:
  static constexpr size_t kMaxResults = 10000;

  // kInvalidArgument for dim 0, threads < 1 or bad HNSW params.
  static absl::StatusOr<std::unique_ptr<SimilarityIndex>> Create(
      const SimilarityOptions& options);

  // Adds `id`, or replaces its vector and version.
  absl::Status Upsert(uint64_t id, std::span<const float> vector,
                      uint64_t version);
  absl::Status Upsert(uint64_t id, std::span<const double> vector,
                      uint64_t version);
  // kNotFound if `id` is not stored.
  absl::Status Remove(uint64_t id);

  // The n items nearest `vector`.
  absl::StatusOr<SimilarityAnswer> Query(
      std::span<const float> vector, size_t n,
      SearchMode mode = SearchMode::kAuto) const;
  absl::StatusOr<SimilarityAnswer> Query(
      std::span<const double> vector, size_t n,
      SearchMode mode = SearchMode::kAuto) const;
  // The n items nearest the stored item `id`, itself left out; kNotFound
  // if it is not stored.
  absl::StatusOr<SimilarityAnswer> QueryById(
      uint64_t id, size_t n, SearchMode mode = SearchMode::kAuto) const;

  // Builds a new graph of every item and swaps it in (class comment).
  absl::Status Rebuild();
  // True when the items reached the threshold and no graph is built, or
  // the graph's deleted items exceed a quarter of its live ones.
  bool NeedsRebuild() const;
  // The HNSW search breadth (recall against speed); kept for rebuilds.
  void SetEfSearch(uint32_t ef);

  SimilarityStats Stats() const;
  size_t size() const;

 private:
  explicit SimilarityIndex(const SimilarityOptions& options);
  absl::Status CheckN(size_t n) const;
  absl::StatusOr<SimilarityAnswer> Answer(const float* prepared, size_t n,
                                          SearchMode mode,
                                          std::optional<uint64_t> exclude) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status UpsertPrepared(uint64_t id, const float* prepared,
                              uint64_t version);

  const Metric metric_;
  const uint32_t dim_;
  const size_t exact_threshold_;
  const int build_threads_;

  mutable absl::Mutex mu_;
  HnswParams hnsw_params_ ABSL_GUARDED_BY(mu_);
  VectorStore store_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<HnswGraph> graph_ ABSL_GUARDED_BY(mu_);
  bool rebuilding_ ABSL_GUARDED_BY(mu_) = false;
  // Ids written while a rebuild runs, replayed into the new graph.
  absl::flat_hash_set<uint64_t> journal_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd

#endif  // LATENTD_SIMILARITY_SIMILARITY_INDEX_H_
