// oneTBB's worker pool is one thread a core unless the process says
// otherwise: a task_arena of more threads than cores (--threads 3 on a
// 2-core machine) gets only the pool's and oneTBB prints "TBB Warning: the
// number of workers is currently limited". EnsureTbbThreads(n) raises the
// process's limit so that an arena of n threads gets them, for the rest of
// the process; it never lowers it, and returns n (for an arena's
// initializer: `arena(EnsureTbbThreads(n))`). Header-only, for the targets that
// link oneTBB (base itself does not).
//
// Thread-safety: may be called from any thread.
#ifndef LATENTD_BASE_TBB_WORKERS_H_
#define LATENTD_BASE_TBB_WORKERS_H_

#include <cstddef>
#include <memory>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "oneapi/tbb/global_control.h"
#include "oneapi/tbb/info.h"

namespace latentd {

inline int EnsureTbbThreads(int threads) {
  if (threads <= tbb::info::default_concurrency()) return threads;
  static absl::Mutex mu(absl::kConstInit);
  // (oneTBB takes the smallest of the live controls of this parameter, so
  // the one control is replaced, never added to.)
  static std::unique_ptr<tbb::global_control>* control =
      new std::unique_ptr<tbb::global_control>();
  absl::MutexLock l(&mu);
  const size_t want = static_cast<size_t>(threads);
  if (*control != nullptr &&
      tbb::global_control::active_value(
          tbb::global_control::max_allowed_parallelism) >= want) {
    return threads;
  }
  control->reset();
  *control = std::make_unique<tbb::global_control>(
      tbb::global_control::max_allowed_parallelism, want);
  return threads;
}

}  // namespace latentd

#endif  // LATENTD_BASE_TBB_WORKERS_H_
