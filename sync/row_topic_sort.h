// SortByRowTopic: sorts count deltas by (row, topic) with an LSD radix sort,
// for the logs that fold many small deltas into per-row sums (a synced
// table's applied deltas, a synchronizer's ledger). Sorting a log is
// sequential work, where adding each delta to a per-row sum as it comes
// costs a cache miss or two per delta on a large vocabulary. A log may
// also pack its entries one to a 64-bit word (PackedDeltaLog).
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

// Sorts *v by key(e), a uint64_t, stable, over the key's significant bits,
// 12 bits a pass (two for K = 100 and 40,000 rows); `tmp` is scratch.
template <typename Entry, typename KeyFn>
void RadixSortByKey(KeyFn key, std::vector<Entry>* v, std::vector<Entry>* tmp) {
  constexpr int kBits = 12;
  constexpr size_t kBuckets = size_t{1} << kBits;
  constexpr int kCounted = 3;  // digits counted in the first pass
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
    Entry* out = tmp->data();
    for (const Entry& d : *v) out[c[digit(d)]++] = d;
    v->swap(*tmp);
  }
}

// Sorts *v by (row(e), e.topic), stable. REQUIRES: every e.topic <
// dimension.
template <typename Entry, typename RowFn>
void SortByRowTopic(uint32_t dimension, RowFn row, std::vector<Entry>* v,
                    std::vector<Entry>* tmp) {
  RadixSortByKey(
      [dimension, &row](const Entry& d) {
        return uint64_t{row(d)} * dimension + d.topic;
      },
      v, tmp);
}

// A log of (row, topic, delta) packed one to a 64-bit word, row << (topic
// bits + 16) | topic << 16 | (uint16) delta, so that its sort moves 8 bytes
// an entry; a delta beyond int16 is logged in pieces. Rows up to 2^32 and
// topics up to 2^16 fit.
class PackedDeltaLog {
 public:
  static constexpr int kDeltaBits = 16;
  static constexpr int32_t kMaxPiece = (1 << (kDeltaBits - 1)) - 1;

  // REQUIRES: dimension <= 2^16.
  explicit PackedDeltaLog(uint32_t dimension)
      : topic_bits_(dimension <= 1
                        ? 0
                        : static_cast<int>(std::bit_width(dimension - 1))),
        row_shift_(topic_bits_ + kDeltaBits),
        topic_mask_((uint64_t{1} << topic_bits_) - 1) {}

  // REQUIRES: |delta| <= kMaxPiece.
  uint64_t Pack(uint32_t row, uint32_t topic, int32_t delta) const {
    return (uint64_t{row} << row_shift_) | (uint64_t{topic} << kDeltaBits) |
           static_cast<uint16_t>(static_cast<int16_t>(delta));
  }
  // Appends any delta, in pieces if it must.
  void Append(uint32_t row, uint32_t topic, int64_t delta,
              std::vector<uint64_t>* log) const {
    while (delta != 0) {
      const int64_t piece = std::clamp<int64_t>(delta, -kMaxPiece, kMaxPiece);
      log->push_back(Pack(row, topic, static_cast<int32_t>(piece)));
      delta -= piece;
    }
  }
  uint32_t Row(uint64_t e) const {
    return static_cast<uint32_t>(e >> row_shift_);
  }
  uint32_t Topic(uint64_t e) const {
    return static_cast<uint32_t>((e >> kDeltaBits) & topic_mask_);
  }
  static int32_t Delta(uint64_t e) {
    return static_cast<int16_t>(static_cast<uint16_t>(e));
  }
  // Equal for the entries of one (row, topic), ordered as they sort.
  static uint64_t RowTopic(uint64_t e) { return e >> kDeltaBits; }
  // Sorts a log by (row, topic), stable.
  static void Sort(std::vector<uint64_t>* log, std::vector<uint64_t>* tmp) {
    RadixSortByKey([](uint64_t e) { return RowTopic(e); }, log, tmp);
  }

 private:
  int topic_bits_;
  int row_shift_;
  uint64_t topic_mask_;
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_ROW_TOPIC_SORT_H_
