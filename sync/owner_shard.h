// OwnerShard: the global values of the keys this node owns by the ring
// (docs/design.md, "Many nodes"). For each incoming DeltaBatch it applies every
// key's δ (global += δ); a batch whose (node, incarnation, sequence) it has
// already applied is answered without being applied again.
//
// Senders send their tables' changes (sync/synchronizer.h;
// DeltaBatch.changes_only). Per sender (a tracked slot) and key the sender
// holds, the shard keeps the change the sender has not been sent yet (the
// others' deltas, and the global before the sender's first delta), and
// answers with those, so a reply costs what changed, not the length of the
// globals. It keeps the changes of the last reply until the sender's next
// sequence, to send them again if that reply was lost. Past
// kMaxTrackedSenders senders a new one is refused (kResourceExhausted).
//
// Ring epochs and key hand-off (elastic membership): the shard serves one
// ring epoch (SetEpoch). A new batch routed by another epoch is refused
// whole (nothing applied); a batch already applied is answered as a
// duplicate whatever its epoch, so a resend never makes its sender route
// the same deltas elsewhere. When the ring changes, AdvanceEpoch moves to
// the new epoch and removes the keys this node no longer owns in the same
// step, returning them as KeyHandoffs for their new owners, which merge
// them with ImportKeys. The merge is additive (the values are an Abelian
// group, and the deltas the two shards applied are disjoint): a new owner
// may take deltas for its new keys before their hand-off arrives, and the
// result is the same. Sequences are per (sender, owner) channel, so the
// duplicate-detection state does not move: a resent batch goes to the
// owner that got it first, which answers it (for keys it handed off, with
// the changes its last reply carried) without applying it again.
//
// Restarts (docs/design.md, "Restart and rejoin"). The shard also keeps,
// per key and tracked sender, what that sender's incarnation has
// contributed (the sum of the deltas applied from it; it moves with the
// key in a hand-off). Incarnations are drawn increasing
// over time (ClusterLink: the start time in µs, then random bits), so a
// larger one is a later process of the same node id. When a later
// incarnation of a sender first reaches the shard, the earlier one's
// contributions are taken out of the globals (and the other holders told,
// as for any delta) before its first batch applies: a restarted node
// pushes its whole store's counts again without counting them twice. A
// batch from an earlier incarnation than the one tracked is refused
// (kAborted). A batch addressed to another incarnation of this
// owner (DeltaBatch.owner_incarnation: this shard restarted and lost what
// it held) is refused with kAborted and applies nothing; its sender
// re-seeds the shard with its contributions (sync/synchronizer.h).
//
// Admission (docs/operations.md, "Threat model"): with an Admission set
// (SetAdmission), a new batch applies only if its sender is one of the
// admitted members (kPermissionDenied otherwise, before it may take a
// tracked slot), its incarnation is not past the bound
// (kInvalidArgument), every key is one this owner owns in the epoch
// served (kInvalidArgument), and no delta takes a key below zero through
// its sender, for counts (OwnerAdmission::counts): below the sender's own
// contribution to it, so no sender can take away what others contributed
// (kInvalidArgument). A refused batch applies nothing and is counted by
// reason (OwnerShardStats). Without an Admission (a shard outside a ring:
// tests, tools) every sender, key and delta is taken. The keys and deltas
// of this process's own batches (Apply's `origin`) are not checked.
//
// Every key to every holder (growing vocabulary, docs/design.md "Growing
// vocabulary"): a sender whose batches say all_keys is made a holder of
// every key this shard has (its unseen change: the global) when
// it first reaches the shard, and of every key created, imported or handed
// in later, so that it learns keys it has never sent. The shard keeps each
// key's name (the first a batch or hand-off gives it) and sends it with
// the key's change to each such sender once (again if that reply was
// lost).
//
// Thread-safety: thread-safe (one mutex; a batch is applied atomically).
//
// Layout: OwnerShard validates a batch, orders the checks and holds the
// lock; its parts (sync/internal/) own the state: EpochAdmission (the epoch
// served and its admission), KeyTable (the keys, their holders and the
// tracked senders; applies batches) and KeyHandoffs (hand-off export and
// import). OwnerAdmission is declared in sync/owner_admission.h, the wire
// form of sparse vectors (AppendToBlock, BlockReader) in sync/sparse_block.h.
#ifndef LATENTD_SYNC_OWNER_SHARD_H_
#define LATENTD_SYNC_OWNER_SHARD_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "sync/abelian_table.h"
#include "sync/internal/epoch_admission.h"
#include "sync/internal/key_handoffs.h"
#include "sync/internal/key_table.h"
#include "sync/owner_admission.h"
#include "sync/owner_shard_stats.h"
#include "sync/sparse_block.h"
#include "sync/sync.pb.h"

namespace latentd::sync {

class OwnerShard {
 public:
  // Values have `dimension` topics. `awaits_ring`: a ring member's shard
  // (ClusterLink), which refuses every batch until its first SetEpoch
  // (kUnavailable, nothing applied): before it has read its ring a process
  // cannot tell which keys it owns, and a restarted member that took
  // batches then (re-seeds meant for its predecessor's keys) would hold
  // those keys twice once the members handed them back.
  explicit OwnerShard(uint32_t dimension, bool awaits_ring = false);

  // Validates `batch` (changes_only set, matching keys/deltas lengths,
  // canonical sparse vectors, topics < dimension, same dimension, no
  // repeated key) and, if it is new, applies it; fills `reply` with the
  // changes the sender has not been sent yet (see DeltaReply).
  // O(Σ|δ| · holders + changes sent), never O(all keys).
  // A malformed batch changes nothing: kInvalidArgument saying what.
  //
  // `origin`: a peer's batch (over the transport) passes every admission
  // check. This node's own synchronizer, calling in-process
  // (MakeLocalChannel, OwnerReplicator), is trusted as the process
  // itself is: its sender and epoch are checked, its keys and deltas are
  // not (CheckDeltas looks every key up, as applying it does again; for
  // a node's own keys that was a sixth of its sync work).
  enum class Origin { kPeer, kThisProcess };
  absl::Status Apply(const DeltaBatch& batch, DeltaReply* reply,
                     Origin origin = Origin::kPeer);

  // The ring epoch served (0 = unversioned: batches of any epoch apply).
  // Applies to the batches that arrive after the call. An admission set
  // for `epoch` (SetAdmission) takes effect with it.
  void SetEpoch(uint64_t epoch);

  // Admission for ring epoch `epoch`: at once if that is the epoch
  // served, else when SetEpoch or AdvanceEpoch moves to it (so that the
  // owner's key set and epoch change in one step). Replaces any earlier
  // admission for a later epoch than the one served.
  void SetAdmission(uint64_t epoch, OwnerAdmission admission);
  // Whether the admission in effect lists `node_id` (true without one).
  bool Admits(const std::string& node_id) const;
  uint64_t epoch() const;
  // Drawn when this shard was made (DeltaReply.owner_incarnation).
  uint64_t incarnation() const { return incarnation_; }

  // Moves to ring epoch `epoch` and, in the same step, removes every key
  // whose new_owner(key) is not "" (the id of the member that owns it from
  // `epoch` on), returning them (with the holders' unseen changes) as
  // KeyHandoffs of one destination (to_node) and at most
  // `max_keys_per_chunk` keys each, numbered from chunk 0, from
  // `from_node`. A batch routed by the old epoch that arrives afterwards
  // is refused (kFailedPrecondition) and applies nothing. REQUIRES: epoch >
  // epoch(), max_keys_per_chunk > 0.
  std::vector<KeyHandoff> AdvanceEpoch(
      uint64_t epoch, const std::function<std::string(Key)>& new_owner,
      const std::string& from_node, size_t max_keys_per_chunk = 50000);

  // Merges a hand-off into this shard: per key, the global is the sum of
  // both, and a holder lacks what it lacked on either side (the whole of
  // a side it did not hold). Idempotent per (from_node, epoch, chunk): a
  // repeated hand-off returns OK and changes nothing. A holder whose
  // incarnation differs from the one this shard tracks for its id (it
  // restarted) is not carried over. kInvalidArgument for a malformed
  // hand-off (nothing merged); kResourceExhausted if a holder needs a
  // tracked slot and none is free.
  absl::Status ImportKeys(const KeyHandoff& handoff);

  // Forgets a sender that has left the cluster: its tracked slot (unseen
  // changes, pending pushes) is freed for another sender. Its deltas stay
  // in the globals. O(keys).
  void ForgetSender(const std::string& node_id);
  // Forgets a sender that is lost for good and takes what it contributed
  // out of the globals (the other holders are told, as for any delta):
  // the globals then hold only the others' documents. O(keys).
  void RetractSender(const std::string& node_id);

  // Replicated key state (sync/owner_replicator.h): per key, the part of
  // its global that no live member but this owner could re-seed: the
  // contributions of the slots of `self_id` and of every node for which
  // live(node_id) is false (failed over, not yet retracted), and the
  // unattributed rest (the global less every slot's contributions; node_id
  // "" in `contributors`). Empty parts are left out. O(keys · slots).
  struct ReplicaEntries {
    std::vector<HandoffHolder> contributors;
    std::vector<Key> keys;  // per entry
    std::vector<uint32_t> contributor_of;
    std::vector<SparseVector> values;
  };
  // With `only`, the keys it lists alone.
  ReplicaEntries ReplicaSnapshot(
      const std::string& self_id,
      const std::function<bool(const std::string&)>& live,
      const absl::flat_hash_set<Key>* only = nullptr) const;

  // The global value of `key` (empty if never seen).
  SparseVector Global(Key key) const;
  // Every key with its global value, in no particular order.
  std::vector<std::pair<Key, SparseVector>> Snapshot() const;
  OwnerShardStats stats() const;
  // The number of keys this shard holds a global for.
  size_t num_keys() const;
  uint32_t dimension() const { return dimension_; }

 private:
  // Each part owns its state; all of it is guarded by mu_, so that a batch,
  // an epoch change with its hand-offs, or a retraction is one step.
  const uint32_t dimension_;
  const bool awaits_ring_;
  const uint64_t incarnation_;  // random, per OwnerShard
  mutable absl::Mutex mu_;
  // The counts; the parts count into it too.
  OwnerShardStats stats_ ABSL_GUARDED_BY(mu_);
  // The ring epoch served and its admission.
  internal::EpochAdmission admission_ ABSL_GUARDED_BY(mu_);
  // The keys: globals, holders, tracked senders.
  internal::KeyTable keys_ ABSL_GUARDED_BY(mu_);
  // The hand-offs imported.
  internal::KeyHandoffs handoffs_ ABSL_GUARDED_BY(mu_);
  // Highest sequence applied per (node id, incarnation).
  absl::flat_hash_map<std::pair<std::string, uint64_t>, uint64_t> applied_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_OWNER_SHARD_H_
