// OwnerReplicator: replicated key state (docs/design.md, "Replicated key
// state"). A key's global is the sum of what its holders contributed. Each
// live holder keeps its own contributions (Synchronizer, "Restarts") and
// re-seeds them at a key's new owner when the old one fails; the part no
// survivor holds is what the failed owner contributed itself, plus what it
// carries for members already failed over and the unattributed rest. That
// part, and only that part, is what this class copies to each key's k-1
// backups (the next members on the ring, sync/replica_store.h), so that the
// backup which becomes a key's owner after a failure imports it and the
// model still counts every document, the failed node's included, until that
// node returns (its new incarnation's counts replace them) or is removed as
// lost (they are taken out).
//
// Primary-backup, with the owner as the primary, for the owner's own part:
// the owner's synchronizer reaches its own shard through MakeChannel(), which
// applies each batch and answers it only once every backup of the batch's
// keys has acknowledged the batch's deltas (one ordered stream per backup,
// one update in flight, resent after retry_interval until acknowledged or
// the backup leaves the ring). Until then the batch is answered kUnavailable
// every ack_timeout, like a remote owner that does not answer: its resend
// (same sequence; the shard does not apply it twice) waits on the same
// copies. The other senders' deltas are not copied:
// they re-seed. So replication costs each owner's own deltas once per
// backup, not every sender's.
//
// On each ring epoch, SetBackups (before the synchronizer re-routes) names
// the new backups, and Refill (once the shard holds its new keys) sends
// each backup a `reset` and the snapshot of what it must hold
// (OwnerShard::ReplicaSnapshot); the copies are under-replicated until it
// is acknowledged. A backup that answers NoBase (it holds no base of this
// process's copies: it restarted, or the epoch's refill has not reached it
// yet) is sent a refill of its own, unless a reset is already queued to it.
//
// Thread-safety: thread-safe. The channel's Send applies the batch to the
// shard under this class's mutex (so that a refill's snapshot and the
// deltas sent after it never overlap); `send` is called without it and may
// call its `done` on any thread, at once or later.
#ifndef LATENTD_SYNC_OWNER_REPLICATOR_H_
#define LATENTD_SYNC_OWNER_REPLICATOR_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sync/owner_shard.h"
#include "sync/synchronizer.h"
#include "sync/transport/transport.h"

namespace latentd::sync {

struct OwnerReplicatorOptions {
  std::string node_id;  // this owner's member id
  absl::Duration retry_interval = absl::Milliseconds(100);
  // An own batch whose backups have not all acknowledged it this long
  // after it was sent is answered kUnavailable (its sender resends it, same
  // sequence, and is answered once they have): a backup that does not
  // answer makes the owner's own keys wait, never hang.
  absl::Duration ack_timeout = absl::Seconds(2);
  size_t max_entries_per_update = 20000;
  LogFn log = LogToStderr;
};

struct OwnerReplicatorStats {
  uint64_t updates_sent = 0;  // acknowledged
  uint64_t updates_failed = 0;
  uint64_t bytes_sent = 0;  // acknowledged updates' payloads
  // Copies missing: (key, backup) pairs of refills not yet acknowledged or
  // queued to a backup whose last send failed, plus keys with fewer
  // backups than wanted (a ring of fewer than k members).
  uint64_t keys_under_replicated = 0;
  // Refills queued because a backup answered NoBase (sync/replica_store.h).
  uint64_t rebases = 0;
};

class OwnerReplicator {
 public:
  using SendFn =
      std::function<void(const std::string& backup, const ReplicaUpdate& update,
                         std::function<void(absl::Status)> done)>;
  // `shard` must outlive this.
  OwnerReplicator(OwnerReplicatorOptions options, OwnerShard* shard,
                  SendFn send);
  ~OwnerReplicator();  // Stop()

  // The channel to this node's own shard (as MakeLocalChannel), replicating.
  // May be made again for each epoch: every one feeds this replicator.
  std::unique_ptr<OwnerChannel> MakeChannel(std::string name = "self");

  // From now on key k's backups are backups(k) (each a member id, never
  // this node; `wanted` of them when the ring has enough members), and
  // `members` the other members of the ring. Updates queued to a node that
  // is no longer a member are dropped (their batches count as acknowledged:
  // the next Refill copies them to the new backups).
  void SetBackups(uint64_t epoch,
                  std::function<std::vector<std::string>(Key)> backups,
                  std::vector<std::string> members, size_t wanted);
  // Sends each backup (each member) a reset and the shard's snapshot of what
  // it must hold of its keys; live(id): a member of the current ring.
  void Refill(const std::function<bool(const std::string&)>& live);
  // Imports `handoff` into the shard (OwnerShard::ImportKeys) and, in the
  // same critical section as the shard's batches, queues to each backup its
  // keys' whole parts with reset_keys: the deltas that follow then have
  // their base at the backups before the epoch's refill (a key imported
  // and then changed reached them as a change alone, which a take-over
  // after this owner's failure imported without what it changed).
  absl::Status ImportKeys(const KeyHandoff& handoff);

  // Stops sending: every batch awaiting acknowledgement is answered now, and
  // later batches are answered once applied. Idempotent.
  void Stop();

  OwnerReplicatorStats stats() const;

 private:
  class Channel;
  struct Waiter;
  struct Pending {
    ReplicaUpdate update;
    std::shared_ptr<Waiter> waiter;  // null for a refill
    size_t keys = 0;                 // entries of a refill
  };
  struct Stream {
    uint64_t generation = 0;
    uint64_t sequence = 0;
    std::deque<Pending> queue;
    bool inflight = false;
    bool failing = false;
    absl::Time retry_at = absl::InfinitePast();
  };
  using DoneList = std::vector<std::function<void()>>;

  void Send(const DeltaBatch& batch, OwnerChannel::DoneFn done);
  void Enqueue(const std::string& backup, Pending p)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues a reset and the snapshot `e` to every stream's backup, or to
  // *only alone.
  void QueueRefill(const OwnerShard::ReplicaEntries& e, const std::string* only)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues the entries of `e` to the backups of their keys (by_backup: the
  // backups to send to, each getting an update even without entries; *only
  // alone if given), in chunks of max_entries_per_update: a refill (the
  // first chunk a reset), or with `reset_keys` an import (its first chunk
  // drops the backup's copies of the keys listed for it).
  void QueueCopies(
      const OwnerShard::ReplicaEntries& e,
      absl::flat_hash_map<std::string, std::vector<size_t>> by_backup,
      const std::string* only,
      const absl::flat_hash_map<std::string, std::vector<Key>>* reset_keys)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // This node or a member SetBackups named.
  bool Live(const std::string& id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A waiter's update is acknowledged (or dropped).
  void Release(const std::shared_ptr<Waiter>& w, DoneList* dones)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropStream(Stream* s, DoneList* dones)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnSent(const std::string& backup, uint64_t generation, size_t bytes,
              absl::Status status);
  // Answers kUnavailable the waiters past their deadline.
  void ExpireWaiters(DoneList* dones) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop();
  bool WorkReady() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const OwnerReplicatorOptions options_;
  OwnerShard* const shard_;
  const SendFn send_;
  const uint64_t stream_id_;  // random per process

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::function<std::vector<std::string>(Key)> backups_ ABSL_GUARDED_BY(mu_);
  size_t wanted_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t generations_ ABSL_GUARDED_BY(mu_) = 0;
  // The other members of the ring, as SetBackups named them.
  absl::flat_hash_set<std::string> members_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Stream> streams_ ABSL_GUARDED_BY(mu_);
  uint64_t short_keys_ ABSL_GUARDED_BY(mu_) = 0;
  // Own batches whose copies are not all acknowledged, by (sender,
  // incarnation, sequence): a resend waits on the same copies.
  absl::flat_hash_map<std::tuple<std::string, uint64_t, uint64_t>,
                      std::shared_ptr<Waiter>>
      waiting_ ABSL_GUARDED_BY(mu_);
  OwnerReplicatorStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_OWNER_REPLICATOR_H_
