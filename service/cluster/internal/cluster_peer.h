// ClusterLink's view of a remote member (cluster_link.cc and
// cluster_link_epochs.cc): its transport client and heartbeat state.
#ifndef LATENTD_SERVICE_CLUSTER_INTERNAL_CLUSTER_PEER_H_
#define LATENTD_SERVICE_CLUSTER_INTERNAL_CLUSTER_PEER_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "service/cluster/cluster_link.h"
#include "sync/transport.h"

namespace latentd {

struct ClusterLink::Peer {
  std::string id;
  std::unique_ptr<sync::Client> client;
  absl::Mutex mu;
  absl::Time last_ok ABSL_GUARDED_BY(mu) = absl::Now();
  bool reported_down ABSL_GUARDED_BY(mu) = false;
  bool in_flight ABSL_GUARDED_BY(mu) = false;  // one heartbeat at a time
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_INTERNAL_CLUSTER_PEER_H_
