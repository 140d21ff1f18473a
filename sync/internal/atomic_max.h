// AtomicMax: a monotone maximum in an atomic counter (SyncCounters' *_max).
// Internal to the synchronizer. Thread-safe.
#ifndef LATENTD_SYNC_INTERNAL_ATOMIC_MAX_H_
#define LATENTD_SYNC_INTERNAL_ATOMIC_MAX_H_

#include <atomic>
#include <cstdint>

namespace latentd::sync::internal {

// a ← max(a, v).
inline void AtomicMax(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v)) {
  }
}

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_INTERNAL_ATOMIC_MAX_H_
