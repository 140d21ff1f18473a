// StopSignal: a one-way flag a background thread waits on between its
// rounds, so that Stop() ends its sleep at once instead of after it.
//
// Thread-safety: every method from any thread.
#ifndef LATENTD_BASE_STOP_SIGNAL_H_
#define LATENTD_BASE_STOP_SIGNAL_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace latentd {

class StopSignal {
 public:
  // Sets the flag and wakes every waiter. Returns whether it was set
  // already.
  bool Stop() {
    absl::MutexLock l(&mu_);
    const bool was = stopped_;
    stopped_ = true;
    return was;
  }
  bool stopped() const {
    absl::MutexLock l(&mu_);
    return stopped_;
  }
  // Waits up to `d` unless stopped; false once stopped.
  bool SleepUnlessStopped(absl::Duration d) {
    absl::MutexLock l(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stopped_), d);
    return !stopped_;
  }

 private:
  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace latentd

#endif  // LATENTD_BASE_STOP_SIGNAL_H_
