// SyncedTopicTable: the sampler's TopicTable seen as the keyed Abelian table
// the cluster synchronizer works on (sync/abelian_table.h).
//
// Key index w < vocab_size is the row of WordId w (its key is the word's
// xxh64 key); index vocab_size is the topic totals (sync::kTopicTotalsKey).
// Corrections from the synchronizer are queued here and applied by the
// table's single writer: the pipeline's count updater calls ApplyPending()
// after each batch (SweepPipeline::SetCountUpdaterHook), and the node calls
// it directly while no sweep runs.
//
// The totals key: the table's n_k is kept at this node's view of the
// global totals x_T (which also count words this node holds no row for):
// applying word corrections moves n_k through TopicTable::Apply, and
// ApplyPending then adjusts n_k (TopicTable::AdjustTotals) so that its net
// change is exactly the queued totals correction.
//
// Changes: the table accumulates, per key, the net change its writer made
// (MarkApplied), starting from the table's contents at construction, and
// hands it to the synchronizer (TakeChange; change mode, see
// sync/synchronizer.h), so a round never reads a whole row.
//
// Thread-safety: Read, EnqueueCorrection, TakeChange and the dirty-key
// methods are thread-safe. MarkApplied and ApplyPending must run on the
// table's writer (count updater or, with no sweep running,
// the owner of the table).
#ifndef LATENTD_SAMPLER_SYNCED_TABLE_H_
#define LATENTD_SAMPLER_SYNCED_TABLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "sampler/topic_table.h"
#include "sync/abelian_table.h"

namespace latentd {

class SyncedTopicTable final : public sync::AbelianTable {
 public:
  // `table` (not owned) must outlive this. word_keys[w] is the key of
  // WordId w. REQUIRES: word_keys.size() == table->vocab_size().
  SyncedTopicTable(TopicTable* table, std::vector<sync::Key> word_keys);

  size_t num_keys() const override { return word_keys_.size() + 1; }
  sync::Key key(size_t index) const override {
    return index < word_keys_.size() ? word_keys_[index]
                                     : sync::kTopicTotalsKey;
  }
  uint32_t dimension() const override { return table_->num_topics(); }
  void Read(size_t index, sync::SparseVector* out) const override;
  void EnqueueCorrection(size_t index,
                         const sync::SparseVector& correction) override;

  bool TakeDirty(size_t index) override {
    return dirty_[index].exchange(0, std::memory_order_acquire) != 0;
  }
  // Σ|applied delta| of the key since its last TakeDirty (saturating).
  uint32_t DirtyWeight(size_t index) const override {
    return dirty_[index].load(std::memory_order_relaxed);
  }
  bool TakeDirtyList(std::vector<uint32_t>* out) override;
  bool TracksChanges() const override { return true; }
  void TakeChange(size_t index, sync::SparseVector* out) override;
  // Writer only: adds the deltas the writer just applied to the keys'
  // accumulated changes (and their sum to the totals'), and marks those
  // keys dirty, listing those whose mark was clear. Call after applying
  // them. Fastest with `applied` ordered by word, then topic (as the
  // pipeline's combiner emits it). O(applied + changed keys' changes).
  void MarkApplied(std::span<const WordTopicDelta> applied);

  // Writer only: applies every queued correction to the table. Fails with
  // kInternal (queue kept, table unchanged) if a count would go negative —
  // a broken synchronizer invariant, never expected. O(1) when nothing is
  // queued (no lock taken), else O(queued entries + K).
  absl::Status ApplyPending();
  // Word rows with queued corrections (a snapshot).
  size_t pending_rows() const;
  // Held by Read; pass it to SweepPipeline::SetQuiesceMutex so reads never
  // overlap the table's re-layout.
  absl::Mutex* layout_mutex() { return &mu_; }

 private:
  TopicTable* const table_;
  const std::vector<sync::Key> word_keys_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint32_t, sync::SparseVector> pending_
      ABSL_GUARDED_BY(mu_);
  // Queued corrections of the totals key.
  std::vector<int64_t> pending_totals_ ABSL_GUARDED_BY(mu_);
  // Set (under mu_) when a correction is queued, cleared when all are
  // applied; read without the lock by ApplyPending's fast path.
  std::atomic<bool> has_pending_{false};
  // Scratch, reused so that rounds and batches do not allocate.
  mutable sync::SparseVector sum_ ABSL_GUARDED_BY(mu_);
  std::vector<WordTopicDelta> deltas_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> adjust_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> up_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> down_ ABSL_GUARDED_BY(mu_);
  // Per key index: the weight the writer added (release) since the last
  // TakeDirty, which takes it; non-zero = dirty.
  std::unique_ptr<std::atomic<uint32_t>[]> dirty_;
  // Keys whose mark the writer set from clear, for TakeDirtyList.
  absl::Mutex list_mu_;
  std::vector<uint32_t> dirty_list_ ABSL_GUARDED_BY(list_mu_);
  std::vector<uint32_t> marked_;  // writer scratch
  // Accumulated changes (TakeChange): per word row (sorted by topic,
  // zero counts allowed), and the totals.
  absl::Mutex change_mu_ ABSL_ACQUIRED_BEFORE(list_mu_);
  std::vector<sync::SparseVector> change_ ABSL_GUARDED_BY(change_mu_);
  std::vector<int64_t> totals_change_ ABSL_GUARDED_BY(change_mu_);
  sync::SparseVector run_, new_;  // writer scratch
  // Adds run_ (one word's applied deltas) to *change: sorted by topic,
  // possibly with zero counts (TakeChange drops them).
  void AddRun(sync::SparseVector* change)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(change_mu_);
};

}  // namespace latentd

#endif  // LATENTD_SAMPLER_SYNCED_TABLE_H_
