// LatentdService's collectors: what /metrics reads from the node's parts at
// each scrape (its counters and gauges are NodeMetrics; the cluster's are
// service/cluster_metrics.h).
#include "service/cluster_metrics.h"
#include "service/latentd_service.h"

namespace latentd::service {

void LatentdService::RegisterCollectors(MetricsRegistry* metrics) {
  metrics->AddCollector([this] {
    if (const ReplicaLogs* replicas = ingest_.replica_logs()) {
      m_.replica_records->Set(static_cast<double>(replicas->records()));
    }
  });
  RegisterSimilarityMetrics(metrics);
  if (options_.cluster_mode) {
    RegisterClusterMetrics(metrics, [this] { return router_.link(); });
  }
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
