// Process-wide setting for absl::Mutex, for the production binaries and
// benchmarks to call first thing in main().
//
// Debian's Abseil is built with mutex deadlock detection on (Abseil turns
// it on unless NDEBUG). Detection records every lock acquisition in a
// global lock graph: an uncontended pair of nested locks costs ~80 ns
// instead of ~23 ns on the dev machine, and the cluster synchronizer takes
// a few locks per key per round (4% of a 3-node benchmark's CPU was
// spent there). Tests leave detection on, as a debugging aid; set
// LATENTD_MUTEX_DEADLOCK_DETECTION=1 to keep it on in a binary too (it then
// aborts with both lock orders when two mutexes are taken in inconsistent
// order).
//
// Thread-safety: call before any other thread starts.
#ifndef LATENTD_BASE_FAST_MUTEXES_H_
#define LATENTD_BASE_FAST_MUTEXES_H_

#include <cstdlib>
#include <string_view>

#include "absl/synchronization/mutex.h"

namespace latentd {

// LATENTD_MUTEX_DEADLOCK_DETECTION as the binaries' --help describes it.
inline constexpr char kMutexDeadlockDetectionHelp[] =
    "LATENTD_MUTEX_DEADLOCK_DETECTION=1 keeps Abseil's mutex deadlock "
    "detection on (off by default: it slows every nested lock)";

inline void DisableMutexDeadlockDetection() {
  const char* keep = std::getenv("LATENTD_MUTEX_DEADLOCK_DETECTION");
  if (keep != nullptr && std::string_view(keep) == "1") return;
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace latentd

#endif  // LATENTD_BASE_FAST_MUTEXES_H_
