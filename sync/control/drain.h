// Drain and settle (docs/operations.md, "Drain and settle"). `latentctl
// cluster drain` sets latentd:NAME:drain; each member reads it with every
// heartbeat, stops sampling while it is set, pushes and pulls every change
// and, once a pass finds nothing to send or receive, writes the checksum of
// its table in its heartbeat (Heartbeat::settled_checksum). The cluster is
// settled when every ring member reports the same checksum: every node
// then holds the same global table. `latentctl cluster resume` deletes the
// key and sampling goes on.
//
// Thread-safety: pure functions of their arguments (one RedisClient per
// thread).
#ifndef LATENTD_SYNC_CONTROL_DRAIN_H_
#define LATENTD_SYNC_CONTROL_DRAIN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sync/control/cluster_admin.h"
#include "sync/control/membership.h"

namespace latentd::sync {

// Requests a drain of `cluster` (drain) or ends it (!drain).
absl::Status SetDrain(RedisClient* redis, std::string_view cluster, bool drain);
// Whether a drain of `cluster` is requested.
absl::StatusOr<bool> DrainRequested(RedisClient* redis,
                                    std::string_view cluster);

// What the ring members' heartbeats say of a drain.
struct Settlement {
  // Every ring member reports the same non-zero checksum (and there is at
  // least one member).
  bool settled = false;
  uint64_t checksum = 0;  // the common checksum, when settled
  // "ID: why" for each ring member not settled with the others.
  std::vector<std::string> waiting;
};
Settlement ReadSettlement(const ClusterStatus& status);

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_CONTROL_DRAIN_H_
