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
//                                                  // for the ring, exchanges
//                                                  // the initial counts
//   per sweep t: link.BeforeSweep(t); run the pipeline;
//                link.EndSweep(batches); link.AnnounceSweep(t)
//   at the end:  link.Finish(); link.WaitAllFinished(..); link.DrainPass()
//
// Ring epochs: the link polls the ring in Redis (ring_poll) and follows a
// newer epoch in two phases while sampling goes on. Phase 1: its owner
// shard moves to the new epoch and hands the keys it no longer owns to
// their new owners (OwnerShard::AdvanceEpoch, sent as KeyHandoff frames,
// retried until each is imported); once all are taken it adds itself to
// the epoch's hand-off set in Redis (latentd:NAME:handoff:EPOCH). Phase 2,
// once every member of the old ring is in that set (every key is at its
// new owner): its synchronizer re-routes its rounds (Synchronizer::
// Reroute) and members that left the ring stop counting for SSP. Between
// the phases the owners refuse batches routed by the old ring (they are
// sent again later), so a key's changes reach every holder in order. A
// ring that no longer lists this node is not followed here: leaving is
// the link owner's (LatentdService's remove-node --drop / --handoff, see
// LeaveRequested); the link logs it and stays at its epoch. One change at a
// time: a newer epoch seen during a change waits. A member removed as lost
// (remove-node --lost) is never waited for: once the ring lacks it, each member
// takes what it contributed out of its owner shard (OwnerShard::RetractSender),
// re-seeds the keys it owned at their new owners (Synchronizer::Reroute), and
// the last member to put that ring in effect ends the move. A node that skips
// an epoch (two were written before it polled) marks the skipped ones' phase
// sets too, so that members waiting at the skipped epoch are not held forever.
//
// Failure detection and failover (docs/design.md, "Failure detection and
// failover"), with failure_timeout > 0: a liveness thread writes this
// node's heartbeat and alive key (TTL failure_timeout) to Redis every
// failure_timeout / 5, and looks for ring members whose heartbeat is older
// than failure_timeout; the first member to see one declares it down
// (sync::DeclareDown, compare-and-set: one wins). The epoch that marks it
// down is followed as a lost member's removal is: its counts leave the
// globals and the keys it owned are re-seeded at their new owners. A down
// node restarted from its data directory puts itself back in the ring
// (sync::ReturnNode) and joins as an admitted node does: the members hand
// its keys back, then it pushes its store's counts. A node that finds
// itself declared down while alive (its heartbeats were late) stops
// following the ring (declared_down()): its owner must stop sampling; a
// restart re-admits it.
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
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/log.h"
#include "hashring/ring.h"
#include "sampler/synced_table.h"
#include "service/cluster/cluster_link_options.h"
#include "service/cluster/peer_set.h"
#include "sync/consistency.h"
#include "sync/control/cluster_admin.h"
#include "sync/control/membership.h"
#include "sync/owner_replicator.h"
#include "sync/owner_shard.h"
#include "sync/replica_store.h"
#include "sync/synchronizer.h"
#include "sync/transport/transport.h"

namespace latentd {

class FailureJudge;
namespace internal {
class JoinRedis;
}  // namespace internal

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
  // corrections.
  absl::Status BeforeSweep(uint64_t t);
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
  // With sampling over everywhere: one full sync pass, then the queued
  // corrections are applied. Nodes are drained when, in a row of passes
  // run one node after another, every node's pass is quiet.
  sync::Synchronizer::PassResult DrainPass();

  // Stops the synchronizer, heartbeats and server. Idempotent.
  void Stop();

  const std::string& node_id() const { return node_id_; }
  const std::string& address() const { return address_; }
  uint64_t sweep() const { return sweep_.load(); }
  // The ring of the current epoch (copies: it may change at any time).
  hashring::RingConfig ring_config() const;
  std::shared_ptr<const hashring::Ring> ring() const;
  uint64_t epoch() const;
  // Key hand-offs of past epochs not yet taken by their new owners.
  size_t pending_handoffs() const;
  // The documents this node trains on, for its heartbeat in Redis (about
  // once a second, with its sweep and the keys it owns; `latentctl cluster
  // status` shows it). Any thread.
  void set_documents(uint64_t n) {
    documents_.store(n, std::memory_order_relaxed);
  }
  // True between the two phases of a ring change (see above).
  bool ring_changing() const { return ring_changing_.load(); }

  // ---- Leaving (an operator's `latentctl cluster remove-node`) ----
  // Set once the ring has moved to the drain epoch of this node's removal
  // (sync::RemoveNode): the mode asked for. The owner of the sampler must
  // then stop sampling, take this node's documents out of the model as the
  // mode says, and call Leave().
  std::optional<sync::RemoveMode> LeaveRequested() const;
  // Leaves the cluster. REQUIRES: LeaveRequested(), no sweep running and
  // none to come, and (drop) this node's own counts already taken out of
  // the table through its writer (negative deltas, SyncedTopicTable::
  // MarkApplied). Pushes what is left and waits until the owners hold it;
  // ends the drain phase (sync::FinishMove: the next epoch's ring lacks
  // this node); hands every key this node owns to the remaining members;
  // and closes the move. kDeadlineExceeded after join_timeout at any step.
  // Call Stop() afterwards.
  absl::Status Leave(const sync::MoveCounters& counters);
  // Marks this node's removal failed (sync::FailMove at its drain epoch)
  // with `reason`, so that latentctl stops waiting and says why; then
  // LeaveRequested() is empty until the drain epoch of a retried removal
  // (RemoveNode again) is in effect. The node stays a member, leaving;
  // nothing is undone. REQUIRES: LeaveRequested().
  absl::Status FailLeave(std::string_view reason);
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
  bool declared_down() const { return declared_down_.load(); }
  // Failovers this node took part in as a survivor (epochs marking another
  // member down that it put in effect), and how long the latest took: from
  // its detection (Redis time) to the first sync round this node completed
  // with the new owners. Negative if none yet.
  uint64_t failovers() const { return failovers_.load(); }
  // Frames refused as speaking for a node other than the one their
  // connection proved (CheckSender), and key hand-offs refused as from a
  // node the owner does not admit.
  uint64_t sender_mismatches() const { return sender_mismatches_.load(); }
  uint64_t handoffs_refused() const { return handoffs_refused_.load(); }
  // Replica updates refused as from a node the owner does not admit.
  uint64_t replicas_refused() const { return replicas_refused_.load(); }
  // Progress frames refused as from a node that is neither a member the
  // owner admits nor one the cluster's registry in Redis lists (members or
  // pending joiners); see HandleFrame.
  uint64_t progress_refused() const { return progress_refused_.load(); }
  // Replicated key state (key_replicas > 1; zeros otherwise): what this
  // owner copies to its backups, and the keys this node holds copies of
  // for other owners.
  sync::OwnerReplicatorStats replication_stats() const {
    return replicator_ ? replicator_->stats() : sync::OwnerReplicatorStats{};
  }
  size_t replica_keys_held() const { return replicas_->num_keys(); }
  // Members failed over and not yet back nor removed as lost (with
  // key_replicas > 1 their counts are still in the model). Any thread.
  std::vector<std::string> failed_over_members() const {
    absl::MutexLock l(&failed_over_mu_);
    return failed_over_;
  }
  double last_failover_seconds() const {
    return static_cast<double>(last_failover_us_.load()) / 1e6;
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
  // OK unless `request` came on an authenticated connection of a node
  // other than `claimed` (then logged, kPermissionDenied).
  absl::Status CheckSender(const sync::Frame& request,
                           const std::string& claimed);
  absl::Status Join();
  // What this node's owner shard takes at `config`'s epoch (sync::
  // OwnerAdmission): batches from the members of `config` (and of `also`,
  // the ring being left, if given), for the keys `ring` gives this node,
  // from incarnations up to this node's clock plus sync::kMaxClockSkew.
  sync::OwnerAdmission AdmissionFor(
      const hashring::RingConfig& config,
      std::shared_ptr<const hashring::Ring> ring,
      const hashring::RingConfig* also = nullptr) const;
  // The joining steps (cluster_link_join.cc), each through `redis`, which
  // retries while Redis is briefly away (internal/join_redis.h).
  // With `join`: registers as pending and returns the ring that admits
  // this node.
  absl::StatusOr<hashring::RingConfig> AwaitAdmission(
      internal::JoinRedis& redis);
  // Whether the cluster holds this node as down (restarted after a
  // failover).
  absl::StatusOr<bool> IsDown(internal::JoinRedis& redis) const;
  // A down node back: puts it in the ring again once no move runs
  // (sync::ReturnNode) and returns that ring.
  absl::StatusOr<hashring::RingConfig> AwaitReturn(internal::JoinRedis& redis);
  // The liveness thread: heartbeats and failure detection (see above).
  void LivenessLoop();
  // Reads the cluster's status for `judge` and declares down the member it
  // names (only learning who beats unless `may_declare`).
  absl::Status DetectFailure(sync::RedisClient* redis, FailureJudge* judge,
                             bool may_declare);
  // Marks `phase` of every epoch in (from, to] (at most the last 1000).
  absl::Status MarkPhases(sync::RedisClient* redis, const char* phase,
                          uint64_t from, uint64_t to);
  // The Redis set of the members that finished `phase` ("handoff": handed
  // their keys off; "effect": re-routed) of ring epoch `epoch`, marking
  // this node in it, and the other members of `members` not in it.
  std::string PhaseSet(const char* phase, uint64_t epoch) const;
  absl::Status MarkPhase(sync::RedisClient* redis, const char* phase,
                         uint64_t epoch);
  // (Members in `skip`, lost ones, are not waited for.)
  absl::StatusOr<std::vector<std::string>> NotInPhase(
      sync::RedisClient* redis, const char* phase, uint64_t epoch,
      const hashring::RingConfig& members,
      const std::vector<std::string>& skip = {});
  // Waits until every other member of `config` is in its epoch's `phase`
  // set; kDeadlineExceeded naming one that is not, after `deadline`.
  absl::Status AwaitPhase(sync::RedisClient* redis,
                          const hashring::RingConfig& config, const char* phase,
                          absl::Time deadline);
  // A channel to each member of `config` (peers created as needed; each
  // added to the clock table), in the order of its members.
  absl::StatusOr<std::vector<std::unique_ptr<sync::OwnerChannel>>> ChannelsFor(
      const hashring::RingConfig& config);
  // The highest sweep clock the peers report (0 if none answers).
  uint64_t PeersClock();
  void HandleFrame(sync::Frame request, sync::Responder responder);
  // Logs a refusal of a peer's frame, at most one line per few seconds.
  void LogRefusal(log::Throttle& throttle, const std::string& line);
  // The ring watcher thread: polls Redis, follows new epochs, resends
  // hand-offs, and re-reads the registry when progress came from an id it
  // did not list (RefreshRegistry).
  void WatchRing();
  // Replaces registry_ids_ with the ids Redis lists as members or pending.
  // Watcher thread.
  absl::Status RefreshRegistry(sync::RedisClient* redis);
  // Whether the registry, as last read, lists `id`. Any thread.
  bool InRegistry(const std::string& id) const;
  // Writes this node's ring (and its members' addresses) back to a Redis
  // that lost it (SET NX: the first member to do so wins). Watcher thread.
  absl::Status RegisterRingAgain(sync::RedisClient* redis);
  // Phase 1 of the move to `next` (a newer epoch listing this node, or
  // not once Leave() has begun).
  absl::Status BeginRingChange(const hashring::RingConfig& next,
                               sync::RedisClient* redis);
  // Marks this node's hand-off done in Redis once it is, and runs phase 2
  // once every old member's is. Watcher thread.
  absl::Status AdvanceRingChange(sync::RedisClient* redis);
  // Sends the pending hand-offs; those that fail stay for the next try.
  void SendHandoffs();
  // Waits up to `d` unless stopping; false once stopping.
  bool SleepUnlessStopping(absl::Duration d);

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
  std::unique_ptr<sync::OwnerShard> owner_;
  // Copies of other owners' keys held here, and (key_replicas > 1) the
  // replicator of this node's own shard (see ClusterLinkOptions).
  std::unique_ptr<sync::ReplicaStore> replicas_;
  std::unique_ptr<sync::OwnerReplicator> replicator_;
  // Failed-over members whose counts are kept (key_replicas > 1) until
  // they return or are removed as lost. Ring-watch thread only.
  std::vector<std::string> kept_down_;
  mutable absl::Mutex failed_over_mu_;
  std::vector<std::string> failed_over_ ABSL_GUARDED_BY(failed_over_mu_);
  // Names the backups of `config`'s ring to the replicator (before its
  // synchronizer re-routes by that ring). A `lost` member is no backup even
  // while the ring lists it (its drain epoch): nobody waits for its copies.
  absl::Status SetReplicaBackups(const hashring::RingConfig& config,
                                 const std::vector<std::string>& lost = {});
  // Sends the backups a refill; live: the members of `config`.
  void RefillReplicas(const hashring::RingConfig& config);
  // The replicator's transport: one ReplicaUpdate to a backup.
  void SendReplicaUpdate(const std::string& backup,
                         const sync::ReplicaUpdate& update,
                         std::function<void(absl::Status)> done);
  // Failover (phase 1): imports the copies held here of `dead`'s keys that
  // this node owns in the new ring (`owns`), and drops the rest.
  void TakeOverReplicas(const std::string& dead, uint64_t epoch,
                        const std::function<bool(sync::Key)>& owns);
  // Filled with the members once the ring is known; peers' progress may
  // arrive before that.
  std::unique_ptr<sync::ClockTable> clocks_;
  // Held while keys are added (GrowKeys) and while the rounds move to a
  // new ring (the keys' owners computed, Reroute, ring_ updated).
  absl::Mutex route_mu_;
  mutable absl::Mutex ring_mu_;
  hashring::RingConfig ring_config_ ABSL_GUARDED_BY(ring_mu_);
  std::shared_ptr<const hashring::Ring> ring_ ABSL_GUARDED_BY(ring_mu_);
  std::unique_ptr<sync::EventLoop> loop_;
  std::unique_ptr<sync::Server> server_;
  // The other members' clients and the heartbeats (made by StartServer).
  std::unique_ptr<PeerSet> peers_;
  // Watcher thread only: hand-offs not yet imported by their new owners,
  // and the last epoch whose refusal was logged.
  std::vector<sync::KeyHandoff> outgoing_;
  std::atomic<size_t> outgoing_count_{0};
  uint64_t refused_epoch_ = 0;
  // The ring change in progress (watcher thread only).
  struct RingChange {
    hashring::RingConfig next;
    std::shared_ptr<const hashring::Ring> ring;
    bool marked = false;  // in the epoch's hand-off set
    absl::Time since;
    bool warned = false;
    // The drain epoch of this node's removal: LeaveRequested() once it is
    // in effect.
    std::optional<sync::RemoveMode> leave;
    // Members being removed as lost (remove-node --lost) or failed over:
    // never waited for; once out of the ring, what they contributed is
    // taken out of this owner's globals and the keys they owned are
    // re-seeded at their new owners (Synchronizer::Reroute).
    std::vector<std::string> lost;
    // A failover epoch: how old its detection was (Redis time) when this
    // node began following it (at `since`).
    bool failover = false;
    int64_t detected_age_ms = 0;
  };
  std::optional<RingChange> change_;
  std::atomic<bool> ring_changing_{false};
  // Keys and bytes other owners handed to this one (move reports).
  std::atomic<uint64_t> handoff_keys_in_{0};
  std::atomic<uint64_t> handoff_bytes_in_{0};
  std::atomic<uint64_t> handoff_keys_out_{0};  // by the latest change
  std::atomic<uint64_t> handoff_bytes_out_{0};
  std::atomic<uint64_t> documents_{0};  // relaxed: a figure for operators
  // Leaving: the removal's mode once its drain epoch is seen (watcher
  // thread writes, any reads); whether Leave() runs; set by the watcher
  // once this node's keys are all at the remaining members.
  mutable absl::Mutex leave_mu_;
  std::optional<sync::RemoveMode> leave_mode_ ABSL_GUARDED_BY(leave_mu_);
  std::atomic<bool> leaving_{false};
  std::atomic<bool> left_{false};
  std::atomic<bool> declared_down_{false};
  std::atomic<uint64_t> failovers_{0};
  std::atomic<int64_t> last_failover_us_{-1000000};
  std::unique_ptr<sync::Synchronizer> sync_;
  std::atomic<uint64_t> sweep_{0};
  std::atomic<bool> finished_{false};
  std::atomic<bool> ready_{false};
  // Count-updater pacing of rounds (see rounds_per_sweep).
  std::atomic<uint64_t> kick_every_{0};
  uint64_t batches_since_kick_ = 0;  // count updater only

  // Set by Stop(): the ring watcher and liveness threads return.
  absl::Mutex stop_mu_;
  bool stopping_ ABSL_GUARDED_BY(stop_mu_) = false;
  std::thread ring_watch_;
  std::atomic<uint64_t> sender_mismatches_{0};
  std::atomic<uint64_t> handoffs_refused_{0};
  std::atomic<uint64_t> replicas_refused_{0};
  std::atomic<uint64_t> progress_refused_{0};
  // The ids the cluster's registry (Redis members and pending hashes)
  // listed when last read; progress from an id the owner does not admit
  // is kept aside (a joiner a ring not reached here yet names) only for
  // these. Read again by the watcher once progress from another id came
  // (registry_stale_), so at most once per ring_poll.
  mutable absl::Mutex registry_mu_;
  absl::flat_hash_set<std::string> registry_ids_ ABSL_GUARDED_BY(registry_mu_);
  std::atomic<bool> registry_stale_{false};
  // Refusals of a peer's frames can come at any rate: at most one line a
  // second of each kind (with how many were held back).
  log::Throttle mismatch_log_{absl::Seconds(1)};
  log::Throttle not_member_log_{absl::Seconds(1)};
  log::Throttle invalid_log_{absl::Seconds(1)};
  log::Throttle handoff_log_{absl::Seconds(1)};
  log::Throttle replica_log_{absl::Seconds(1)};
  log::Throttle progress_log_{absl::Seconds(1)};
  std::thread liveness_;
  bool stopped_ = false;
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_CLUSTER_LINK_H_
