// The steps by which a node that is not simply starting with its cluster
// gets into the ring (ClusterLink::Join), each run through a JoinRedis that
// rides out a brief Redis outage.
//
// Thread-safety: pure functions of their arguments; one thread per
// JoinRedis.
#ifndef LATENTD_SERVICE_CLUSTER_INTERNAL_JOIN_STEPS_H_
#define LATENTD_SERVICE_CLUSTER_INTERNAL_JOIN_STEPS_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "hashring/ring_config.h"
#include "service/cluster/cluster_link_options.h"
#include "service/cluster/internal/join_redis.h"
#include "sync/control/cluster_admin.h"

namespace latentd::internal {

// With options.join: registers `node_id` at `address` as pending and
// returns the ring that admits it (an operator's `latentctl cluster
// add-node`); kDeadlineExceeded after options.join_timeout.
absl::StatusOr<hashring::RingConfig> AwaitAdmission(
    JoinRedis& redis, const ClusterLinkOptions& options,
    const std::string& node_id, const std::string& address);
// The state the cluster holds `node_id` in (down: failed over, now
// restarted), nullopt if it does not list it.
absl::StatusOr<std::optional<sync::MemberState>> StateOf(
    JoinRedis& redis, const ClusterLinkOptions& options,
    const std::string& node_id);
// A down node back: puts it in the ring again once no move runs
// (sync::ReturnNode) and returns that ring.
absl::StatusOr<hashring::RingConfig> AwaitReturn(
    JoinRedis& redis, const ClusterLinkOptions& options,
    const std::string& node_id, const std::string& address);

}  // namespace latentd::internal

#endif  // LATENTD_SERVICE_CLUSTER_INTERNAL_JOIN_STEPS_H_
