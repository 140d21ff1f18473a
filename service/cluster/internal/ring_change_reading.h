// What the cluster's status in Redis says of a ring change, as a member
// begins following it (RingFollower::BeginRingChange): the move behind
// the new epoch, and the members that hold no replica copies.
//
// Thread-safety: pure functions of their arguments.
#ifndef LATENTD_SERVICE_CLUSTER_INTERNAL_RING_CHANGE_READING_H_
#define LATENTD_SERVICE_CLUSTER_INTERNAL_RING_CHANGE_READING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "hashring/ring_config.h"
#include "sync/control/cluster_admin.h"

namespace latentd::internal {

struct RingChangeReading {
  // The drain epoch of this node's own removal: how it is removed.
  std::optional<sync::RemoveMode> leave;
  // Members removed as lost or failed over: never waited for.
  std::vector<std::string> lost;
  // A failover epoch, and how old its detection was (Redis time).
  bool failover = false;
  int64_t detected_age_ms = 0;
  // A member being added ("" if none): a failed-over one returning, whose
  // clock counts again.
  std::string added;
  // This node is marked down (failed over).
  bool self_down = false;
  // Members marked leaving or down: they hold no replica copies.
  absl::flat_hash_set<std::string> not_backups;
};

// Reads `status` for the move to `next`, as node `node_id` (which `next`
// lists or not: `listed`) begins it.
RingChangeReading ReadRingChange(const sync::ClusterStatus& status,
                                 const hashring::RingConfig& next,
                                 const std::string& node_id, bool listed);

// The members `status` marks leaving or down.
absl::flat_hash_set<std::string> NotBackupsOf(
    const sync::ClusterStatus& status);

}  // namespace latentd::internal

#endif  // LATENTD_SERVICE_CLUSTER_INTERNAL_RING_CHANGE_READING_H_
