#include "sync/internal/key_handoffs.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "sync/sparse_block.h"

namespace latentd::sync::internal {

std::vector<KeyHandoff> KeyHandoffs::Export(
    KeyTable* keys, uint64_t epoch,
    const std::function<std::string(Key)>& new_owner,
    const std::string& from_node, size_t max_keys_per_chunk) {
  LATENTD_CHECK(max_keys_per_chunk > 0);
  std::vector<std::pair<std::string, Key>> moved;  // (destination, key)
  keys->ForEach([&](Key key, const GlobalValue&) {
    std::string to = new_owner(key);
    if (!to.empty()) moved.emplace_back(std::move(to), key);
  });
  std::sort(moved.begin(), moved.end());  // the same chunks on a rerun
  std::vector<KeyHandoff> out;
  std::vector<int> holder_index;  // per slot, in the current chunk
  const SparseVector none;
  SparseVector global;
  for (const auto& [to, key] : moved) {
    if (out.empty() || out.back().to_node() != to ||
        static_cast<size_t>(out.back().keys_size()) >= max_keys_per_chunk) {
      KeyHandoff& h = out.emplace_back();
      h.set_from_node(from_node);
      h.set_to_node(to);
      h.set_epoch(epoch);
      h.set_chunk(static_cast<uint32_t>(out.size() - 1));
      h.set_dimension(keys->dimension());
      holder_index.assign(keys->num_slots(), -1);
    }
    KeyHandoff& h = out.back();
    const GlobalValue& g = *keys->Find(key);
    h.add_keys(key);
    h.add_names(g.name);
    KeyTable::ReadGlobal(g, &global);
    AppendToBlock(global, h.mutable_globals());
    uint32_t entries = 0;
    for (uint64_t bits = g.holders; bits != 0; bits &= bits - 1) {
      const int slot = __builtin_ctzll(bits);
      const Tracked& t = keys->slot(slot);
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
    keys->Erase(key);
  }
  return out;
}

absl::Status KeyHandoffs::Validate(const KeyHandoff& h, uint32_t dimension) {
  if (h.dimension() != dimension) {
    return absl::InvalidArgumentError(
        absl::StrCat("key hand-off has dimension ", h.dimension(),
                     ", this owner ", dimension));
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
  BlockReader globals(h.globals(), dimension);
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
  BlockReader unseen(h.unseen(), dimension);
  LATENTD_RETURN_IF_ERROR(unseen.Validate(entries));
  // Absent (no vector at all) from a sender that keeps no contributions.
  const bool has_contributed = h.contributed().sizes_size() > 0;
  BlockReader contributed(h.contributed(), dimension);
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
  return absl::OkStatus();
}

absl::Status KeyHandoffs::Import(const KeyHandoff& h, KeyTable* keys) {
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
  const int free_slots = keys->FreeSlots();
  int needed = 0;
  for (int i = 0; i < h.holders_size(); ++i) {
    needed += keys->FindSlot(h.holders(i).node_id()) < 0;
  }
  if (needed > free_slots) {
    return absl::ResourceExhaustedError(
        absl::StrCat("key hand-off needs ", needed, " more tracked senders; ",
                     free_slots, " free of ", kMaxTrackedSenders));
  }
  for (int i = 0; i < h.holders_size(); ++i) {
    const HandoffHolder& holder = h.holders(i);
    const int existing = keys->FindSlot(holder.node_id());
    if (existing >= 0) {
      const Tracked& t = keys->slot(existing);
      if (t.incarnation == holder.incarnation()) {
        slot_of[i] = existing;
      } else if (holder.incarnation() > t.incarnation) {
        slot_of[i] = keys->TrackedSlot(holder.node_id(), holder.incarnation());
      } else {
        superseded[i] = true;
      }
      continue;
    }
    slot_of[i] = keys->TrackedSlot(holder.node_id(), holder.incarnation());
  }

  const uint32_t dimension = keys->dimension();
  BlockReader globals(h.globals(), dimension);
  BlockReader unseen(h.unseen(), dimension);
  // Absent (no vector at all) from a sender that keeps no contributions.
  const bool has_contributed = h.contributed().sizes_size() > 0;
  BlockReader contributed(h.contributed(), dimension);
  std::vector<HolderPart> parts;
  SparseVector theirs, u, c, retract, sum;
  int entry = 0;
  for (int i = 0; i < h.keys_size(); ++i) {
    globals.Next(&theirs);
    size_t num_parts = 0;
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
      if (parts.size() <= num_parts) parts.emplace_back();
      HolderPart& p = parts[num_parts++];
      p.slot = slot;
      p.unseen.swap(u);
      p.contributed.swap(c);
    }
    keys->MergeKey(h.keys(i), theirs,
                   absl::MakeConstSpan(parts.data(), num_parts), retract,
                   h.names_size() != 0 ? &h.names(i) : nullptr);
  }
  imported_.insert(std::make_tuple(h.from_node(), h.epoch(), h.chunk()));
  return absl::OkStatus();
}

}  // namespace latentd::sync::internal
