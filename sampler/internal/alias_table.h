// AliasTable: Walker's alias method (Vose's construction) — after an O(n)
// build from n non-negative weights, a draw of index j with probability
// w_j / Σw costs one uniform and one comparison, whatever n is.
//
// Usage:
//   AliasTable t;
//   t.Build(weights);              // REQUIRES: Σ weights > 0
//   uint32_t j = t.Draw(&rng);
//
// Thread-safety: Build mutates; Draw is const and may run from many threads
// at once on a built table (each with its own Rng).
#ifndef LATENTD_SAMPLER_INTERNAL_ALIAS_TABLE_H_
#define LATENTD_SAMPLER_INTERNAL_ALIAS_TABLE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "base/random.h"

namespace latentd::internal {

class AliasTable {
 public:
  // Rebuilds the table over `weights` (keeping capacity). Zero weights are
  // never drawn. REQUIRES: weights non-empty, non-negative, positive sum.
  void Build(std::span<const double> weights);

  // An index j with probability weights[j] / total().
  uint32_t Draw(Rng* rng) const {
    const double u = rng->Uniform() * static_cast<double>(size_);
    uint32_t j = static_cast<uint32_t>(u);
    if (j >= size_) j = size_ - 1;  // u rounds up to size_ at most
    const Slot& s = slots_[j];
    return u - j < s.keep ? j : s.alias;
  }

  double total() const { return total_; }
  uint32_t size() const { return size_; }

 private:
  struct Slot {
    double keep;     // P(keep j | slot j), in [0, 1]
    uint32_t alias;  // the index taken otherwise
  };
  std::vector<Slot> slots_;
  std::vector<uint32_t> small_, large_;  // build scratch
  uint32_t size_ = 0;
  double total_ = 0;
};

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_ALIAS_TABLE_H_
