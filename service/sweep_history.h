// SweepHistory: the log-likelihood per token and the tokens/s of the sweeps
// a node evaluated since it started, for the status page's plot
// (StatusRequest.history). Memory is bounded: it keeps at most `capacity`
// points spread over the whole run. When full, every other point is
// dropped and from then on only every 2nd (then 4th, ...) evaluated sweep
// is kept, so the points still reach back to the first sweep; the latest
// sweep is always returned, kept or not.
//
// Thread-safety: Add and Points may be called from any threads at once.
#ifndef LATENTD_SERVICE_SWEEP_HISTORY_H_
#define LATENTD_SERVICE_SWEEP_HISTORY_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace latentd::service {

struct SweepPoint {
  uint64_t sweep = 0;
  double log_likelihood_per_token = 0;
  double tokens_per_second = 0;
};

class SweepHistory {
 public:
  // REQUIRES: capacity >= 2.
  explicit SweepHistory(size_t capacity = 1000);

  // Records an evaluated sweep (sweeps are added in increasing order).
  void Add(const SweepPoint& point);
  // At most `max_points` points, oldest first, evenly spread over the kept
  // ones and ending with the latest sweep; empty if max_points is 0 or
  // nothing was added.
  std::vector<SweepPoint> Points(size_t max_points) const;

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::vector<SweepPoint> kept_ ABSL_GUARDED_BY(mu_);
  uint64_t added_ ABSL_GUARDED_BY(mu_) = 0;   // points ever added
  uint64_t stride_ ABSL_GUARDED_BY(mu_) = 1;  // keep added % stride == 0
  std::optional<SweepPoint> latest_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_SWEEP_HISTORY_H_
