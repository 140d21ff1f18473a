#include "service/cluster_metrics.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "corpora/types.h"
#include "sampler/store_counts.h"
#include "service/api_client.h"
#include "service/internal/connection_metrics.h"

namespace latentd::service {

namespace {

// The label values of latentd_sync_batches_refused_total, in the order of
// ClusterMetrics::refused.
constexpr const char* kRefusalReasons[] = {
    "not_member",         "incarnation",     "key_not_owned",
    "negative",           "sender_mismatch", "handoff_not_member",
    "replica_not_member", "identity",        "progress_not_member",
    "too_many_keys"};

// The ring and failover metrics, set from the link at every scrape.
struct ClusterMetrics {
  Gauge* epoch;
  Gauge* members;
  Gauge* unreachable;
  Gauge* owned_keys;
  Counter* senders_retracted;
  Counter* keys_retracted;
  Counter* counts_retracted;
  Counter* reseed_refused;
  Counter* stale_refused;
  // latentd_sync_batches_refused_total by reason.
  Counter* refused[std::size(kRefusalReasons)];
  Counter* sync_bytes;
  Gauge* keys_under_replicated;
  Gauge* replica_keys;
  Counter* replica_bytes;
  Counter* rounds_failed;
  Counter* failovers;
  Gauge* last_failover_seconds;
};

}  // namespace

void RegisterClusterMetrics(MetricsRegistry* metrics,
                            std::function<const ClusterLink*()> link_of) {
  MetricsRegistry& r = *metrics;
  auto metrics_of_link = std::make_shared<ClusterMetrics>();
  ClusterMetrics& cm = *metrics_of_link;
  cm.epoch = r.AddGauge("latentd_cluster_epoch",
                        "Ring epoch this node routes by (0 until joined)");
  cm.members =
      r.AddGauge("latentd_cluster_members", "Members of the current ring");
  cm.unreachable =
      r.AddGauge("latentd_cluster_peers_unreachable",
                 "Ring members this node's heartbeats find unreachable");
  cm.owned_keys = r.AddGauge("latentd_cluster_owned_keys",
                             "Keys whose global this node's owner shard holds");
  cm.senders_retracted = r.AddCounter(
      "latentd_cluster_senders_retracted_total",
      "Senders (a restarted node's earlier process, or a node removed as "
      "lost) whose contributions this owner took out of the globals");
  cm.keys_retracted =
      r.AddCounter("latentd_cluster_keys_retracted_total",
                   "Keys whose contributions from such senders were taken out");
  cm.counts_retracted = r.AddCounter(
      "latentd_cluster_counts_retracted_total",
      "Counts (sum of |count|) taken out of the globals with them");
  cm.reseed_refused = r.AddCounter(
      "latentd_cluster_reseed_refused_total",
      "Batches refused as addressed to an earlier process of this owner "
      "(each makes its sender re-seed this owner)");
  cm.stale_refused = r.AddCounter(
      "latentd_cluster_stale_refused_total",
      "Batches refused as stale: from a superseded process of their sender, "
      "or routed by an earlier ring epoch");
  for (size_t i = 0; i < std::size(kRefusalReasons); ++i) {
    cm.refused[i] = r.AddCounter(
        "latentd_sync_batches_refused_total",
        "Peer frames refused as hostile or impossible, nothing of them "
        "applied (docs/operations.md, \"Threat model\"): not_member (a "
        "sender outside the ring), incarnation (a sender process from the "
        "future), key_not_owned, negative (would take a key below the "
        "sender's own part), sender_mismatch (a frame speaking for another "
        "node than its connection's), handoff_not_member, "
        "replica_not_member (a key hand-off or replica update from outside "
        "the ring), identity (a "
        "handshake claiming another node id than its certificate's), "
        "progress_not_member (progress from an id neither the ring nor the "
        "cluster's registry in Redis lists)",
        absl::StrCat("reason=\"", kRefusalReasons[i], "\""));
  }
  cm.rounds_failed = r.AddCounter(
      "latentd_cluster_sync_rounds_failed_total",
      "Sync batches this node sent that failed (and were sent again)");
  cm.failovers = r.AddCounter(
      "latentd_cluster_failovers_total",
      "Failovers this node took part in as a survivor: epochs marking "
      "another member down (its heartbeat older than --failure-timeout) "
      "that it put in effect");
  cm.last_failover_seconds = r.AddGauge(
      "latentd_cluster_last_failover_seconds",
      "How long the latest of those took: from the detection (Redis time) "
      "to the first sync round this node completed with the new owners; -1 "
      "if none yet");
  cm.sync_bytes = r.AddCounter(
      "latentd_cluster_sync_bytes_sent_total",
      "Bytes of delta batches this node sent to remote owners, frame "
      "headers included (the copies to backups are counted apart)");
  cm.keys_under_replicated = r.AddGauge(
      "latentd_cluster_keys_under_replicated",
      "Copies of this owner's keys its backups do not hold yet (--replicas "
      "k: per key k-1; a refill not yet acknowledged, a backup that does not "
      "answer, or a ring of fewer than k members)");
  cm.replica_keys = r.AddGauge(
      "latentd_cluster_replica_keys",
      "Keys of other owners this node holds copies of, as their backup");
  cm.replica_bytes = r.AddCounter(
      "latentd_cluster_replica_bytes_sent_total",
      "Bytes of key-state copies this owner's backups acknowledged");
  // The sync port's connections, as the API listeners' (its caps are
  // known once joined).
  auto sync_connections =
      std::make_shared<internal::ConnectionMetrics>(metrics, "sync", 0, 0);
  r.AddCollector([link_of = std::move(link_of), sync_connections,
                  metrics_of_link] {
    ClusterMetrics& cm = *metrics_of_link;
    const ClusterLink* link = link_of();
    if (link == nullptr) return;
    sync_connections->SetCaps(link->options().max_connections,
                              link->options().max_connections_per_address);
    sync_connections->MirrorFrom(*link->server_stats());
    cm.epoch->Set(static_cast<double>(link->epoch()));
    cm.members->Set(static_cast<double>(link->ring_config().members.size()));
    cm.unreachable->Set(static_cast<double>(link->UnavailablePeers().size()));
    cm.owned_keys->Set(static_cast<double>(link->owner().num_keys()));
    const sync::OwnerShardStats st = link->owner().stats();
    cm.senders_retracted->SetTotal(st.senders_retracted);
    cm.keys_retracted->SetTotal(st.keys_retracted);
    cm.counts_retracted->SetTotal(st.counts_retracted);
    cm.reseed_refused->SetTotal(st.batches_reseed_refused);
    cm.stale_refused->SetTotal(st.batches_stale_refused);
    const uint64_t refused[] = {st.refused_not_member,
                                st.refused_incarnation,
                                st.refused_key_not_owned,
                                st.refused_negative,
                                link->frames().sender_mismatches(),
                                link->frames().handoffs_refused(),
                                link->frames().replicas_refused(),
                                link->server_stats()->identity_refused.load(),
                                link->frames().progress_refused(),
                                st.refused_too_many_keys};
    static_assert(std::size(refused) == std::size(kRefusalReasons));
    for (size_t i = 0; i < std::size(refused); ++i) {
      cm.refused[i]->SetTotal(refused[i]);
    }
    cm.rounds_failed->SetTotal(link->counters().failed_rounds.load());
    cm.sync_bytes->SetTotal(link->counters().bytes_sent.load());
    cm.failovers->SetTotal(link->failovers());
    const sync::OwnerReplicatorStats rs = link->replication_stats();
    cm.keys_under_replicated->Set(
        static_cast<double>(rs.keys_under_replicated));
    cm.replica_keys->Set(static_cast<double>(link->replica_keys_held()));
    cm.replica_bytes->SetTotal(rs.bytes_sent);
    cm.last_failover_seconds->Set(
        link->failovers() == 0 ? -1.0 : link->last_failover_seconds());
  });
}

}  // namespace latentd::service
