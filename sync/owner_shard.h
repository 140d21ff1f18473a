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
// tests, tools) every sender, key and delta is taken.
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
#ifndef LATENTD_SYNC_OWNER_SHARD_H_
#define LATENTD_SYNC_OWNER_SHARD_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sync/abelian_table.h"
#include "sync/sync.pb.h"

namespace latentd::sync {

struct OwnerShardStats {
  uint64_t batches_applied = 0;
  uint64_t batches_duplicate = 0;
  uint64_t keys_applied = 0;
  // Restarted senders whose earlier incarnation's contributions were taken
  // out, and the keys (and Σ|count|) that took.
  uint64_t senders_retracted = 0;
  uint64_t keys_retracted = 0;
  uint64_t counts_retracted = 0;
  // Batches refused as addressed to an earlier incarnation of this owner
  // (each makes its sender re-seed).
  uint64_t batches_reseed_refused = 0;
  // New batches refused as stale: from a sender incarnation superseded by a
  // later one, or routed by an earlier ring epoch (nothing applied).
  uint64_t batches_stale_refused = 0;
  // New batches refused by admission (see the file comment); nothing of
  // them was applied and no tracked slot was taken.
  uint64_t refused_not_member = 0;   // sender not an admitted member
  uint64_t refused_incarnation = 0;  // incarnation past the bound
  uint64_t refused_key_not_owned = 0;
  uint64_t refused_negative = 0;  // would take a key below the sender's part
  uint64_t refused_too_many_keys = 0;  // past max_new_keys_per_sender
};

// Who may send this owner batches, and what it owns, for one ring epoch.
struct OwnerAdmission {
  // The ids whose batches apply: the ring's members (during a ring change
  // the old ring's and the new one's, so that a joiner is served in its
  // own hand-off). Empty: every sender.
  absl::flat_hash_set<std::string> members;
  // Whether this owner owns `key` in the epoch; null: every key. Called
  // under the shard's lock: it must not call back into the shard.
  std::function<bool(Key)> owns;
  // The largest sender incarnation taken now (called per batch); null: no
  // bound. ClusterLink: IncarnationBound(absl::Now(), kMaxClockSkew).
  std::function<uint64_t()> max_incarnation;
  // The values are counts (topic counts; not a graph's fixed-point
  // coordinates): no sender may take a key below its own part, nor move
  // a count by more than 2^31 at once.
  bool counts = false;
  // The most keys one sender (by node id) may create at this owner in an
  // epoch, so that no member can grow an owner's memory without bound
  // with made-up keys; a batch that would pass it is refused whole. Keys
  // that arrive by a hand-off or a replica copy are not counted. 0: no
  // bound.
  uint64_t max_new_keys_per_sender = 0;
};

// Sender incarnations as ClusterLink draws them: µs since 1970 at the
// start, shifted left 12 bits, then 12 random bits; increasing over time.
uint64_t IncarnationAt(absl::Time start, uint32_t random_bits);
// The largest incarnation a process started by `now + skew` can have.
uint64_t IncarnationBound(absl::Time now, absl::Duration skew);
// How far ahead of an owner's clock a sender's may run (its incarnation
// is refused past that): NTP keeps members within milliseconds.
inline constexpr absl::Duration kMaxClockSkew = absl::Minutes(10);

class OwnerShard {
 public:
  // Values have `dimension` topics.
  explicit OwnerShard(uint32_t dimension);

  // Validates `batch` (changes_only set, matching keys/deltas lengths,
  // canonical sparse vectors, topics < dimension, same dimension, no
  // repeated key) and, if it is new, applies it; fills `reply` with the
  // changes the sender has not been sent yet (see DeltaReply).
  // O(Σ|δ| · holders + changes sent), never O(all keys).
  // A malformed batch changes nothing: kInvalidArgument saying what.
  absl::Status Apply(const DeltaBatch& batch, DeltaReply* reply);

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
  ReplicaEntries ReplicaSnapshot(
      const std::string& self_id,
      const std::function<bool(const std::string&)>& live) const;

  // The global value of `key` (empty if never seen).
  SparseVector Global(Key key) const;
  // Every key with its global value, in no particular order.
  std::vector<std::pair<Key, SparseVector>> Snapshot() const;
  OwnerShardStats stats() const;
  // The number of keys this shard holds a global for.
  size_t num_keys() const;
  uint32_t dimension() const { return dimension_; }

 private:
  const uint32_t dimension_;
  const uint64_t incarnation_;  // random, per OwnerShard
  mutable absl::Mutex mu_;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  // The admission in effect (unset: every sender), and one waiting for its
  // epoch.
  std::optional<OwnerAdmission> admission_ ABSL_GUARDED_BY(mu_);
  std::optional<std::pair<uint64_t, OwnerAdmission>> next_admission_
      ABSL_GUARDED_BY(mu_);
  // Keys each sender created in this epoch (OwnerAdmission::
  // max_new_keys_per_sender); cleared when the epoch changes.
  absl::flat_hash_map<std::string, uint64_t> keys_created_ ABSL_GUARDED_BY(mu_);
  // Moves to `epoch`, taking a waiting admission for it into effect.
  void EnterEpoch(uint64_t epoch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Admission's checks of a new batch: sender, incarnation, keys, and
  // that no delta takes a key below the sender's part (see the file
  // comment). Changes nothing but the refusal counters.
  absl::Status Admit(const DeltaBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckDeltas(const DeltaBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hand-offs imported: (from_node, epoch, chunk).
  absl::flat_hash_set<std::tuple<std::string, uint64_t, uint32_t>> imported_
      ABSL_GUARDED_BY(mu_);
  struct GlobalValue {
    // Sparse, until it holds more than half of the topics; then dense
    // (dense[k] is topic k's count) and `value` is empty, so that adding a
    // delta costs the delta, not the length of the value.
    SparseVector value;
    std::vector<int64_t> dense;
    // Bit s: tracked sender slot s holds this key (has sent it).
    uint64_t holders = 0;
    // Bit s: changed since slot s last got it (and listed in its changed).
    uint64_t pending = 0;
    // Per tracked slot: the change not yet sent to it (its holder bit set;
    // empty if none).
    std::vector<SparseVector> unseen;
    // Per tracked slot: the sum of the deltas its incarnation applied to
    // this key (taken out again if it restarts).
    std::vector<SparseVector> contributed;
    // The key's name ("" until a batch or hand-off names it), and bit s:
    // slot s has been told it (or told it to this shard).
    std::string name;
    uint64_t named = 0;
  };
  absl::flat_hash_map<Key, GlobalValue> globals_ ABSL_GUARDED_BY(mu_);
  // Highest sequence applied per (node id, incarnation).
  absl::flat_hash_map<std::pair<std::string, uint64_t>, uint64_t> applied_
      ABSL_GUARDED_BY(mu_);
  // Change tracking for up to kMaxTrackedSenders sender ids (a restarted
  // sender, new incarnation, takes its id's slot over).
  static constexpr int kMaxTrackedSenders = 64;
  struct Tracked {
    std::string node_id;
    uint64_t incarnation = 0;
    std::vector<Key> changed;  // keys with this slot's pending bit set
    // The changes the last reply carried, unconfirmed.
    std::vector<Key> last_keys;
    SparseBlock last_changes;
    // The keys whose names the last reply carried, unconfirmed.
    std::vector<Key> last_named;
  };
  // Bit s: tracked slot s asked for every key (DeltaBatch.all_keys) and
  // holds every key of this shard.
  uint64_t all_keys_ ABSL_GUARDED_BY(mu_) = 0;
  // Makes slot s a holder of every key (its unseen change: the global),
  // listing the keys with a non-zero global for its next reply, and sets
  // its all_keys_ bit. O(keys), once per sender incarnation.
  void HoldAllKeys(int s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<Tracked> tracked_ ABSL_GUARDED_BY(mu_);
  // The slot of a sender, -1 if none is free; resets the slot on a new
  // incarnation. A freed slot (empty node_id) is reused.
  int TrackedSlot(const std::string& node_id, uint64_t incarnation)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells every holder of `key` but the sender (`sender_bit`) that δ `d`
  // was applied to it: lists the key for each (pending bit) and adds d to
  // its unseen change.
  void NotifyHolders(Key key, GlobalValue* g, const SparseVector& d,
                     uint64_t sender_bit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Prefetches the data of the unseen changes of the holders among `slots`
  // (a bit set).
  static void PrefetchUnseen(const GlobalValue& g, uint64_t slots);
  // The slot's unseen change of a key (grows g->unseen as needed).
  static SparseVector& UnseenOf(GlobalValue* g, int slot);
  // The slot's contribution to a key (grows g->contributed as needed).
  static SparseVector& ContributedOf(GlobalValue* g, int slot);
  // Takes slot s's contributions out of every global (telling the other
  // holders) and clears them. O(keys).
  void RetractSlot(int s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `v` out of key's global g as a change from no sender (every
  // holder is told).
  void Retract(Key key, GlobalValue* g, const SparseVector& v)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // *u += d, reusing u's buffer where it can.
  void AddTo(SparseVector* u, const SparseVector& d)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // g's value += d (going dense when it holds over half of the topics).
  void AddToGlobal(GlobalValue* g, const SparseVector& d)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // g's value, sparse.
  static void ReadGlobal(const GlobalValue& g, SparseVector* out);
  // Clears slot s from every key (holder and pending bits, unseen change)
  // and from the slot's lists. O(keys).
  void ClearSlot(int s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Apply's part after validation and the sequence check: applies the
  // deltas (unless a duplicate) and fills the reply's changes.
  void ApplyChanges(const DeltaBatch& batch, bool duplicate, int slot,
                    DeltaReply* reply) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  SparseVector sum_ ABSL_GUARDED_BY(mu_);     // scratch
  SparseVector global_ ABSL_GUARDED_BY(mu_);  // scratch
  OwnerShardStats stats_ ABSL_GUARDED_BY(mu_);
};

// Wire form of a sequence of sparse vectors (SparseBlock in sync.proto).
void AppendToBlock(const SparseVector& v, SparseBlock* block);

// Reads the vectors of a block in order. Validate() first checks the whole
// block: kInvalidArgument if the sizes do not add up, a topic is >=
// dimension or out of order, or a count is zero; Next() then cannot fail.
class BlockReader {
 public:
  BlockReader(const SparseBlock& block, uint32_t dimension)
      : block_(block), dimension_(dimension) {}
  // OK if the block holds exactly `vectors` valid vectors.
  absl::Status Validate(size_t vectors) const;
  // The next vector into *out. REQUIRES: Validate() was OK, and fewer than
  // `vectors` were read.
  void Next(SparseVector* out);

 private:
  const SparseBlock& block_;
  const uint32_t dimension_;
  int vector_ = 0;
  int pos_ = 0;
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_OWNER_SHARD_H_
