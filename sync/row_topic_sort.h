// SortByRowTopic: sorts count deltas by (row, topic) with an LSD radix sort,
// for the logs that fold many small deltas into per-row sums (a synced
// table's applied deltas, a synchronizer's ledger). Sorting a log is
// sequential work, where adding each delta to a per-row sum as it comes
// costs a cache miss or two per delta on a large vocabulary.
//
// Header-only; a function of its arguments.
#ifndef LATENTD_SYNC_ROW_TOPIC_SORT_H_
#define LATENTD_SYNC_ROW_TOPIC_SORT_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace latentd::sync {

// Sorts *v by (row(e), e.topic), stable, over the significant bits of
// row · dimension + topic, 12 bits a pass (two for K = 100 and 40,000
// rows); `tmp` is scratch. REQUIRES: every e.topic < dimension.
template <typename Entry, typename RowFn>
void SortByRowTopic(uint32_t dimension, RowFn row, std::vector<Entry>* v,
                    std::vector<Entry>* tmp) {
  constexpr int kBits = 12;
  constexpr size_t kBuckets = size_t{1} << kBits;
  constexpr int kCounted = 3;  // digits counted in the first pass
  auto key = [dimension, &row](const Entry& d) {
    return uint64_t{row(d)} * dimension + d.topic;
  };
  // One pass for the largest key and the first digits' histograms.
  std::vector<uint32_t> count(kCounted * (kBuckets + 1), 0);
  uint64_t max_key = 0;
  for (const Entry& d : *v) {
    const uint64_t x = key(d);
    max_key = std::max(max_key, x);
    for (int p = 0; p < kCounted; ++p) {
      ++count[p * (kBuckets + 1) + ((x >> (p * kBits)) & (kBuckets - 1)) + 1];
    }
  }
  tmp->resize(v->size());
  const int bits = static_cast<int>(std::bit_width(max_key));
  for (int p = 0; p * kBits < bits; ++p) {
    const int shift = p * kBits;
    auto digit = [&key, shift](const Entry& d) {
      return static_cast<size_t>((key(d) >> shift) & (kBuckets - 1));
    };
    uint32_t* c = count.data() + std::min(p, kCounted - 1) * (kBuckets + 1);
    if (p >= kCounted) {
      std::fill(c, c + kBuckets + 1, 0);
      for (const Entry& d : *v) ++c[digit(d) + 1];
    }
    for (size_t b = 1; b <= kBuckets; ++b) c[b] += c[b - 1];
    for (const Entry& d : *v) (*tmp)[c[digit(d)]++] = d;
    v->swap(*tmp);
  }
}

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_ROW_TOPIC_SORT_H_
