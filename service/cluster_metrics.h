// The metrics of a cluster member (latentd_cluster_*, latentd_sync_*): its
// ring epoch and members, unreachable peers, owned keys, retractions,
// refused batches by reason, sync and replica bytes, failovers, and its
// sync port's connections. Read from the member's ClusterLink at every
// scrape. Thread-safety: the collector runs on the scraping thread; the
// link's accessors are thread-safe.
#ifndef LATENTD_SERVICE_CLUSTER_METRICS_H_
#define LATENTD_SERVICE_CLUSTER_METRICS_H_

#include <functional>

#include "service/cluster/cluster_link.h"
#include "service/metrics.h"

namespace latentd::service {

// Registers them in *metrics; `link_of` gives the link at each scrape
// (null before the node has joined: the metrics stay as they are).
void RegisterClusterMetrics(MetricsRegistry* metrics,
                            std::function<const ClusterLink*()> link_of);

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_CLUSTER_METRICS_H_
