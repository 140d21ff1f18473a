// LatentdService's metrics: every counter, gauge and collector the node
// exports on /metrics (the cluster's own are in service_cluster.cc).
#include "service/latentd_service.h"

namespace latentd::service {

LatentdService::Metrics LatentdService::RegisterMetrics(
    MetricsRegistry* metrics) {
  MetricsRegistry& r = *metrics;
  Metrics m;
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

void LatentdService::RegisterCollectors(MetricsRegistry* metrics) {
  metrics->AddCollector([this] {
    if (const ReplicaLogs* replicas = ingest_.replica_logs()) {
      m_.replica_records->Set(static_cast<double>(replicas->records()));
    }
  });
  RegisterSimilarityMetrics(metrics);
  if (options_.cluster_mode) RegisterClusterMetrics(metrics);
}

// The similarity index (service/similarity_service.h), read at each scrape.
void LatentdService::RegisterSimilarityMetrics(MetricsRegistry* metrics) {
  MetricsRegistry& r = *metrics;
  Gauge* documents =
      r.AddGauge("latentd_similarity_items", "Items in the similarity index",
                 "kind=\"documents\"");
  Gauge* users = r.AddGauge("latentd_similarity_items", "", "kind=\"users\"");
  Counter* full = r.AddCounter(
      "latentd_similarity_refreshes_total",
      "Similarity index refreshes: full (every θ rebuilt into new indexes) "
      "or update (new documents' and changed users' θ written)",
      "kind=\"full\"");
  Counter* updates =
      r.AddCounter("latentd_similarity_refreshes_total", "", "kind=\"update\"");
  Counter* failures =
      r.AddCounter("latentd_similarity_refresh_failures_total",
                   "Similarity index refreshes or updates that failed (the "
                   "index stays as it was; the next publication retries)");
  Gauge* seconds = r.AddGauge("latentd_similarity_full_refresh_seconds",
                              "How long the last full refresh took");
  Gauge* lag = r.AddGauge(
      "latentd_similarity_view_lag",
      "Model views published since the one the similarity index last took "
      "(0: it holds the published model)");
  metrics->AddCollector(
      [this, documents, users, full, updates, failures, seconds, lag] {
        if (similarity_ == nullptr) return;
        const SimilarityStats st = similarity_->Stats();
        documents->Set(static_cast<double>(st.documents));
        users->Set(static_cast<double>(st.users));
        full->SetTotal(st.full_refreshes);
        updates->SetTotal(st.updates);
        failures->SetTotal(st.failures);
        seconds->Set(st.last_full_seconds);
        lag->Set(st.published_view > st.index_view
                     ? static_cast<double>(st.published_view - st.index_view)
                     : 0.0);
      });
}

}  // namespace latentd::service
