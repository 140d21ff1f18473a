#include "sync/internal/key_table.h"

namespace latentd::sync::internal {

const GlobalValue* KeyTable::Find(Key key) const {
  auto it = globals_.find(key);
  return it == globals_.end() ? nullptr : &it->second;
}

void KeyTable::NotifyHolders(Key key, GlobalValue* g, const SparseVector& d,
                             uint64_t sender_bit) {
  uint64_t others = g->holders & ~sender_bit;
  while (others != 0) {
    const int s = __builtin_ctzll(others);
    others &= others - 1;
    AddTo(&UnseenOf(g, s), d);
    List(key, g, s);
  }
}

void KeyTable::PrefetchUnseen(const GlobalValue& g, uint64_t slots) {
  uint64_t s = slots & g.holders;
  while (s != 0) {
    const auto slot = static_cast<size_t>(__builtin_ctzll(s));
    s &= s - 1;
    if (slot < g.unseen.size()) __builtin_prefetch(g.unseen[slot].data());
  }
}

SparseVector& KeyTable::UnseenOf(GlobalValue* g, int slot) {
  if (g->unseen.size() <= static_cast<size_t>(slot)) g->unseen.resize(slot + 1);
  return g->unseen[slot];
}

SparseVector& KeyTable::ContributedOf(GlobalValue* g, int slot) {
  if (g->contributed.size() <= static_cast<size_t>(slot)) {
    g->contributed.resize(slot + 1);
  }
  return g->contributed[slot];
}

void KeyTable::Retract(Key key, GlobalValue* g, const SparseVector& v) {
  SparseVector neg(v);
  for (SparseEntry& e : neg) e.count = -e.count;
  AddToGlobal(g, neg);
  NotifyHolders(key, g, neg, /*sender_bit=*/0);
  ++stats_->keys_retracted;
  stats_->counts_retracted += static_cast<uint64_t>(L1Norm(v));
}

void KeyTable::RetractSlot(int s) {
  const uint64_t bit = uint64_t{1} << s;
  SparseVector neg;
  bool any = false;
  for (auto& [key, g] : globals_) {  // rare: O(keys)
    if (g.contributed.size() <= static_cast<size_t>(s)) continue;
    SparseVector& c = g.contributed[s];
    if (c.empty()) continue;
    neg.assign(c.begin(), c.end());
    for (SparseEntry& e : neg) e.count = -e.count;
    AddToGlobal(&g, neg);
    // Not the slot itself: it is reset by the caller.
    NotifyHolders(key, &g, neg, bit);
    ++stats_->keys_retracted;
    stats_->counts_retracted += static_cast<uint64_t>(L1Norm(c));
    c.clear();
    any = true;
  }
  if (any) ++stats_->senders_retracted;
}

void KeyTable::AddTo(SparseVector* u, const SparseVector& d) {
  if (u->empty()) {
    u->assign(d.begin(), d.end());  // keeps u's buffer
    return;
  }
  AddSparse(*u, d, +1, &sum_);
  // A copy, not a swap: each vector keeps a buffer sized for itself (a
  // swap passed buffers from key to key, and a small one met a large sum
  // with a reallocation).
  u->assign(sum_.begin(), sum_.end());
}

void KeyTable::AddToGlobal(GlobalValue* g, const SparseVector& d) {
  if (!g->dense.empty()) {
    for (const SparseEntry& e : d) g->dense[e.topic] += e.count;
    return;
  }
  AddSparse(g->value, d, +1, &sum_);
  if (sum_.size() * 2 > dimension_) {
    g->dense.assign(dimension_, 0);
    for (const SparseEntry& e : sum_) g->dense[e.topic] = e.count;
    SparseVector().swap(g->value);
    return;
  }
  g->value.assign(sum_.begin(), sum_.end());
}

void KeyTable::ReadGlobal(const GlobalValue& g, SparseVector* out) {
  if (g.dense.empty()) {
    out->assign(g.value.begin(), g.value.end());
    return;
  }
  out->clear();
  for (uint32_t k = 0; k < g.dense.size(); ++k) {
    if (g.dense[k] != 0) out->push_back({k, g.dense[k]});
  }
}

void KeyTable::HoldAllKeys(int s) {
  const uint64_t bit = uint64_t{1} << s;
  for (auto& [key, g] : globals_) {
    if ((g.holders & bit) != 0) continue;
    g.holders |= bit;
    SparseVector& u = UnseenOf(&g, s);
    ReadGlobal(g, &u);
    if (!u.empty()) List(key, &g, s);
  }
  all_keys_ |= bit;
}

int KeyTable::TrackedSlot(const std::string& node_id, uint64_t incarnation) {
  int slot = FindSlot(node_id);
  if (slot < 0) {
    for (size_t f = 0; f < tracked_.size() && slot < 0; ++f) {
      if (tracked_[f].node_id.empty()) slot = static_cast<int>(f);  // freed
    }
    if (slot < 0) {
      if (tracked_.size() >= kMaxTrackedSenders) return -1;
      tracked_.emplace_back();
      slot = static_cast<int>(tracked_.size() - 1);
    }
    tracked_[slot].node_id = node_id;
    tracked_[slot].incarnation = incarnation;
    return slot;
  }
  Tracked& t = tracked_[slot];
  if (t.incarnation != incarnation) {
    // A restarted sender holds nothing yet, and gets each key's global
    // with its first delta. The old incarnation's contributions come out
    // of the globals first: the new one pushes its store's counts anew.
    RetractSlot(slot);
    const uint64_t bit = uint64_t{1} << slot;
    for (Key k : t.changed) {
      auto it = globals_.find(k);
      if (it != globals_.end()) it->second.pending &= ~bit;
    }
    all_keys_ &= ~bit;
    for (auto& [k, g] : globals_) {  // rare: O(keys)
      g.named &= ~bit;
      g.holders &= ~bit;
      if (g.unseen.size() > static_cast<size_t>(slot)) g.unseen[slot].clear();
    }
    t.changed.clear();
    t.last_keys.clear();
    t.last_changes.Clear();
    t.last_named.clear();
    t.incarnation = incarnation;
  }
  return slot;
}

void KeyTable::ClearSlot(int s) {
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

void KeyTable::List(Key key, GlobalValue* g, int s) {
  const uint64_t bit = uint64_t{1} << s;
  if ((g->pending & bit) == 0) {
    g->pending |= bit;
    tracked_[s].changed.push_back(key);
  }
}

int KeyTable::FindSlot(const std::string& node_id) const {
  int slot = -1;
  for (size_t s = 0; s < tracked_.size(); ++s) {
    if (tracked_[s].node_id == node_id) slot = static_cast<int>(s);
  }
  return slot;
}

int KeyTable::FindSlot(const std::string& node_id, uint64_t incarnation) const {
  int slot = -1;
  for (size_t s = 0; s < tracked_.size(); ++s) {
    const Tracked& t = tracked_[s];
    if (t.node_id == node_id && t.incarnation == incarnation) {
      slot = static_cast<int>(s);
    }
  }
  return slot;
}

uint64_t KeyTable::LaterIncarnation(const std::string& node_id,
                                    uint64_t incarnation) const {
  for (const Tracked& t : tracked_) {
    if (t.node_id == node_id && t.incarnation > incarnation) {
      return t.incarnation;
    }
  }
  return 0;
}

int KeyTable::FreeSlots() const {
  int free_slots = kMaxTrackedSenders - static_cast<int>(tracked_.size());
  for (const Tracked& t : tracked_) free_slots += t.node_id.empty();
  return free_slots;
}

void KeyTable::RetractSender(const std::string& node_id) {
  for (size_t s = 0; s < tracked_.size(); ++s) {
    if (tracked_[s].node_id == node_id && !node_id.empty()) {
      RetractSlot(static_cast<int>(s));
    }
  }
}

void KeyTable::ForgetSender(const std::string& node_id) {
  for (size_t s = 0; s < tracked_.size(); ++s) {
    if (tracked_[s].node_id != node_id || node_id.empty()) continue;
    ClearSlot(static_cast<int>(s));
    tracked_[s] = Tracked{};  // free: an empty id
  }
}

void KeyTable::MergeKey(Key key, const SparseVector& theirs,
                        absl::Span<const HolderPart> parts,
                        const SparseVector& retract, const std::string* name) {
  GlobalValue& g = globals_[key];
  SparseVector& before = global_;
  ReadGlobal(g, &before);
  uint64_t imported_bits = 0;
  for (const HolderPart& p : parts) {
    const uint64_t bit = uint64_t{1} << p.slot;
    imported_bits |= bit;
    if (!p.contributed.empty())
      AddTo(&ContributedOf(&g, p.slot), p.contributed);
    SparseVector& mine = UnseenOf(&g, p.slot);
    // What it lacks of their side, plus (if it held nothing here) all of
    // this side so far.
    if ((g.holders & bit) == 0) {
      g.holders |= bit;
      mine.assign(before.begin(), before.end());
    }
    if (!p.unseen.empty()) AddTo(&mine, p.unseen);
    if (!mine.empty()) List(key, &g, p.slot);
  }
  if (!theirs.empty()) {
    // This side's holders that did not hold the key there lack all of it.
    for (uint64_t bits = g.holders & ~imported_bits; bits != 0;
         bits &= bits - 1) {
      const int slot = __builtin_ctzll(bits);
      AddTo(&UnseenOf(&g, slot), theirs);
      List(key, &g, slot);
    }
    AddToGlobal(&g, theirs);
  }
  if (name != nullptr && g.name.empty()) g.name = *name;
  // An all-keys holder that held the key on neither side lacks all of it.
  for (uint64_t bits = all_keys_ & ~g.holders; bits != 0; bits &= bits - 1) {
    const int slot = __builtin_ctzll(bits);
    g.holders |= uint64_t{1} << slot;
    SparseVector& mine = UnseenOf(&g, slot);
    ReadGlobal(g, &mine);
    if (!mine.empty()) List(key, &g, slot);
  }
  // What a superseded incarnation had given comes out, as any change.
  if (!retract.empty()) Retract(key, &g, retract);
}

}  // namespace latentd::sync::internal
