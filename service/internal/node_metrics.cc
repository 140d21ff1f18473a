#include "service/internal/node_metrics.h"

#include <limits>

namespace latentd::service::internal {

NodeMetrics NodeMetrics::Register(MetricsRegistry* metrics) {
  MetricsRegistry& r = *metrics;
  NodeMetrics m;
  m.sweeps = r.AddCounter("latentd_sweeps_total", "Gibbs sweeps completed");
  m.sweep_errors =
      r.AddCounter("latentd_sweep_errors_total", "Sweeps that failed");
  m.tokens_sampled =
      r.AddCounter("latentd_tokens_sampled_total", "Tokens resampled");
  m.tokens_per_second = r.AddGauge("latentd_tokens_per_second",
                                   "Sampling throughput of the last sweep");
  m.loglik = r.AddGauge("latentd_log_likelihood_per_token",
                        "Joint log p(w, z) per token, last evaluated sweep");
  m.heldout_perplexity = r.AddGauge(
      "latentd_heldout_perplexity",
      "Held-out perplexity by document completion, last scored (0: none)");
  m.sweep = r.AddGauge("latentd_sweep", "Sweeps completed (model version)");
  m.documents = r.AddGauge("latentd_documents", "Documents in the store");
  m.tokens = r.AddGauge("latentd_tokens", "Tokens in the store");
  m.vocabulary = r.AddGauge("latentd_vocabulary", "Words in the model");
  m.pending = r.AddGauge("latentd_ingest_queue_depth",
                         "Acknowledged documents not yet merged");
  m.ingested = r.AddCounter("latentd_ingested_documents_total",
                            "Documents acknowledged (durable)");
  m.merged = r.AddCounter("latentd_merged_documents_total",
                          "Documents merged into the token store");
  m.merge_errors =
      r.AddCounter("latentd_merge_errors_total", "Failed merges (retried)");
  m.duplicates = r.AddCounter("latentd_ingest_duplicates_total",
                              "Redelivered documents dropped");
  m.words_adopted = r.AddCounter(
      "latentd_cluster_words_adopted_total",
      "Cluster mode: words other nodes brought that this node added to its "
      "vocabulary");
  m.forwarded =
      r.AddCounter("latentd_ingest_forwarded_total",
                   "Cluster mode: users' events forwarded to their owner node");
  m.replicated = r.AddCounter(
      "latentd_ingest_replicated_total",
      "Cluster mode: copies of this node's acknowledged documents that "
      "backups (--replicas) hold fsynced");
  m.under_replicated = r.AddCounter(
      "latentd_ingest_under_replicated_total",
      "Cluster mode: documents acknowledged with fewer copies than "
      "--replicas because the ring had fewer members");
  m.replicas_adopted = r.AddCounter(
      "latentd_replicas_adopted_total",
      "Cluster mode: replica copies of a node removed as lost that this "
      "node ingested as its own documents");
  m.replica_records = r.AddGauge(
      "latentd_replica_records",
      "Cluster mode: replica copies of other nodes' documents this node "
      "holds (DIR/replicas)");
  m.checkpoints =
      r.AddCounter("latentd_checkpoints_total", "Checkpoints written");
  m.log_damage =
      r.AddCounter("latentd_ingest_log_damage_total",
                   "Damaged stretches of the ingest log skipped at start-up");
  m.coherence_umass =
      r.AddGauge("latentd_topic_coherence_mean",
                 "Mean over topics of the topic coherence (NaN until computed)",
                 "measure=\"umass\"");
  m.coherence_npmi =
      r.AddGauge("latentd_topic_coherence_mean", "", "measure=\"npmi\"");
  m.coherence_umass->Set(std::numeric_limits<double>::quiet_NaN());
  m.coherence_npmi->Set(std::numeric_limits<double>::quiet_NaN());
  m.coherence_sweep = r.AddGauge("latentd_topic_coherence_sweep",
                                 "Model sweep the coherence was computed at");
  m.coherence_seconds =
      r.AddGauge("latentd_topic_coherence_seconds",
                 "Time the last coherence computation took (a store read)");
  m.lost = r.AddCounter(
      "latentd_ingest_lost_total",
      "Acknowledged documents lost to ingest log damage before they merged");
  m.store_damage =
      r.AddCounter("latentd_token_store_damage_total",
                   "Damaged blocks of the token store repaired at start-up");
  m.store_docs_lost = r.AddCounter(
      "latentd_token_store_docs_lost_total",
      "Documents lost with damaged token store blocks (kept as empty "
      "documents)");
  m.snapshots_refused = r.AddCounter(
      "latentd_snapshots_refused_total",
      "Snapshot files passed over at start-up (damaged, or not fitting the "
      "token store)");
  return m;
}

}  // namespace latentd::service::internal
