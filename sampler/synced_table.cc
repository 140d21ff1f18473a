#include "sampler/synced_table.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "sync/row_topic_sort.h"

namespace latentd {

SyncedTopicTable::SyncedTopicTable(TopicTable* table,
                                   std::vector<sync::Key> word_keys)
    : SyncedTopicTable(table, std::move(word_keys), {}, /*grows=*/false) {}

SyncedTopicTable::SyncedTopicTable(TopicTable* table,
                                   std::vector<sync::Key> word_keys,
                                   std::vector<std::string> word_names)
    : SyncedTopicTable(table, std::move(word_keys), std::move(word_names),
                       /*grows=*/true) {}

SyncedTopicTable::SyncedTopicTable(TopicTable* table,
                                   std::vector<sync::Key> word_keys,
                                   std::vector<std::string> word_names,
                                   bool grows)
    : table_(table),
      totals_index_(word_keys.size()),
      grows_(grows),
      word_keys_(std::move(word_keys)),
      word_names_(std::move(word_names)),
      pending_word_(table->vocab_size(), false),
      pending_totals_(table->num_topics(), 0),
      packing_(table->num_topics()),
      log_totals_(table->num_topics(), 0),
      range_(word_keys_.size()),
      totals_change_(table->num_topics(), 0) {
  LATENTD_CHECK(word_keys_.size() == table_->vocab_size());
  LATENTD_CHECK(!grows_ || word_names_.size() == word_keys_.size());
  // The owners know nothing yet: the first change of a key is all of it
  // (the totals follow from the rows when the log is folded).
  absl::MutexLock l(&log_mu_);
  for (size_t w = 0; w < word_keys_.size(); ++w) {
    const auto word = static_cast<WordId>(w);
    table_->ForEachNonZero(word, [&](TopicId k, Count n) {
      log_totals_[k] += n;
      log_totals_changed_ = true;
      packing_.Append(word, k, n, &log_);
    });
  }
}

void SyncedTopicTable::AddWords(std::span<const sync::Key> keys,
                                std::span<const std::string> names) {
  LATENTD_CHECK(grows_ && keys.size() == names.size());
  LATENTD_CHECK(table_->vocab_size() == word_keys_.size() + keys.size());
  absl::MutexLock l(&mu_);
  absl::MutexLock f(&fold_mu_);
  word_keys_.insert(word_keys_.end(), keys.begin(), keys.end());
  word_names_.insert(word_names_.end(), names.begin(), names.end());
  pending_word_.resize(word_keys_.size(), false);
  range_.resize(word_keys_.size());
}

namespace {

// The row of a logged entry, for sync::SortByRowTopic.
constexpr auto ByWord = [](const auto& d) { return d.word; };

}  // namespace

void SyncedTopicTable::MarkApplied(std::span<const WordTopicDelta> applied) {
  using sync::PackedDeltaLog;
  absl::MutexLock l(&log_mu_);
  const size_t begin = log_.size();
  log_.resize(begin + applied.size());
  uint64_t* out = log_.data() + begin;
  int64_t* totals = log_totals_.data();
  size_t n = 0;
  bool wide = false;  // a delta to log in pieces, below
  for (const WordTopicDelta& d : applied) {
    totals[d.topic] += d.delta;
    if (std::abs(d.delta) > PackedDeltaLog::kMaxPiece) {
      wide = true;
    } else {
      out[n++] = packing_.Pack(d.word, d.topic, d.delta);
    }
  }
  log_.resize(begin + n);
  log_totals_changed_ = log_totals_changed_ || !applied.empty();
  if (!wide) return;
  for (const WordTopicDelta& d : applied) {
    if (std::abs(d.delta) > PackedDeltaLog::kMaxPiece) {
      packing_.Append(d.word, d.topic, d.delta, &log_);
    }
  }
}

void SyncedTopicTable::TakeDirtyList(std::vector<uint32_t>* out) {
  absl::MutexLock f(&fold_mu_);
  fresh_.clear();
  {
    absl::MutexLock l(&log_mu_);
    fresh_.swap(log_);
    if (log_totals_changed_) {
      for (size_t k = 0; k < log_totals_.size(); ++k) {
        totals_change_[k] += log_totals_[k];
        log_totals_[k] = 0;
      }
      log_totals_changed_ = false;
    }
  }
  sync::PackedDeltaLog::Sort(&fresh_, &sorted_);
  // Each word of the log: its deltas netted per topic and merged with the
  // word's change not taken yet into a new run at the arena's end (the old
  // run becomes garbage), so a fold costs the log and the listed words,
  // not the changes kept from earlier folds.
  new_listed_.clear();
  for (size_t b = 0; b < fresh_.size();) {
    const WordId w = packing_.Row(fresh_[b]);
    size_t e = b + 1;
    while (e < fresh_.size() && packing_.Row(fresh_[e]) == w) ++e;
    Range& r = range_[w];
    const size_t begin = ready_.size();
    ready_.resize(begin + r.size + (e - b));  // before taking pointers
    // (A taken run's begin may lie past a compacted arena: not used then.)
    const TopicDelta* i = r.size == 0 ? nullptr : ready_.data() + r.begin;
    const TopicDelta* const ie = i + r.size;
    const uint64_t* j = fresh_.data() + b;
    const uint64_t* const je = fresh_.data() + e;
    TopicDelta* o = ready_.data() + begin;
    uint64_t weight = 0;
    // The word's change kept, merged with its logged deltas netted per
    // topic. Counts of own changes fit an int32 (a Count's range).
    while (i != ie || j != je) {
      if (j == je || (i != ie && i->topic < packing_.Topic(*j))) {
        *o++ = *i++;
        continue;
      }
      const TopicId t = packing_.Topic(*j);
      const uint64_t row_topic = sync::PackedDeltaLog::RowTopic(*j);
      int32_t c = 0;
      for (; j != je && sync::PackedDeltaLog::RowTopic(*j) == row_topic; ++j) {
        const int32_t d = sync::PackedDeltaLog::Delta(*j);
        c += d;
        weight += static_cast<uint64_t>(std::abs(d));
      }
      if (i != ie && i->topic == t) c += (i++)->delta;
      if (c != 0) *o++ = {t, c};
    }
    b = e;
    garbage_ += r.size;
    ready_.resize(static_cast<size_t>(o - ready_.data()));
    r.begin = static_cast<uint32_t>(begin);
    r.size = static_cast<uint32_t>(ready_.size() - begin);
    // Weights are gross (Σ|delta| as applied, before deltas of different
    // batches cancel), as a measure of how much a key is in use; a change
    // that nets to nothing starts again from zero.
    r.weight = r.size == 0 ? 0
                           : static_cast<uint32_t>(std::min<uint64_t>(
                                 uint64_t{r.weight} + weight, UINT32_MAX));
    if (r.size != 0 && !r.listed) {
      r.listed = true;
      new_listed_.push_back(w);
    }
  }
  // The listed words, in word order: those still holding a change, merged
  // with the newly listed ones (in word order, as the log was sorted).
  merged_listed_.clear();
  auto keep = [this](uint32_t w) {
    Range& r = range_[w];
    if (r.size == 0) {
      r.listed = false;
    } else {
      merged_listed_.push_back(w);
    }
  };
  size_t a = 0, n = 0;
  while (a < listed_.size() || n < new_listed_.size()) {
    if (n == new_listed_.size() ||
        (a < listed_.size() && listed_[a] < new_listed_[n])) {
      keep(listed_[a++]);
    } else {
      keep(new_listed_[n++]);
    }
  }
  listed_.swap(merged_listed_);
  // Compacts the arena once most of it is garbage (amortized O(1) per
  // entry written).
  if (garbage_ > kMinCompaction && garbage_ * 2 > ready_.size()) {
    compacted_.clear();
    for (uint32_t w : listed_) {
      Range& r = range_[w];
      const auto begin = static_cast<uint32_t>(compacted_.size());
      compacted_.insert(compacted_.end(), ready_.begin() + r.begin,
                        ready_.begin() + r.begin + r.size);
      r.begin = begin;
    }
    ready_.swap(compacted_);
    garbage_ = 0;
  }
  for (uint32_t w : listed_) out->push_back(static_cast<uint32_t>(IndexOf(w)));
  for (int64_t c : totals_change_) {
    if (c != 0) {
      out->push_back(static_cast<uint32_t>(totals_index_));
      break;
    }
  }
}

uint32_t SyncedTopicTable::DirtyWeight(size_t index) const {
  absl::MutexLock f(&fold_mu_);
  if (index != totals_index_) return range_[WordOf(index)].weight;
  uint64_t weight = 0;
  for (int64_t c : totals_change_) weight += std::abs(c);
  return static_cast<uint32_t>(std::min<uint64_t>(weight, UINT32_MAX));
}

void SyncedTopicTable::TakeChange(size_t index, sync::SparseVector* out) {
  out->clear();
  absl::MutexLock f(&fold_mu_);
  if (index == totals_index_) {
    for (TopicId k = 0; k < table_->num_topics(); ++k) {
      if (totals_change_[k] != 0) out->push_back({k, totals_change_[k]});
      totals_change_[k] = 0;
    }
    return;
  }
  Range& r = range_[WordOf(index)];
  for (uint32_t b = r.begin; b < r.begin + r.size; ++b) {
    out->push_back({ready_[b].topic, int64_t{ready_[b].delta}});
  }
  garbage_ += r.size;
  r.size = 0;
  r.weight = 0;
}

void SyncedTopicTable::Read(size_t index, sync::SparseVector* out) const {
  out->clear();
  absl::MutexLock l(&mu_);
  if (index == totals_index_) {
    for (TopicId k = 0; k < table_->num_topics(); ++k) {
      const int64_t c = table_->TopicTotal(k) + pending_totals_[k];
      if (c != 0) out->push_back({k, c});
    }
    return;
  }
  const WordId w = WordOf(index);
  table_->ForEachNonZero(w, [&](TopicId k, Count c) {
    out->push_back({k, int64_t{c}});
  });
  // A dense row comes in topic order already; a sparse one in slot order.
  const auto by_topic = [](const sync::SparseEntry& a,
                           const sync::SparseEntry& b) {
    return a.topic < b.topic;
  };
  if (!std::is_sorted(out->begin(), out->end(), by_topic)) {
    std::sort(out->begin(), out->end(), by_topic);
  }
  // The row's queued corrections, net per topic.
  sum_.clear();
  for (const PendingEntry& e : pending_log_) {
    if (e.word == w) sum_.push_back({e.topic, e.count});
  }
  if (sum_.empty()) return;
  std::sort(sum_.begin(), sum_.end(), by_topic);
  size_t n = 0;
  for (const sync::SparseEntry& e : sum_) {
    if (n > 0 && sum_[n - 1].topic == e.topic) {
      sum_[n - 1].count += e.count;
    } else {
      sum_[n++] = e;
    }
  }
  sum_.resize(n);
  std::erase_if(sum_, [](const sync::SparseEntry& e) { return e.count == 0; });
  sync::SparseVector row;
  row.swap(*out);
  sync::AddSparse(row, sum_, +1, out);
}

void SyncedTopicTable::EnqueueCorrection(size_t index,
                                         const sync::SparseVector& correction) {
  if (correction.empty()) return;
  absl::MutexLock l(&mu_);
  has_pending_.store(true, std::memory_order_release);
  if (index == totals_index_) {
    for (const sync::SparseEntry& e : correction) {
      pending_totals_[e.topic] += e.count;
    }
    return;
  }
  const WordId w = WordOf(index);
  if (pending_word_[w]) {
    pending_resort_ = true;
  } else {
    pending_word_[w] = true;
  }
  for (const sync::SparseEntry& e : correction) {
    pending_log_.push_back({w, e.topic, e.count});
  }
}

absl::Status SyncedTopicTable::ApplyPending() {
  if (!has_pending_.load(std::memory_order_acquire)) return absl::OkStatus();
  absl::MutexLock l(&mu_);
  const TopicId K = table_->num_topics();
  bool totals_pending = false;
  for (int64_t v : pending_totals_) totals_pending = totals_pending || v != 0;
  if (pending_log_.empty() && !totals_pending) {
    has_pending_.store(false, std::memory_order_relaxed);
    return absl::OkStatus();
  }
  std::vector<WordTopicDelta>& deltas = deltas_;
  deltas.clear();
  // adjust = queued totals correction − what the word corrections move n_k
  // by; applied in two halves around Apply so n_k never dips below zero.
  std::vector<int64_t>& adjust = adjust_;
  adjust = pending_totals_;
  // The word corrections, net per (word, topic) as Apply wants them.
  if (pending_resort_) {
    sync::SortByRowTopic(K, ByWord, &pending_log_, &pending_scratch_);
  }
  for (size_t i = 0; i < pending_log_.size();) {
    const PendingEntry& e = pending_log_[i];
    int64_t c = 0;
    for (; i < pending_log_.size() && pending_log_[i].word == e.word &&
           pending_log_[i].topic == e.topic;
         ++i) {
      c += pending_log_[i].count;
    }
    if (c == 0) continue;
    if (c > std::numeric_limits<int32_t>::max() ||
        c < std::numeric_limits<int32_t>::min()) {
      return absl::InternalError(absl::StrCat("correction of ", c, " for word ",
                                              e.word, " out of range"));
    }
    deltas.push_back({e.word, e.topic, static_cast<int32_t>(c)});
    adjust[e.topic] -= c;
  }
  std::vector<int64_t>& up = up_;
  std::vector<int64_t>& down = down_;
  up.resize(K);
  down.resize(K);
  for (TopicId k = 0; k < K; ++k) {
    up[k] = std::max<int64_t>(adjust[k], 0);
    down[k] = std::min<int64_t>(adjust[k], 0);
  }
  absl::Status s = table_->AdjustTotals(up);
  if (s.ok()) {
    s = table_->Apply(deltas);
    if (!s.ok()) {
      for (int64_t& v : up) v = -v;
      table_->AdjustTotals(up).IgnoreError();  // undoes the raise exactly
    }
  }
  if (!s.ok()) {
    return absl::InternalError(
        absl::StrCat("applying sync corrections: ", s.message()));
  }
  for (const PendingEntry& e : pending_log_) pending_word_[e.word] = false;
  pending_log_.clear();
  pending_resort_ = false;
  // Rows and the raise are in; n_k + down is what Read already reports.
  if (table_->AdjustTotals(down).ok()) {
    std::fill(pending_totals_.begin(), pending_totals_.end(), 0);
    has_pending_.store(false, std::memory_order_relaxed);
  } else {
    pending_totals_ = down;  // kept queued; Read stays exact
  }
  return absl::OkStatus();
}

size_t SyncedTopicTable::pending_rows() const {
  absl::MutexLock l(&mu_);
  std::vector<WordId> words;
  for (const PendingEntry& e : pending_log_) words.push_back(e.word);
  std::sort(words.begin(), words.end());
  return static_cast<size_t>(std::unique(words.begin(), words.end()) -
                             words.begin());
}

}  // namespace latentd
