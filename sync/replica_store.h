// ReplicaStore: the copies this node holds, as a backup, of other owners'
// key state (docs/design.md, "Replicated key state"). Per owner, per key,
// per contributor: a vector that the owner's ReplicaUpdates add to. What an
// owner replicates is the part of each key's global that no surviving
// member could re-seed if the owner failed (sync/owner_replicator.h): so
// when an owner fails, the member that becomes a key's owner takes that
// key's copy over (TakeOver) and imports it into its owner shard as a key
// hand-off, while the survivors re-seed their own contributions.
//
// Updates of one stream (one owner process) apply in sequence order, each
// once: an update whose sequence is not above the last one applied from
// its stream is a duplicate (applied already; OK, nothing changes); an
// update from a new stream starts that owner's sequence afresh. A `reset`
// update drops everything held from its owner before adding its entries.
//
// An update's reset_keys drop the copies of those keys first (the owner
// sends a key it has just imported with its whole part).
//
// A copy is based once a reset of its owner's current stream has arrived
// (the first update of a refill, OwnerReplicator::Refill). The owner's
// own batches reach a new backup (or one that restarted, or a new owner
// process's backups) from the moment it is named, before the refill: those
// deltas have no base here, are acknowledged without being kept (the
// refill's snapshot, taken after them, holds them) and would, imported
// alone, put a failed owner's key below zero: Apply answers them NoBase
// (the owner then refills this backup, OwnerReplicator) and keeps nothing.
// A copy that is not based is not taken over.
//
// Thread-safety: thread-safe (one mutex).
#ifndef LATENTD_SYNC_REPLICA_STORE_H_
#define LATENTD_SYNC_REPLICA_STORE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "sync/abelian_table.h"
#include "sync/sync.pb.h"

namespace latentd::sync {

struct ReplicaStoreStats {
  uint64_t updates_applied = 0;
  uint64_t updates_duplicate = 0;
  uint64_t updates_unbased = 0;  // acknowledged before their stream's reset
  uint64_t keys_taken_over = 0;  // by TakeOver
};

// The answer to an update that arrived before its stream's reset.
absl::Status NoBase(const std::string& owner);
bool IsNoBase(const absl::Status& status);

class ReplicaStore {
 public:
  explicit ReplicaStore(uint32_t dimension) : dimension_(dimension) {}

  // Validates and applies `update` (see above); *duplicate says whether it
  // had been applied already. NoBase (nothing kept) before its stream's
  // reset. kInvalidArgument, nothing applied, for a
  // malformed update (lengths that do not add up, a contributor index out
  // of range, a topic >= dimension, another dimension, no owner).
  absl::Status Apply(const ReplicaUpdate& update, bool* duplicate);

  // Removes the copies of `owner`'s keys for which take(key) is true and
  // returns them as key hand-offs into `epoch` for `to_node` (chunks of at
  // most max_keys_per_chunk keys, from "replica-of:" + owner, numbered from
  // 0): each key's global is the sum of its entries, its holders the
  // attributed contributors (with what each contributed; nothing unseen),
  // so that OwnerShard::ImportKeys adds it as if the failed owner had
  // handed the key off with only that part of its global. Nothing when the
  // owner's copy is not based (class comment).
  std::vector<KeyHandoff> TakeOver(const std::string& owner,
                                   const std::function<bool(Key)>& take,
                                   uint64_t epoch, const std::string& to_node,
                                   size_t max_keys_per_chunk = 50000);
  // What this node holds of `owner`: nothing, only updates that arrived
  // before their stream's reset (not taken over), or a based copy.
  enum class CopyState { kNone, kUnbased, kBased };
  CopyState State(const std::string& owner) const;

  // Drops the copies of `owner`'s keys for which drop(key) is true (keys
  // this node no longer backs up).
  void Drop(const std::string& owner, const std::function<bool(Key)>& drop);

  // Keys held, over all owners.
  size_t num_keys() const;
  // The sum of `owner`'s entries for `key` (empty if none): for tests.
  SparseVector Sum(const std::string& owner, Key key) const;
  ReplicaStoreStats stats() const;

 private:
  struct Entry {
    uint32_t contributor = 0;  // index into Owner::contributors
    SparseVector value;
  };
  struct Owner {
    uint64_t stream = 0;
    uint64_t last_sequence = 0;
    bool based = false;  // a reset of `stream` has been applied
    std::vector<HandoffHolder> contributors;
    absl::flat_hash_map<Key, std::vector<Entry>> keys;
  };
  // The index of `c` among o's contributors (added if new).
  static uint32_t ContributorIndex(Owner* o, const HandoffHolder& c);

  const uint32_t dimension_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Owner> owners_ ABSL_GUARDED_BY(mu_);
  ReplicaStoreStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_REPLICA_STORE_H_
