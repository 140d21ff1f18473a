// SyncedTopicTable: the sampler's TopicTable seen as the keyed Abelian table
// the cluster synchronizer works on (sync/abelian_table.h).
//
// Key index w < V0 (the vocabulary at construction) is the row of WordId w
// (its key is the word's xxh64 key); index V0 is the topic totals
// (sync::kTopicTotalsKey); words added later (AddWords) come after it:
// index V0 + 1 + j is WordId V0 + j.
//
// Growing (constructed with the words' names): the table holds every word
// of the cluster (AbelianTable::GrowsKeys). The node adds words through
// Synchronizer::AddKeys, whose callback resizes the TopicTable and calls
// AddWords.
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
// Changes: the writer logs the deltas it applied (MarkApplied); each
// TakeDirtyList folds the log into per-key changes, starting from the
// table's contents at construction, and lists the keys that have one;
// TakeChange hands a key's change to the synchronizer (sync/synchronizer.h),
// so a round never reads a whole row.
//
// Thread-safety: Read, EnqueueCorrection, TakeChange and the dirty-key
// methods are thread-safe. MarkApplied and ApplyPending must run on the
// table's writer (count updater or, with no sweep running,
// the owner of the table).
#ifndef LATENTD_SAMPLER_SYNCED_TABLE_H_
#define LATENTD_SAMPLER_SYNCED_TABLE_H_

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "sampler/topic_table.h"
#include "sync/abelian_table.h"
#include "sync/row_topic_sort.h"

namespace latentd {

class SyncedTopicTable final : public sync::AbelianTable {
 public:
  // `table` (not owned) must outlive this. word_keys[w] is the key of
  // WordId w. REQUIRES: word_keys.size() == table->vocab_size().
  SyncedTopicTable(TopicTable* table, std::vector<sync::Key> word_keys);
  // A growing table: word_names[w] is WordId w's word (its key's name).
  // REQUIRES: word_names.size() == word_keys.size().
  SyncedTopicTable(TopicTable* table, std::vector<sync::Key> word_keys,
                   std::vector<std::string> word_names);

  size_t num_keys() const override { return word_keys_.size() + 1; }
  sync::Key key(size_t index) const override {
    return index == totals_index_ ? sync::kTopicTotalsKey
                                  : word_keys_[WordOf(index)];
  }
  // The key index of WordId w, and the topic totals'.
  size_t IndexOf(WordId w) const { return w < totals_index_ ? w : w + 1; }
  size_t totals_index() const { return totals_index_; }
  size_t num_words() const { return word_keys_.size(); }
  bool GrowsKeys() const override { return grows_; }
  std::string KeyName(size_t index) const override {
    return index == totals_index_ || !grows_ ? std::string()
                                             : word_names_[WordOf(index)];
  }
  // Appends words (empty rows, no change) with these keys and names.
  // REQUIRES: GrowsKeys(); the TopicTable already resized to num_words() +
  // keys.size() words; called only inside Synchronizer::AddKeys's
  // callback, by the table's writer (no sweep running): nothing else may
  // call this table meanwhile.
  void AddWords(std::span<const sync::Key> keys,
                std::span<const std::string> names);
  uint32_t dimension() const override { return table_->num_topics(); }
  // The key's value as this node holds it, queued corrections included,
  // for tests and tools: the synchronizer never reads it. O(row + queued
  // corrections).
  void Read(size_t index, sync::SparseVector* out) const;
  void EnqueueCorrection(size_t index,
                         const sync::SparseVector& correction) override;

  // Lists every key whose accumulated change is non-zero, words ascending
  // then the totals: folds the deltas the writer logged since the previous
  // call into the changes (sorting the log; O(log + keys listed),
  // amortized).
  void TakeDirtyList(std::vector<uint32_t>* out) override;
  // Σ|applied delta| (gross: deltas that cancel each other both count) of
  // the key's change not taken yet, as of the last TakeDirtyList
  // (saturating).
  uint32_t DirtyWeight(size_t index) const override;
  // The change folded by the last TakeDirtyList (deltas logged since come
  // with a later one).
  void TakeChange(size_t index, sync::SparseVector* out) override;
  // Writer only: logs the deltas the writer just applied, for the next
  // TakeDirtyList to fold into the keys' changes (and their sum into the
  // totals'). Call after applying them. O(applied), sequential writes.
  void MarkApplied(std::span<const WordTopicDelta> applied);

  // Writer only: applies every queued correction to the table. Fails with
  // kInternal (queue kept, table unchanged) if a count would go negative —
  // a broken synchronizer invariant, never expected. O(1) when nothing is
  // queued (no lock taken), else O(queued entries + K).
  absl::Status ApplyPending();
  // Word rows with queued corrections (a snapshot; sorts the queue, for
  // tests).
  size_t pending_rows() const;
  // Whether any correction (of a row or the totals) is queued. O(1).
  bool HasPending() const {
    return has_pending_.load(std::memory_order_acquire);
  }
  // Held by Read; pass it to SweepPipeline::SetQuiesceMutex so reads never
  // overlap the table's re-layout.
  absl::Mutex* layout_mutex() { return &mu_; }

 private:
  SyncedTopicTable(TopicTable* table, std::vector<sync::Key> word_keys,
                   std::vector<std::string> word_names, bool grows);
  // WordId of a key index other than the totals'.
  WordId WordOf(size_t index) const {
    return static_cast<WordId>(index < totals_index_ ? index : index - 1);
  }

  TopicTable* const table_;
  const size_t totals_index_;
  const bool grows_;
  // Grow only in AddWords (see there).
  std::vector<sync::Key> word_keys_;
  std::vector<std::string> word_names_;  // growing tables only
  mutable absl::Mutex mu_;
  // Queued corrections of word rows, as they came (a log, so queueing
  // costs no allocation per key). Each correction is canonical, so while
  // no word is queued twice the log is already what Apply wants (one run
  // per word, one delta per topic) and ApplyPending needs no sort; a word
  // queued again sets pending_resort_, and ApplyPending sorts and nets.
  struct PendingEntry {
    WordId word = 0;
    TopicId topic = 0;
    int64_t count = 0;
  };
  std::vector<PendingEntry> pending_log_ ABSL_GUARDED_BY(mu_);
  std::vector<PendingEntry> pending_scratch_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> pending_word_ ABSL_GUARDED_BY(mu_);  // queued in the log
  bool pending_resort_ ABSL_GUARDED_BY(mu_) = false;
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
  // Changes. The writer appends what it applied to log_; TakeDirtyList
  // sorts it (by word, then topic) and merges each word's part with the
  // word's change not taken yet into a run at the end of the arena ready_
  // (range_); TakeChange hands a run over. Sorting a log is sequential
  // work, where adding each delta to a per-word accumulator costs a cache
  // miss or two per delta on a large vocabulary.
  struct TopicDelta {
    // Left uninitialized, so that growing the arena writes nothing before
    // the fold does.
    TopicDelta() {}  // NOLINT
    TopicDelta(TopicId t, int32_t d) : topic(t), delta(d) {}
    TopicId topic;
    int32_t delta;
  };
  struct Range {
    uint32_t begin = 0;
    uint32_t size = 0;  // 0 once taken
    uint32_t weight = 0;
    bool listed = false;  // in listed_
  };
  // Arena garbage (runs replaced or taken) that triggers a compaction once
  // it is also half of the arena.
  static constexpr size_t kMinCompaction = 1 << 16;
  // The log is packed (sync::PackedDeltaLog); the totals' part is summed
  // as it is logged.
  const sync::PackedDeltaLog packing_;
  absl::Mutex log_mu_ ABSL_ACQUIRED_AFTER(fold_mu_);
  std::vector<uint64_t> log_ ABSL_GUARDED_BY(log_mu_);
  std::vector<int64_t> log_totals_ ABSL_GUARDED_BY(log_mu_);
  bool log_totals_changed_ ABSL_GUARDED_BY(log_mu_) = false;
  mutable absl::Mutex fold_mu_;
  // Scratch of TakeDirtyList: the log taken, radix scratch, listing and
  // compaction buffers.
  std::vector<uint64_t> fresh_ ABSL_GUARDED_BY(fold_mu_);
  std::vector<uint64_t> sorted_ ABSL_GUARDED_BY(fold_mu_);
  std::vector<uint32_t> new_listed_ ABSL_GUARDED_BY(fold_mu_);
  std::vector<uint32_t> merged_listed_ ABSL_GUARDED_BY(fold_mu_);
  std::vector<TopicDelta> compacted_ ABSL_GUARDED_BY(fold_mu_);
  std::vector<TopicDelta> ready_ ABSL_GUARDED_BY(fold_mu_);
  size_t garbage_ ABSL_GUARDED_BY(fold_mu_) = 0;        // entries of ready_
  std::vector<Range> range_ ABSL_GUARDED_BY(fold_mu_);  // per word
  // Words with a change not taken yet (and, until the next fold, some
  // taken since), ascending.
  std::vector<uint32_t> listed_ ABSL_GUARDED_BY(fold_mu_);
  std::vector<int64_t> totals_change_ ABSL_GUARDED_BY(fold_mu_);
};

}  // namespace latentd

#endif  // LATENTD_SAMPLER_SYNCED_TABLE_H_
