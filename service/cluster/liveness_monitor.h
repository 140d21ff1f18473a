// LivenessMonitor: a cluster member's liveness thread (docs/design.md,
// "Failure detection and failover"). Every failure_timeout / 5 (at least
// every 20 ms, at most every second) it writes this node's heartbeat and
// alive key to Redis; with failure_timeout > 0 and `may_judge` true it
// reads the cluster's status, and the member a FailureJudge names is
// declared down (sync::DeclareDown, compare-and-set: of several members
// seeing it, one wins). While Redis is away nothing is declared; once it is
// back every member gets a failure timeout from this node's first beat to
// beat again before it is judged. The first beat is written at Start, so a
// restarted node beats before anyone looks at its heartbeat again. With
// each beat it reads whether a drain is requested (drain_requested()).
//
// Thread-safety: Start and Stop from one thread; the callbacks run on the
// liveness thread.
#ifndef LATENTD_SERVICE_CLUSTER_LIVENESS_MONITOR_H_
#define LATENTD_SERVICE_CLUSTER_LIVENESS_MONITOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/stop_signal.h"
#include "service/cluster/cluster_link_options.h"
#include "sync/control/cluster_admin.h"

namespace latentd {

class FailureJudge;

class LivenessMonitor {
 public:
  struct Parts {
    std::string node_id;
    std::function<uint64_t()> epoch;  // the ring epoch it routes by
    // This node's heartbeat, filled but for its time.
    std::function<sync::Heartbeat()> heartbeat;
    // Whether this node may judge the others now (it is ready, and
    // neither leaving nor itself declared down).
    std::function<bool()> may_judge;
    // Whether `id` reached this process directly since it started.
    std::function<bool(const std::string&)> heard_from;
  };
  // `options` (not owned) outlives the monitor.
  LivenessMonitor(const ClusterLinkOptions* options, Parts parts)
      : options_(*options), parts_(std::move(parts)) {}
  ~LivenessMonitor() { Stop(); }

  void Start();
  // Returns once the thread has. Idempotent.
  void Stop();
  // Whether a drain of the cluster is requested (sync/control/drain.h), as
  // read with the latest heartbeat. Any thread.
  bool drain_requested() const { return drain_requested_.load(); }

 private:
  void Loop();
  // Reads whether a drain is requested into drain_requested_.
  absl::Status ReadDrain(sync::RedisClient* redis);
  // Reads the cluster's status for `judge` and declares down the member it
  // names (only learning who beats unless `may_declare`).
  absl::Status DetectFailure(sync::RedisClient* redis, FailureJudge* judge,
                             bool may_declare);

  std::atomic<bool> drain_requested_{false};
  const ClusterLinkOptions& options_;
  const Parts parts_;
  StopSignal stop_;
  std::thread thread_;
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_LIVENESS_MONITOR_H_
