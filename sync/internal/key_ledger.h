// KeyLedger: the synchronizer's per-key record of what this incarnation has
// exchanged with the owners (docs/design.md, "Restart and rejoin"), and the
// changes of keys a growing table does not hold yet. Internal to the
// synchronizer (sync/synchronizer.h); not a public header.
//
// Restarts. Per key the ledger keeps what this incarnation has contributed
// (the deltas owners acknowledged) and what it has received (the
// corrections replies brought), so that the table's value is contributed +
// received + the changes not yet acknowledged. An owner that restarted has
// lost its keys' globals; the synchronizer then re-seeds it: for each of
// its keys the table takes back what it had received (a correction), and
// one batch sends everything contributed plus the changes not yet sent
// (TakeReseed), so the owner's global is again the sum of every node's
// contributions and it sends each holder the global back. Costs one more
// sparse vector per key for each (about the table's own size).
//
// Growing key sets (AbelianTable::GrowsKeys). A reply's change of a key the
// table does not hold is kept aside, summed per channel (the owner that
// sent it), with the name an owner sent (ForeignKeys). An owner that
// restarts or is lost takes its part back (DropForeignOf), as a held key's
// received part is given back, and only its part: the globals come again
// from its new owner, and what other owners sent stays (a survivor's own
// shard pushes it a key it took over before the lost owner's late reply
// arrives). AddKeys takes a new key's part into the table as a received
// correction, so the table's value is again contributed + received + not
// yet sent.
//
// Cost. Replies come every round for every key changed, and adding each
// change to its key's two sums as it came cost a cache miss or two per
// key and round (a sixth of the sync work, sync_round_benchmark). The
// changes are logged instead and folded into the sums in key order once
// the logs outgrow the sums (amortized O(1) per entry logged, the sums
// at most doubling the ledger's memory) and before a re-seed reads them.
//
// Thread-safety: all methods are thread-safe (one mutex: replies of
// different channels may carry the same key). A KeyIndex passed in must
// not change during the call.
#ifndef LATENTD_SYNC_INTERNAL_KEY_LEDGER_H_
#define LATENTD_SYNC_INTERNAL_KEY_LEDGER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "sync/abelian_table.h"
#include "sync/sync.pb.h"

namespace latentd::sync::internal {

// The index of each key the table holds.
using KeyIndex = absl::flat_hash_map<Key, uint32_t>;

class KeyLedger {
 public:
  // Empty records for each of the table's keys. `table` must outlive this.
  // The logs are folded once they hold more than min_fold_entries and
  // more entries than the sums.
  explicit KeyLedger(AbelianTable* table, size_t min_fold_entries = 1 << 16);

  // Channel `channel`'s batch `sent`, whose keys have the indices
  // `sent_keys`, was answered by `reply`: its deltas become contributed;
  // the reply's changes of keys in `index` go to the table as corrections
  // (received), a growing table's others aside, with the names the reply
  // carries. Returns whether any change went to the table or aside.
  // REQUIRES: the reply is well formed (Synchronizer::CheckReply).
  bool ApplyReply(uint32_t channel, const DeltaBatch& sent,
                  const std::vector<uint32_t>& sent_keys,
                  const DeltaReply& reply, const KeyIndex& index);

  // Key i's re-seed: *delta = all it contributed plus `unsent` (its
  // changes not yet sent); clears what it contributed and enqueues the
  // correction that gives back what it received. False if this node holds
  // nothing of the key (nothing to send).
  bool TakeReseed(uint32_t i, const SparseVector& unsent, SparseVector* delta);

  // Drops what `channel` sent of keys the table does not hold (an entry
  // stays while another channel's change or name is left).
  void DropForeignOf(uint32_t channel);
  // The keys kept aside whose names are known, with their names (a
  // snapshot).
  std::vector<std::pair<Key, std::string>> ForeignKeys();

  // The table grew to its num_keys(): records for the new keys, each
  // starting from the changes kept aside for it (enqueued to the table as
  // received corrections). REQUIRES: no ApplyReply runs meanwhile.
  void AddKeys();

 private:
  struct Foreign {
    std::string name;  // "" until an owner sends it
    std::vector<std::pair<uint32_t, SparseVector>> changes;  // by channel
    uint32_t channel = 0;  // the channel that sent the name
  };

  // One change of one key's topic, logged for a fold.
  struct LoggedEntry {
    uint32_t index = 0;  // the key's
    uint32_t topic = 0;
    int64_t count = 0;
  };
  // Folds both logs into the sums.
  void Fold() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sorts `log` by (key, topic) and adds each key's part to sums[key].
  void FoldInto(std::vector<LoggedEntry>* log, std::vector<SparseVector>* sums)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  AbelianTable* const table_;
  const bool grows_;  // table_->GrowsKeys()
  const size_t min_fold_entries_;

  absl::Mutex mu_;
  // Per key index: this incarnation's acknowledged deltas, and the
  // corrections it received, as of the last fold; the changes since are
  // in the logs.
  std::vector<SparseVector> contributed_ ABSL_GUARDED_BY(mu_);
  std::vector<SparseVector> received_ ABSL_GUARDED_BY(mu_);
  std::vector<LoggedEntry> contributed_log_ ABSL_GUARDED_BY(mu_);
  std::vector<LoggedEntry> received_log_ ABSL_GUARDED_BY(mu_);
  // Entries in the sums after the last fold.
  size_t folded_entries_ ABSL_GUARDED_BY(mu_) = 0;
  // Fold scratch.
  std::vector<LoggedEntry> sorted_ ABSL_GUARDED_BY(mu_);
  SparseVector run_ ABSL_GUARDED_BY(mu_);
  SparseVector sum_ ABSL_GUARDED_BY(mu_);
  // Growing tables: changes of keys the table does not hold.
  absl::flat_hash_map<Key, Foreign> foreign_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_INTERNAL_KEY_LEDGER_H_
