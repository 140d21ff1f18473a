#include "service/cluster_members_response.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sync/control/cluster_admin.h"
#include "sync/control/membership.h"

namespace latentd::service {

absl::StatusOr<api::ClusterMembersResponse> ReadClusterMembers(
    const ClusterLink& link) {
  const ClusterLinkOptions& o = link.options();
  absl::StatusOr<std::unique_ptr<sync::RedisClient>> redis =
      sync::RedisClient::Connect(o.redis_url);
  if (!redis.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "ClusterMembers: the cluster's Redis: ", redis.status().message()));
  }
  absl::StatusOr<sync::ClusterStatus> status =
      sync::ReadClusterStatus(redis->get(), o.cluster);
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("ClusterMembers: reading cluster '", o.cluster,
                     "' in Redis: ", status.status().message()));
  }
  api::ClusterMembersResponse resp;
  resp.set_cluster(status->cluster);
  resp.set_epoch(status->epoch);
  resp.set_node_id(link.node_id());
  for (const sync::MemberStatus& m : status->members) {
    api::ClusterMemberRecord* r = resp.add_members();
    r->set_id(m.id);
    r->set_address(m.address);
    r->set_state(sync::MemberStateName(m.state));
    r->set_in_ring(m.in_ring);
    r->set_weight(m.weight);
    if (m.heartbeat.has_value()) {
      r->set_has_heartbeat(true);
      r->set_heartbeat_age_ms(
          std::max<int64_t>(0, status->now_ms - m.heartbeat->unix_ms));
      r->set_sweep(m.heartbeat->sweep);
      r->set_documents(m.heartbeat->documents);
      r->set_epoch(m.heartbeat->epoch);
    }
  }
  return resp;
}

}  // namespace latentd::service
