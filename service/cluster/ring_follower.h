// RingFollower: a member's ring, and its following of each new ring epoch
// (docs/design.md, "Ring epochs: the control plane"). A watcher thread
// polls the ring in Redis (ring_poll) and follows a newer epoch in two
// phases while sampling goes on. Phase 1: the owner shard moves to the new
// epoch and hands the keys it no longer owns to their new owners
// (OwnerShard::AdvanceEpoch, sent as KeyHandoff frames, retried until each
// is imported); once all are taken this node joins the epoch's "handoff"
// set (EpochPhases). Phase 2, once every member of the old ring is in that
// set: the synchronizer re-routes its rounds (Synchronizer::Reroute), and
// members that left stop counting for SSP. Between the phases the owners
// refuse batches routed by the old ring (they are sent again later), so a
// key's changes reach every holder in order. One change at a time: a newer
// epoch seen during a change waits. A node that skipped epochs marks their
// phase sets too, so that nobody waits at one of them forever.
//
// A member removed as lost (remove-node --lost) or failed over is never
// waited for: once the ring lacks it, each member settles what it
// contributed (KeyReplicas::SettleDeparted), re-seeds the keys it owned at
// their new owners (Reroute), and the last member to put that ring in
// effect ends the move. A ring that no longer lists this node is followed
// only while this node leaves (Leave); one that marks it down while alive
// makes it stop following (declared_down). Redis restarted empty gets the
// ring back from the members (the first write wins).
//
// Thread-safety: the accessors from any thread; Leave and FailLeave from
// the link owner's thread; SetInitialRing, ChannelsFor, Start and Stop from
// the link's (Create, Stop).
#ifndef LATENTD_SERVICE_CLUSTER_RING_FOLLOWER_H_
#define LATENTD_SERVICE_CLUSTER_RING_FOLLOWER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/stop_signal.h"
#include "hashring/ring.h"
#include "service/cluster/cluster_link_options.h"
#include "service/cluster/epoch_phases.h"
#include "service/cluster/key_replicas.h"
#include "service/cluster/peer_set.h"
#include "service/cluster/sync_frame_handler.h"
#include "sync/consistency.h"
#include "sync/control/cluster_admin.h"
#include "sync/owner_shard.h"
#include "sync/synchronizer.h"

namespace latentd {

class RingFollower {
 public:
  struct Parts {
    // Not owned; each outlives the follower.
    sync::OwnerShard* owner = nullptr;
    sync::ClockTable* clocks = nullptr;
    PeerSet* peers = nullptr;
    KeyReplicas* key_replicas = nullptr;
    const EpochPhases* phases = nullptr;
    SyncFrameHandler* frames = nullptr;
    std::string node_id;
    // Whether the table holds topic counts (which never go negative).
    bool counts = true;
    // Pushes this node's remaining changes and says it samples no more
    // (ClusterLink::Finish), for Leave.
    std::function<void()> finish;
  };
  // `options` (not owned) outlives the follower.
  RingFollower(const ClusterLinkOptions* options, Parts parts)
      : options_(*options), parts_(std::move(parts)) {}
  ~RingFollower() { Stop(); }

  // The ring this node starts with: the owner shard's admission and epoch.
  void SetInitialRing(hashring::RingConfig config,
                      std::shared_ptr<const hashring::Ring> ring);
  // A channel to each member of `config` (peers created as needed; each
  // added to the clock table), in the order of its members.
  absl::StatusOr<std::vector<std::unique_ptr<sync::OwnerChannel>>> ChannelsFor(
      const hashring::RingConfig& config);
  // Starts the watcher (with ring_poll > 0) over the rounds of `sync`,
  // which synchronizes `table`; both outlive the follower.
  void Start(sync::Synchronizer* sync, sync::AbelianTable* table);
  // Returns once the watcher has. Idempotent.
  void Stop();

  // The ring of the current epoch (copies: it may change at any time).
  hashring::RingConfig ring_config() const;
  std::shared_ptr<const hashring::Ring> ring() const;
  uint64_t epoch() const;
  // The members of the ring in effect that hold no replica copies: those
  // the cluster marks leaving or down, read from Redis with each epoch
  // (empty until read). Any thread.
  absl::flat_hash_set<std::string> not_backups() const;
  // Runs `add` with no ring change taking effect meanwhile, with the ring
  // the rounds route by (new keys are routed by it).
  absl::Status WithRoute(
      const std::function<absl::Status(const hashring::Ring&)>& add);
  // Key hand-offs of past epochs not yet taken by their new owners.
  size_t pending_handoffs() const { return outgoing_count_.load(); }
  // True between the two phases of a ring change.
  bool ring_changing() const { return ring_changing_.load(); }

  // Leaving: see ClusterLink::LeaveRequested, Leave and FailLeave.
  std::optional<sync::RemoveMode> LeaveRequested() const;
  // A restart in the drain epoch of this node's removal: leaving resumes.
  void ResumeLeave(sync::RemoveMode mode);
  absl::Status Leave(const sync::MoveCounters& counters);
  absl::Status FailLeave(std::string_view reason);
  absl::Status CommitHandoff();
  absl::Status RollBackLeave(std::string_view reason);
  bool leaving() const { return leaving_.load(); }

  // Failover: see ClusterLink::declared_down, failovers and
  // last_failover_seconds.
  bool declared_down() const { return declared_down_.load(); }
  uint64_t failovers() const { return failovers_.load(); }
  int64_t last_failover_us() const { return last_failover_us_.load(); }

 private:
  void Watch();
  // Writes this node's ring (and its members' addresses) back to a Redis
  // that lost it (SET NX: the first member to do so wins).
  absl::Status RegisterRingAgain(sync::RedisClient* redis);
  // Phase 1 of the move to `next` (a newer epoch listing this node, or not
  // once Leave() has begun).
  absl::Status BeginRingChange(const hashring::RingConfig& next,
                               sync::RedisClient* redis);
  // Marks this node's hand-off done in Redis once it is, and runs phase 2
  // once every old member's is.
  absl::Status AdvanceRingChange(sync::RedisClient* redis);
  // Sends the pending hand-offs; those that fail stay for the next try.
  void SendHandoffs();
  // What this node's owner shard takes at `config`'s epoch (sync::
  // OwnerAdmission): batches from the members of `config` (and of `also`,
  // the ring being left, if given), for the keys `ring` gives this node,
  // from incarnations up to this node's clock plus sync::kMaxClockSkew.
  sync::OwnerAdmission AdmissionFor(
      const hashring::RingConfig& config,
      std::shared_ptr<const hashring::Ring> ring,
      const hashring::RingConfig* also = nullptr) const;

  const ClusterLinkOptions& options_;
  const Parts parts_;
  sync::Synchronizer* sync_ = nullptr;   // set by Start
  sync::AbelianTable* table_ = nullptr;  // set by Start

  // Held while keys are added (WithRoute) and while the rounds move to a
  // new ring (the keys' owners computed, Reroute, ring_ updated).
  absl::Mutex route_mu_;
  mutable absl::Mutex ring_mu_;
  hashring::RingConfig ring_config_ ABSL_GUARDED_BY(ring_mu_);
  std::shared_ptr<const hashring::Ring> ring_ ABSL_GUARDED_BY(ring_mu_);
  // not_backups() and the epoch it was read for (0: none yet).
  absl::flat_hash_set<std::string> not_backups_ ABSL_GUARDED_BY(ring_mu_);
  uint64_t not_backups_epoch_ ABSL_GUARDED_BY(ring_mu_) = 0;

  // Watcher thread only: hand-offs not yet imported by their new owners,
  // the last epoch whose refusal was logged, and the change in progress.
  std::vector<sync::KeyHandoff> outgoing_;
  uint64_t refused_epoch_ = 0;
  struct RingChange {
    hashring::RingConfig next;
    std::shared_ptr<const hashring::Ring> ring;
    bool marked = false;  // in the epoch's hand-off set
    absl::Time since;
    bool warned = false;
    // The drain epoch of this node's removal: LeaveRequested() once it is
    // in effect.
    std::optional<sync::RemoveMode> leave;
    // Members being removed as lost or failed over: never waited for.
    std::vector<std::string> lost;
    // A failover epoch: how old its detection was (Redis time) when this
    // node began following it (at `since`).
    bool failover = false;
    int64_t detected_age_ms = 0;
    // not_backups() as read when the change began (unset: not read).
    std::optional<absl::flat_hash_set<std::string>> not_backups;
  };
  std::optional<RingChange> change_;
  // Puts the ring `c` moves to in effect here (ring_config(), ring() and,
  // when read, not_backups()).
  void TakeRing(const RingChange& c);
  // Reads not_backups() for the ring in effect unless it is read already.
  absl::Status RefreshNotBackups(sync::RedisClient* redis);
  // A Redis connection for FailLeave, CommitHandoff and RollBackLeave;
  // kFailedPrecondition unless this node's removal is running.
  absl::StatusOr<std::unique_ptr<sync::RedisClient>> LeavingRedis() const;
  std::atomic<size_t> outgoing_count_{0};
  std::atomic<bool> ring_changing_{false};
  // Keys and bytes handed off by the latest change.
  std::atomic<uint64_t> handoff_keys_out_{0};
  std::atomic<uint64_t> handoff_bytes_out_{0};

  // Leaving: the removal's mode once its drain epoch is in effect (watcher
  // writes, any thread reads); whether Leave() runs; set by the watcher
  // once this node's keys are all at the remaining members.
  mutable absl::Mutex leave_mu_;
  std::optional<sync::RemoveMode> leave_mode_ ABSL_GUARDED_BY(leave_mu_);
  std::atomic<bool> leaving_{false};
  std::atomic<bool> left_{false};
  std::atomic<bool> declared_down_{false};
  std::atomic<uint64_t> failovers_{0};
  std::atomic<int64_t> last_failover_us_{-1000000};

  StopSignal stop_;
  std::thread watcher_;
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_RING_FOLLOWER_H_
