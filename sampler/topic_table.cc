#include "sampler/topic_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "sampler/internal/row_arena.h"
#include "sampler/internal/row_search.h"

namespace latentd {

TopicTable::TopicTable(size_t vocab_size, TopicId num_topics)
    : num_topics_(num_topics),
      dense_threshold_(std::max<uint32_t>(num_topics / 2, 1)),
      totals_(new std::atomic<int64_t>[num_topics]),
      arena_(std::make_unique<internal::RowArena>()),
      topic_delta_(num_topics, 0),
      topic_touched_(num_topics, 0),
      slot_of_(num_topics, 0) {
  LATENTD_CHECK(num_topics > 0 && num_topics <= kMaxTopics);
  for (TopicId k = 0; k < num_topics; ++k) totals_[k].store(0);
  Resize(vocab_size);
}

TopicTable::~TopicTable() {
  for (size_t w = 0; w < vocab_size_; ++w) FreeBlock(rows_[w].load());
  for (RowBlock* b : retired_) FreeBlock(b);
}

TopicTable::RowBlock* TopicTable::AllocateBlock(uint32_t capacity, bool dense,
                                                size_t min_bytes) {
  size_t usable = 0;
  void* raw = arena_->Allocate(std::max(BlockBytes(capacity, dense), min_bytes),
                               &usable);
  RowBlock* block = new (raw) RowBlock;
  block->block_bytes = static_cast<uint32_t>(usable);
  InitBlock(block, capacity, dense);
  return block;
}

void TopicTable::InitBlock(RowBlock* block, uint32_t capacity, bool dense) {
  block->capacity = capacity;
  block->dense = dense;
  if (dense) {
    auto* counts = reinterpret_cast<std::atomic<Count>*>(block + 1);
    for (uint32_t k = 0; k < capacity; ++k)
      new (&counts[k]) std::atomic<Count>(0);
  } else {
    auto* entries = reinterpret_cast<std::atomic<Entry>*>(block + 1);
    for (uint32_t i = 0; i < capacity; ++i)
      new (&entries[i]) std::atomic<Entry>(0);
  }
  block->size.store(dense ? capacity : 0, std::memory_order_relaxed);
}

void TopicTable::LayOut(RowBlock* block,
                        std::span<const std::pair<TopicId, Count>> nonzero) {
  if (block->dense) {
    for (const auto& [k, c] : nonzero) {
      MutableCounts(block)[k].store(c, std::memory_order_relaxed);
    }
    return;
  }
  for (uint32_t i = 0; i < nonzero.size(); ++i) {
    MutableEntries(block)[i].store(Pack(nonzero[i].second, nonzero[i].first),
                                   std::memory_order_relaxed);
  }
  block->size.store(static_cast<uint32_t>(nonzero.size()),
                    std::memory_order_relaxed);
}

std::atomic<TopicTable::Entry>* TopicTable::MutableEntries(RowBlock* block) {
  return reinterpret_cast<std::atomic<Entry>*>(block + 1);
}

std::atomic<Count>* TopicTable::MutableCounts(RowBlock* block) {
  return reinterpret_cast<std::atomic<Count>*>(block + 1);
}

void TopicTable::FreeBlock(RowBlock* block) {
  if (block == nullptr) return;
  // RowBlock and the atomics are trivially destructible.
  arena_->Free(block, block->block_bytes);
}

Count TopicTable::Get(WordId word, TopicId topic) const {
  const RowBlock* block = rows_[word].load(std::memory_order_acquire);
  if (block == nullptr) return 0;
  if (block->dense) {
    return CountsOf(block)[topic].load(std::memory_order_relaxed);
  }
  const std::atomic<Entry>* entries = EntriesOf(block);
  const uint32_t size = block->size.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < size; ++i) {
    const Entry e = entries[i].load(std::memory_order_relaxed);
    if (TopicOf(e) == topic && CountOf(e) > 0) return CountOf(e);
  }
  return 0;
}

size_t TopicTable::RowNonZeros(WordId word) const {
  size_t n = 0;
  ForEachNonZero(word, [&n](TopicId, Count) { ++n; });
  return n;
}

int64_t TopicTable::TotalTokens() const {
  int64_t total = 0;
  for (TopicId k = 0; k < num_topics_; ++k) total += TopicTotal(k);
  return total;
}

size_t TopicTable::MemoryBytes() const {
  size_t bytes = vocab_size_ * sizeof(std::atomic<RowBlock*>);
  for (size_t w = 0; w < vocab_size_; ++w) {
    const RowBlock* block = rows_[w].load(std::memory_order_acquire);
    if (block != nullptr) {
      bytes += BlockBytes(block->capacity, block->dense);
    }
  }
  return bytes;
}

size_t TopicTable::ArenaBytes() const { return arena_->chunk_bytes(); }

size_t TopicTable::PeakArenaBytes() const {
  return std::max(compacted_arena_peak_, arena_->peak_chunk_bytes());
}

void TopicTable::MapRow(const RowBlock* block) {
  if (++map_generation_ == 0) {  // wrapped: no stale stamp may match
    std::fill(slot_of_.begin(), slot_of_.end(), 0);
    map_generation_ = 1;
  }
  const uint64_t stamp = uint64_t{map_generation_} << 32;
  const std::atomic<Entry>* entries = EntriesOf(block);
  const uint32_t size = block->size.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < size; ++i) {
    const Entry e = entries[i].load(std::memory_order_relaxed);
    if (CountOf(e) > 0) slot_of_[TopicOf(e)] = stamp | i;
  }
}

void TopicTable::FindSlots(const RowBlock* block,
                           std::span<const WordTopicDelta> group,
                           int32_t* slots) {
  if (block == nullptr || block->dense) {
    for (size_t i = 0; i < group.size(); ++i) {
      slots[i] = block == nullptr || group[i].topic >= num_topics_
                     ? -1
                     : static_cast<int32_t>(group[i].topic);
    }
    return;
  }
  // Searching costs about a sixteenth of a mapping's walk a delta
  // (internal/row_search.h); short rows are mapped at once either way.
  constexpr size_t kSearchMaxDeltas = 8;
  constexpr uint32_t kSearchMinSlots = 64;
  const uint32_t size = block->size.load(std::memory_order_relaxed);
  if (internal::kFindSlot != nullptr && group.size() <= kSearchMaxDeltas &&
      size >= kSearchMinSlots) {
    for (size_t i = 0; i < group.size(); ++i) {
      slots[i] =
          group[i].topic >= num_topics_
              ? -1
              : internal::kFindSlot(EntriesOf(block), size, group[i].topic);
    }
    return;
  }
  MapRow(block);
  for (size_t i = 0; i < group.size(); ++i) {
    slots[i] = group[i].topic >= num_topics_ ? -1 : MappedSlot(group[i].topic);
  }
}

int32_t TopicTable::MappedSlot(TopicId topic) const {
  const uint64_t v = slot_of_[topic];
  return (v >> 32) == map_generation_ ? static_cast<int32_t>(v & 0xffffffffu)
                                      : -1;
}

absl::Status TopicTable::AdjustTotals(std::span<const int64_t> delta) {
  LATENTD_CHECK(delta.size() == num_topics_);
  for (TopicId k = 0; k < num_topics_; ++k) {
    if (TopicTotal(k) + delta[k] < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("adjusting n(", k, ") = ", TopicTotal(k), " by ",
                       delta[k], " would make it negative"));
    }
  }
  for (TopicId k = 0; k < num_topics_; ++k) {
    if (delta[k] != 0) {
      totals_[k].fetch_add(delta[k], std::memory_order_relaxed);
    }
  }
  return absl::OkStatus();
}

absl::Status TopicTable::Apply(std::span<const WordTopicDelta> deltas) {
  // Validate everything first so a bad batch leaves the table unchanged.
  // Deltas come grouped by word (the combiner sorts them); each group maps
  // its row once, and each delta's slot (-1: not in the row) is kept for
  // the second pass.
  std::vector<TopicId> touched;
  slot_cache_.resize(deltas.size());
  groups_.clear();
  for (size_t begin = 0; begin < deltas.size();) {
    size_t end = begin + 1;
    while (end < deltas.size() && deltas[end].word == deltas[begin].word) ++end;
    groups_.push_back({begin, end, nullptr});
    begin = end;
  }
  absl::Status status;
  for (size_t g = 0; g < groups_.size() && status.ok(); ++g) {
    PrefetchGroups(deltas, g);
    const size_t begin = groups_[g].begin, end = groups_[g].end;
    const WordId word = deltas[begin].word;
    if (word >= vocab_size_) {
      status = absl::FailedPreconditionError(
          absl::StrCat("delta for word ", word, " is outside the table (",
                       vocab_size_, " words)"));
      break;
    }
    const RowBlock* block = rows_[word].load(std::memory_order_relaxed);
    FindSlots(block, deltas.subspan(begin, end - begin), &slot_cache_[begin]);
    for (size_t i = begin; i < end && status.ok(); ++i) {
      const WordTopicDelta& d = deltas[i];
      if (d.topic >= num_topics_) {
        status = absl::FailedPreconditionError(
            absl::StrCat("delta for word ", word, " topic ", d.topic,
                         " is outside the table (", num_topics_, " topics)"));
        break;
      }
      const int32_t slot = slot_cache_[i];
      const Count have = slot < 0 ? 0 : SlotCount(block, slot);
      if (have + d.delta < 0) {
        status = absl::FailedPreconditionError(
            absl::StrCat("delta ", d.delta, " would make n(word ", word,
                         ", topic ", d.topic, ") = ", have, " negative"));
        break;
      }
      if (!topic_touched_[d.topic]) {
        topic_touched_[d.topic] = 1;
        touched.push_back(d.topic);
      }
      topic_delta_[d.topic] += d.delta;
    }
    groups_[g].block = block;
  }
  for (size_t t = 0; t < touched.size() && status.ok(); ++t) {
    const TopicId k = touched[t];
    if (topic_delta_[k] + TopicTotal(k) < 0) {
      status = absl::FailedPreconditionError(
          absl::StrCat("deltas would make n(topic ", k, ") negative"));
    }
  }
  if (!status.ok()) {
    ResetTouched(touched);
    return status;
  }

  // Totals grow before the rows and shrink after them: readers then always
  // see n_k >= n_wk.
  for (TopicId k : touched) {
    if (topic_delta_[k] > 0) {
      totals_[k].fetch_add(topic_delta_[k], std::memory_order_relaxed);
    }
  }
  for (const RowGroup& g : groups_) {
    const RowBlock* block =
        rows_[deltas[g.begin].word].load(std::memory_order_relaxed);
    if (block != g.block) {
      // An earlier group of the same word regrew the row: find the slots
      // again (deltas are unique per (word, topic), so no earlier group
      // took or emptied one of this group's topics).
      FindSlots(block, deltas.subspan(g.begin, g.end - g.begin),
                &slot_cache_[g.begin]);
    }
    ApplyRow(deltas.subspan(g.begin, g.end - g.begin),
             std::span<const int32_t>(slot_cache_)
                 .subspan(g.begin, g.end - g.begin));
  }
  for (TopicId k : touched) {
    if (topic_delta_[k] < 0) {
      totals_[k].fetch_add(topic_delta_[k], std::memory_order_relaxed);
    }
  }
  ResetTouched(touched);
  return absl::OkStatus();
}

void TopicTable::PrefetchGroups(std::span<const WordTopicDelta> deltas,
                                size_t g) const {
  // Each group's row is a cache miss of its own (rows are visited in word
  // order, which no hardware prefetcher follows): the row pointers of the
  // groups kFar ahead, the row heads kNear ahead, and the entries a dense
  // row's deltas will read kNearest ahead. A group is a few deltas, tens of
  // nanoseconds of work, so a miss to memory needs tens of groups' notice
  // (8 / 4 / 2 left a 200 M-token sweep's writer waiting on each row).
  constexpr size_t kFar = 32, kNear = 16, kNearest = 8;
  auto word_of = [&](size_t h) { return deltas[groups_[h].begin].word; };
  if (g + kFar < groups_.size() && word_of(g + kFar) < vocab_size_) {
    PrefetchRowPointer(word_of(g + kFar));
  }
  if (g + kNear < groups_.size() && word_of(g + kNear) < vocab_size_) {
    PrefetchRow(word_of(g + kNear));
  }
  if (g + kNearest < groups_.size() && word_of(g + kNearest) < vocab_size_) {
    const RowGroup& next = groups_[g + kNearest];
    const RowBlock* block =
        rows_[word_of(g + kNearest)].load(std::memory_order_relaxed);
    if (block != nullptr && block->dense) {
      for (size_t i = next.begin; i < next.end; ++i) {
        if (deltas[i].topic < num_topics_) {
          __builtin_prefetch(&CountsOf(block)[deltas[i].topic]);
        }
      }
    }
  }
}

void TopicTable::ResetTouched(const std::vector<TopicId>& touched) {
  for (TopicId k : touched) {
    topic_delta_[k] = 0;
    topic_touched_[k] = 0;
  }
}

void TopicTable::ApplyRow(std::span<const WordTopicDelta> deltas,
                          std::span<const int32_t> slots) {
  const WordId word = deltas[0].word;
  RowBlock* block = rows_[word].load(std::memory_order_relaxed);
  if ((block == nullptr || !block->dense) &&
      PassesSparseCount(block, deltas, slots)) {
    ApplyDense(word, block, deltas);
    return;
  }
  // Topics already in the row change in place.
  uint32_t inserts = 0;
  for (size_t i = 0; i < deltas.size(); ++i) {
    if (deltas[i].delta == 0) continue;
    if (slots[i] < 0) {
      ++inserts;
      continue;
    }
    if (block->dense) {
      std::atomic<Count>& count = MutableCounts(block)[slots[i]];
      count.store(count.load(std::memory_order_relaxed) + deltas[i].delta,
                  std::memory_order_release);
      continue;
    }
    std::atomic<Entry>& entry = MutableEntries(block)[slots[i]];
    const Count now =
        CountOf(entry.load(std::memory_order_relaxed)) + deltas[i].delta;
    entry.store(Pack(now, deltas[i].topic), std::memory_order_release);
  }
  if (inserts == 0) return;

  // New topics take the row's zero-count slots, then its spare capacity;
  // a row without room for them all is regrown once (perhaps dense).
  if (block == nullptr) {
    block = AllocateBlock(
        std::min<uint32_t>(std::max<uint32_t>(4, inserts), dense_threshold_),
        false);
    rows_[word].store(block, std::memory_order_release);
  }
  uint32_t size = block->size.load(std::memory_order_relaxed);
  if (!block->dense && block->capacity - size < inserts) {
    uint32_t holes = 0;
    for (uint32_t i = 0; i < size; ++i) {
      holes +=
          CountOf(MutableEntries(block)[i].load(std::memory_order_relaxed)) ==
          0;
    }
    if (holes + (block->capacity - size) < inserts) {
      block = Regrow(word, block, inserts);
      size = block->size.load(std::memory_order_relaxed);
    }
  }
  if (block->dense) {
    std::atomic<Count>* counts = MutableCounts(block);
    for (size_t i = 0; i < deltas.size(); ++i) {
      if (deltas[i].delta == 0 || slots[i] >= 0) continue;
      counts[deltas[i].topic].store(deltas[i].delta, std::memory_order_release);
    }
    return;
  }
  std::atomic<Entry>* entries = MutableEntries(block);
  uint32_t hole = 0;
  for (size_t i = 0; i < deltas.size(); ++i) {
    if (deltas[i].delta == 0 || slots[i] >= 0) continue;
    const Entry e = Pack(deltas[i].delta, deltas[i].topic);
    hole = internal::NextHole(entries, size, hole);
    if (hole < size) {
      entries[hole++].store(e, std::memory_order_release);
    } else {
      entries[size].store(e, std::memory_order_relaxed);
      // Publishes the entry: a reader that sees the new size sees it.
      block->size.store(++size, std::memory_order_release);
      hole = size;
    }
  }
}

bool TopicTable::PassesSparseCount(const RowBlock* block,
                                   std::span<const WordTopicDelta> deltas,
                                   std::span<const int32_t> slots) {
  for (size_t i = 0; i < deltas.size(); ++i) {
    if (deltas[i].delta <= 0) continue;
    const Count have = slots[i] < 0 ? 0 : SlotCount(block, slots[i]);
    if (int64_t{have} + deltas[i].delta > kMaxSparseCount) return true;
  }
  return false;
}

void TopicTable::ApplyDense(WordId word, RowBlock* old,
                            std::span<const WordTopicDelta> deltas) {
  RowBlock* block =
      old == nullptr ? AllocateBlock(num_topics_, true) : CopyRow(old, true);
  // The counts land before the block is published; readers still on `old`
  // finish safely since it is only freed by Quiesce().
  std::atomic<Count>* counts = MutableCounts(block);
  for (const WordTopicDelta& d : deltas) {
    counts[d.topic].store(
        counts[d.topic].load(std::memory_order_relaxed) + d.delta,
        std::memory_order_relaxed);
  }
  rows_[word].store(block, std::memory_order_release);
  if (old != nullptr) retired_.push_back(old);
}

TopicTable::RowBlock* TopicTable::Regrow(WordId word, RowBlock* old,
                                         uint32_t extra) {
  const std::atomic<Entry>* old_entries = EntriesOf(old);
  const uint32_t old_size = old->size.load(std::memory_order_relaxed);
  uint32_t nonzeros = 0;
  for (uint32_t i = 0; i < old_size; ++i) {
    if (CountOf(old_entries[i].load(std::memory_order_relaxed)) > 0) {
      ++nonzeros;
    }
  }
  const uint32_t wanted = nonzeros + extra;
  RowBlock* block =
      wanted > dense_threshold_
          ? CopyRow(old, true)
          : CopyRow(old, false,
                    std::min<uint32_t>(std::max<uint32_t>(4, 2 * wanted),
                                       dense_threshold_));
  // Publishes the filled block; readers still on `old` finish safely since
  // it is only freed by Quiesce().
  rows_[word].store(block, std::memory_order_release);
  retired_.push_back(old);
  return block;
}

TopicTable::RowBlock* TopicTable::CopyRow(const RowBlock* old, bool dense,
                                          uint32_t topics) {
  const std::atomic<Entry>* old_entries = EntriesOf(old);
  const uint32_t old_size = old->size.load(std::memory_order_relaxed);
  RowBlock* block;
  if (dense) {
    block = AllocateBlock(num_topics_, true);
    std::atomic<Count>* counts = MutableCounts(block);
    for (uint32_t i = 0; i < old_size; ++i) {
      const Entry e = old_entries[i].load(std::memory_order_relaxed);
      if (CountOf(e) > 0) {
        counts[TopicOf(e)].store(CountOf(e), std::memory_order_relaxed);
      }
    }
  } else {
    block = AllocateBlock(topics, false);
    std::atomic<Entry>* entries = MutableEntries(block);
    uint32_t n = 0;
    for (uint32_t i = 0; i < old_size; ++i) {
      const Entry e = old_entries[i].load(std::memory_order_relaxed);
      if (CountOf(e) > 0) entries[n++].store(e, std::memory_order_relaxed);
    }
    block->size.store(n, std::memory_order_relaxed);
  }
  return block;
}

uint32_t TopicTable::LaidOutCapacity(uint32_t nonzeros) const {
  if (nonzeros > dense_threshold_) return num_topics_;
  return std::min<uint32_t>(std::max<uint32_t>(4, nonzeros + nonzeros / 2),
                            dense_threshold_);
}

size_t TopicTable::LaidOutBytes(uint32_t topics) const {
  return BlockBytes(LaidOutCapacity(topics), topics > dense_threshold_);
}

void TopicTable::ReserveRows(std::span<const uint32_t> row_topics,
                             std::span<const uint32_t> later_topics) {
  LATENTD_CHECK(row_topics.size() == vocab_size_);
  LATENTD_CHECK(later_topics.empty() || later_topics.size() == vocab_size_);
  std::vector<std::pair<TopicId, Count>> nonzero;
  for (size_t w = 0; w < vocab_size_; ++w) {
    const uint32_t wanted = std::min<uint32_t>(row_topics[w], num_topics_);
    if (wanted == 0) continue;
    // The block Quiesce gives a row of `wanted` topics, so that a row
    // reserved about right keeps its block's size class there.
    const uint32_t topics = LaidOutCapacity(wanted);
    const bool dense = wanted > dense_threshold_;
    const size_t min_bytes =
        later_topics.empty()
            ? 0
            : LaidOutBytes(std::min<uint32_t>(later_topics[w], num_topics_));
    RowBlock* block = rows_[w].load(std::memory_order_relaxed);
    if (block == nullptr) {
      rows_[w].store(AllocateBlock(topics, dense, min_bytes),
                     std::memory_order_relaxed);
      continue;
    }
    if (block->dense || block->capacity >= topics) continue;
    if (block->block_bytes >= BlockBytes(topics, dense)) {
      // No reader runs: the row is laid out again in its own block.
      nonzero.clear();
      ForEachNonZero(static_cast<WordId>(w),
                     [&](TopicId k, Count c) { nonzero.emplace_back(k, c); });
      InitBlock(block, topics, dense);
      LayOut(block, nonzero);
      continue;
    }
    // The row holds at most its capacity, so fewer than `topics`.
    RowBlock* fresh = CopyRow(block, dense, topics);
    rows_[w].store(fresh, std::memory_order_relaxed);
    FreeBlock(block);
  }
}

void TopicTable::ReleaseRetired() {
  for (RowBlock* b : retired_) FreeBlock(b);
  retired_.clear();
}

void TopicTable::Quiesce() {
  ReleaseRetired();
  // Every row is laid out again in its canonical form: topics ascending,
  // dense exactly when it has more than dense_threshold_ non-zeros or a
  // count past kMaxSparseCount, capacity a function of the non-zeros. The
  // layout (and so the order in which the kernels visit a row, and the
  // draws) then depends only on the counts, so a table rebuilt from a token
  // store samples exactly like the original.
  std::vector<std::pair<TopicId, Count>> nonzero;
  for (size_t w = 0; w < vocab_size_; ++w) {
    RowBlock* block = rows_[w].load(std::memory_order_relaxed);
    if (block == nullptr) continue;
    nonzero.clear();
    Count largest = 0;
    ForEachNonZero(static_cast<WordId>(w), [&](TopicId k, Count c) {
      nonzero.emplace_back(k, c);
      largest = std::max(largest, c);
    });
    // A row stays in its block where the block holds its layout and is at
    // most twice its size; else the block goes back first, so a row of the
    // same size class takes it again (free lists are last in, first out).
    const bool dense =
        nonzero.size() > dense_threshold_ || largest > kMaxSparseCount;
    const uint32_t n = static_cast<uint32_t>(nonzero.size());
    const uint32_t capacity = dense ? num_topics_ : LaidOutCapacity(n);
    const size_t needed =
        internal::RowArena::UsableSize(BlockBytes(capacity, dense));
    RowBlock* fresh = nullptr;
    if (n > 0 && needed <= block->block_bytes &&
        block->block_bytes <= 2 * needed) {
      fresh = block;
      InitBlock(fresh, capacity, dense);
    } else {
      FreeBlock(block);
      if (n > 0) fresh = AllocateBlock(capacity, dense);
    }
    if (n > 0) {
      if (!dense) std::sort(nonzero.begin(), nonzero.end());
      LayOut(fresh, nonzero);
    }
    rows_[w].store(fresh, std::memory_order_release);
  }
  CompactArena();
}

void TopicTable::CompactArena() {
  constexpr size_t kMinBytes = size_t{8} << 20;
  if (arena_->chunk_bytes() < kMinBytes) return;
  struct Held {
    RowBlock* block;
    WordId word;
  };
  std::vector<Held> held;
  size_t needed = 0;
  for (size_t w = 0; w < vocab_size_; ++w) {
    RowBlock* block = rows_[w].load(std::memory_order_relaxed);
    if (block == nullptr || !internal::RowArena::InChunk(block->block_bytes)) {
      continue;
    }
    held.push_back({block, static_cast<WordId>(w)});
    needed += internal::RowArena::UsableSize(
        BlockBytes(block->capacity, block->dense));
  }
  if (3 * needed >= 2 * arena_->chunk_bytes()) return;
  std::sort(held.begin(), held.end(),
            [](const Held& a, const Held& b) { return a.block < b.block; });
  auto fresh = std::make_unique<internal::RowArena>();
  const std::vector<internal::RowArena::Chunk> chunks = arena_->Chunks();
  size_t next_chunk = 0;
  for (const Held& h : held) {
    // A chunk that ends at or before this block holds no row left to move.
    while (next_chunk < chunks.size() &&
           chunks[next_chunk].begin + chunks[next_chunk].bytes <=
               reinterpret_cast<char*>(h.block)) {
      arena_->FreeChunk(chunks[next_chunk++].begin);
    }
    const size_t bytes = BlockBytes(h.block->capacity, h.block->dense);
    size_t usable = 0;
    void* raw = fresh->Allocate(bytes, &usable);
    std::memcpy(raw, static_cast<const void*>(h.block), bytes);
    RowBlock* moved = static_cast<RowBlock*>(raw);
    moved->block_bytes = static_cast<uint32_t>(usable);
    rows_[h.word].store(moved, std::memory_order_release);
  }
  // The old arena's chunks go with it; blocks from operator new are any
  // arena's to free.
  compacted_arena_peak_ = PeakArenaBytes();
  arena_ = std::move(fresh);
}

void TopicTable::Resize(size_t new_vocab_size) {
  LATENTD_CHECK(new_vocab_size >= vocab_size_);
  auto rows = std::make_unique<std::atomic<RowBlock*>[]>(new_vocab_size);
  for (size_t w = 0; w < new_vocab_size; ++w) {
    rows[w].store(w < vocab_size_ ? rows_[w].load() : nullptr,
                  std::memory_order_relaxed);
  }
  rows_ = std::move(rows);
  vocab_size_ = new_vocab_size;
}

void TopicTable::Clear() {
  for (size_t w = 0; w < vocab_size_; ++w) {
    FreeBlock(rows_[w].exchange(nullptr));
  }
  for (RowBlock* b : retired_) FreeBlock(b);
  retired_.clear();
  for (TopicId k = 0; k < num_topics_; ++k) totals_[k].store(0);
}

uint32_t ExpectedTopicsOfUniformDraws(uint64_t n, TopicId num_topics) {
  if (n == 0) return 0;
  if (num_topics == 1) return 1;
  const double K = num_topics;
  const double topics =
      std::ceil(K * -std::expm1(static_cast<double>(n) * std::log1p(-1 / K)));
  return static_cast<uint32_t>(std::min(topics, K));
}

double TopicTable::MeanRowTopics() const {
  double weighted = 0, tokens = 0;
  for (WordId w = 0; w < vocab_size(); ++w) {
    double n_w = 0, nnz = 0;
    ForEachNonZero(w, [&](TopicId, Count c) {
      n_w += c;
      ++nnz;
    });
    weighted += n_w * nnz;
    tokens += n_w;
  }
  return tokens > 0 ? weighted / tokens : 0;
}

}  // namespace latentd
