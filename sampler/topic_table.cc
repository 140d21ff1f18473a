#include "sampler/topic_table.h"

#include <algorithm>
#include <new>

#include "absl/strings/str_cat.h"
#include "corpora/check.h"

namespace latentd {

TopicTable::TopicTable(size_t vocab_size, TopicId num_topics)
    : num_topics_(num_topics),
      dense_threshold_(std::max<uint32_t>(num_topics / 2, 1)),
      totals_(new std::atomic<int64_t>[num_topics]),
      topic_delta_(num_topics, 0),
      topic_touched_(num_topics, 0) {
  LATENTD_CHECK(num_topics > 0 && num_topics <= kMaxTopics);
  for (TopicId k = 0; k < num_topics; ++k) totals_[k].store(0);
  Resize(vocab_size);
}

TopicTable::~TopicTable() {
  for (size_t w = 0; w < vocab_size_; ++w) FreeBlock(rows_[w].load());
  for (RowBlock* b : retired_) FreeBlock(b);
}

TopicTable::RowBlock* TopicTable::AllocateBlock(uint32_t capacity, bool dense,
                                                TopicId num_topics) {
  void* raw = ::operator new (sizeof(RowBlock) +
                              size_t{capacity} * sizeof(std::atomic<Entry>));
  RowBlock* block = new (raw) RowBlock;
  block->capacity = capacity;
  block->dense = dense;
  auto* entries = reinterpret_cast<std::atomic<Entry>*>(block + 1);
  for (uint32_t i = 0; i < capacity; ++i) {
    new (&entries[i]) std::atomic<Entry>(dense ? Pack(0, i) : 0);
  }
  block->size.store(dense ? num_topics : 0, std::memory_order_relaxed);
  return block;
}

std::atomic<TopicTable::Entry>* TopicTable::MutableEntries(RowBlock* block) {
  return reinterpret_cast<std::atomic<Entry>*>(block + 1);
}

void TopicTable::FreeBlock(RowBlock* block) {
  if (block == nullptr) return;
  // RowBlock and the atomics are trivially destructible.
  ::operator delete(block);
}

Count TopicTable::Get(WordId word, TopicId topic) const {
  const RowBlock* block = rows_[word].load(std::memory_order_acquire);
  if (block == nullptr) return 0;
  const std::atomic<Entry>* entries = EntriesOf(block);
  if (block->dense) {
    return CountOf(entries[topic].load(std::memory_order_relaxed));
  }
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

bool TopicTable::RowIsDense(WordId word) const {
  const RowBlock* block = rows_[word].load(std::memory_order_acquire);
  return block != nullptr && block->dense;
}

int64_t TopicTable::TotalTokens() const {
  int64_t total = 0;
  for (TopicId k = 0; k < num_topics_; ++k) total += TopicTotal(k);
  return total;
}

size_t TopicTable::MemoryBytes() const {
  size_t bytes = vocab_size_ * (sizeof(std::atomic<RowBlock*>) +
                                sizeof(std::unique_ptr<RowIndex>));
  for (size_t w = 0; w < vocab_size_; ++w) {
    const RowBlock* block = rows_[w].load(std::memory_order_acquire);
    if (block != nullptr) {
      bytes += sizeof(RowBlock) + block->capacity * sizeof(Entry);
    }
    if (index_[w] != nullptr) {
      bytes += index_[w]->slot.capacity() * (sizeof(TopicId) + 4 + 1) +
               index_[w]->holes.capacity() * 4;
    }
  }
  return bytes;
}

int64_t TopicTable::FindSlot(WordId word, const RowBlock* block,
                             TopicId topic) const {
  if (block == nullptr) return -1;
  if (block->dense) return topic;
  if (const RowIndex* index = index_[word].get(); index != nullptr) {
    auto it = index->slot.find(topic);
    return it == index->slot.end() ? int64_t{-1} : int64_t{it->second};
  }
  const std::atomic<Entry>* entries = EntriesOf(block);
  const uint32_t size = block->size.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < size; ++i) {
    const Entry e = entries[i].load(std::memory_order_relaxed);
    if (TopicOf(e) == topic && CountOf(e) > 0) return i;
  }
  return -1;
}

absl::Status TopicTable::Apply(std::span<const WordTopicDelta> deltas) {
  // Validate everything first so a bad batch leaves the table unchanged.
  std::vector<TopicId> touched;
  slot_cache_.resize(deltas.size());
  for (size_t i = 0; i < deltas.size(); ++i) {
    const WordTopicDelta& d = deltas[i];
    if (d.word >= vocab_size_ || d.topic >= num_topics_) {
      return absl::FailedPreconditionError(
          absl::StrCat("delta for word ", d.word, " topic ", d.topic,
                       " is outside the table (", vocab_size_, " words, ",
                       num_topics_, " topics)"));
    }
    const RowBlock* block = rows_[d.word].load(std::memory_order_relaxed);
    const int64_t slot = FindSlot(d.word, block, d.topic);
    slot_cache_[i] = {block, slot};
    if (d.delta < 0) {
      const Count have =
          slot < 0
              ? 0
              : CountOf(EntriesOf(block)[slot].load(std::memory_order_relaxed));
      if (have + d.delta < 0) {
        ResetTouched(touched);
        return absl::FailedPreconditionError(
            absl::StrCat("delta ", d.delta, " would make n(word ", d.word,
                         ", topic ", d.topic, ") = ", have, " negative"));
      }
    }
    if (!topic_touched_[d.topic]) {
      topic_touched_[d.topic] = 1;
      touched.push_back(d.topic);
    }
    topic_delta_[d.topic] += d.delta;
  }
  for (TopicId k : touched) {
    if (topic_delta_[k] + TopicTotal(k) < 0) {
      ResetTouched(touched);
      return absl::FailedPreconditionError(
          absl::StrCat("deltas would make n(topic ", k, ") negative"));
    }
  }

  // Totals grow before the rows and shrink after them: readers then always
  // see n_k >= n_wk.
  for (TopicId k : touched) {
    if (topic_delta_[k] > 0) {
      totals_[k].fetch_add(topic_delta_[k], std::memory_order_relaxed);
    }
  }
  for (size_t i = 0; i < deltas.size(); ++i) {
    const WordTopicDelta& d = deltas[i];
    if (d.delta == 0) continue;
    RowBlock* block = rows_[d.word].load(std::memory_order_relaxed);
    // The slot found while validating stays right unless an insert into
    // this row moved it to a new block (deltas are unique per (word, topic),
    // so no earlier delta took or emptied this topic's slot).
    const int64_t slot = block == slot_cache_[i].block
                             ? slot_cache_[i].slot
                             : FindSlot(d.word, block, d.topic);
    if (slot < 0) {
      Insert(d.word, d.topic, d.delta);
      continue;
    }
    std::atomic<Entry>& entry = MutableEntries(block)[slot];
    const Count now = CountOf(entry.load(std::memory_order_relaxed)) + d.delta;
    entry.store(Pack(now, d.topic), std::memory_order_release);
    if (now == 0 && !block->dense) {
      if (RowIndex* index = index_[d.word].get(); index != nullptr) {
        index->slot.erase(d.topic);
        index->holes.push_back(static_cast<uint32_t>(slot));
      }
    }
  }
  for (TopicId k : touched) {
    if (topic_delta_[k] < 0) {
      totals_[k].fetch_add(topic_delta_[k], std::memory_order_relaxed);
    }
  }
  ResetTouched(touched);
  return absl::OkStatus();
}

void TopicTable::ResetTouched(const std::vector<TopicId>& touched) {
  for (TopicId k : touched) {
    topic_delta_[k] = 0;
    topic_touched_[k] = 0;
  }
}

void TopicTable::Insert(WordId word, TopicId topic, Count count) {
  RowBlock* block = rows_[word].load(std::memory_order_relaxed);
  if (block == nullptr) {
    block = AllocateBlock(4, false, num_topics_);
    rows_[word].store(block, std::memory_order_release);
  }
  std::atomic<Entry>* entries = MutableEntries(block);
  // A hole: a slot whose count went to zero.
  if (RowIndex* index = index_[word].get(); index != nullptr) {
    if (!index->holes.empty()) {
      const uint32_t slot = index->holes.back();
      index->holes.pop_back();
      entries[slot].store(Pack(count, topic), std::memory_order_release);
      index->slot[topic] = slot;
      return;
    }
  } else {
    const uint32_t size = block->size.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < size; ++i) {
      if (CountOf(entries[i].load(std::memory_order_relaxed)) == 0) {
        entries[i].store(Pack(count, topic), std::memory_order_release);
        return;
      }
    }
  }
  uint32_t size = block->size.load(std::memory_order_relaxed);
  if (size == block->capacity) {
    block = Regrow(word, block, 1);
    if (block->dense) {
      MutableEntries(block)[topic].store(Pack(count, topic),
                                         std::memory_order_release);
      return;
    }
    entries = MutableEntries(block);
    size = block->size.load(std::memory_order_relaxed);
  }
  entries[size].store(Pack(count, topic), std::memory_order_relaxed);
  // Publishes the entry: a reader that sees the new size sees the entry.
  block->size.store(size + 1, std::memory_order_release);
  if (RowIndex* index = index_[word].get(); index != nullptr) {
    index->slot[topic] = size;
  }
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
  RowBlock* block;
  if (wanted > dense_threshold_) {
    block = AllocateBlock(num_topics_, true, num_topics_);
    std::atomic<Entry>* entries = MutableEntries(block);
    for (uint32_t i = 0; i < old_size; ++i) {
      const Entry e = old_entries[i].load(std::memory_order_relaxed);
      if (CountOf(e) > 0)
        entries[TopicOf(e)].store(e, std::memory_order_relaxed);
    }
    index_[word].reset();
  } else {
    const uint32_t capacity =
        std::min<uint32_t>(std::max<uint32_t>(4, 2 * wanted), dense_threshold_);
    block = AllocateBlock(capacity, false, num_topics_);
    std::atomic<Entry>* entries = MutableEntries(block);
    uint32_t n = 0;
    for (uint32_t i = 0; i < old_size; ++i) {
      const Entry e = old_entries[i].load(std::memory_order_relaxed);
      if (CountOf(e) > 0) entries[n++].store(e, std::memory_order_relaxed);
    }
    block->size.store(n, std::memory_order_relaxed);
    RebuildIndex(word, block);
  }
  // Publishes the filled block; readers still on `old` finish safely since
  // it is only freed by Quiesce().
  rows_[word].store(block, std::memory_order_release);
  retired_.push_back(old);
  return block;
}

void TopicTable::RebuildIndex(WordId word, RowBlock* block) {
  if (block->dense || block->capacity <= kIndexedRowSize) {
    index_[word].reset();
    return;
  }
  auto index = std::make_unique<RowIndex>();
  const std::atomic<Entry>* entries = EntriesOf(block);
  const uint32_t size = block->size.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < size; ++i) {
    const Entry e = entries[i].load(std::memory_order_relaxed);
    if (CountOf(e) > 0) {
      index->slot[TopicOf(e)] = i;
    } else {
      index->holes.push_back(i);
    }
  }
  index_[word] = std::move(index);
}

void TopicTable::Quiesce() {
  for (RowBlock* b : retired_) FreeBlock(b);
  retired_.clear();
  // Every row is laid out again in its canonical form: topics ascending,
  // dense exactly when it has more than dense_threshold_ non-zeros, capacity
  // a function of the non-zeros. The layout (and so the order in which the
  // kernels visit a row, and the draws) then depends only on the counts, so
  // a table rebuilt from a token store samples exactly like the original.
  std::vector<Entry> nonzero;
  for (size_t w = 0; w < vocab_size_; ++w) {
    RowBlock* block = rows_[w].load(std::memory_order_relaxed);
    if (block == nullptr) continue;
    nonzero.clear();
    const std::atomic<Entry>* entries = EntriesOf(block);
    const uint32_t size = block->size.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < size; ++i) {
      const Entry e = entries[i].load(std::memory_order_relaxed);
      if (CountOf(e) > 0) nonzero.push_back(e);
    }
    RowBlock* fresh = nullptr;
    if (nonzero.size() > dense_threshold_) {
      fresh = AllocateBlock(num_topics_, true, num_topics_);
      for (Entry e : nonzero) {
        MutableEntries(fresh)[TopicOf(e)].store(e, std::memory_order_relaxed);
      }
    } else if (!nonzero.empty()) {
      std::sort(nonzero.begin(), nonzero.end(),
                [](Entry a, Entry b) { return TopicOf(a) < TopicOf(b); });
      const uint32_t n = static_cast<uint32_t>(nonzero.size());
      fresh = AllocateBlock(std::min<uint32_t>(std::max<uint32_t>(4, n + n / 2),
                                               dense_threshold_),
                            false, num_topics_);
      for (uint32_t i = 0; i < n; ++i) {
        MutableEntries(fresh)[i].store(nonzero[i], std::memory_order_relaxed);
      }
      fresh->size.store(n, std::memory_order_relaxed);
    }
    rows_[w].store(fresh, std::memory_order_release);
    FreeBlock(block);
    if (fresh == nullptr) {
      index_[w].reset();
    } else {
      RebuildIndex(static_cast<WordId>(w), fresh);
    }
  }
}

void TopicTable::Resize(size_t new_vocab_size) {
  LATENTD_CHECK(new_vocab_size >= vocab_size_);
  auto rows = std::make_unique<std::atomic<RowBlock*>[]>(new_vocab_size);
  for (size_t w = 0; w < new_vocab_size; ++w) {
    rows[w].store(w < vocab_size_ ? rows_[w].load() : nullptr,
                  std::memory_order_relaxed);
  }
  rows_ = std::move(rows);
  index_.resize(new_vocab_size);
  vocab_size_ = new_vocab_size;
}

void TopicTable::Clear() {
  for (size_t w = 0; w < vocab_size_; ++w) {
    FreeBlock(rows_[w].exchange(nullptr));
    index_[w].reset();
  }
  for (RowBlock* b : retired_) FreeBlock(b);
  retired_.clear();
  for (TopicId k = 0; k < num_topics_; ++k) totals_[k].store(0);
}

}  // namespace latentd
