#include "sync/replica_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sync/owner_shard.h"

namespace latentd::sync {

uint32_t ReplicaStore::ContributorIndex(Owner* o, const HandoffHolder& c) {
  for (size_t i = 0; i < o->contributors.size(); ++i) {
    const HandoffHolder& h = o->contributors[i];
    if (h.node_id() == c.node_id() && h.incarnation() == c.incarnation()) {
      return static_cast<uint32_t>(i);
    }
  }
  o->contributors.push_back(c);
  return static_cast<uint32_t>(o->contributors.size() - 1);
}

absl::Status NoBase(const std::string& owner) {
  return absl::FailedPreconditionError(
      absl::StrCat("no base: this backup holds no copy of ", owner,
                   "'s keys from its current process yet (a refill is due)"));
}

bool IsNoBase(const absl::Status& status) {
  return absl::IsFailedPrecondition(status) &&
         absl::StartsWith(status.message(), "no base: ");
}

absl::Status ReplicaStore::Apply(const ReplicaUpdate& u, bool* duplicate) {
  *duplicate = false;
  if (u.owner().empty()) {
    return absl::InvalidArgumentError("replica update names no owner");
  }
  if (u.dimension() != dimension_) {
    return absl::InvalidArgumentError(
        absl::StrCat("replica update from ", u.owner(), " has dimension ",
                     u.dimension(), ", this node ", dimension_));
  }
  const int n = u.keys_size();
  if (u.contributor_of_size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("replica update from ", u.owner(), ": ", n, " keys, ",
                     u.contributor_of_size(), " contributor indices"));
  }
  for (uint32_t c : u.contributor_of()) {
    if (c >= static_cast<uint32_t>(u.contributors_size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("replica update from ", u.owner(), ": contributor ", c,
                       " of ", u.contributors_size()));
    }
  }
  BlockReader values(u.values(), dimension_);
  LATENTD_RETURN_IF_ERROR(values.Validate(static_cast<size_t>(n)));

  absl::MutexLock l(&mu_);
  Owner& o = owners_[u.owner()];
  if (o.stream == u.stream() && u.sequence() <= o.last_sequence) {
    *duplicate = true;
    ++stats_.updates_duplicate;
    return absl::OkStatus();
  }
  if (o.stream != u.stream()) o.based = false;
  o.stream = u.stream();
  o.last_sequence = u.sequence();
  if (u.reset()) {
    o.keys.clear();
    o.contributors.clear();
    o.based = true;
  } else if (!o.based) {
    ++stats_.updates_unbased;
    return NoBase(u.owner());
  }
  for (Key k : u.reset_keys()) o.keys.erase(k);
  std::vector<uint32_t> index(u.contributors_size());
  for (int c = 0; c < u.contributors_size(); ++c) {
    index[c] = ContributorIndex(&o, u.contributors(c));
  }
  SparseVector v, sum;
  for (int i = 0; i < n; ++i) {
    values.Next(&v);
    if (v.empty()) continue;
    std::vector<Entry>& entries = o.keys[u.keys(i)];
    const uint32_t c = index[u.contributor_of(i)];
    auto it = std::find_if(entries.begin(), entries.end(),
                           [c](const Entry& e) { return e.contributor == c; });
    if (it == entries.end()) {
      entries.push_back(Entry{.contributor = c, .value = std::move(v)});
      v.clear();
      continue;
    }
    AddSparse(it->value, v, +1, &sum);
    it->value.swap(sum);
    if (it->value.empty()) entries.erase(it);
  }
  ++stats_.updates_applied;
  return absl::OkStatus();
}

ReplicaStore::CopyState ReplicaStore::State(const std::string& owner) const {
  absl::MutexLock l(&mu_);
  auto found = owners_.find(owner);
  if (found == owners_.end()) return CopyState::kNone;
  return found->second.based ? CopyState::kBased : CopyState::kUnbased;
}

std::vector<KeyHandoff> ReplicaStore::TakeOver(
    const std::string& owner, const std::function<bool(Key)>& take,
    uint64_t epoch, const std::string& to_node, size_t max_keys_per_chunk) {
  std::vector<KeyHandoff> out;
  absl::MutexLock l(&mu_);
  auto found = owners_.find(owner);
  if (found == owners_.end() || !found->second.based) return out;
  Owner& o = found->second;
  std::vector<Key> keys;
  for (const auto& [key, entries] : o.keys) {
    if (take(key)) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<int> holder_index;  // per contributor, in the current chunk
  SparseVector global, sum;
  const SparseVector none;
  for (Key key : keys) {
    if (out.empty() ||
        static_cast<size_t>(out.back().keys_size()) >= max_keys_per_chunk) {
      KeyHandoff& h = out.emplace_back();
      h.set_from_node(absl::StrCat("replica-of:", owner));
      h.set_to_node(to_node);
      h.set_epoch(epoch);
      h.set_chunk(static_cast<uint32_t>(out.size() - 1));
      h.set_dimension(dimension_);
      holder_index.assign(o.contributors.size(), -1);
    }
    KeyHandoff& h = out.back();
    auto it = o.keys.find(key);
    global.clear();
    uint32_t holders = 0;
    for (const Entry& e : it->second) {
      AddSparse(global, e.value, +1, &sum);
      global.swap(sum);
      const HandoffHolder& c = o.contributors[e.contributor];
      if (c.node_id().empty()) continue;  // unattributed: in the global only
      if (holder_index[e.contributor] < 0) {
        holder_index[e.contributor] = h.holders_size();
        *h.add_holders() = c;
      }
      h.add_holder_of(static_cast<uint32_t>(holder_index[e.contributor]));
      AppendToBlock(none, h.mutable_unseen());
      AppendToBlock(e.value, h.mutable_contributed());
      ++holders;
    }
    h.add_keys(key);
    AppendToBlock(global, h.mutable_globals());
    h.add_holder_counts(holders);
    o.keys.erase(it);
    ++stats_.keys_taken_over;
  }
  if (o.keys.empty()) owners_.erase(found);
  return out;
}

void ReplicaStore::Drop(const std::string& owner,
                        const std::function<bool(Key)>& drop) {
  absl::MutexLock l(&mu_);
  auto found = owners_.find(owner);
  if (found == owners_.end()) return;
  absl::erase_if(found->second.keys,
                 [&drop](const auto& entry) { return drop(entry.first); });
}

size_t ReplicaStore::num_keys() const {
  absl::MutexLock l(&mu_);
  size_t n = 0;
  for (const auto& [id, o] : owners_) n += o.keys.size();
  return n;
}

SparseVector ReplicaStore::Sum(const std::string& owner, Key key) const {
  absl::MutexLock l(&mu_);
  SparseVector total, sum;
  auto o = owners_.find(owner);
  if (o == owners_.end()) return total;
  auto it = o->second.keys.find(key);
  if (it == o->second.keys.end()) return total;
  for (const Entry& e : it->second) {
    AddSparse(total, e.value, +1, &sum);
    total.swap(sum);
  }
  return total;
}

ReplicaStoreStats ReplicaStore::stats() const {
  absl::MutexLock l(&mu_);
  return stats_;
}

}  // namespace latentd::sync
