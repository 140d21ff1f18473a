// LookAhead: hash lookups of a run of keys, issued ahead of their use.
//
// A run of lookups in a large map misses the cache at every step: the probe
// of key i + kProbeAhead starts early (prefetch), key i + kFindAhead is looked
// up (and `found` is called on its value, to request the value's memory),
// and key i's value is then at hand.
//
// Internal to sync/; thread-compatible (one per run of lookups).
#ifndef LATENTD_SYNC_INTERNAL_LOOK_AHEAD_H_
#define LATENTD_SYNC_INTERNAL_LOOK_AHEAD_H_

#include <algorithm>
#include <cstddef>
#include <type_traits>

namespace latentd::sync::internal {

inline constexpr size_t kProbeAhead = 12;
inline constexpr size_t kFindAhead = 8;

// Looks up keys(0), keys(1), ... in `map` in that order, ahead of use:
// At(i) returns keys(i)'s value (nullptr if absent when it was looked up,
// kFindAhead steps earlier) after calling found(value) on the value of
// keys(i + kFindAhead). REQUIRES: nothing is inserted into or erased from
// the map while it runs, except keys not yet looked up (the caller
// reserves room so that no insertion rehashes), and At is called with
// i = 0, 1, ... in turn.
template <typename Map, typename KeyFn, typename FoundFn>
class LookAhead {
 public:
  using Value =
      std::conditional_t<std::is_const_v<Map>, const typename Map::mapped_type,
                         typename Map::mapped_type>;
  LookAhead(Map* map, size_t n, KeyFn keys, FoundFn found)
      : map_(map), n_(n), keys_(keys), found_(found) {
    for (size_t i = 0; i < std::min(n, kFindAhead); ++i) Find(i);
  }
  // keys(i)'s value as looked up, for i in (the last At's, that + kFindAhead].
  Value* Peek(size_t i) const { return ring_[i % kRing]; }
  Value* At(size_t i) {
    if (i + kProbeAhead < n_) map_->prefetch(keys_(i + kProbeAhead));
    if (i + kFindAhead < n_) Find(i + kFindAhead);
    return ring_[i % kRing];
  }

 private:
  static constexpr size_t kRing = 16;
  static_assert(kRing > kFindAhead);
  void Find(size_t i) {
    auto it = map_->find(keys_(i));
    Value* v = it == map_->end() ? nullptr : &it->second;
    ring_[i % kRing] = v;
    if (v != nullptr) found_(*v);
  }
  Map* const map_;
  const size_t n_;
  KeyFn keys_;
  FoundFn found_;
  Value* ring_[kRing] = {};
};

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_INTERNAL_LOOK_AHEAD_H_
