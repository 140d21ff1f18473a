// The items of a SimilarityIndex, in stored form (vector_metric.h), in one
// dense array, each with the model version its vector was computed at; and
// the exact scan over them. Removal moves the last item into the hole, so
// the array stays dense and a scan reads it front to back.
//
// Thread-safety: none; SimilarityIndex guards it (const methods may run
// concurrently with each other, not with a mutator).
#ifndef LATENTD_SIMILARITY_VECTOR_STORE_H_
#define LATENTD_SIMILARITY_VECTOR_STORE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "similarity/vector_metric.h"

namespace latentd {

// A search hit before it is reported: the raw score (vector_metric.h) and
// the item's id.
struct ScoredId {
  float raw = 0;
  uint64_t id = 0;
  friend bool operator<(const ScoredId& a, const ScoredId& b) {
    return a.raw != b.raw ? a.raw < b.raw : a.id < b.id;
  }
};

class VectorStore {
 public:
  VectorStore(Metric metric, uint32_t dim) : metric_(metric), dim_(dim) {}

  // Stores `prepared` (dim floats, stored form) for `id`, replacing what
  // was there.
  void Upsert(uint64_t id, const float* prepared, uint64_t version);
  // False if `id` is not stored.
  bool Remove(uint64_t id);

  size_t size() const { return ids_.size(); }
  uint32_t dim() const { return dim_; }
  // nullptr if `id` is not stored; valid until the next mutation.
  const float* Find(uint64_t id) const;
  std::optional<uint64_t> VersionOf(uint64_t id) const;
  // The oldest and newest version stored; 0 when empty.
  uint64_t min_version() const;
  uint64_t max_version() const;

  uint64_t id_at(size_t slot) const { return ids_[slot]; }
  const float* vector_at(size_t slot) const {
    return vectors_.data() + slot * dim_;
  }

  // The n stored items nearest `query` (stored form), nearest first, ties
  // by id; `exclude` (an id) is skipped.
  std::vector<ScoredId> Scan(const float* query, size_t n,
                             std::optional<uint64_t> exclude) const;

  // Bytes held by the vectors, ids, versions and the id map.
  size_t MemoryBytes() const;

 private:
  const Metric metric_;
  const uint32_t dim_;
  std::vector<float> vectors_;  // slot * dim_
  std::vector<uint64_t> ids_;   // by slot
  std::vector<uint64_t> versions_;
  absl::flat_hash_map<uint64_t, size_t> slot_of_;
  absl::btree_map<uint64_t, size_t> version_counts_;  // version -> items

  void CountVersion(uint64_t version, int delta);
};

}  // namespace latentd

#endif  // LATENTD_SIMILARITY_VECTOR_STORE_H_
