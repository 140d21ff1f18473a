#include "sync/internal/key_ledger.h"

#include <algorithm>

#include "sync/owner_shard.h"

namespace latentd::sync::internal {
namespace {

// How many keys ahead hash lookups are prefetched.
constexpr int kPrefetchAhead = 8;

}  // namespace

KeyLedger::KeyLedger(AbelianTable* table)
    : table_(table),
      grows_(table->GrowsKeys()),
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
    if (change.empty()) continue;
    AddSparse(contributed_[i], change, +1, &sum);
    contributed_[i].swap(sum);
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
  const int n = reply.changed_keys_size();
  for (int j = 0; j < n; ++j) {
    // The lookups miss the cache on a large vocabulary: start them early.
    if (j + kPrefetchAhead < n) {
      index.prefetch(reply.changed_keys(j + kPrefetchAhead));
    }
    changes.Next(&change);
    auto it = index.find(reply.changed_keys(j));
    // Only keys this node holds. Not only this owner's: an owner that
    // handed a key off since (Reroute) answers a resent batch with the
    // change its lost reply carried, which no other owner will send.
    // A growing table keeps the others aside until it adds them.
    if (it == index.end()) {
      if (grows_ && !change.empty()) {
        changed = true;
        Foreign& f = foreign_[reply.changed_keys(j)];
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
    table_->EnqueueCorrection(it->second, change);
    AddSparse(received_[it->second], change, +1, &sum);
    received_[it->second].swap(sum);
  }
  return changed;
}

bool KeyLedger::TakeReseed(uint32_t i, const SparseVector& unsent,
                           SparseVector* delta) {
  absl::MutexLock l(&mu_);
  AddSparse(unsent, contributed_[i], +1, delta);
  const bool held =
      !delta->empty() || !contributed_[i].empty() || !received_[i].empty();
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
      received_[i] = std::move(change);
    }
    foreign_.erase(f);
  }
}

}  // namespace latentd::sync::internal
