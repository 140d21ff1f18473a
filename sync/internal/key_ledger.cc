#include "sync/internal/key_ledger.h"

#include <algorithm>

#include "sync/internal/look_ahead.h"
#include "sync/owner_shard.h"
#include "sync/row_topic_sort.h"

namespace latentd::sync::internal {
KeyLedger::KeyLedger(AbelianTable* table, size_t min_fold_entries)
    : table_(table),
      grows_(table->GrowsKeys()),
      min_fold_entries_(min_fold_entries),
      contributed_(table->num_keys()),
      received_(table->num_keys()) {}

bool KeyLedger::ApplyReply(uint32_t channel, const DeltaBatch& sent_batch,
                           const std::vector<uint32_t>& sent_keys,
                           const DeltaReply& reply, const KeyIndex& index) {
  bool changed = false;
  SparseVector change, sum;
  absl::MutexLock l(&mu_);
  // The deltas sent are now the owner's: contributed.
  BlockReader sent(sent_batch.deltas(), table_->dimension());
  for (uint32_t i : sent_keys) {
    sent.Next(&change);
    for (const SparseEntry& e : change) {
      contributed_log_.push_back({i, e.topic, e.count});
    }
  }
  if (grows_) {
    for (int j = 0; j < reply.name_keys_size(); ++j) {
      if (index.contains(reply.name_keys(j))) continue;
      Foreign& f = foreign_[reply.name_keys(j)];
      if (f.name.empty()) f.name = reply.names(j);
      f.channel = channel;
    }
  }
  BlockReader changes(reply.changes(), table_->dimension());
  const auto n = static_cast<size_t>(reply.changed_keys_size());
  // The lookups miss the cache on a large vocabulary: they run ahead.
  auto changed_key = [&reply](size_t j) {
    return reply.changed_keys(static_cast<int>(j));
  };
  LookAhead ahead(&index, n, changed_key, [](const uint32_t&) {});
  for (size_t j = 0; j < n; ++j) {
    changes.Next(&change);
    const uint32_t* found = ahead.At(j);
    // Only keys this node holds. Not only this owner's: an owner that
    // handed a key off since (Reroute) answers a resent batch with the
    // change its lost reply carried, which no other owner will send.
    // A growing table keeps the others aside until it adds them.
    if (found == nullptr) {
      if (grows_ && !change.empty()) {
        changed = true;
        Foreign& f = foreign_[changed_key(j)];
        auto part = std::find_if(
            f.changes.begin(), f.changes.end(),
            [channel](const auto& p) { return p.first == channel; });
        if (part == f.changes.end()) {
          f.changes.emplace_back(channel, change);
        } else {
          AddSparse(part->second, change, +1, &sum);
          part->second.swap(sum);
        }
      }
      continue;
    }
    if (change.empty()) continue;
    changed = true;
    table_->EnqueueCorrection(*found, change);
    for (const SparseEntry& e : change) {
      received_log_.push_back({*found, e.topic, e.count});
    }
  }
  const size_t logged = contributed_log_.size() + received_log_.size();
  if (logged > min_fold_entries_ && logged > folded_entries_) Fold();
  return changed;
}

void KeyLedger::Fold() {
  FoldInto(&contributed_log_, &contributed_);
  FoldInto(&received_log_, &received_);
}

void KeyLedger::FoldInto(std::vector<LoggedEntry>* log,
                         std::vector<SparseVector>* sums) {
  if (log->empty()) return;
  SortByRowTopic(
      table_->dimension(), [](const LoggedEntry& e) { return e.index; }, log,
      &sorted_);
  const std::vector<LoggedEntry>& entries = *log;
  for (size_t b = 0; b < entries.size();) {
    const uint32_t i = entries[b].index;
    run_.clear();
    for (; b < entries.size() && entries[b].index == i; ++b) {
      const LoggedEntry& e = entries[b];
      if (!run_.empty() && run_.back().topic == e.topic) {
        run_.back().count += e.count;
      } else {
        run_.push_back({e.topic, e.count});
      }
    }
    std::erase_if(run_, [](const SparseEntry& e) { return e.count == 0; });
    if (run_.empty()) continue;
    SparseVector& v = (*sums)[i];
    AddSparse(v, run_, +1, &sum_);
    folded_entries_ += sum_.size();
    folded_entries_ -= v.size();
    v.assign(sum_.begin(), sum_.end());
  }
  log->clear();
}

bool KeyLedger::TakeReseed(uint32_t i, const SparseVector& unsent,
                           SparseVector* delta) {
  absl::MutexLock l(&mu_);
  Fold();  // rare: a restarted owner
  AddSparse(unsent, contributed_[i], +1, delta);
  const bool held =
      !delta->empty() || !contributed_[i].empty() || !received_[i].empty();
  folded_entries_ -= contributed_[i].size() + received_[i].size();
  contributed_[i].clear();
  if (!received_[i].empty()) {
    SparseVector& back = received_[i];
    for (SparseEntry& e : back) e.count = -e.count;
    table_->EnqueueCorrection(i, back);
    back.clear();
  }
  return held;
}

void KeyLedger::DropForeignOf(uint32_t channel) {
  absl::MutexLock l(&mu_);
  for (auto it = foreign_.begin(); it != foreign_.end();) {
    Foreign& f = it->second;
    std::erase_if(f.changes,
                  [channel](const auto& p) { return p.first == channel; });
    if (f.changes.empty() && (f.name.empty() || f.channel == channel)) {
      foreign_.erase(it++);
    } else {
      ++it;
    }
  }
}

std::vector<std::pair<Key, std::string>> KeyLedger::ForeignKeys() {
  std::vector<std::pair<Key, std::string>> out;
  absl::MutexLock l(&mu_);
  for (const auto& [key, f] : foreign_) {
    if (!f.name.empty()) out.emplace_back(key, f.name);
  }
  return out;
}

void KeyLedger::AddKeys() {
  const size_t n = table_->num_keys();
  absl::MutexLock l(&mu_);
  const size_t before = contributed_.size();
  contributed_.resize(n);
  received_.resize(n);
  for (size_t i = before; i < n; ++i) {
    auto f = foreign_.find(table_->key(i));
    if (f == foreign_.end()) continue;
    SparseVector change, sum;
    for (const auto& [channel, part] : f->second.changes) {
      AddSparse(change, part, +1, &sum);
      change.swap(sum);
    }
    if (!change.empty()) {
      table_->EnqueueCorrection(i, change);
      folded_entries_ += change.size();
      received_[i] = std::move(change);
    }
    foreign_.erase(f);
  }
}

}  // namespace latentd::sync::internal
