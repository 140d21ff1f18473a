// BatchBuilder: which owner channel each key goes to, the keys waiting to
// go there, and each round's batch built from them. Internal to the
// synchronizer (sync/synchronizer.h); not a public header.
//
// A key the table lists dirty becomes a candidate of its channel; a round
// takes the candidates' changes (AbelianTable::TakeChange) into a batch,
// the heaviest first under a byte budget, and leaves the others listed. A
// refused batch's changes are carried into the keys' next changes
// (Requeue). A key whose owner was lost, or a whole channel whose owner
// restarted, is re-seeded instead (KeyLedger::TakeReseed). Growing tables:
// a key's name goes with the first batch to its current owner, again after
// a refusal or a move.
//
// Thread-safety: not thread-safe. The synchronizer calls it from one
// thread at a time: its loop thread's rounds, or Reroute and AddKeys while
// no round runs. key_index() may be read by any thread while no AddKeys
// runs.
#ifndef LATENTD_SYNC_INTERNAL_BATCH_BUILDER_H_
#define LATENTD_SYNC_INTERNAL_BATCH_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "sync/abelian_table.h"
#include "sync/internal/key_ledger.h"
#include "sync/sync.pb.h"
#include "sync/synchronizer.h"

namespace latentd::sync::internal {

class BatchBuilder {
 public:
  // key_owner[i] is the channel of key index i, < num_channels. `table`,
  // `ledger` and `counters` must outlive this.
  // REQUIRES: key_owner.size() == table->num_keys().
  BatchBuilder(AbelianTable* table, KeyLedger* ledger, SyncCounters* counters,
               std::vector<uint32_t> key_owner, size_t num_channels);

  size_t num_keys() const { return key_owner_.size(); }
  const KeyIndex& key_index() const { return key_index_; }
  // Whether `channel` owns a key.
  bool HasKeys(uint32_t channel) const {
    return channel < channels_.size() && !channels_[channel].keys.empty();
  }

  // One round's batch to one channel.
  struct Round {
    uint32_t channel = 0;
    uint64_t clock = 0;           // the sweep clock, for staleness
    uint32_t min_weight = 0;      // keys lighter wait; 0: every dirty key
    size_t byte_budget = 0;       // 0: every key
    DeltaBatch* batch = nullptr;  // its header set by the caller
    std::vector<uint32_t>* keys = nullptr;  // out: each batch key's index
    bool quiet = true;  // out: no δ ≠ 0 and no re-seed went out
  };
  // Moves the table's dirty list into the channels' candidate lists.
  void DistributeDirty(uint64_t clock);
  // Takes the changes of the channel's candidates (SynchronizerOptions::
  // min_key_weight, round_byte_budget) into the round's batch.
  void BuildChangeBatch(Round* round);
  // For an owner that restarted: every key of the channel this node holds,
  // with all it has contributed and not yet sent; the table gives back
  // what it had received; the owner's part of the keys kept aside goes.
  void BuildReseedBatch(Round* round);
  // A batch this builder built was refused (nothing applied): its changes
  // are carried into its keys' next changes, by the current routing.
  void Requeue(const DeltaBatch& batch);

  // Routes key index i to key_owner[i] of num_channels channels; listed
  // keys stay listed at their new channel; a key that moved is named
  // again. Returns the previous routing. REQUIRES: key_owner.size() ==
  // num_keys(), every entry < num_channels >= the previous num_channels.
  std::vector<uint32_t> Reroute(const std::vector<uint32_t>& key_owner,
                                size_t num_channels);
  // The keys `old_owner` routed to `channel` (a lost owner) and now go
  // elsewhere are re-seeded at their new channel by its next round.
  void ReseedMovedFrom(uint32_t channel,
                       const std::vector<uint32_t>& old_owner);
  // The table grew to its num_keys(): each new key goes to
  // channel_of(key), which must be < the number of channels.
  void AddKeys(uint64_t clock, const std::function<uint32_t(Key)>& channel_of);

 private:
  struct ChannelKeys {
    std::vector<uint32_t> keys;        // routed here
    std::vector<uint32_t> candidates;  // may be dirty (see queued_)
  };

  // Key i's re-seed (KeyLedger::TakeReseed) with its change not yet sent.
  bool TakeReseed(uint32_t i, SparseVector* delta);
  // Appends key i with `delta` to the round's batch.
  void AddKey(uint32_t i, const SparseVector& delta, Round* round);
  // Lists key i as a candidate of its channel, unless it is listed.
  void Enqueue(uint32_t i);

  AbelianTable* const table_;
  KeyLedger* const ledger_;
  SyncCounters* const counters_;
  const bool grows_;  // table_->GrowsKeys()
  std::vector<ChannelKeys> channels_;
  KeyIndex key_index_;
  // Per key index.
  std::vector<uint32_t> key_owner_;
  std::vector<uint64_t> last_sent_clock_;
  // The changes of refused batches, sent with the key's next change.
  std::vector<SparseVector> carry_;
  // Its next round re-seeds it at its owner (its previous owner was lost).
  std::vector<uint8_t> reseed_;
  // Growing tables: its name went to its current owner (set when a batch
  // carries it; cleared when a batch is refused or the key moves).
  std::vector<uint8_t> named_;
  // It is in its channel's candidate list.
  std::vector<uint8_t> queued_;
  std::vector<uint32_t> dirty_scratch_;
};

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_INTERNAL_BATCH_BUILDER_H_
