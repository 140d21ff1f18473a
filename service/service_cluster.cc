// LatentdService in cluster mode: joining, the sweep hooks, merges into a
// synchronized table, leaving, and the cluster metrics. Routing users to
// their owners is ClusterRouter's (service/cluster_router.h).
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
#include "service/latentd_service.h"

namespace latentd::service {

namespace {

// The label values of latentd_sync_batches_refused_total, in the order of
// ClusterMetrics::refused.
constexpr const char* kRefusalReasons[] = {
    "not_member",      "incarnation",        "key_not_owned",      "negative",
    "sender_mismatch", "handoff_not_member", "replica_not_member", "identity"};

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

void LatentdService::RegisterClusterMetrics(MetricsRegistry* metrics) {
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
        "handshake claiming another node id than its certificate's)",
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
  r.AddCollector([this, sync_connections, metrics_of_link] {
    ClusterMetrics& cm = *metrics_of_link;
    const ClusterLink* link = router_.link();
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
                                link->sender_mismatches(),
                                link->handoffs_refused(),
                                link->replicas_refused(),
                                link->server_stats()->identity_refused.load()};
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

namespace {

// A node whose sync server is to pick a port (port 0) asks for the port its
// last run bound, kept in `file`, so that a restart with the same command
// line comes back at the address the ring knows. Only for the same host: a
// changed --cluster-listen host wins. True if it did.
bool RememberedSyncAddress(const std::string& file, std::string* listen) {
  if (!absl::EndsWith(*listen, ":0")) return false;
  absl::StatusOr<std::string> saved = ReadFileToString(file, 256);
  if (!saved.ok()) return false;
  const std::string address(absl::StripAsciiWhitespace(*saved));
  const std::string host = listen->substr(0, listen->size() - 1);
  if (!absl::StartsWith(address, host) || address.size() == host.size()) {
    return false;
  }
  *listen = address;
  return true;
}

}  // namespace

absl::Status LatentdService::JoinCluster(ClusterLinkOptions options) {
  if (started_ || link_ != nullptr || !options_.cluster_mode) {
    return absl::FailedPreconditionError(
        "JoinCluster must come once, before Start(), with cluster_mode set");
  }
  if (options.node_id.empty()) {
    return absl::InvalidArgumentError(
        "cluster mode needs the node's API TCP address as its id (--listen)");
  }
  if (!topics_) {
    // A graph-only node: its graph model is what the cluster synchronizes.
    if (graph_ == nullptr) {
      return absl::FailedPreconditionError(
          "cluster mode needs a topic model (--corpus) or a graph "
          "(--graph-edges)");
    }
    return graph_->JoinCluster(std::move(options));
  }
  options.key_replicas = options_.replicas;
  const std::string address_file = options_.data_dir + "/cluster.address";
  const bool remembered = RememberedSyncAddress(address_file, &options.listen);
  const std::string listen = options.listen;
  absl::MutexLock lock(&train_mu_);
  TopicTable* table = trainer_->mutable_table();
  // Every word of the cluster, named, so that words any node brings reach
  // this one (AdoptClusterWords).
  std::vector<sync::Key> keys(table->vocab_size());
  std::vector<std::string> names(table->vocab_size());
  for (WordId w = 0; w < keys.size(); ++w) {
    keys[w] = vocab_.key(w);
    names[w] = vocab_.word(w);
  }
  synced_ = std::make_unique<SyncedTopicTable>(table, std::move(keys),
                                               std::move(names));
  ingest_.SetCluster(options.redis_url, options.cluster);
  SweepPipeline* pipeline = trainer_->pipeline();
  pipeline->SetCountUpdaterHook(
      [this](TopicTable*, std::span<const WordTopicDelta> applied) {
        return link_->AfterBatch(applied);
      });
  pipeline->SetQuiesceMutex(synced_->layout_mutex());
  Log(absl::StrCat("joining cluster '", options.cluster, "' as ",
                   options.node_id, " (", options.expected_members,
                   " members, ", options.consistency.ToString(), ")"));
  absl::StatusOr<std::unique_ptr<ClusterLink>> link =
      ClusterLink::Create(std::move(options), synced_.get());
  if (!link.ok()) {
    // The table is untouched (corrections are applied only once joined).
    pipeline->SetCountUpdaterHook(nullptr);
    pipeline->SetQuiesceMutex(nullptr);
    synced_.reset();
    // (Only for a port that could not be had: other failures, say of the
    // first sync pass, have nothing to do with it.)
    if (remembered &&
        absl::StrContains(link.status().message(), "cannot listen on")) {
      return absl::Status(
          link.status().code(),
          absl::StrCat(link.status().message(), " (the sync address ", listen,
                       " is the one this node had, ", "kept in ", address_file,
                       ": the ring knows it there; free the port, or give "
                       "--cluster-listen)"));
    }
    return link.status();
  }
  link_ = std::move(*link);
  LATENTD_RETURN_IF_ERROR(
      WriteFileAtomically(address_file, link_->address() + "\n"));
  router_.SetLink(link_.get());
  Log(absl::StrCat("joined: ", link_->ring_config().members.size(),
                   " members; sync server on ", link_->address()));
  return Publish();
}

absl::Status LatentdService::ClusterBeforeSweep(uint64_t* t) {
  if (link_->declared_down() && !router_.failed()) {
    router_.MarkFailed("this node was declared down and failed over");
    // Failed over while alive (its heartbeats were late): the others took
    // this node's counts out and its keys over; sampling here would feed
    // owners that no longer count it. A restart re-admits it.
    LogWarning(absl::StrCat(
        "cluster: this node was declared down and failed over; it stops "
        "sampling ",
        options_.on_declared_down
            ? "and restarts itself to return to the cluster"
            : "and goes on serving queries (restart it from its data "
              "directory to return to the cluster)"));
    if (options_.on_declared_down) options_.on_declared_down();
  }
  if (router_.failed()) {
    return absl::FailedPreconditionError(
        "this cluster node stopped sampling after a failed sweep");
  }
  *t = link_->sweep() + 1;
  return link_->BeforeSweep(*t);
}

absl::Status LatentdService::LeaveCluster() {
  // From here on this node samples no more, whatever happens below.
  router_.MarkLeft();
  const sync::RemoveMode mode = *link_->LeaveRequested();
  if (mode != sync::RemoveMode::kDrop && mode != sync::RemoveMode::kHandoff) {
    return absl::InvalidArgumentError(
        absl::StrCat("a live node is not removed as ",
                     sync::RemoveModeName(mode), " (only drop or handoff)"));
  }
  LATENTD_RETURN_IF_ERROR(synced_->ApplyPending());
  if (mode == sync::RemoveMode::kHandoff) {
    // The others adopt this node's documents with their topics (their
    // merges add those counts) before it takes them out below: net zero.
    absl::Status shipped = HandOffDocuments();
    if (!shipped.ok()) {
      absl::Status failed = link_->FailLeave(std::string(shipped.message()));
      if (!failed.ok()) LogWarning(std::string(failed.message()));
      return shipped;
    }
  }
  // Minus every token of this node's store, through the table's writer,
  // so the owners take this node's documents out of the global counts.
  sync::MoveCounters counters;
  LATENTD_ASSIGN_OR_RETURN(
      std::vector<WordTopicDelta> minus,
      StoreCounts(trainer_->store(), -1, &counters.documents));
  LATENTD_RETURN_IF_ERROR(trainer_->mutable_table()->Apply(minus));
  synced_->MarkApplied(minus);
  cluster_finished_ = true;  // Leave() pushes what is left and finishes
  Log(mode == sync::RemoveMode::kDrop
          ? absl::StrCat("leaving the cluster (drop): ", counters.documents,
                         " documents taken out of the model")
          : absl::StrCat("leaving the cluster (handoff): ", counters.documents,
                         " documents handed off; their counts leave with "
                         "this node as the others' come in"));
  LATENTD_RETURN_IF_ERROR(link_->Leave(counters));
  Log("left the cluster");
  if (options_.on_left_cluster) options_.on_left_cluster();
  return absl::OkStatus();
}

absl::Status LatentdService::ClusterApplyMerge(const MergeResult& merged) {
  if (merged.added_counts.empty()) return absl::OkStatus();
  LATENTD_RETURN_IF_ERROR(
      trainer_->mutable_table()->Apply(merged.added_counts));
  synced_->MarkApplied(merged.added_counts);
  return absl::OkStatus();
}

absl::Status LatentdService::AdoptClusterWords() {
  if (link_ == nullptr || router_.left()) return absl::OkStatus();
  const size_t before = vocab_.size();
  for (const auto& [key, word] : link_->ForeignWords()) {
    if (HashWord(word) != key) {
      if (misnamed_.insert(key).second) {
        LogWarning(absl::StrCat("cluster: key ", key, " came named '", word,
                                "', which is another word's key; ignored"));
      }
      continue;
    }
    vocab_.Add(word);
  }
  LATENTD_RETURN_IF_ERROR(GrowClusterTable());
  if (vocab_.size() > before) {
    m_.words_adopted->Add(vocab_.size() - before);
    pending_merged_ = true;  // publish the new words
  }
  return absl::OkStatus();
}

absl::Status LatentdService::GrowClusterTable() {
  const size_t from = synced_->num_words();
  const size_t to = vocab_.size();
  if (to <= from) return absl::OkStatus();
  std::vector<sync::Key> keys;
  std::vector<std::string> names;
  for (size_t w = from; w < to; ++w) {
    keys.push_back(vocab_.key(static_cast<WordId>(w)));
    names.push_back(vocab_.word(static_cast<WordId>(w)));
  }
  TopicTable* table = trainer_->mutable_table();
  return link_->GrowKeys([&]() -> absl::Status {
    table->Resize(to);
    synced_->AddWords(keys, names);
    return absl::OkStatus();
  });
}

}  // namespace latentd::service
