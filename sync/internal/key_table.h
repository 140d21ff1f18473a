// KeyTable: the keys an OwnerShard holds (sync/owner_shard.h, whose file
// comment states the protocol). Per key: its global value, its name, and
// per tracked sender slot whether the sender holds the key, the change it
// has not been sent yet ("unseen") and what its incarnation contributed.
// Per slot (at most kMaxTrackedSenders): the sender's id and incarnation,
// the keys listed for its next reply, and its last, unconfirmed reply.
//
// Thread-compatible: OwnerShard keeps it under its mutex, so a batch, a
// hand-off or a retraction changes it in one step.
#ifndef LATENTD_SYNC_INTERNAL_KEY_TABLE_H_
#define LATENTD_SYNC_INTERNAL_KEY_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "sync/abelian_table.h"
#include "sync/internal/look_ahead.h"
#include "sync/owner_shard_stats.h"
#include "sync/sync.pb.h"

namespace latentd::sync::internal {

// Change tracking for up to this many sender ids (a restarted sender, new
// incarnation, takes its id's slot over).
inline constexpr int kMaxTrackedSenders = 64;

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

struct Tracked {
  std::string node_id;  // "": a free slot
  uint64_t incarnation = 0;
  std::vector<Key> changed;  // keys with this slot's pending bit set
  // The changes the last reply carried, unconfirmed.
  std::vector<Key> last_keys;
  SparseBlock last_changes;
  // The keys whose names the last reply carried, unconfirmed.
  std::vector<Key> last_named;
};

// One holder's side of a handed-in key (MergeKey).
struct HolderPart {
  int slot = -1;             // its tracked slot here
  SparseVector unseen;       // what it lacked of the key there
  SparseVector contributed;  // what it contributed to the key there
};

class KeyTable {
 public:
  // Values have `dimension` topics. Counts into *stats (keys_applied and
  // the retractions), which must outlive this.
  KeyTable(uint32_t dimension, OwnerShardStats* stats)
      : dimension_(dimension), stats_(stats) {}

  uint32_t dimension() const { return dimension_; }

  // --- Keys ---
  size_t size() const { return globals_.size(); }
  bool contains(Key key) const { return globals_.contains(key); }
  // The key's entry, nullptr if absent. Valid until the table changes.
  const GlobalValue* Find(Key key) const;
  // Calls fn(i, entry) for i = 0..n-1 in turn, entry the GlobalValue of
  // keys(i) (nullptr if absent), until fn returns false; the lookups run
  // ahead of use (look_ahead.h), and found(entry) is called on each entry
  // some keys early to request its memory. fn must not change the table.
  template <typename KeyFn, typename FoundFn, typename Fn>
  void ForEachLookup(size_t n, KeyFn keys, FoundFn found, Fn fn) const {
    LookAhead ahead(&globals_, n, keys, found);
    for (size_t i = 0; i < n; ++i) {
      if (!fn(i, ahead.At(i))) return;
    }
  }
  // Calls fn(key, const GlobalValue&) for every key, in no particular
  // order. fn must not change the table.
  template <typename Fn>
  void ForEach(Fn fn) const {
    for (const auto& [key, g] : globals_) fn(key, g);
  }
  // Removes `key` (a key handed off); the senders' lists may still name
  // it, which they skip.
  void Erase(Key key) { globals_.erase(key); }
  // g's value, sparse, into *out.
  static void ReadGlobal(const GlobalValue& g, SparseVector* out);

  // --- Tracked senders ---
  // The number of slots (free ones included); slot(s) for s below it.
  int num_slots() const { return static_cast<int>(tracked_.size()); }
  const Tracked& slot(int s) const { return tracked_[s]; }
  // The last slot of `node_id`, -1 if none.
  int FindSlot(const std::string& node_id) const;
  // The last slot of `node_id`'s incarnation `incarnation`, -1 if none.
  int FindSlot(const std::string& node_id, uint64_t incarnation) const;
  // The incarnation of the first slot of `node_id` later than
  // `incarnation`, 0 if none (the sender is superseded).
  uint64_t LaterIncarnation(const std::string& node_id,
                            uint64_t incarnation) const;
  // Slots a new sender could take: free or not yet made.
  int FreeSlots() const;
  // The slot of a sender, -1 if none is free. On a new incarnation of a
  // tracked id the slot is reset: the earlier incarnation's contributions
  // come out of the globals (the other holders told) and the slot holds
  // nothing. A freed slot (empty node_id) is reused.
  int TrackedSlot(const std::string& node_id, uint64_t incarnation);
  // Takes the contributions of every slot of `node_id` out of the globals
  // (the other holders told), as a change from no sender. O(keys).
  void RetractSender(const std::string& node_id);
  // Frees every slot of `node_id`: clears it from every key (holder,
  // pending and named bits, unseen change, contributions). O(keys).
  void ForgetSender(const std::string& node_id);

  // --- Changes ---
  // Applies a validated, admitted batch from tracked slot `slot` (its
  // deltas, unless `duplicate`; its names) and fills the reply's changes
  // and names: what the slot has not been sent yet. A duplicate sends
  // again what the last reply carried, with what came since. O(Σ|δ| ·
  // holders + changes sent).
  void ApplyBatch(const DeltaBatch& batch, bool duplicate, int slot,
                  DeltaReply* reply);
  // Merges a handed-in key: the global becomes the sum of both sides, a
  // holder in `parts` lacks what it lacked there (and, if it did not hold
  // the key here, all of this side), this side's other holders lack all
  // of `theirs`, an all-keys holder that held it on neither side lacks the
  // whole, and `retract` (a superseded incarnation's part) comes out as a
  // change from no sender. `name` (may be null) names the key if unnamed.
  // REQUIRES: every part's slot is a tracked slot.
  void MergeKey(Key key, const SparseVector& theirs,
                absl::Span<const HolderPart> parts, const SparseVector& retract,
                const std::string* name);

 private:
  // ApplyBatch's steps. A duplicate's: lists again for slot `slot` the
  // changes and names its last reply carried; those of keys handed off
  // since go to *handed_back, to be sent from here as they were.
  void RequeueLastReply(int slot,
                        std::vector<std::pair<Key, SparseVector>>* handed_back);
  // Adds the batch's deltas to the globals (unless `duplicate`), noting
  // them for the other holders and as the slot's contribution; a key new
  // to the slot, or re-seeded by it, is listed with its global so far.
  void ApplyDeltas(const DeltaBatch& batch, bool duplicate, int slot);
  // Moves the slot's listed changes (and names, for an all-keys holder)
  // into the reply, then `handed_back`, and keeps them as its last reply.
  void FillReply(int slot,
                 const std::vector<std::pair<Key, SparseVector>>& handed_back,
                 DeltaReply* reply);
  // Makes slot s a holder of every key (its unseen change: the global),
  // listing the keys with a non-zero global for its next reply, and sets
  // its all_keys_ bit. O(keys), once per sender incarnation.
  void HoldAllKeys(int s);
  // Lists `key` for slot s's next reply (its change is in g's unseen).
  void List(Key key, GlobalValue* g, int s);
  // Tells every holder of `key` but the sender (`sender_bit`) that δ `d`
  // was applied to it: lists the key for each (pending bit) and adds d to
  // its unseen change.
  void NotifyHolders(Key key, GlobalValue* g, const SparseVector& d,
                     uint64_t sender_bit);
  // Prefetches the data of the unseen changes of the holders among `slots`
  // (a bit set).
  static void PrefetchUnseen(const GlobalValue& g, uint64_t slots);
  // The slot's unseen change of a key (grows g->unseen as needed).
  static SparseVector& UnseenOf(GlobalValue* g, int slot);
  // The slot's contribution to a key (grows g->contributed as needed).
  static SparseVector& ContributedOf(GlobalValue* g, int slot);
  // Takes slot s's contributions out of every global (telling the other
  // holders) and clears them. O(keys).
  void RetractSlot(int s);
  // Takes `v` out of key's global g as a change from no sender (every
  // holder is told).
  void Retract(Key key, GlobalValue* g, const SparseVector& v);
  // *u += d, reusing u's buffer where it can.
  void AddTo(SparseVector* u, const SparseVector& d);
  // g's value += d (going dense when it holds over half of the topics).
  void AddToGlobal(GlobalValue* g, const SparseVector& d);
  // Clears slot s from every key (holder and pending bits, unseen change)
  // and from the slot's lists. O(keys).
  void ClearSlot(int s);

  const uint32_t dimension_;
  absl::flat_hash_map<Key, GlobalValue> globals_;
  std::vector<Tracked> tracked_;
  // Bit s: tracked slot s asked for every key (DeltaBatch.all_keys) and
  // holds every key of this shard.
  uint64_t all_keys_ = 0;
  SparseVector sum_;     // scratch
  SparseVector global_;  // scratch
  OwnerShardStats* const stats_;
};

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_INTERNAL_KEY_TABLE_H_
