#include "similarity/vector_store.h"

#include <algorithm>
#include <cstring>

namespace latentd {

void VectorStore::Upsert(uint64_t id, const float* prepared, uint64_t version) {
  auto [it, inserted] = slot_of_.try_emplace(id, ids_.size());
  const size_t slot = it->second;
  if (inserted) {
    ids_.push_back(id);
    versions_.push_back(version);
    vectors_.resize(vectors_.size() + dim_);
  } else {
    CountVersion(versions_[slot], -1);
    versions_[slot] = version;
  }
  CountVersion(version, +1);
  std::memcpy(vectors_.data() + slot * dim_, prepared, dim_ * sizeof(float));
}

bool VectorStore::Remove(uint64_t id) {
  auto it = slot_of_.find(id);
  if (it == slot_of_.end()) return false;
  const size_t slot = it->second;
  const size_t last = ids_.size() - 1;
  CountVersion(versions_[slot], -1);
  slot_of_.erase(it);
  if (slot != last) {
    ids_[slot] = ids_[last];
    versions_[slot] = versions_[last];
    std::memcpy(vectors_.data() + slot * dim_, vectors_.data() + last * dim_,
                dim_ * sizeof(float));
    slot_of_[ids_[slot]] = slot;
  }
  ids_.pop_back();
  versions_.pop_back();
  vectors_.resize(vectors_.size() - dim_);
  return true;
}

const float* VectorStore::Find(uint64_t id) const {
  auto it = slot_of_.find(id);
  return it == slot_of_.end() ? nullptr : vector_at(it->second);
}

std::optional<uint64_t> VectorStore::VersionOf(uint64_t id) const {
  auto it = slot_of_.find(id);
  if (it == slot_of_.end()) return std::nullopt;
  return versions_[it->second];
}

uint64_t VectorStore::min_version() const {
  return version_counts_.empty() ? 0 : version_counts_.begin()->first;
}

uint64_t VectorStore::max_version() const {
  return version_counts_.empty() ? 0 : version_counts_.rbegin()->first;
}

void VectorStore::CountVersion(uint64_t version, int delta) {
  size_t& count = version_counts_[version];
  count += delta;
  if (count == 0) version_counts_.erase(version);
}

std::vector<ScoredId> VectorStore::Scan(const float* query, size_t n,
                                        std::optional<uint64_t> exclude) const {
  std::vector<ScoredId> heap;  // max-heap of the best n so far
  if (n == 0) return heap;
  heap.reserve(n + 1);
  for (size_t slot = 0; slot < ids_.size(); ++slot) {
    const float raw = RawDistance(metric_, query, vector_at(slot), dim_);
    const ScoredId hit{raw, ids_[slot]};
    if (heap.size() == n && !(hit < heap.front())) continue;
    if (exclude && hit.id == *exclude) continue;
    heap.push_back(hit);
    std::push_heap(heap.begin(), heap.end());
    if (heap.size() > n) {
      std::pop_heap(heap.begin(), heap.end());
      heap.pop_back();
    }
  }
  std::sort_heap(heap.begin(), heap.end());
  return heap;
}

size_t VectorStore::MemoryBytes() const {
  return vectors_.capacity() * sizeof(float) +
         (ids_.capacity() + versions_.capacity()) * sizeof(uint64_t) +
         slot_of_.capacity() * (sizeof(uint64_t) + sizeof(size_t) + 1) +
         version_counts_.size() * 2 * sizeof(uint64_t);
}

}  // namespace latentd
