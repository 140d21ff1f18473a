// TopicTable: the shared word-topic state of one node — the counts n_wk of
// every word in every topic and the topic totals n_k.
//
// Readers (the parallel samplers) never take a lock. The count updater is the
// table's only writer, and changes each slot with a single atomic store, so
// a reader sees every count either before or after an update, never torn,
// and never negative: the writer only ever stores the final, non-negative
// count. A row is sparse (packed 32-bit entries count << 16 | topic, in
// insertion order, zero-count holes reused) until it holds more than half
// of K topics or a count past kMaxSparseCount; then it becomes dense (K
// 32-bit counts, slot k is topic k). Bytes are what a walk over a row in
// memory waits on: a sparse entry is as small as a dense count. When
// a sparse row outgrows its block the writer publishes a
// bigger copy; the old block is retired and freed by Quiesce(), which callers
// run only when no reader is active (between sweeps). Blocks live in chunks
// backed by huge pages where the kernel allows (internal/row_arena.h).
//
// Thread-safety: the reader methods (ForEach, Get, TopicTotal, ...) are safe
// from any number of threads at once, also while the writer runs. Apply
// needs a single writer thread; Quiesce, Resize and Clear
// additionally need no concurrent readers.
#ifndef LATENTD_SAMPLER_TOPIC_TABLE_H_
#define LATENTD_SAMPLER_TOPIC_TABLE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "corpora/types.h"

namespace latentd {

namespace internal {
class RowArena;
}  // namespace internal

// A net change of one word-topic count.
struct WordTopicDelta {
  WordId word = 0;
  TopicId topic = 0;
  int32_t delta = 0;
};

class TopicTable {
 public:
  // An empty table for `vocab_size` words and `num_topics` topics.
  // REQUIRES: 0 < num_topics <= kMaxTopics.
  TopicTable(size_t vocab_size, TopicId num_topics);
  ~TopicTable();
  TopicTable(const TopicTable&) = delete;
  TopicTable& operator=(const TopicTable&) = delete;

  TopicId num_topics() const { return num_topics_; }
  size_t vocab_size() const { return vocab_size_; }

  // ---- Readers: lock-free, any thread. ----

  // Calls fn(TopicId, Count) for each topic with a non-zero count of `word`,
  // in no particular order. Counts may change while it runs (each one read
  // is a value the writer stored). REQUIRES: word < vocab_size().
  template <typename Fn>
  void ForEachNonZero(WordId word, Fn&& fn) const;
  // The token-weighted mean number of non-zero topics of the word rows: the
  // expected row length SparseLDA's word bucket walks per token. O(table);
  // a reader as ForEachNonZero is (during an Apply it sees a mix).
  double MeanRowTopics() const;
  // Like ForEachNonZero, but also calls fn for the row's zero-count slots
  // (holes of a sparse row, absent topics of a dense one), with Count 0, so
  // a hot loop can run without a data-dependent branch. A topic may appear
  // once with its count and any number of times with 0. Returns true if the
  // row is dense: then fn saw every topic once, in order, and the row stays
  // dense until the next Quiesce() (so Get() on it is O(1)).
  template <typename Fn>
  bool ForEachSlot(WordId word, Fn&& fn) const;
  // A row's slots as ForEachSlot visits them, for readers that walk them
  // in vector steps (sampler/internal/row_masses.h and dense_row_masses.h),
  // read with relaxed loads (or whole aligned lanes) while the writer may
  // store to them. A sparse row's are `entries`, each a packed
  // count << 16 | topic (RawEntry); a dense row's are `counts`, counts[k]
  // being topic k's (size is K). Both are null for a row never written.
  // dense: as ForEachSlot's result.
  using RawEntry = uint32_t;
  struct RawRow {
    const std::atomic<RawEntry>* entries = nullptr;  // sparse rows
    const std::atomic<Count>* counts = nullptr;      // dense rows
    uint32_t size = 0;
    bool dense = false;
  };
  RawRow Raw(WordId word) const;
  // The largest count a sparse row holds; a row with a larger one is
  // dense. Topics fit the other 16 bits (kMaxTopics is 2^16).
  static constexpr Count kMaxSparseCount = 0xffff;
  // A RawRow slot's topic and count, and the slot of a count (at most
  // kMaxSparseCount) and topic.
  static constexpr TopicId RawTopic(RawEntry slot) { return TopicOf(slot); }
  static constexpr Count RawCount(RawEntry slot) { return CountOf(slot); }
  static constexpr RawEntry RawPack(Count count, TopicId topic) {
    return Pack(count, topic);
  }
  // Hints that `word`'s row will be read soon: PrefetchRowPointer a few
  // tokens ahead, then PrefetchRow (which reads the pointer) closer in, so
  // that the row is in cache when the kernel gets there. No effect on
  // results. REQUIRES: word < vocab_size().
  void PrefetchRowPointer(WordId word) const {
    __builtin_prefetch(&rows_[word]);
  }
  void PrefetchRow(WordId word) const;
  // After PrefetchRow (its header now in cache): the rest of a dense row,
  // up to 1 KiB, so that its walk does not wait on each line in turn (a
  // dense row of K=100 is 7 or 8 lines; on a table far larger than the caches
  // these waits were a third of a sweep). Sparse rows, and lines past the
  // first KiB, are left to the hardware: prefetching them too cost 2-3% of
  // a news20 sweep at K=1000, whose table the caches hold.
  void PrefetchRowRest(WordId word) const;
  // n_wk. O(nonzeros of the row) for sparse rows, O(1) for dense ones.
  Count Get(WordId word, TopicId topic) const;
  // n_k.
  int64_t TopicTotal(TopicId topic) const {
    return totals_[topic].load(std::memory_order_relaxed);
  }
  // Number of non-zero entries of a row (a snapshot).
  size_t RowNonZeros(WordId word) const;
  bool RowIsDense(WordId word) const {
    const RowBlock* block = rows_[word].load(std::memory_order_acquire);
    return block != nullptr && BlockIsDense(block);
  }

  // ---- Writer: the count updater only. ----

  // Applies net deltas, at most one per (word, topic); fastest when a
  // word's deltas are adjacent (each run of one word reads its row once), as
  // the pipeline's combiner emits them. Increments of n_k are
  // made before the rows change and decrements after, so concurrent readers
  // always see n_k >= n_wk. Fails (kFailedPrecondition, table unchanged) if a
  // delta would make a count negative or names a word/topic out of range.
  absl::Status Apply(std::span<const WordTopicDelta> deltas);

  // Adds delta[k] to n_k without changing any row. A cluster node keeps n_k
  // at the global totals, which also count words it holds no row for
  // (sampler/synced_table.h). Fails (kFailedPrecondition, table unchanged)
  // if an n_k would go negative. REQUIRES: delta.size() == num_topics().
  absl::Status AdjustTotals(std::span<const int64_t> delta);

  // ---- Quiescent maintenance: no readers may run. ----

  // Frees retired row blocks and lays every row out again canonically
  // (zero-count holes dropped, topics ascending), so that sampling from the
  // table depends only on its counts, not on its history. Where the rows
  // then fill under two thirds of the arena's chunks (rows shrink as
  // training concentrates them), it moves them into fresh chunks and gives
  // the old ones back, one at a time (CompactArena).
  void Quiesce();
  // Frees retired row blocks alone, leaving each row in the block it is in
  // (for a pass that fills the same rows again, Trainer's progressive
  // start: Quiesce would move rows that hold a fraction of their block
  // to smaller blocks, and the next pass grow them back).
  void ReleaseRetired();
  // Makes room in each row w for row_topics[w] non-zero topics (at most K),
  // in the block Quiesce would lay such a row out in (dense past half of K,
  // else room for half as many again), so that Apply adds topics to it
  // without a regrow until it holds more. A pass that
  // knows about how large its rows will get (a rebuild from a store of
  // uniform draws, the progressive start) allocates each row once this way,
  // where growing rows step by step kept every smaller copy until Quiesce
  // (4.6x the table's memory on 200 M tokens). Larger rows are left alone;
  // counts are kept. A row whose block has the bytes for its new layout is
  // laid out again in place. `later_topics` (empty, or one per word) sizes
  // each new block for that many topics too, so that a second
  // ReserveRows(later_topics) lays the rows out in place: a pass in two
  // stages (the progressive start) needs no second set of blocks, which
  // the first set's, of other sizes, would not serve (200 M tokens, K=100:
  // 121 MB of arena for 82 MB of rows). REQUIRES: row_topics.size() ==
  // vocab_size(), and so later_topics' unless empty.
  void ReserveRows(std::span<const uint32_t> row_topics,
                   std::span<const uint32_t> later_topics = {});
  // Grows the vocabulary (new words start with empty rows).
  // REQUIRES: new_vocab_size >= vocab_size().
  void Resize(size_t new_vocab_size);
  // Sets every count to zero.
  void Clear();

  // Σ_k n_k (a snapshot).
  int64_t TotalTokens() const;
  // Bytes held by rows and indexes (for metrics).
  size_t MemoryBytes() const;
  // Bytes of the chunks the row blocks come from: MemoryBytes' rows plus
  // the blocks free for reuse (0 in an AddressSanitizer build, whose blocks
  // come from operator new).
  size_t ArenaBytes() const;
  // The most ArenaBytes() has been.
  size_t PeakArenaBytes() const;

 private:
  struct RowBlock;
  using Entry = RawEntry;
  static constexpr Entry Pack(Count count, TopicId topic) {
    return (static_cast<Entry>(count) << 16) | topic;
  }
  static constexpr Count CountOf(Entry e) {
    return static_cast<Count>(e >> 16);
  }
  static constexpr TopicId TopicOf(Entry e) {
    return static_cast<TopicId>(e & 0xffffu);
  }

  // A sparse block's entries, a dense one's counts.
  static const std::atomic<Entry>* EntriesOf(const RowBlock* block);
  static const std::atomic<Count>* CountsOf(const RowBlock* block);
  static bool BlockIsDense(const RowBlock* block);
  // The count in slot `slot` of either kind of block.
  static Count SlotCount(const RowBlock* block, uint32_t slot);

  // Writer (or no reader active): blocks from arena_.
  static size_t BlockBytes(uint32_t capacity, bool dense);
  // A block of at least `min_bytes` (and BlockBytes(capacity, dense)).
  RowBlock* AllocateBlock(uint32_t capacity, bool dense, size_t min_bytes = 0);
  // The bytes of the block Quiesce lays a row of `topics` non-zeros out in.
  size_t LaidOutBytes(uint32_t topics) const;
  // Sets up an empty row of `capacity` slots in `block` (its block_bytes
  // kept): all counts 0, size 0 (sparse) or K (dense).
  static void InitBlock(RowBlock* block, uint32_t capacity, bool dense);
  // Writes a row's non-zero (topic, count) pairs into `block`, empty as
  // InitBlock leaves it: a dense row's by topic, a sparse row's in slots
  // 0, 1, ... in the order given.
  static void LayOut(RowBlock* block,
                     std::span<const std::pair<TopicId, Count>> nonzero);
  void FreeBlock(RowBlock* block);
  static std::atomic<Entry>* MutableEntries(RowBlock* block);
  static std::atomic<Count>* MutableCounts(RowBlock* block);
  // Writer: records the slot of each non-zero topic of a sparse row, for
  // MappedSlot (the slot, or -1) until the next MapRow.
  void MapRow(const RowBlock* block);
  int32_t MappedSlot(TopicId topic) const;
  // Writer: slots[i] = the slot of group[i].topic in `block` (-1: not in
  // it, or outside the table), by searching the row for a few deltas
  // (internal/row_search.h) or by MapRow.
  void FindSlots(const RowBlock* block, std::span<const WordTopicDelta> group,
                 int32_t* slots);
  // Writer: applies one word's validated deltas; slots[i] is deltas[i]'s
  // slot in the row, -1 if the topic is not in it.
  void ApplyRow(std::span<const WordTopicDelta> deltas,
                std::span<const int32_t> slots);
  // Whether a positive delta would take a count of the (sparse or null)
  // row past kMaxSparseCount; slots as for ApplyRow.
  static bool PassesSparseCount(const RowBlock* block,
                                std::span<const WordTopicDelta> deltas,
                                std::span<const int32_t> slots);
  // Writer: replaces the (sparse or null) row `old` of `word` by a dense
  // copy with the validated `deltas` applied.
  void ApplyDense(WordId word, RowBlock* old,
                  std::span<const WordTopicDelta> deltas);
  // Writer: replaces the row by a compacted copy with room for `extra` more
  // topics (dense if that would exceed dense_threshold_).
  RowBlock* Regrow(WordId word, RowBlock* old, uint32_t extra);
  // The capacity Quiesce lays a row of `nonzeros` topics out with: K if
  // that is more than dense_threshold_ (a dense row), else half as much
  // again as it holds.
  uint32_t LaidOutCapacity(uint32_t nonzeros) const;
  // Moves every row held in the arena's chunks, in address order, to a new
  // arena, and frees each old chunk once its rows have moved: the memory
  // held grows by at most about a chunk meanwhile. Nothing if the chunks
  // hold under 8 MiB or the rows fill two thirds of them.
  void CompactArena();
  // A new block holding the sparse row `old`'s non-zero counts: dense, or
  // sparse with room for `topics` topics.
  // REQUIRES: old is sparse; if !dense, topics >= old's non-zeros.
  RowBlock* CopyRow(const RowBlock* old, bool dense, uint32_t topics = 0);

  const TopicId num_topics_;
  const uint32_t dense_threshold_;  // a row with more non-zeros goes dense
  size_t vocab_size_ = 0;
  std::unique_ptr<std::atomic<RowBlock*>[]> rows_;
  std::unique_ptr<std::atomic<int64_t>[]> totals_;
  std::vector<RowBlock*> retired_;  // writer-only; freed by Quiesce()
  // The row blocks' memory (huge-page chunks, internal/row_arena.h).
  std::unique_ptr<internal::RowArena> arena_;
  size_t compacted_arena_peak_ = 0;  // before the last CompactArena
  // Writer scratch for Apply: net change of n_k, and whether k is listed.
  std::vector<int64_t> topic_delta_;
  std::vector<uint8_t> topic_touched_;
  // Writer scratch for Apply: each delta's slot as validated, the runs of
  // deltas of one word with the row block they were validated against,
  // and MapRow's topic -> (generation << 32 | slot) map.
  std::vector<int32_t> slot_cache_;
  struct RowGroup {
    size_t begin, end;
    const RowBlock* block;
  };
  std::vector<RowGroup> groups_;
  std::vector<uint64_t> slot_of_;
  uint32_t map_generation_ = 0;
  void ResetTouched(const std::vector<TopicId>& touched);
  // Writer: prefetches the rows Apply's validation of groups_[g] will
  // reach a few groups later.
  void PrefetchGroups(std::span<const WordTopicDelta> deltas, size_t g) const;
};

// The expected number of distinct topics among n uniform draws of K:
// K(1 - (1 - 1/K)^n), rounded up. What a row of a word of n tokens holds
// after the corpus builder's uniform draws; more than a sampler's pass
// leaves it (topics concentrate).
uint32_t ExpectedTopicsOfUniformDraws(uint64_t n, TopicId num_topics);

// ---- Layout shared by the inline reader. ----

struct alignas(8) TopicTable::RowBlock {
  std::atomic<uint32_t> size;  // slots in use (release-stored by writer)
  uint32_t capacity;
  bool dense;
  // The bytes of memory under the block, BlockBytes(capacity, dense) or
  // more (the arena hands out larger free blocks, and Quiesce keeps a row
  // in a block up to twice what it needs).
  uint32_t block_bytes;
  // followed by `capacity` std::atomic<Entry> (sparse) or std::atomic<Count>
  // (dense)
};

inline size_t TopicTable::BlockBytes(uint32_t capacity, bool dense) {
  return sizeof(RowBlock) +
         size_t{capacity} *
             (dense ? sizeof(std::atomic<Count>) : sizeof(std::atomic<Entry>));
}

inline bool TopicTable::BlockIsDense(const RowBlock* block) {
  return block->dense;
}

inline const std::atomic<TopicTable::Entry>* TopicTable::EntriesOf(
    const RowBlock* block) {
  return reinterpret_cast<const std::atomic<Entry>*>(block + 1);
}

inline const std::atomic<Count>* TopicTable::CountsOf(const RowBlock* block) {
  return reinterpret_cast<const std::atomic<Count>*>(block + 1);
}

inline Count TopicTable::SlotCount(const RowBlock* block, uint32_t slot) {
  return block->dense
             ? CountsOf(block)[slot].load(std::memory_order_relaxed)
             : CountOf(EntriesOf(block)[slot].load(std::memory_order_relaxed));
}

template <typename Fn>
void TopicTable::ForEachNonZero(WordId word, Fn&& fn) const {
  ForEachSlot(word, [&fn](TopicId k, Count c) {
    if (c > 0) fn(k, c);
  });
}

inline void TopicTable::PrefetchRow(WordId word) const {
  const RowBlock* block = rows_[word].load(std::memory_order_relaxed);
  if (block == nullptr) return;
  // The header and the first entries share the first lines of the block.
  const char* p = reinterpret_cast<const char*>(block);
  __builtin_prefetch(p);
  __builtin_prefetch(p + 64);
  __builtin_prefetch(p + 128);
  __builtin_prefetch(p + 192);
}

inline void TopicTable::PrefetchRowRest(WordId word) const {
  // Acquire: it reads the header the writer filled before publishing.
  const RowBlock* block = rows_[word].load(std::memory_order_acquire);
  if (block == nullptr || !block->dense) return;
  constexpr size_t kFirst = 256, kMaxBytes = 1024;
  const size_t bytes = std::min(BlockBytes(num_topics_, true), kMaxBytes);
  const char* p = reinterpret_cast<const char*>(block);
  for (size_t at = kFirst; at < bytes; at += 64) __builtin_prefetch(p + at);
}

inline TopicTable::RawRow TopicTable::Raw(WordId word) const {
  const RowBlock* block = rows_[word].load(std::memory_order_acquire);
  if (block == nullptr) return {};
  const uint32_t size = block->size.load(std::memory_order_acquire);
  if (block->dense) return {nullptr, CountsOf(block), size, true};
  return {EntriesOf(block), nullptr, size, false};
}

template <typename Fn>
bool TopicTable::ForEachSlot(WordId word, Fn&& fn) const {
  const RowBlock* block = rows_[word].load(std::memory_order_acquire);
  if (block == nullptr) return false;
  const uint32_t size = block->size.load(std::memory_order_acquire);
  if (block->dense) {
    const std::atomic<Count>* counts = CountsOf(block);
    for (uint32_t k = 0; k < size; ++k) {
      fn(k, counts[k].load(std::memory_order_relaxed));
    }
    return true;
  }
  const std::atomic<Entry>* entries = EntriesOf(block);
  for (uint32_t i = 0; i < size; ++i) {
    const Entry e = entries[i].load(std::memory_order_relaxed);
    fn(TopicOf(e), CountOf(e));
  }
  return false;
}

}  // namespace latentd

#endif  // LATENTD_SAMPLER_TOPIC_TABLE_H_
