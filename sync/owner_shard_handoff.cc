// OwnerShard's ring-epoch side: the epoch it routes by, handing keys off to
// their new owners when the ring changes (AdvanceEpoch / ImportKeys), and
// retracting or forgetting a sender (a restarted or lost node's process).
// The rest of OwnerShard (applying batches, reads) is in owner_shard.cc.
#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "sync/owner_shard.h"

namespace latentd::sync {

void OwnerShard::SetEpoch(uint64_t epoch) {
  absl::MutexLock l(&mu_);
  EnterEpoch(epoch);
}

void OwnerShard::EnterEpoch(uint64_t epoch) {
  if (epoch != epoch_) keys_created_.clear();
  epoch_ = epoch;
  if (next_admission_.has_value() && next_admission_->first == epoch) {
    admission_ = std::move(next_admission_->second);
    next_admission_.reset();
  }
}

void OwnerShard::SetAdmission(uint64_t epoch, OwnerAdmission admission) {
  absl::MutexLock l(&mu_);
  if (epoch == epoch_) {
    admission_ = std::move(admission);
  } else if (epoch > epoch_) {
    next_admission_.emplace(epoch, std::move(admission));
  }
}

bool OwnerShard::Admits(const std::string& node_id) const {
  absl::MutexLock l(&mu_);
  return !admission_.has_value() || admission_->members.empty() ||
         admission_->members.contains(node_id);
}

uint64_t OwnerShard::epoch() const {
  absl::MutexLock l(&mu_);
  return epoch_;
}

std::vector<KeyHandoff> OwnerShard::AdvanceEpoch(
    uint64_t epoch, const std::function<std::string(Key)>& new_owner,
    const std::string& from_node, size_t max_keys_per_chunk) {
  LATENTD_CHECK(max_keys_per_chunk > 0);
  absl::MutexLock l(&mu_);
  LATENTD_CHECK(epoch > epoch_);
  EnterEpoch(epoch);
  std::vector<std::pair<std::string, Key>> moved;  // (destination, key)
  for (const auto& [key, g] : globals_) {
    std::string to = new_owner(key);
    if (!to.empty()) moved.emplace_back(std::move(to), key);
  }
  std::sort(moved.begin(), moved.end());  // the same chunks on a rerun
  std::vector<KeyHandoff> out;
  std::vector<int> holder_index;  // per slot, in the current chunk
  const SparseVector none;
  for (const auto& [to, key] : moved) {
    if (out.empty() || out.back().to_node() != to ||
        static_cast<size_t>(out.back().keys_size()) >= max_keys_per_chunk) {
      KeyHandoff& h = out.emplace_back();
      h.set_from_node(from_node);
      h.set_to_node(to);
      h.set_epoch(epoch);
      h.set_chunk(static_cast<uint32_t>(out.size() - 1));
      h.set_dimension(dimension_);
      holder_index.assign(tracked_.size(), -1);
    }
    KeyHandoff& h = out.back();
    auto it = globals_.find(key);
    const GlobalValue& g = it->second;
    h.add_keys(key);
    h.add_names(g.name);
    ReadGlobal(g, &global_);
    AppendToBlock(global_, h.mutable_globals());
    uint32_t entries = 0;
    for (uint64_t bits = g.holders; bits != 0; bits &= bits - 1) {
      const int slot = __builtin_ctzll(bits);
      const Tracked& t = tracked_[slot];
      if (t.node_id.empty()) continue;
      if (holder_index[slot] < 0) {
        holder_index[slot] = h.holders_size();
        HandoffHolder* holder = h.add_holders();
        holder->set_node_id(t.node_id);
        holder->set_incarnation(t.incarnation);
      }
      h.add_holder_of(static_cast<uint32_t>(holder_index[slot]));
      const bool has = static_cast<size_t>(slot) < g.unseen.size();
      AppendToBlock(has ? g.unseen[slot] : none, h.mutable_unseen());
      const bool gave = static_cast<size_t>(slot) < g.contributed.size();
      AppendToBlock(gave ? g.contributed[slot] : none, h.mutable_contributed());
      ++entries;
    }
    h.add_holder_counts(entries);
    globals_.erase(it);
  }
  return out;
}

absl::Status OwnerShard::ImportKeys(const KeyHandoff& h) {
  if (h.dimension() != dimension_) {
    return absl::InvalidArgumentError(
        absl::StrCat("key hand-off has dimension ", h.dimension(),
                     ", this owner ", dimension_));
  }
  const int n = h.keys_size();
  if (h.holder_counts_size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("key hand-off: ", n, " keys, ", h.holder_counts_size(),
                     " holder counts"));
  }
  if (h.names_size() != 0 && h.names_size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("key hand-off: ", n, " keys, ", h.names_size(), " names"));
  }
  BlockReader globals(h.globals(), dimension_);
  LATENTD_RETURN_IF_ERROR(globals.Validate(static_cast<size_t>(n)));
  uint64_t entries = 0;
  for (uint32_t c : h.holder_counts()) entries += c;
  if (static_cast<uint64_t>(h.holder_of_size()) != entries) {
    return absl::InvalidArgumentError(
        absl::StrCat("key hand-off: ", entries, " holder entries counted, ",
                     h.holder_of_size(), " given"));
  }
  for (uint32_t i : h.holder_of()) {
    if (i >= static_cast<uint32_t>(h.holders_size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("key hand-off: holder index ", i, " of ",
                       h.holders_size(), " holders"));
    }
  }
  BlockReader unseen(h.unseen(), dimension_);
  LATENTD_RETURN_IF_ERROR(unseen.Validate(entries));
  // Absent (no vector at all) from a sender that keeps no contributions.
  const bool has_contributed = h.contributed().sizes_size() > 0;
  BlockReader contributed(h.contributed(), dimension_);
  if (has_contributed) {
    LATENTD_RETURN_IF_ERROR(contributed.Validate(entries));
  }
  {
    absl::flat_hash_set<Key> seen;
    for (Key k : h.keys()) {
      if (!seen.insert(k).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("key hand-off repeats key ", k));
      }
    }
  }

  absl::MutexLock l(&mu_);
  if (imported_.contains(
          std::make_tuple(h.from_node(), h.epoch(), h.chunk()))) {
    return absl::OkStatus();
  }
  // The holders' slots here: found by id (-1: an earlier incarnation than
  // the one tracked here, not carried over, and its contributions taken
  // out; a later one takes the slot over, taking the earlier one's
  // contributions here out), else new. Planned before anything changes.
  std::vector<int> slot_of(h.holders_size(), -1);
  std::vector<bool> superseded(h.holders_size(), false);
  int free_slots = kMaxTrackedSenders - static_cast<int>(tracked_.size());
  for (const Tracked& t : tracked_) free_slots += t.node_id.empty();
  int needed = 0;
  for (int i = 0; i < h.holders_size(); ++i) {
    bool found = false;
    for (const Tracked& t : tracked_)
      found |= t.node_id == h.holders(i).node_id();
    needed += !found;
  }
  if (needed > free_slots) {
    return absl::ResourceExhaustedError(
        absl::StrCat("key hand-off needs ", needed, " more tracked senders; ",
                     free_slots, " free of ", kMaxTrackedSenders));
  }
  for (int i = 0; i < h.holders_size(); ++i) {
    const HandoffHolder& holder = h.holders(i);
    int existing = -1;
    for (size_t s = 0; s < tracked_.size(); ++s) {
      if (tracked_[s].node_id == holder.node_id())
        existing = static_cast<int>(s);
    }
    if (existing >= 0) {
      const Tracked& t = tracked_[existing];
      if (t.incarnation == holder.incarnation()) {
        slot_of[i] = existing;
      } else if (holder.incarnation() > t.incarnation) {
        slot_of[i] = TrackedSlot(holder.node_id(), holder.incarnation());
      } else {
        superseded[i] = true;
      }
      continue;
    }
    slot_of[i] = TrackedSlot(holder.node_id(), holder.incarnation());
  }

  auto list = [this](Key key, GlobalValue* g, int slot) {
    const uint64_t bit = uint64_t{1} << slot;
    if ((g->pending & bit) == 0) {
      g->pending |= bit;
      tracked_[slot].changed.push_back(key);
    }
  };
  SparseVector theirs, before, u, c, retract, sum;
  int entry = 0;
  for (int i = 0; i < n; ++i) {
    const Key key = h.keys(i);
    globals.Next(&theirs);
    GlobalValue& g = globals_[key];
    ReadGlobal(g, &before);
    uint64_t imported_bits = 0;
    retract.clear();
    for (uint32_t e = 0; e < h.holder_counts(i); ++e, ++entry) {
      unseen.Next(&u);
      c.clear();
      if (has_contributed) contributed.Next(&c);
      const int slot = slot_of[h.holder_of(entry)];
      if (slot < 0) {
        if (superseded[h.holder_of(entry)] && !c.empty()) {
          AddSparse(retract, c, +1, &sum);
          retract.swap(sum);
        }
        continue;
      }
      const uint64_t bit = uint64_t{1} << slot;
      imported_bits |= bit;
      if (!c.empty()) AddTo(&ContributedOf(&g, slot), c);
      SparseVector& mine = UnseenOf(&g, slot);
      // What it lacks of their side, plus (if it held nothing here) all of
      // this side so far.
      if ((g.holders & bit) == 0) {
        g.holders |= bit;
        mine.assign(before.begin(), before.end());
      }
      if (!u.empty()) AddTo(&mine, u);
      if (!mine.empty()) list(key, &g, slot);
    }
    if (!theirs.empty()) {
      // This side's holders that did not hold the key there lack all of it.
      for (uint64_t bits = g.holders & ~imported_bits; bits != 0;
           bits &= bits - 1) {
        const int slot = __builtin_ctzll(bits);
        AddTo(&UnseenOf(&g, slot), theirs);
        list(key, &g, slot);
      }
      AddToGlobal(&g, theirs);
    }
    if (h.names_size() != 0 && g.name.empty()) g.name = h.names(i);
    // An all-keys holder that held the key on neither side lacks all of it.
    for (uint64_t bits = all_keys_ & ~g.holders; bits != 0; bits &= bits - 1) {
      const int slot = __builtin_ctzll(bits);
      g.holders |= uint64_t{1} << slot;
      SparseVector& mine = UnseenOf(&g, slot);
      ReadGlobal(g, &mine);
      if (!mine.empty()) list(key, &g, slot);
    }
    // What a superseded incarnation had given comes out, as any change.
    if (!retract.empty()) Retract(key, &g, retract);
  }
  imported_.insert(std::make_tuple(h.from_node(), h.epoch(), h.chunk()));
  return absl::OkStatus();
}

OwnerShard::ReplicaEntries OwnerShard::ReplicaSnapshot(
    const std::string& self_id,
    const std::function<bool(const std::string&)>& live) const {
  ReplicaEntries out;
  absl::MutexLock l(&mu_);
  // Per slot: its index in out.contributors if replicated, else -1.
  std::vector<int> index(tracked_.size(), -1);
  for (size_t s = 0; s < tracked_.size(); ++s) {
    const Tracked& t = tracked_[s];
    if (t.node_id.empty()) continue;
    if (t.node_id != self_id && live(t.node_id)) continue;
    index[s] = static_cast<int>(out.contributors.size());
    HandoffHolder& h = out.contributors.emplace_back();
    h.set_node_id(t.node_id);
    h.set_incarnation(t.incarnation);
  }
  const uint32_t rest = static_cast<uint32_t>(out.contributors.size());
  out.contributors.emplace_back();  // node_id "": the unattributed rest
  SparseVector residual, sum;
  for (const auto& [key, g] : globals_) {
    ReadGlobal(g, &residual);
    for (size_t s = 0; s < g.contributed.size(); ++s) {
      const SparseVector& c = g.contributed[s];
      if (c.empty()) continue;
      AddSparse(residual, c, -1, &sum);
      residual.swap(sum);
      if (s < index.size() && index[s] >= 0) {
        out.keys.push_back(key);
        out.contributor_of.push_back(static_cast<uint32_t>(index[s]));
        out.values.push_back(c);
      }
    }
    if (!residual.empty()) {
      out.keys.push_back(key);
      out.contributor_of.push_back(rest);
      out.values.push_back(residual);
    }
  }
  return out;
}

void OwnerShard::ClearSlot(int s) {
  const uint64_t bit = uint64_t{1} << s;
  all_keys_ &= ~bit;
  for (auto& [k, g] : globals_) {
    g.holders &= ~bit;
    g.pending &= ~bit;
    g.named &= ~bit;
    if (g.unseen.size() > static_cast<size_t>(s)) g.unseen[s].clear();
    if (g.contributed.size() > static_cast<size_t>(s)) {
      g.contributed[s].clear();
    }
  }
  Tracked& t = tracked_[s];
  t.changed.clear();
  t.last_keys.clear();
  t.last_changes.Clear();
  t.last_named.clear();
}

void OwnerShard::RetractSender(const std::string& node_id) {
  {
    absl::MutexLock l(&mu_);
    for (size_t s = 0; s < tracked_.size(); ++s) {
      if (tracked_[s].node_id == node_id && !node_id.empty()) {
        RetractSlot(static_cast<int>(s));
      }
    }
  }
  ForgetSender(node_id);
}

void OwnerShard::ForgetSender(const std::string& node_id) {
  absl::MutexLock l(&mu_);
  for (size_t s = 0; s < tracked_.size(); ++s) {
    if (tracked_[s].node_id != node_id || node_id.empty()) continue;
    ClearSlot(static_cast<int>(s));
    tracked_[s] = Tracked{};  // free: an empty id
  }
  absl::erase_if(applied_, [&node_id](const auto& entry) {
    return entry.first.first == node_id;
  });
}

}  // namespace latentd::sync
