#include "sampler/synced_table.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "corpora/check.h"

namespace latentd {

SyncedTopicTable::SyncedTopicTable(TopicTable* table,
                                   std::vector<sync::Key> word_keys)
    : table_(table),
      word_keys_(std::move(word_keys)),
      pending_totals_(table->num_topics(), 0),
      range_(word_keys_.size()),
      totals_change_(table->num_topics(), 0) {
  LATENTD_CHECK(word_keys_.size() == table_->vocab_size());
  // The owners know nothing yet: the first change of a key is all of it
  // (the totals follow from the rows when the log is folded).
  absl::MutexLock l(&log_mu_);
  for (size_t w = 0; w < word_keys_.size(); ++w) {
    const auto word = static_cast<WordId>(w);
    table_->ForEachNonZero(word, [&](TopicId k, Count n) {
      log_.push_back({word, k, n});
    });
  }
}

void SyncedTopicTable::MarkApplied(std::span<const WordTopicDelta> applied) {
  absl::MutexLock l(&log_mu_);
  log_.insert(log_.end(), applied.begin(), applied.end());
}

namespace {

// Sorts v by (word, topic), LSD radix over the significant bits of
// word · k + topic, 12 bits a pass (two for K = 100 and 40,000 words);
// `tmp` is scratch.
template <typename Entry>
void SortByWordTopic(TopicId k, std::vector<Entry>* v,
                     std::vector<Entry>* tmp) {
  constexpr int kBits = 12;
  constexpr size_t kBuckets = size_t{1} << kBits;
  constexpr int kCounted = 3;  // digits counted in the first pass
  auto key = [k](const Entry& d) { return uint64_t{d.word} * k + d.topic; };
  // One pass for the largest key and the first digits' histograms.
  std::vector<uint32_t> count(kCounted * (kBuckets + 1), 0);
  uint64_t max_key = 0;
  for (const Entry& d : *v) {
    const uint64_t x = key(d);
    max_key = std::max(max_key, x);
    for (int p = 0; p < kCounted; ++p) {
      ++count[p * (kBuckets + 1) + ((x >> (p * kBits)) & (kBuckets - 1)) + 1];
    }
  }
  tmp->resize(v->size());
  const int bits = static_cast<int>(std::bit_width(max_key));
  for (int p = 0; p * kBits < bits; ++p) {
    const int shift = p * kBits;
    auto digit = [&key, shift](const Entry& d) {
      return static_cast<size_t>((key(d) >> shift) & (kBuckets - 1));
    };
    uint32_t* c = count.data() + std::min(p, kCounted - 1) * (kBuckets + 1);
    if (p >= kCounted) {
      std::fill(c, c + kBuckets + 1, 0);
      for (const Entry& d : *v) ++c[digit(d) + 1];
    }
    for (size_t b = 1; b <= kBuckets; ++b) c[b] += c[b - 1];
    for (const Entry& d : *v) (*tmp)[c[digit(d)]++] = d;
    v->swap(*tmp);
  }
}

bool Before(const WordTopicDelta& a, const WordTopicDelta& b) {
  return a.word != b.word ? a.word < b.word : a.topic < b.topic;
}

}  // namespace

bool SyncedTopicTable::TakeDirtyList(std::vector<uint32_t>* out) {
  absl::MutexLock f(&fold_mu_);
  fresh_.clear();
  {
    absl::MutexLock l(&log_mu_);
    fresh_.swap(log_);
  }
  for (const WordTopicDelta& d : fresh_) totals_change_[d.topic] += d.delta;
  SortByWordTopic(table_->num_topics(), &fresh_, &sorted_);
  // Weights are gross (Σ|delta| as applied, before deltas of different
  // batches cancel), as a measure of how much a key is in use: per word,
  // in word order, what was kept plus what came.
  weights_.clear();
  for (size_t b = 0; b < fresh_.size();) {
    const WordId w = fresh_[b].word;
    uint64_t weight = 0;
    for (; b < fresh_.size() && fresh_[b].word == w; ++b) {
      weight += static_cast<uint64_t>(std::abs(int64_t{fresh_[b].delta}));
    }
    weights_.push_back({w, weight});
  }
  // The changes not taken yet, in word order.
  kept_.clear();
  kept_weights_.clear();
  for (uint32_t w : listed_) {
    Range& r = range_[w];
    kept_.insert(kept_.end(), ready_.begin() + r.begin,
                 ready_.begin() + r.begin + r.size);
    if (r.size != 0) kept_weights_.push_back({w, r.weight});
    r = Range();
  }
  listed_.clear();
  // Merged, with equal (word, topic) summed (counts of own changes fit a
  // Count) and zero sums dropped, into runs per word.
  ready_.clear();
  auto add = [this](const WordTopicDelta& d) {
    if (!ready_.empty() && ready_.back().word == d.word &&
        ready_.back().topic == d.topic) {
      ready_.back().delta += d.delta;
      if (ready_.back().delta == 0) ready_.pop_back();
    } else if (d.delta != 0) {
      ready_.push_back(d);
    }
  };
  size_t i = 0, j = 0;
  while (i < kept_.size() || j < fresh_.size()) {
    if (j == fresh_.size() ||
        (i < kept_.size() && Before(kept_[i], fresh_[j]))) {
      add(kept_[i++]);
    } else {
      add(fresh_[j++]);
    }
  }
  size_t fw = 0, kw = 0;  // in weights_, kept_weights_
  for (size_t b = 0; b < ready_.size();) {
    const WordId w = ready_[b].word;
    Range& r = range_[w];
    r.begin = static_cast<uint32_t>(b);
    while (b < ready_.size() && ready_[b].word == w) ++b;
    r.size = static_cast<uint32_t>(b - r.begin);
    uint64_t weight = 0;
    while (fw < weights_.size() && weights_[fw].first < w) ++fw;
    if (fw < weights_.size() && weights_[fw].first == w) {
      weight += weights_[fw].second;
    }
    while (kw < kept_weights_.size() && kept_weights_[kw].first < w) ++kw;
    if (kw < kept_weights_.size() && kept_weights_[kw].first == w) {
      weight += kept_weights_[kw].second;
    }
    r.weight = static_cast<uint32_t>(std::min<uint64_t>(weight, UINT32_MAX));
    listed_.push_back(w);
    out->push_back(w);
  }
  for (int64_t c : totals_change_) {
    if (c != 0) {
      out->push_back(static_cast<uint32_t>(word_keys_.size()));
      break;
    }
  }
  return true;
}

uint32_t SyncedTopicTable::DirtyWeight(size_t index) const {
  absl::MutexLock f(&fold_mu_);
  if (index < word_keys_.size()) return range_[index].weight;
  uint64_t weight = 0;
  for (int64_t c : totals_change_) weight += std::abs(c);
  return static_cast<uint32_t>(std::min<uint64_t>(weight, UINT32_MAX));
}

void SyncedTopicTable::TakeChange(size_t index, sync::SparseVector* out) {
  out->clear();
  absl::MutexLock f(&fold_mu_);
  if (index == word_keys_.size()) {
    for (TopicId k = 0; k < table_->num_topics(); ++k) {
      if (totals_change_[k] != 0) out->push_back({k, totals_change_[k]});
      totals_change_[k] = 0;
    }
    return;
  }
  Range& r = range_[index];
  for (uint32_t b = r.begin; b < r.begin + r.size; ++b) {
    out->push_back({ready_[b].topic, int64_t{ready_[b].delta}});
  }
  r.size = 0;
  r.weight = 0;
}

void SyncedTopicTable::Read(size_t index, sync::SparseVector* out) const {
  out->clear();
  absl::MutexLock l(&mu_);
  if (index == word_keys_.size()) {
    for (TopicId k = 0; k < table_->num_topics(); ++k) {
      const int64_t c = table_->TopicTotal(k) + pending_totals_[k];
      if (c != 0) out->push_back({k, c});
    }
    return;
  }
  const auto w = static_cast<WordId>(index);
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
  if (index == word_keys_.size()) {
    for (const sync::SparseEntry& e : correction) {
      pending_totals_[e.topic] += e.count;
    }
    return;
  }
  const auto w = static_cast<WordId>(index);
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
  SortByWordTopic(K, &pending_log_, &pending_scratch_);
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
  pending_log_.clear();
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
