#include "sampler/internal/alias_table.h"

namespace latentd::internal {

void AliasTable::Build(std::span<const double> weights) {
  size_ = static_cast<uint32_t>(weights.size());
  slots_.resize(size_);
  small_.clear();
  large_.clear();
  total_ = 0;
  for (double w : weights) total_ += w;
  // Each slot holds mass total/n: its own index's share first, the rest
  // topped up from one large index.
  const double scale = static_cast<double>(size_) / total_;
  for (uint32_t j = 0; j < size_; ++j) {
    slots_[j].keep = weights[j] * scale;
    slots_[j].alias = j;
    (slots_[j].keep < 1.0 ? small_ : large_).push_back(j);
  }
  while (!small_.empty() && !large_.empty()) {
    const uint32_t s = small_.back();
    small_.pop_back();
    const uint32_t l = large_.back();
    slots_[s].alias = l;
    slots_[l].keep -= 1.0 - slots_[s].keep;
    if (slots_[l].keep < 1.0) {
      large_.pop_back();
      small_.push_back(l);
    }
  }
  // What is left is 1 up to rounding: keep it whole. A left-over small slot
  // with weight 0 (rounding made it "small") must still never be drawn, so
  // it keeps only if its weight was positive.
  for (uint32_t j : large_) slots_[j].keep = 1.0;
  for (uint32_t j : small_) {
    slots_[j].keep = weights[j] > 0 ? 1.0 : 0.0;
    if (weights[j] <= 0) {
      // Point it at any positive-weight index.
      for (uint32_t i = 0; i < size_; ++i) {
        if (weights[i] > 0) {
          slots_[j].alias = i;
          break;
        }
      }
    }
  }
}

}  // namespace latentd::internal
