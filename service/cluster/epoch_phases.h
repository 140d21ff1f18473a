// EpochPhases: the sets in Redis that say which members finished a phase
// of a ring change (docs/design.md, "Ring epochs"): "handoff" (a member
// handed off every key it no longer owns in the epoch's ring), "effect"
// (it routes its rounds by that ring), and for an add left running when
// its nodes restarted (internal::ResumeInterruptedMove) "restarted" (a
// member restarted into its epoch: what it owned before is lost, not
// handed off) and "rejoined" (the joiner restarted: it will not end the
// move itself). Each set is
// latentd:CLUSTER:PHASE:EPOCH, kept a week; marking is idempotent.
//
// Thread-safety: const and stateless beyond its names; any thread, each
// with its own RedisClient.
#ifndef LATENTD_SERVICE_CLUSTER_EPOCH_PHASES_H_
#define LATENTD_SERVICE_CLUSTER_EPOCH_PHASES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hashring/ring_config.h"
#include "sync/control/membership.h"

namespace latentd {

class EpochPhases {
 public:
  // Phases are marked and read for `node_id` of cluster `cluster`.
  EpochPhases(std::string cluster, std::string node_id)
      : cluster_(std::move(cluster)), node_id_(std::move(node_id)) {}

  // The set's key.
  std::string Set(const char* phase, uint64_t epoch) const;
  // Adds this node to `phase` of `epoch`.
  absl::Status Mark(sync::RedisClient* redis, const char* phase,
                    uint64_t epoch) const;
  // Adds every member of `config` to `phase` of its epoch: for a ring
  // change that moves no key (a rolled-back removal), where no member has
  // anything to hand off, so none restarting or away holds the others up.
  absl::Status MarkAll(sync::RedisClient* redis, const char* phase,
                       const hashring::RingConfig& config) const;
  // Marks `phase` of every epoch in (from, to] (at most the last 1000): a
  // node that skipped epochs must not hold up members waiting at them.
  absl::Status MarkRange(sync::RedisClient* redis, const char* phase,
                         uint64_t from, uint64_t to) const;
  // The members of `members` other than this node and those in `skip`
  // that are not in `phase` of `epoch`.
  absl::StatusOr<std::vector<std::string>> NotIn(
      sync::RedisClient* redis, const char* phase, uint64_t epoch,
      const hashring::RingConfig& members,
      const std::vector<std::string>& skip = {}) const;
  // The node ids in `phase` of `epoch`.
  absl::StatusOr<std::vector<std::string>> In(sync::RedisClient* redis,
                                              const char* phase,
                                              uint64_t epoch) const;
  // If every other member of `config` is in "effect" of its epoch, ends the
  // move to that epoch (sync::FinishMove, no counters): true if this call
  // did (of several callers, one).
  absl::StatusOr<bool> EndMoveIfAllInEffect(
      sync::RedisClient* redis, const hashring::RingConfig& config) const;
  // Waits until every other member of `config` is in `phase` of its epoch;
  // kDeadlineExceeded naming one that is not, after `deadline`.
  absl::Status Await(sync::RedisClient* redis,
                     const hashring::RingConfig& config, const char* phase,
                     absl::Time deadline) const;

 private:
  const std::string cluster_;
  const std::string node_id_;
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_EPOCH_PHASES_H_
