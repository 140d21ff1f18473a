// The answer to the API's ClusterMembers: the cluster's control plane as
// its Redis records it (what `latentctl cluster status` prints), read now
// for a member's status page.
#ifndef LATENTD_SERVICE_CLUSTER_MEMBERS_RESPONSE_H_
#define LATENTD_SERVICE_CLUSTER_MEMBERS_RESPONSE_H_

#include "absl/status/statusor.h"
#include "service/api.pb.h"
#include "service/cluster/cluster_link.h"

namespace latentd::service {

// Reads the members of `link`'s cluster from its Redis (a connection of
// its own, closed on return). kUnavailable when Redis cannot be reached or
// read. Any thread.
absl::StatusOr<api::ClusterMembersResponse> ReadClusterMembers(
    const ClusterLink& link);

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_CLUSTER_MEMBERS_RESPONSE_H_
