#include "sampler/synced_table.h"

#include <algorithm>
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
      change_(word_keys_.size()),
      totals_change_(table->num_topics(), 0) {
  LATENTD_CHECK(word_keys_.size() == table_->vocab_size());
  // The owners know nothing yet: the first change of a key is all of it.
  for (size_t w = 0; w < word_keys_.size(); ++w) {
    sync::SparseVector& c = change_[w];
    table_->ForEachNonZero(static_cast<WordId>(w), [&](TopicId k, Count n) {
      c.push_back({k, int64_t{n}});
    });
    std::sort(c.begin(), c.end(),
              [](const auto& a, const auto& b) { return a.topic < b.topic; });
  }
  for (TopicId k = 0; k < table_->num_topics(); ++k) {
    totals_change_[k] = table_->TopicTotal(k);
  }
  dirty_.reset(new std::atomic<uint32_t>[word_keys_.size() + 1]);
  // Everything is new to the synchronizer at first.
  dirty_list_.reserve(word_keys_.size() + 1);
  for (size_t i = 0; i <= word_keys_.size(); ++i) {
    dirty_[i].store(1);
    dirty_list_.push_back(static_cast<uint32_t>(i));
  }
}

void SyncedTopicTable::MarkApplied(std::span<const WordTopicDelta> applied) {
  if (applied.empty()) return;
  marked_.clear();
  {
    // Changes and marks under one lock, so that TakeChange, which clears
    // both, never leaves a change behind without its mark.
    absl::MutexLock l(&change_mu_);
    // Adds w to a key's weight (saturating well below overflow; only this
    // writer adds, TakeDirty and TakeChange only reset); lists it if it
    // was clean.
    auto mark = [this](uint32_t key, uint32_t w) {
      std::atomic<uint32_t>& d = dirty_[key];
      if (d.load(std::memory_order_relaxed) >= (1u << 30)) return;
      if (d.fetch_add(w, std::memory_order_acq_rel) == 0) {
        marked_.push_back(key);
      }
    };
    uint32_t total = 0;
    for (size_t j = 0; j < applied.size();) {
      // One word's run of deltas, added to its change.
      const WordId word = applied[j].word;
      uint32_t weight = 0;
      run_.clear();
      for (; j < applied.size() && applied[j].word == word; ++j) {
        const WordTopicDelta& d = applied[j];
        const uint32_t w = static_cast<uint32_t>(std::abs(d.delta));
        weight += w;
        totals_change_[d.topic] += d.delta;
        run_.push_back({d.topic, int64_t{d.delta}});
      }
      total += weight;
      mark(word, weight == 0 ? 1 : weight);
      AddRun(&change_[word]);
    }
    mark(static_cast<uint32_t>(word_keys_.size()), total == 0 ? 1 : total);
  }
  if (marked_.empty()) return;
  absl::MutexLock l(&list_mu_);
  dirty_list_.insert(dirty_list_.end(), marked_.begin(), marked_.end());
}

void SyncedTopicTable::AddRun(sync::SparseVector* change) {
  // Canonical run: topics strictly ascending (as the combiner emits them),
  // else sorted and merged here.
  bool canonical = true;
  for (size_t j = 1; j < run_.size() && canonical; ++j) {
    canonical = run_[j - 1].topic < run_[j].topic;
  }
  if (!canonical) {
    std::sort(run_.begin(), run_.end(),
              [](const auto& a, const auto& b) { return a.topic < b.topic; });
    size_t n = 0;
    for (const sync::SparseEntry& e : run_) {
      if (n > 0 && run_[n - 1].topic == e.topic) {
        run_[n - 1].count += e.count;
      } else {
        run_[n++] = e;
      }
    }
    run_.resize(n);
  }
  // In place: add to the topics already listed (zero sums stay listed
  // until TakeChange), then merge the new ones in from the back.
  sync::SparseVector& c = *change;
  new_.clear();
  size_t p = 0;
  for (const sync::SparseEntry& e : run_) {
    while (p < c.size() && c[p].topic < e.topic) ++p;
    if (p < c.size() && c[p].topic == e.topic) {
      c[p].count += e.count;
    } else if (e.count != 0) {
      new_.push_back(e);
    }
  }
  if (new_.empty()) return;
  size_t i = c.size(), j = new_.size();
  c.resize(c.size() + new_.size());
  for (size_t o = c.size(); j > 0;) {
    if (i > 0 && c[i - 1].topic > new_[j - 1].topic) {
      c[--o] = c[--i];
    } else {
      c[--o] = new_[--j];
    }
  }
}

void SyncedTopicTable::TakeChange(size_t index, sync::SparseVector* out) {
  out->clear();
  absl::MutexLock l(&change_mu_);
  dirty_[index].store(0, std::memory_order_relaxed);
  if (index == word_keys_.size()) {
    for (TopicId k = 0; k < table_->num_topics(); ++k) {
      if (totals_change_[k] != 0) out->push_back({k, totals_change_[k]});
      totals_change_[k] = 0;
    }
    return;
  }
  out->swap(change_[index]);
  std::erase_if(*out, [](const sync::SparseEntry& e) { return e.count == 0; });
}

bool SyncedTopicTable::TakeDirtyList(std::vector<uint32_t>* out) {
  absl::MutexLock l(&list_mu_);
  if (out->empty()) {
    out->swap(dirty_list_);
    dirty_list_.clear();
  } else {
    out->insert(out->end(), dirty_list_.begin(), dirty_list_.end());
    dirty_list_.clear();
  }
  return true;
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
  auto it = pending_.find(w);
  if (it != pending_.end()) {
    sync::AddSparse(*out, it->second, +1, &sum_);
    out->swap(sum_);
  }
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
  sync::SparseVector& p = pending_[static_cast<uint32_t>(index)];
  if (p.empty()) {
    p = correction;
    return;
  }
  sync::AddSparse(p, correction, +1, &sum_);
  p.swap(sum_);
}

absl::Status SyncedTopicTable::ApplyPending() {
  if (!has_pending_.load(std::memory_order_acquire)) return absl::OkStatus();
  absl::MutexLock l(&mu_);
  const TopicId K = table_->num_topics();
  bool totals_pending = false;
  for (int64_t v : pending_totals_) totals_pending = totals_pending || v != 0;
  if (pending_.empty() && !totals_pending) {
    has_pending_.store(false, std::memory_order_relaxed);
    return absl::OkStatus();
  }
  std::vector<WordTopicDelta>& deltas = deltas_;
  deltas.clear();
  // adjust = queued totals correction − what the word corrections move n_k
  // by; applied in two halves around Apply so n_k never dips below zero.
  std::vector<int64_t>& adjust = adjust_;
  adjust = pending_totals_;
  for (const auto& [w, v] : pending_) {
    for (const sync::SparseEntry& e : v) {
      if (e.count > std::numeric_limits<int32_t>::max() ||
          e.count < std::numeric_limits<int32_t>::min()) {
        return absl::InternalError(absl::StrCat(
            "correction of ", e.count, " for word ", w, " out of range"));
      }
      deltas.push_back({w, e.topic, static_cast<int32_t>(e.count)});
      adjust[e.topic] -= e.count;
    }
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
  pending_.clear();
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
  return pending_.size();
}

}  // namespace latentd
