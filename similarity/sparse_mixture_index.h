// Exact Hellinger nearest neighbours over topic mixtures kept as their
// non-zero counts: what a SimilarityIndex (similarity_index.h) answers, at
// a cost that grows with each item's non-zero topics instead of with K.
// For models with many topics (K = 10,000), where a dense index would keep
// K floats per item and compare items in K dimensions.
//
// An item is counts n_k over a few topics and its total n (n ≥ Σ n_k); its
// mixture is smoothed by the index's prior α (K entries, all > 0):
//   θ_k = (n_k + α_k) / (n + A),  A = Σ α.
// A query is a mixture p (K entries, normalised here) or a stored item.
// With √θ_k = (√(n_k + α_k) − √α_k + √α_k) / √(n + A), the Bhattacharyya
// coefficient is
//   BC(p, θ) = (Σ_k √(p_k α_k) + Σ_{n_k > 0} √p_k (√(n_k + α_k) − √α_k))
//              / √(n + A):
// one O(K) sum per query, then O(non-zeros) per item, exact. The reported
// distance is the Hellinger distance H = √(1 − BC), as vector_metric.h's.
//
// Every answer is a full scan (SimilarityAnswer::exact is true): about
// items × mean non-zeros multiply-adds a query.
//
// Bad input (an α that is not finite and positive, a topic ≥ K, a total
// below its counts, a query mixture of the wrong size, negative or all
// zero, n outside [1, SimilarityIndex::kMaxResults], an unknown id) is an
// absl::Status error.
//
// Thread-safety: every method may be called from any thread; queries share
// a reader lock, writes take it exclusively.
#ifndef LATENTD_SIMILARITY_SPARSE_MIXTURE_INDEX_H_
#define LATENTD_SIMILARITY_SPARSE_MIXTURE_INDEX_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "similarity/similarity_index.h"

namespace latentd {

// A topic and its count in an item.
using TopicCount = std::pair<uint32_t, uint64_t>;

// The dense form of an item: θ_k = (n_k + α_k) / (n + Σα), alpha.size()
// floats; counts of topics ≥ K are left out.
std::vector<float> SmoothedMixture(std::span<const TopicCount> counts,
                                   uint64_t total,
                                   std::span<const double> alpha);

class SparseMixtureIndex {
 public:
  using TopicCount = latentd::TopicCount;

  static absl::StatusOr<std::unique_ptr<SparseMixtureIndex>> Create(
      std::span<const double> alpha);

  // Adds `id`, or replaces its counts and version. `counts` in any order,
  // each topic at most once; `total` ≥ their sum (tokens whose topics are
  // not listed count toward n only).
  absl::Status Upsert(uint64_t id, std::span<const TopicCount> counts,
                      uint64_t total, uint64_t version);
  absl::Status Remove(uint64_t id);  // kNotFound if not stored

  // The n items nearest the mixture `theta` (K entries).
  absl::StatusOr<SimilarityAnswer> Query(std::span<const float> theta,
                                         size_t n) const;
  // The n items nearest the stored item `id`, itself left out.
  absl::StatusOr<SimilarityAnswer> QueryById(uint64_t id, size_t n) const;

  size_t size() const;
  uint32_t topics() const { return static_cast<uint32_t>(alpha_.size()); }
  // The items' bytes (entries and the id map), for stats.
  size_t bytes() const;

 private:
  struct Item {
    uint64_t id;
    uint64_t version;
    float inv_sqrt_total;  // 1 / √(n + A)
    uint32_t first;        // its entries: [first, first + count) of entries_
    uint32_t count;
  };
  // One non-zero topic of an item: √(n_k + α_k) − √α_k.
  struct Entry {
    uint32_t topic;
    float weight;
  };

  explicit SparseMixtureIndex(std::vector<double> alpha);
  // √p of a query mixture, and Σ_k √(p_k α_k).
  absl::Status PrepareQuery(std::span<const float> theta,
                            std::vector<float>* sqrt_p,
                            double* background) const;
  SimilarityAnswer Scan(const std::vector<float>& sqrt_p, double background,
                        size_t n, std::optional<uint64_t> exclude) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Drops the entries no item points at once they are half of entries_.
  void MaybeCompact() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::vector<double> alpha_;
  const double alpha_sum_;
  const std::vector<float> sqrt_alpha_;

  mutable absl::Mutex mu_;
  std::vector<Item> items_ ABSL_GUARDED_BY(mu_);
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
  size_t live_entries_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, uint32_t> slot_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd

#endif  // LATENTD_SIMILARITY_SPARSE_MIXTURE_INDEX_H_
