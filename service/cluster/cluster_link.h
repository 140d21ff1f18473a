// ClusterLink: what makes a sampler a member of a training cluster — the
// sync server, Redis membership and the ring, this node's owner shard
// (server side), the synchronizer (client side) over the node's
// SyncedTopicTable, peer heartbeats and the consistency clocks (docs/design.md,
// "Many nodes"). The sampler itself stays with its owner: ClusterNode
// (a corpus shard, for tests and benchmarks) and LatentdService in cluster
// mode (the daemon) both drive their pipeline and call in here:
//
//   table  = SyncedTopicTable over the pipeline's TopicTable
//   hook   = the count updater calls link.AfterBatch(applied)
//   link   = ClusterLink::Create(options, &table)  // listens, joins, waits
//            for the ring, exchanges the initial counts
//   per sweep t: link.BeforeSweep(t); run the pipeline;
//                link.EndSweep(batches); link.AnnounceSweep(t)
//   at the end:  link.Finish(); link.WaitAllFinished(..); link.DrainPass()
//
// The link composes parts that each own their state: SyncFrameHandler (the
// frames peers send to this node's owner shard), PeerSet (the clients to
// the other members and the progress heartbeats), RingFollower (the ring,
// following each new epoch in two phases, and leaving), KeyReplicas
// (copies of the owner shard at its backups, and what stays of departed
// members), LivenessMonitor (heartbeats in Redis, failure detection) and
// EpochPhases (the ring changes' phase sets in Redis). A down node
// restarted from its data directory puts itself back in the ring
// (sync::ReturnNode) and joins as an admitted node does: the members hand
// its keys back, then it pushes its store's counts.
//
// Thread-safety: BeforeSweep, EndSweep, AnnounceSweep, Finish and DrainPass
// are called by the node's one training thread; AfterBatch by the
// table's writer (the count updater); the accessors from any thread.
#ifndef LATENTD_SERVICE_CLUSTER_CLUSTER_LINK_H_
#define LATENTD_SERVICE_CLUSTER_CLUSTER_LINK_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/stop_signal.h"
#include "hashring/ring.h"
#include "sampler/synced_table.h"
#include "service/cluster/cluster_link_options.h"
#include "service/cluster/epoch_phases.h"
#include "service/cluster/key_replicas.h"
#include "service/cluster/liveness_monitor.h"
#include "service/cluster/peer_set.h"
#include "service/cluster/ring_follower.h"
#include "service/cluster/sync_frame_handler.h"
#include "sync/consistency.h"
#include "sync/control/cluster_admin.h"
#include "sync/control/membership.h"
#include "sync/owner_replicator.h"
#include "sync/owner_shard.h"
#include "sync/replica_store.h"
#include "sync/synchronizer.h"
#include "sync/transport/transport.h"

namespace latentd {

class ClusterLink {
 public:
  // Starts the sync server, joins the cluster (blocks until the ring is
  // fixed), starts the synchronizer over `table` and exchanges the initial
  // counts with every member (push ours, wait until all have, pull theirs),
  // applying the corrections: on return the table holds the global counts.
  // A member restarting into a running cluster (same id and address, the
  // ring still lists it) rejoins at the cluster's sweep clock: the owners
  // replace its previous incarnation's counts with the table's, and the
  // members re-seed its new, empty owner shard (docs/design.md, "Restart
  // and rejoin"). `table` must outlive the link, and no sweep may run
  // during Create.
  static absl::StatusOr<std::unique_ptr<ClusterLink>> Create(
      ClusterLinkOptions options, SyncedTopicTable* table);
  // The same for a table of `dimension` coordinates per key that `factory`
  // builds once the ring is fixed (its error is Create's). The table's
  // writer calls AfterWrite() instead of AfterBatch(); Leave() is for
  // topic tables only, GrowKeys() appends keys the table newly holds (a
  // graph node's new vertices). The table must outlive the link.
  static absl::StatusOr<std::unique_ptr<ClusterLink>> Create(
      ClusterLinkOptions options, uint32_t dimension,
      LinkedTableFactory factory);
  ~ClusterLink();  // Stop()

  // Before sweep t (1-based): under SSP waits until every live node has
  // done sweep t − 1 − s (then pulls what they flushed); applies queued
  // corrections. The wait ends with kCancelled, nothing swept, once a
  // drain is requested (the peers it waits for may be paused) or
  // `give_up` (if given) returns true (the node is stopping).
  absl::Status BeforeSweep(uint64_t t,
                           const std::function<bool()>& give_up = nullptr);
  // After a sweep of `batches` batches: under SSP/BSP (or
  // flush_each_sweep) pushes this sweep's deltas and waits for the
  // replies, else kicks a complete round; re-paces the background rounds.
  void EndSweep(uint64_t batches);
  // Tells the peers that sweep t is done (the consistency clock).
  void AnnounceSweep(uint64_t t);
  // The count updater, after applying a batch's deltas (`applied`): logs
  // them as this node's changes (SyncedTopicTable::MarkApplied), starts a
  // background round every 1/rounds_per_sweep of a sweep, and applies the
  // corrections the synchronizer queued (SyncedTopicTable::ApplyPending,
  // whose error it returns). The table's single writer only.
  absl::Status AfterBatch(std::span<const WordTopicDelta> applied);
  // AfterBatch for a LinkedTable, whose writer has marked its own changes:
  // paces the background rounds and applies the queued corrections.
  absl::Status AfterWrite();

  // Pushes this node's remaining deltas, then announces that it samples no
  // more (it stops counting for SSP).
  void Finish();
  // Waits until every live node has finished; false on timeout.
  bool WaitAllFinished(absl::Duration timeout);
  // Waits until every live node that has not finished has announced sweep
  // `t`; false on timeout. The training thread (a leaving graph node
  // waits for the others to take its share over).
  bool WaitPeersPast(uint64_t t, absl::Duration timeout) {
    return clocks_->WaitForMin(t, absl::Now() + timeout);
  }
  // With sampling over everywhere: one full sync pass, then the queued
  // corrections are applied. Nodes are drained when, in a row of passes
  // run one node after another, every node's pass is quiet.
  sync::Synchronizer::PassResult DrainPass();

  // The node is shutting down: it declares nobody down from now on (else
  // a cluster stopped as a whole fails its last nodes over). Any thread.
  void BeginStop() { stopping_.store(true); }
  // Stops the synchronizer, heartbeats and server. Idempotent.
  void Stop();

  const std::string& node_id() const { return node_id_; }
  const std::string& address() const { return address_; }
  uint64_t sweep() const { return sweep_.load(); }
  // The ring of the current epoch (copies: it may change at any time).
  hashring::RingConfig ring_config() const { return follower_->ring_config(); }
  std::shared_ptr<const hashring::Ring> ring() const {
    return follower_->ring();
  }
  uint64_t epoch() const { return follower_->epoch(); }
  // The members of the ring in effect that hold no replica copies
  // (leaving or down; RingFollower::not_backups). Any thread.
  absl::flat_hash_set<std::string> not_backups() const {
    return follower_->not_backups();
  }
  // Key hand-offs of past epochs not yet taken by their new owners.
  size_t pending_handoffs() const { return follower_->pending_handoffs(); }
  // For this node's heartbeat in Redis (`latentctl cluster status` shows
  // them): the documents it trains on, and its part of the cluster's
  // log-likelihood at its latest evaluated sweep (summed there). Any thread.
  void set_documents(uint64_t n) {
    documents_.store(n, std::memory_order_relaxed);
  }
  void set_log_likelihood_part(const sync::LogLikelihoodPart& part) {
    absl::MutexLock lock(&ll_mu_);
    ll_part_ = part;
  }
  // True between the two phases of a ring change (see above).
  bool ring_changing() const { return follower_->ring_changing(); }
  // Drain (sync/control/drain.h): whether one is requested; for the
  // heartbeat, this node's table checksum once a pass found nothing to sync
  // (0: not settled), and that it stopped after a failure. Any thread.
  bool drain_requested() const {
    return liveness_ != nullptr && liveness_->drain_requested();
  }
  void set_settled_checksum(uint64_t checksum) {
    settled_checksum_.store(checksum, std::memory_order_relaxed);
  }
  void set_stopped_failed() { stopped_failed_.store(true); }

  // ---- Leaving (an operator's `latentctl cluster remove-node`) ----
  // Set once the ring has moved to the drain epoch of this node's removal
  // (sync::RemoveNode): the mode asked for. The owner of the sampler must
  // then stop sampling, take this node's documents out of the model as the
  // mode says, and call Leave().
  std::optional<sync::RemoveMode> LeaveRequested() const {
    return follower_->LeaveRequested();
  }
  // Leaves the cluster. REQUIRES: LeaveRequested(), no sweep running and
  // none to come, and (drop) this node's own counts already taken out of
  // the table through its writer (negative deltas, SyncedTopicTable::
  // MarkApplied). Pushes what is left and waits until the owners hold it;
  // ends the drain phase (sync::FinishMove: the next epoch's ring lacks
  // this node); hands every key this node owns to the remaining members;
  // and closes the move. kDeadlineExceeded after join_timeout at any step.
  // Call Stop() afterwards.
  absl::Status Leave(const sync::MoveCounters& counters) {
    return follower_->Leave(counters);
  }
  // Marks this node's removal failed (sync::FailMove at its drain epoch)
  // with `reason`, so that latentctl stops waiting and says why; then
  // LeaveRequested() is empty until the drain epoch of a retried removal
  // (RemoveNode again) is in effect. The node stays a member, leaving;
  // nothing is undone. REQUIRES: LeaveRequested().
  absl::Status FailLeave(std::string_view reason) {
    return follower_->FailLeave(reason);
  }
  // A hand-off's decision (sync::CommitHandoff, RollBackHandoff), at this
  // node's drain epoch. CommitHandoff: every receiver holds the documents
  // staged; from here on the removal only completes forward. RollBackLeave:
  // the hand-off failed before that; the ring takes this node back,
  // active, and the receivers drop what they staged; LeaveRequested() is
  // then empty. kFailedPrecondition if the attempt was decided the other
  // way (or an operator aborted the move). REQUIRES: LeaveRequested().
  absl::Status CommitHandoff() { return follower_->CommitHandoff(); }
  absl::Status RollBackLeave(std::string_view reason) {
    return follower_->RollBackLeave(reason);
  }
  // How long each step of joining or leaving may take (options).
  absl::Duration join_timeout() const { return options_.join_timeout; }
  const sync::SyncCounters& counters() const { return sync_->counters(); }
  // The sync server's connection counters (for /metrics), and the options
  // this link runs with.
  std::shared_ptr<const sync::TransportStats> server_stats() const {
    return server_->shared_stats();
  }
  const ClusterLinkOptions& options() const { return options_; }
  const sync::OwnerShard& owner() const { return *owner_; }
  // Peers the heartbeats currently find unreachable.
  std::vector<std::string> UnavailablePeers() const;

  // ---- Failover ----
  // True once the ring marks this (live) node down: it no longer follows
  // the ring, and its owner must stop sampling (a restart re-admits it).
  bool declared_down() const { return follower_->declared_down(); }
  // Failovers this node took part in as a survivor (epochs marking another
  // member down that it put in effect), and how long the latest took: from
  // its detection (Redis time) to the first sync round this node completed
  // with the new owners. Negative if none yet.
  uint64_t failovers() const { return follower_->failovers(); }
  // The sync server's frame handler: its refusal and hand-off counters
  // (SyncFrameHandler's, thread-safe).
  const SyncFrameHandler& frames() const { return *frames_; }
  // Replicated key state (key_replicas > 1; zeros otherwise): what this
  // owner copies to its backups, and the keys this node holds copies of
  // for other owners.
  sync::OwnerReplicatorStats replication_stats() const {
    return key_replicas_ ? key_replicas_->stats()
                         : sync::OwnerReplicatorStats{};
  }
  size_t replica_keys_held() const { return replicas_->num_keys(); }
  // Members failed over and not yet back nor removed as lost (with
  // key_replicas > 1 their counts are still in the model). Any thread.
  std::vector<std::string> failed_over_members() const {
    return key_replicas_ ? key_replicas_->failed_over()
                         : std::vector<std::string>{};
  }
  double last_failover_seconds() const {
    return static_cast<double>(follower_->last_failover_us()) / 1e6;
  }

  // ---- Growing vocabulary (docs/design.md, "Growing vocabulary in a
  // cluster"; a table constructed with names) ----
  // The keys the owners sent that the table does not hold yet, with their
  // words. Any thread.
  std::vector<std::pair<sync::Key, std::string>> ForeignWords() {
    return sync_->ForeignKeys();
  }
  // Lets the table grow: with no sync round running, calls grow(), which
  // resizes the TopicTable and appends the words to the SyncedTopicTable
  // (AddWords), then routes the new keys by the ring the rounds use and
  // takes in the changes the owners sent for them
  // (Synchronizer::AddKeys; for a LinkedTable, grow() appends the keys it
  // newly holds). grow()'s error is returned (it must then have changed
  // nothing). The training thread, with no sweep running.
  absl::Status GrowKeys(const std::function<absl::Status()>& grow);

 private:
  ClusterLink(ClusterLinkOptions options, SyncedTopicTable* topics,
              uint32_t dimension, LinkedTableFactory factory);
  absl::Status StartServer();
  absl::Status Join();
  // This node's heartbeat for Redis (LivenessMonitor).
  sync::Heartbeat Heartbeat() const;
  // The highest sweep clock the peers report (0 if none answers).
  uint64_t PeersClock();

  const ClusterLinkOptions options_;
  // This node's proof for its outgoing sync connections (null: insecure).
  std::shared_ptr<const sync::PeerAuth> client_auth_;
  // Its TLS for them (null: options_.tls off).
  std::shared_ptr<const sync::TlsContext> client_tls_;
  // The topic table (null for a LinkedTable); the table synchronized and
  // how its corrections are applied (set by Join for a LinkedTable).
  SyncedTopicTable* const topics_;
  sync::AbelianTable* table_;
  std::function<absl::Status()> apply_pending_;
  LinkedTableFactory factory_;
  std::string node_id_;
  std::string address_;
  // The ring changes' phase sets in Redis (made once node_id_ is known).
  std::unique_ptr<EpochPhases> phases_;
  std::unique_ptr<sync::OwnerShard> owner_;
  // Copies of other owners' keys held here.
  std::unique_ptr<sync::ReplicaStore> replicas_;
  // Filled with the members once the ring is known; peers' progress may
  // arrive before that.
  std::unique_ptr<sync::ClockTable> clocks_;
  // The sync port: the frames peers send, and the server.
  std::unique_ptr<SyncFrameHandler> frames_;
  std::unique_ptr<sync::EventLoop> loop_;
  std::unique_ptr<sync::Server> server_;
  // Made by StartServer: the other members' clients and the heartbeats;
  // the replication of this node's own shard.
  std::unique_ptr<PeerSet> peers_;
  std::unique_ptr<KeyReplicas> key_replicas_;
  std::atomic<uint64_t> documents_{0};  // relaxed: a figure for operators
  std::atomic<uint64_t> settled_checksum_{0};
  std::atomic<bool> stopped_failed_{false};
  std::atomic<bool> stopping_{false};  // BeginStop()
  mutable absl::Mutex ll_mu_;
  std::optional<sync::LogLikelihoodPart> ll_part_ ABSL_GUARDED_BY(ll_mu_);
  std::unique_ptr<sync::Synchronizer> sync_;
  std::atomic<uint64_t> sweep_{0};
  std::atomic<bool> finished_{false};
  std::atomic<bool> ready_{false};
  // Count-updater pacing of rounds (see rounds_per_sweep).
  std::atomic<uint64_t> kick_every_{0};
  uint64_t batches_since_kick_ = 0;  // count updater only
  // The ring and its changes (made by StartServer; uses every part above).
  std::unique_ptr<RingFollower> follower_;

  // Set by Stop(): PeersClock's waits return.
  StopSignal stop_;
  // Heartbeats and failure detection (see above).
  std::unique_ptr<LivenessMonitor> liveness_;
  bool stopped_ = false;
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_CLUSTER_LINK_H_
