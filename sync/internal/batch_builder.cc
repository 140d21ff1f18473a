#include "sync/internal/batch_builder.h"

#include <algorithm>
#include <string>
#include <utility>

#include "base/check.h"
#include "sync/internal/atomic_max.h"
#include "sync/owner_shard.h"

namespace latentd::sync::internal {
namespace {

size_t SparseBytes(const SparseVector& v) { return 4 + 6 * v.size(); }

}  // namespace

BatchBuilder::BatchBuilder(AbelianTable* table, KeyLedger* ledger,
                           SyncCounters* counters,
                           std::vector<uint32_t> key_owner, size_t num_channels)
    : table_(table),
      ledger_(ledger),
      counters_(counters),
      grows_(table->GrowsKeys()),
      channels_(num_channels),
      key_owner_(std::move(key_owner)),
      last_sent_clock_(table->num_keys(), 0),
      carry_(table->num_keys()),
      reseed_(table->num_keys(), 0),
      named_(grows_ ? table->num_keys() : 0, 0),
      queued_(table->num_keys(), 0) {
  LATENTD_CHECK(key_owner_.size() == table->num_keys());
  key_index_.reserve(key_owner_.size());
  for (size_t i = 0; i < key_owner_.size(); ++i) {
    LATENTD_CHECK(key_owner_[i] < channels_.size());
    channels_[key_owner_[i]].keys.push_back(static_cast<uint32_t>(i));
    key_index_.emplace(table_->key(i), static_cast<uint32_t>(i));
  }
}

void BatchBuilder::Enqueue(uint32_t i) {
  if (queued_[i]) return;
  queued_[i] = 1;
  channels_[key_owner_[i]].candidates.push_back(i);
}

void BatchBuilder::AddKey(uint32_t i, const SparseVector& delta, Round* round) {
  DeltaBatch* batch = round->batch;
  batch->add_keys(table_->key(i));
  if (grows_ && !named_[i]) {
    named_[i] = 1;
    std::string name = table_->KeyName(i);
    if (!name.empty()) {
      batch->add_name_keys(table_->key(i));
      batch->add_names(std::move(name));
    }
  }
  AppendToBlock(delta, batch->mutable_deltas());
  round->keys->push_back(i);
  if (!delta.empty()) {
    round->quiet = false;
    counters_->nonzero_keys_sent.fetch_add(1, std::memory_order_relaxed);
    const uint64_t st =
        round->clock - std::min(round->clock, last_sent_clock_[i]);
    counters_->staleness_sum.fetch_add(st, std::memory_order_relaxed);
    counters_->staleness_samples.fetch_add(1, std::memory_order_relaxed);
    AtomicMax(counters_->staleness_max, st);
  }
  last_sent_clock_[i] = round->clock;
}

void BatchBuilder::DistributeDirty(uint64_t clock) {
  dirty_scratch_.clear();
  table_->TakeDirtyList(&dirty_scratch_);
  for (uint32_t i : dirty_scratch_) {
    if (i >= queued_.size() || queued_[i]) continue;
    queued_[i] = 1;
    // Its δ began to accumulate about now (a key that is not dirty is not
    // sent, so its previous round may lie far back): staleness counts
    // from here.
    last_sent_clock_[i] = std::max(last_sent_clock_[i], clock);
    channels_[key_owner_[i]].candidates.push_back(i);
  }
}

void BatchBuilder::BuildChangeBatch(Round* round) {
  std::vector<uint32_t>& candidates = channels_[round->channel].candidates;
  const uint32_t min_weight = round->min_weight;
  const size_t budget = round->byte_budget;
  if (budget != 0) {
    // Sorted by a snapshot of the weights: a fold for another owner's round
    // may change them meanwhile, and a comparator whose keys move while
    // std::stable_sort runs is undefined behaviour (it crashed).
    std::vector<std::pair<uint32_t, uint32_t>> by_weight;  // (weight, key)
    by_weight.reserve(candidates.size());
    for (uint32_t i : candidates) {
      by_weight.push_back({table_->DirtyWeight(i), i});
    }
    std::stable_sort(
        by_weight.begin(), by_weight.end(),
        [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t j = 0; j < by_weight.size(); ++j) {
      candidates[j] = by_weight[j].second;
    }
  }
  SparseVector delta;
  size_t kept = 0, spent = 0;
  for (uint32_t i : candidates) {
    if (reseed_[i]) {  // its previous owner was lost (Reroute)
      queued_[i] = 0;
      if (TakeReseed(i, &delta)) {
        spent += 9 + SparseBytes(delta);
        round->batch->add_reseeded(
            static_cast<uint32_t>(round->batch->keys_size()));
        AddKey(i, delta, round);
        round->quiet = false;
      }
      continue;
    }
    const bool over = budget != 0 && spent >= budget;
    if (over || min_weight != 0) {
      const uint32_t w = table_->DirtyWeight(i);
      if (over || (w != 0 && w < min_weight)) {
        candidates[kept++] = i;  // stays listed for a later round
        continue;
      }
    }
    queued_[i] = 0;
    table_->TakeChange(i, &delta);
    if (!carry_[i].empty()) {  // a refused batch's change, re-routed
      SparseVector sum;
      AddSparse(delta, carry_[i], +1, &sum);
      delta.swap(sum);
      carry_[i].clear();
    }
    if (delta.empty()) continue;
    spent += 9 + SparseBytes(delta);
    AddKey(i, delta, round);
  }
  candidates.resize(kept);
}

bool BatchBuilder::TakeReseed(uint32_t i, SparseVector* delta) {
  SparseVector change, sum;
  reseed_[i] = 0;
  table_->TakeChange(i, &change);
  AddSparse(change, carry_[i], +1, &sum);
  carry_[i].clear();
  return ledger_->TakeReseed(i, sum, delta);
}

void BatchBuilder::BuildReseedBatch(Round* round) {
  ChannelKeys& c = channels_[round->channel];
  for (uint32_t i : c.candidates) queued_[i] = 0;
  c.candidates.clear();
  // What the earlier process sent of keys the table does not hold goes
  // back too: the new one sends their globals again.
  ledger_->DropForeignOf(round->channel);
  SparseVector delta;
  for (uint32_t i : c.keys) {
    if (grows_) named_[i] = 0;  // a new owner process: names again
    // An empty delta still registers the key: the owner answers with its
    // global.
    if (TakeReseed(i, &delta)) {
      round->batch->add_reseeded(
          static_cast<uint32_t>(round->batch->keys_size()));
      AddKey(i, delta, round);
    }
  }
  round->quiet = false;
}

void BatchBuilder::Requeue(const DeltaBatch& b) {
  SparseVector v, sum;
  BlockReader deltas(b.deltas(), table_->dimension());  // built here
  int next_reseeded = 0;
  for (int j = 0; j < b.keys_size(); ++j) {
    deltas.Next(&v);
    const bool reseeded = next_reseeded < b.reseeded_size() &&
                          b.reseeded(next_reseeded) == static_cast<uint32_t>(j);
    next_reseeded += reseeded;
    auto it = key_index_.find(b.keys(j));
    if (it == key_index_.end()) continue;
    const uint32_t i = it->second;
    if (grows_) named_[i] = 0;  // not applied: its name goes again
    AddSparse(carry_[i], v, +1, &sum);
    carry_[i].swap(sum);
    // Still a re-seed (what it had received is taken back already): it
    // goes out as one again, with the carried change.
    if (reseeded) reseed_[i] = 1;
    Enqueue(i);
  }
}

std::vector<uint32_t> BatchBuilder::Reroute(
    const std::vector<uint32_t>& key_owner, size_t num_channels) {
  LATENTD_CHECK(key_owner.size() == key_owner_.size());
  LATENTD_CHECK(num_channels >= channels_.size());
  channels_.resize(num_channels);
  std::vector<uint32_t> old_owner = std::move(key_owner_);
  key_owner_ = key_owner;
  std::vector<uint32_t> candidates;
  for (ChannelKeys& c : channels_) {
    c.keys.clear();
    candidates.insert(candidates.end(), c.candidates.begin(),
                      c.candidates.end());
    c.candidates.clear();
  }
  for (size_t i = 0; i < key_owner_.size(); ++i) {
    LATENTD_CHECK(key_owner_[i] < channels_.size());
    channels_[key_owner_[i]].keys.push_back(static_cast<uint32_t>(i));
  }
  for (uint32_t i : candidates) {
    channels_[key_owner_[i]].candidates.push_back(i);
  }
  if (grows_) {  // a key's new owner is told its name
    for (size_t i = 0; i < key_owner_.size(); ++i) {
      if (old_owner[i] != key_owner_[i]) named_[i] = 0;
    }
  }
  return old_owner;
}

void BatchBuilder::ReseedMovedFrom(uint32_t channel,
                                   const std::vector<uint32_t>& old_owner) {
  for (size_t i = 0; i < key_owner_.size(); ++i) {
    if (old_owner[i] != channel || key_owner_[i] == channel) continue;
    reseed_[i] = 1;
    Enqueue(static_cast<uint32_t>(i));
  }
}

void BatchBuilder::AddKeys(uint64_t clock,
                           const std::function<uint32_t(Key)>& channel_of) {
  const size_t before = key_owner_.size();
  const size_t n = table_->num_keys();
  last_sent_clock_.resize(n, clock);
  key_owner_.resize(n, 0);
  carry_.resize(n);
  reseed_.resize(n, 0);
  queued_.resize(n, 0);
  named_.resize(n, 0);
  for (size_t i = before; i < n; ++i) {
    const Key key = table_->key(i);
    LATENTD_CHECK(key_index_.emplace(key, static_cast<uint32_t>(i)).second);
    key_owner_[i] = channel_of(key);
    LATENTD_CHECK(key_owner_[i] < channels_.size());
    channels_[key_owner_[i]].keys.push_back(static_cast<uint32_t>(i));
  }
}

}  // namespace latentd::sync::internal
