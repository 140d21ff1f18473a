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
#include "service/cluster/epoch_phases.h"
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
// A joiner's wait for every member of `config` to hand it the keys it
// takes (EpochPhases "handoff"). kFailedPrecondition naming a member that
// restarted into this epoch instead (ResumeInterruptedMove): the keys it
// owned died with it, so this node must not serve what it was handed; a
// restart of this node, whose owner shard every member then re-seeds, ends
// the add exact.
absl::Status AwaitHandoffs(sync::RedisClient* redis, const EpochPhases& phases,
                           const hashring::RingConfig& config,
                           absl::Time deadline);
// A member restarting into ring `config`: if a failover, an add or the keys
// phase of a remove to that epoch is still running (every node that
// followed it stopped before it ended, as when a whole cluster is killed
// in its middle), records this node in both its phases, as following it
// would have (a restarted node holds no key to hand off: its owners and
// members re-seed from the stores; and it routes by that ring from the
// start); the last member to do so ends the move, so that the next one can
// start (an add's joiner, if it is still joining, is told by the mark
// "restarted": AwaitHandoffs). If the removal of `self` is running in its drain
// phase to that epoch, returns its mode: this node resumes leaving. An error is
// logged (options.log): the move then stays as it was.
std::optional<sync::RemoveMode> ResumeInterruptedMove(
    JoinRedis& redis, const ClusterLinkOptions& options,
    const EpochPhases& phases, const hashring::RingConfig& config,
    const std::string& self);

}  // namespace latentd::internal

#endif  // LATENTD_SERVICE_CLUSTER_INTERNAL_JOIN_STEPS_H_
