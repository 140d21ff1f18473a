// KeyTable::ApplyBatch: a batch's deltas into the globals, and the reply's
// changes, with the hash lookups prefetched ahead of use (look_ahead.h).
#include <algorithm>
#include <utility>
#include <vector>

#include "sync/internal/key_table.h"
#include "sync/internal/look_ahead.h"
#include "sync/sparse_block.h"

namespace latentd::sync::internal {
void KeyTable::ApplyBatch(const DeltaBatch& batch, bool duplicate, int slot,
                          DeltaReply* reply) {
  const uint64_t bit = uint64_t{1} << slot;
  if (batch.all_keys() && (all_keys_ & bit) == 0) HoldAllKeys(slot);
  std::vector<std::pair<Key, SparseVector>> handed_back;
  if (duplicate) RequeueLastReply(slot, &handed_back);
  // A new sequence confirms the last reply.
  Tracked& me = tracked_[slot];
  me.last_keys.clear();
  me.last_changes.Clear();
  me.last_named.clear();
  ApplyDeltas(batch, duplicate, slot);
  for (int j = 0; j < batch.name_keys_size(); ++j) {
    auto it = globals_.find(batch.name_keys(j));
    if (it == globals_.end()) continue;
    if (it->second.name.empty()) it->second.name = batch.names(j);
    it->second.named |= bit;
  }
  FillReply(slot, handed_back, reply);
}

void KeyTable::RequeueLastReply(
    int slot, std::vector<std::pair<Key, SparseVector>>* handed_back) {
  Tracked& me = tracked_[slot];
  const uint64_t bit = uint64_t{1} << slot;
  SparseVector v;
  // Names that lost reply carried go out again with the changes.
  for (Key k : me.last_named) {
    auto it = globals_.find(k);
    if (it != globals_.end()) it->second.named &= ~bit;
  }
  // The reply that carried these may be lost: they go out again, with
  // what came since.
  BlockReader last(me.last_changes, dimension_);
  for (Key k : me.last_keys) {
    last.Next(&v);
    auto it = globals_.find(k);
    if (it == globals_.end()) {
      // Handed off since (AdvanceEpoch): the new owner never had this
      // change to send, so it goes out from here, as it was.
      handed_back->emplace_back(k, v);
      continue;
    }
    AddTo(&UnseenOf(&it->second, slot), v);
    List(k, &it->second, slot);
  }
}

void KeyTable::ApplyDeltas(const DeltaBatch& batch, bool duplicate, int slot) {
  const uint64_t bit = uint64_t{1} << slot;
  SparseVector v;
  BlockReader deltas(batch.deltas(), dimension_);
  const size_t n = static_cast<size_t>(batch.keys_size());
  globals_.reserve(globals_.size() + n);  // no rehash: LookAhead's pointers
  auto batch_key = [&batch](size_t i) {
    return batch.keys(static_cast<int>(i));
  };
  // Each value's data and unseen array, then (half-way) the other holders'
  // unseen changes that the delta joins.
  auto fetch = [](const GlobalValue& g) {
    __builtin_prefetch(g.dense.empty()
                           ? static_cast<const void*>(g.value.data())
                           : g.dense.data());
    __builtin_prefetch(g.unseen.data());
  };
  LookAhead ahead(&globals_, n, batch_key, fetch);
  int next_reseeded = 0;  // into batch.reseeded()
  for (size_t i = 0; i < n; ++i) {
    GlobalValue* found = ahead.At(i);
    if (i + kFindAhead / 2 < n) {
      if (GlobalValue* next = ahead.Peek(i + kFindAhead / 2)) {
        PrefetchUnseen(*next, ~bit);
      }
    }
    const Key key = batch_key(i);
    deltas.Next(&v);
    const bool reseeded = next_reseeded < batch.reseeded_size() &&
                          batch.reseeded(next_reseeded) == i;
    next_reseeded += reseeded;
    // A duplicate applies nothing, and a key it no longer finds was handed
    // off: nothing to note for it here.
    if (duplicate && found == nullptr) continue;
    GlobalValue& g = found != nullptr ? *found : globals_[key];
    // A new key: every all-keys holder holds it from its start (nothing
    // unseen yet; this delta reaches them below).
    if (found == nullptr) g.holders |= all_keys_ & ~bit;
    if ((g.holders & bit) == 0 || (reseeded && !duplicate)) {
      // New to this sender, or re-seeded by it (it took back all it had
      // received of the key): it lacks the global so far.
      g.holders |= bit;
      SparseVector& u = UnseenOf(&g, slot);
      ReadGlobal(g, &u);
      if (!u.empty()) List(key, &g, slot);
    }
    if (!duplicate && !v.empty()) {
      AddToGlobal(&g, v);
      ++stats_->keys_applied;
      NotifyHolders(key, &g, v, bit);
      AddTo(&ContributedOf(&g, slot), v);
    }
  }
}

void KeyTable::FillReply(
    int slot, const std::vector<std::pair<Key, SparseVector>>& handed_back,
    DeltaReply* reply) {
  Tracked& me = tracked_[slot];
  const uint64_t bit = uint64_t{1} << slot;
  SparseBlock* out = reply->mutable_changes();
  // The reply's changes: the slot, the unseen array and the change itself
  // are three dependent misses a key, so they are fetched ahead.
  auto changed_key = [&me](size_t j) { return me.changed[j]; };
  auto fetch_mine = [](const GlobalValue& g) {
    __builtin_prefetch(g.unseen.data());
  };
  LookAhead mine(&globals_, me.changed.size(), changed_key, fetch_mine);
  for (size_t j = 0; j < me.changed.size(); ++j) {
    const Key k = me.changed[j];
    GlobalValue* g = mine.At(j);
    if (j + kFindAhead / 2 < me.changed.size()) {
      // Found and its unseen array requested kFindAhead / 2 keys ago.
      if (GlobalValue* next = mine.Peek(j + kFindAhead / 2)) {
        PrefetchUnseen(*next, bit);
      }
    }
    if (g == nullptr || (g->pending & bit) == 0) continue;
    g->pending &= ~bit;
    SparseVector& u = UnseenOf(g, slot);
    if (u.empty()) continue;
    reply->add_changed_keys(k);
    AppendToBlock(u, out);
    u.clear();  // keeps its buffer for the next change
    if ((all_keys_ & bit) != 0 && (g->named & bit) == 0 && !g->name.empty()) {
      reply->add_name_keys(k);
      reply->add_names(g->name);
      g->named |= bit;
      me.last_named.push_back(k);
    }
  }
  me.changed.clear();
  for (const auto& [k, change] : handed_back) {
    reply->add_changed_keys(k);
    AppendToBlock(change, out);
  }
  me.last_keys.assign(reply->changed_keys().begin(),
                      reply->changed_keys().end());
  me.last_changes = *out;
}

}  // namespace latentd::sync::internal
