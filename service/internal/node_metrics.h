// NodeMetrics: the counters and gauges a latentd node (LatentdService)
// exports on /metrics, registered once when the service is constructed
// (NodeMetrics::Register). The service and
// its parts (IngestPath, ClusterRouter, ClusterMember, CoherenceMonitor,
// HeldOutScorer) are handed the ones they count in. The MetricsRegistry
// owns them; Counter and Gauge may be updated from any thread.
#ifndef LATENTD_SERVICE_INTERNAL_NODE_METRICS_H_
#define LATENTD_SERVICE_INTERNAL_NODE_METRICS_H_

#include "service/metrics.h"

namespace latentd::service::internal {

struct NodeMetrics {
  // Registers every one in *registry (which owns them).
  static NodeMetrics Register(MetricsRegistry* registry);

  Counter* sweeps;
  Counter* sweep_errors;
  Counter* tokens_sampled;
  Gauge* tokens_per_second;
  Gauge* loglik;
  Gauge* heldout_perplexity;
  Gauge* sweep;
  Gauge* documents;
  Gauge* tokens;
  Gauge* vocabulary;
  Gauge* pending;
  Counter* ingested;
  Counter* merged;
  Counter* merge_errors;
  Counter* duplicates;
  Counter* words_adopted;
  Counter* forwarded;
  Counter* replicated;
  Counter* under_replicated;
  Counter* replicas_adopted;
  Gauge* replica_records;
  Counter* checkpoints;
  Counter* snapshots_refused;
  Counter* log_damage;
  Counter* lost;
  Counter* store_damage;
  Counter* store_docs_lost;
  Gauge* coherence_umass;
  Gauge* coherence_npmi;
  Gauge* coherence_sweep;
  Gauge* coherence_seconds;
};

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_NODE_METRICS_H_
