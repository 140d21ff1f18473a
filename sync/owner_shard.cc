#include "sync/owner_shard.h"

#include <algorithm>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"

namespace latentd::sync {
namespace {

// How many keys ahead hash lookups are prefetched.
// A run of lookups in a large map misses the cache at every step: the
// probe of key i + kProbeAhead starts early, key i + kFindAhead is looked up
// (and its value's memory requested), and key i's value is then at hand.
constexpr size_t kProbeAhead = 12;
constexpr size_t kFindAhead = 8;

// The longest key name (a word) a batch may give.
constexpr size_t kMaxNameBytes = 4096;

// The most one delta may move a count by (the sampler's counts are int32).
constexpr int64_t kMaxDeltaCount = int64_t{1} << 31;

// Looks up keys(0), keys(1), ... in `map` in that order, ahead of use:
// At(i) returns keys(i)'s value (nullptr if absent when it was looked up,
// kFindAhead steps earlier) after calling found(value) on the value of
// keys(i + kFindAhead). REQUIRES: nothing is inserted into or erased from
// the map while it runs, except keys not yet looked up (the caller
// reserves room so that no insertion rehashes), and At is called with
// i = 0, 1, ... in turn.
template <typename Map, typename KeyFn, typename FoundFn>
class LookAhead {
 public:
  using Value = typename Map::mapped_type;
  LookAhead(Map* map, size_t n, KeyFn keys, FoundFn found)
      : map_(map), n_(n), keys_(keys), found_(found) {
    for (size_t i = 0; i < std::min(n, kFindAhead); ++i) Find(i);
  }
  // keys(i)'s value as looked up, for i in (the last At's, that + kFindAhead].
  Value* Peek(size_t i) const { return ring_[i % kRing]; }
  Value* At(size_t i) {
    if (i + kProbeAhead < n_) map_->prefetch(keys_(i + kProbeAhead));
    if (i + kFindAhead < n_) Find(i + kFindAhead);
    return ring_[i % kRing];
  }

 private:
  static constexpr size_t kRing = 16;
  static_assert(kRing > kFindAhead);
  void Find(size_t i) {
    auto it = map_->find(keys_(i));
    Value* v = it == map_->end() ? nullptr : &it->second;
    ring_[i % kRing] = v;
    if (v != nullptr) found_(*v);
  }
  Map* const map_;
  const size_t n_;
  KeyFn keys_;
  FoundFn found_;
  Value* ring_[kRing] = {};
};

}  // namespace

void AppendToBlock(const SparseVector& v, SparseBlock* block) {
  block->add_sizes(static_cast<uint32_t>(v.size()));
  auto* topics = block->mutable_topics();
  auto* counts = block->mutable_counts();
  const int n = static_cast<int>(v.size());
  topics->Reserve(topics->size() + n);  // grows geometrically
  counts->Reserve(counts->size() + n);
  for (const SparseEntry& e : v) {
    topics->AddAlreadyReserved(e.topic);
    counts->AddAlreadyReserved(e.count);
  }
}

absl::Status BlockReader::Validate(size_t vectors) const {
  if (static_cast<size_t>(block_.sizes_size()) != vectors) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sparse block holds ", block_.sizes_size(), " vectors, not ", vectors));
  }
  if (block_.topics_size() != block_.counts_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse block: ", block_.topics_size(), " topics but ",
                     block_.counts_size(), " counts"));
  }
  int64_t pos = 0;
  for (int v = 0; v < block_.sizes_size(); ++v) {
    const int64_t end = pos + block_.sizes(v);
    if (end > block_.topics_size()) {
      return absl::InvalidArgumentError("sparse block: sizes overrun");
    }
    for (int64_t i = pos; i < end; ++i) {
      const uint32_t k = block_.topics(static_cast<int>(i));
      if (k >= dimension_) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sparse block: topic ", k, " >= dimension ", dimension_));
      }
      if (i > pos && k <= block_.topics(static_cast<int>(i - 1))) {
        return absl::InvalidArgumentError(
            "sparse block: topics not strictly ascending");
      }
      if (block_.counts(static_cast<int>(i)) == 0) {
        return absl::InvalidArgumentError("sparse block: zero count listed");
      }
    }
    pos = end;
  }
  if (pos != block_.topics_size()) {
    return absl::InvalidArgumentError("sparse block: trailing entries");
  }
  return absl::OkStatus();
}

void BlockReader::Next(SparseVector* out) {
  out->clear();
  const int n = static_cast<int>(block_.sizes(vector_++));
  for (int i = 0; i < n; ++i, ++pos_) {
    out->push_back({block_.topics(pos_), block_.counts(pos_)});
  }
}

OwnerShard::OwnerShard(uint32_t dimension)
    : dimension_(dimension),
      incarnation_(std::random_device{}() |
                   (uint64_t{std::random_device{}()} << 32) | 1) {}

absl::Status OwnerShard::Apply(const DeltaBatch& batch, DeltaReply* reply) {
  reply->Clear();
  if (!batch.changes_only()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "delta batch from ", batch.node_id(),
        " does not set changes_only: this owner answers only senders that "
        "send their tables' changes (sync/synchronizer.h)"));
  }
  if (batch.dimension() != dimension_) {
    return absl::InvalidArgumentError(
        absl::StrCat("delta batch has dimension ", batch.dimension(),
                     ", this owner ", dimension_));
  }
  BlockReader deltas(batch.deltas(), dimension_);
  LATENTD_RETURN_IF_ERROR(deltas.Validate(batch.keys_size()));
  if (batch.name_keys_size() != batch.names_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("delta batch names ", batch.name_keys_size(),
                     " keys with ", batch.names_size(), " names"));
  }
  for (const std::string& name : batch.names()) {
    if (name.empty() || name.size() > kMaxNameBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("delta batch holds a key name of ", name.size(),
                       " bytes (1 to ", kMaxNameBytes, " allowed)"));
    }
  }
  for (int j = 0; j < batch.reseeded_size(); ++j) {
    if (batch.reseeded(j) >= static_cast<uint32_t>(batch.keys_size()) ||
        (j > 0 && batch.reseeded(j) <= batch.reseeded(j - 1))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "delta batch re-seeds key index ", batch.reseeded(j), " (entry ", j,
          ") of ", batch.keys_size(),
          " keys: indexes must be ascending and within the batch"));
    }
  }
  absl::flat_hash_set<Key> seen;
  seen.reserve(batch.keys_size());
  for (int i = 0; i < batch.keys_size(); ++i) {
    if (!seen.insert(batch.keys(i)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("delta batch repeats key ", batch.keys(i)));
    }
  }
  absl::MutexLock l(&mu_);
  LATENTD_RETURN_IF_ERROR(Admit(batch));
  if (batch.owner_incarnation() != 0 &&
      batch.owner_incarnation() != incarnation_) {
    ++stats_.batches_reseed_refused;
    return absl::AbortedError(
        absl::StrCat("owner restarted: batch addressed to owner incarnation ",
                     batch.owner_incarnation(), ", this is ", incarnation_,
                     "; nothing was applied (re-seed this owner)"));
  }
  for (const Tracked& t : tracked_) {
    if (t.node_id == batch.node_id() && t.incarnation > batch.incarnation()) {
      ++stats_.batches_stale_refused;
      return absl::AbortedError(absl::StrCat(
          "sender ", batch.node_id(), " incarnation ", batch.incarnation(),
          " is superseded by its later incarnation ", t.incarnation,
          "; nothing was applied"));
    }
  }
  auto done = applied_.find({batch.node_id(), batch.incarnation()});
  const bool duplicate =
      done != applied_.end() && batch.sequence() <= done->second;
  if (!duplicate) {
    // Before anything changes (a new incarnation's slot retracts the old
    // one's part): a batch applied under the old epoch is answered as a
    // duplicate whatever its epoch, so that its sender never routes its
    // deltas elsewhere.
    if (epoch_ != 0 && batch.epoch() != 0 && batch.epoch() != epoch_) {
      if (batch.epoch() < epoch_) {
        ++stats_.batches_stale_refused;
        return absl::FailedPreconditionError(absl::StrCat(
            "stale epoch: batch routed by ring epoch ", batch.epoch(),
            ", this owner serves epoch ", epoch_, "; nothing was applied"));
      }
      return absl::UnavailableError(absl::StrCat(
          "owner at ring epoch ", epoch_, " has not reached epoch ",
          batch.epoch(), " yet; nothing was applied"));
    }
    LATENTD_RETURN_IF_ERROR(CheckDeltas(batch));
  }
  const int slot = TrackedSlot(batch.node_id(), batch.incarnation());
  if (slot < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("owner tracks at most ", kMaxTrackedSenders,
                     " senders; every sender needs a tracked slot"));
  }
  uint64_t& last = applied_[{batch.node_id(), batch.incarnation()}];
  reply->set_duplicate(duplicate);
  if (duplicate) {
    ++stats_.batches_duplicate;
  } else {
    last = batch.sequence();
    ++stats_.batches_applied;
  }
  reply->set_owner_incarnation(incarnation_);
  ApplyChanges(batch, duplicate, slot, reply);
  return absl::OkStatus();
}

absl::Status OwnerShard::Admit(const DeltaBatch& batch) {
  if (!admission_.has_value()) return absl::OkStatus();
  const OwnerAdmission& a = *admission_;
  if (!a.members.empty() && !a.members.contains(batch.node_id())) {
    if (epoch_ != 0 && batch.epoch() > epoch_) {
      // Perhaps a joiner of a ring this owner has not reached: it is
      // answered as any member routing by that ring would be (and takes
      // nothing here).
      return absl::UnavailableError(absl::StrCat(
          "owner at ring epoch ", epoch_, " has not reached epoch ",
          batch.epoch(), " yet; nothing was applied"));
    }
    ++stats_.refused_not_member;
    return absl::PermissionDeniedError(absl::StrCat(
        "sender '", batch.node_id(), "' is not a member of ring epoch ", epoch_,
        "; nothing was applied"));
  }
  if (a.max_incarnation) {
    const uint64_t bound = a.max_incarnation();
    if (batch.incarnation() > bound) {
      ++stats_.refused_incarnation;
      return absl::InvalidArgumentError(absl::StrCat(
          "sender ", batch.node_id(), " incarnation ", batch.incarnation(),
          " lies past this owner's clock (bound ", bound,
          "; its clock runs ahead, or it is forged); nothing was applied"));
    }
  }
  return absl::OkStatus();
}

absl::Status OwnerShard::CheckDeltas(const DeltaBatch& batch) {
  if (!admission_.has_value()) return absl::OkStatus();
  const std::function<bool(Key)>* owns =
      admission_->owns ? &admission_->owns : nullptr;
  const bool counts = admission_->counts;
  // The sender's slot, if this incarnation has one (its contributions).
  int slot = -1;
  for (size_t s = 0; s < tracked_.size(); ++s) {
    const Tracked& t = tracked_[s];
    if (t.node_id == batch.node_id() && t.incarnation == batch.incarnation()) {
      slot = static_cast<int>(s);
    }
  }
  BlockReader deltas(batch.deltas(), dimension_);
  SparseVector d;
  SparseVector part;
  for (int i = 0; i < batch.keys_size(); ++i) {
    const Key key = batch.keys(i);
    deltas.Next(&d);
    if (owns != nullptr && !(*owns)(key)) {
      ++stats_.refused_key_not_owned;
      return absl::InvalidArgumentError(
          absl::StrCat("delta batch from ", batch.node_id(), " holds key ", key,
                       ", which this owner does not own in ring epoch ", epoch_,
                       "; nothing was applied"));
    }
    if (!counts) continue;
    bool negative = false;
    for (const SparseEntry& e : d) {
      if (e.count > kMaxDeltaCount || e.count < -kMaxDeltaCount) {
        ++stats_.refused_negative;
        return absl::InvalidArgumentError(
            absl::StrCat("delta batch from ", batch.node_id(), " moves key ",
                         key, " topic ", e.topic, " by ", e.count, " (at most ",
                         kMaxDeltaCount, " at once); nothing was applied"));
      }
      negative = negative || e.count < 0;
    }
    if (!negative) continue;
    // What the sender may take back: its own part.
    part.clear();
    auto it = globals_.find(key);
    if (it != globals_.end() && slot >= 0 &&
        static_cast<size_t>(slot) < it->second.contributed.size()) {
      part = it->second.contributed[slot];
    }
    size_t j = 0;
    for (const SparseEntry& e : d) {
      if (e.count >= 0) continue;
      while (j < part.size() && part[j].topic < e.topic) ++j;
      const int64_t have =
          j < part.size() && part[j].topic == e.topic ? part[j].count : 0;
      if (have + e.count < 0) {
        ++stats_.refused_negative;
        return absl::InvalidArgumentError(absl::StrCat(
            "delta batch from ", batch.node_id(), " would take key ", key,
            " topic ", e.topic, " to ", have + e.count, " (", e.count,
            " against its own part ", have, "); nothing was applied"));
      }
    }
  }
  const uint64_t cap = admission_->max_new_keys_per_sender;
  if (cap == 0) return absl::OkStatus();
  uint64_t fresh = 0;
  for (int i = 0; i < batch.keys_size(); ++i) {
    fresh += !globals_.contains(batch.keys(i));
  }
  uint64_t& created = keys_created_[batch.node_id()];
  if (created + fresh > cap) {
    ++stats_.refused_too_many_keys;
    return absl::ResourceExhaustedError(
        absl::StrCat("delta batch from ", batch.node_id(), " would create ",
                     fresh, " new keys at this owner, which has taken ",
                     created, " from it in ring epoch ", epoch_, " (at most ",
                     cap, ": --cluster-max-new-keys); nothing was applied"));
  }
  // Counted on admission: a batch refused after it (say for want of a
  // tracked slot) still counts, erring towards the bound.
  created += fresh;
  return absl::OkStatus();
}

uint64_t IncarnationAt(absl::Time start, uint32_t random_bits) {
  return (static_cast<uint64_t>(absl::ToUnixMicros(start)) << 12) |
         (random_bits & 0xfff);
}

uint64_t IncarnationBound(absl::Time now, absl::Duration skew) {
  return IncarnationAt(now + skew, 0xfff);
}

void OwnerShard::NotifyHolders(Key key, GlobalValue* g, const SparseVector& d,
                               uint64_t sender_bit) {
  uint64_t others = g->holders & ~sender_bit;
  while (others != 0) {
    const int s = __builtin_ctzll(others);
    const uint64_t bit = uint64_t{1} << s;
    others &= others - 1;
    Tracked& t = tracked_[s];
    AddTo(&UnseenOf(g, s), d);
    if ((g->pending & bit) == 0) {
      g->pending |= bit;
      t.changed.push_back(key);
    }
  }
}

void OwnerShard::PrefetchUnseen(const GlobalValue& g, uint64_t slots) {
  uint64_t s = slots & g.holders;
  while (s != 0) {
    const auto slot = static_cast<size_t>(__builtin_ctzll(s));
    s &= s - 1;
    if (slot < g.unseen.size()) __builtin_prefetch(g.unseen[slot].data());
  }
}

SparseVector& OwnerShard::UnseenOf(GlobalValue* g, int slot) {
  if (g->unseen.size() <= static_cast<size_t>(slot)) g->unseen.resize(slot + 1);
  return g->unseen[slot];
}

SparseVector& OwnerShard::ContributedOf(GlobalValue* g, int slot) {
  if (g->contributed.size() <= static_cast<size_t>(slot)) {
    g->contributed.resize(slot + 1);
  }
  return g->contributed[slot];
}

void OwnerShard::Retract(Key key, GlobalValue* g, const SparseVector& v) {
  SparseVector neg(v);
  for (SparseEntry& e : neg) e.count = -e.count;
  AddToGlobal(g, neg);
  NotifyHolders(key, g, neg, /*sender_bit=*/0);
  ++stats_.keys_retracted;
  stats_.counts_retracted += static_cast<uint64_t>(L1Norm(v));
}

void OwnerShard::RetractSlot(int s) {
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
    ++stats_.keys_retracted;
    stats_.counts_retracted += static_cast<uint64_t>(L1Norm(c));
    c.clear();
    any = true;
  }
  if (any) ++stats_.senders_retracted;
}

void OwnerShard::AddTo(SparseVector* u, const SparseVector& d) {
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

void OwnerShard::AddToGlobal(GlobalValue* g, const SparseVector& d) {
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

void OwnerShard::ReadGlobal(const GlobalValue& g, SparseVector* out) {
  if (g.dense.empty()) {
    out->assign(g.value.begin(), g.value.end());
    return;
  }
  out->clear();
  for (uint32_t k = 0; k < g.dense.size(); ++k) {
    if (g.dense[k] != 0) out->push_back({k, g.dense[k]});
  }
}

void OwnerShard::ApplyChanges(const DeltaBatch& batch, bool duplicate, int slot,
                              DeltaReply* reply) {
  Tracked& me = tracked_[slot];
  const uint64_t bit = uint64_t{1} << slot;
  // Lists `key` for this sender's reply (its change is in g's unseen).
  auto list = [&me, bit](Key key, GlobalValue& g) {
    if ((g.pending & bit) == 0) {
      g.pending |= bit;
      me.changed.push_back(key);
    }
  };
  if (batch.all_keys() && (all_keys_ & bit) == 0) HoldAllKeys(slot);
  SparseVector v;
  std::vector<std::pair<Key, SparseVector>> handed_back;
  if (duplicate) {
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
        handed_back.emplace_back(k, v);
        continue;
      }
      AddTo(&UnseenOf(&it->second, slot), v);
      list(k, it->second);
    }
  }
  // A new sequence confirms the last reply.
  me.last_keys.clear();
  me.last_changes.Clear();
  me.last_named.clear();
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
      if (!u.empty()) list(key, g);
    }
    if (!duplicate && !v.empty()) {
      AddToGlobal(&g, v);
      ++stats_.keys_applied;
      NotifyHolders(key, &g, v, bit);
      AddTo(&ContributedOf(&g, slot), v);
    }
  }
  for (int j = 0; j < batch.name_keys_size(); ++j) {
    auto it = globals_.find(batch.name_keys(j));
    if (it == globals_.end()) continue;
    if (it->second.name.empty()) it->second.name = batch.names(j);
    it->second.named |= bit;
  }
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

void OwnerShard::HoldAllKeys(int s) {
  const uint64_t bit = uint64_t{1} << s;
  Tracked& t = tracked_[s];
  for (auto& [key, g] : globals_) {
    if ((g.holders & bit) != 0) continue;
    g.holders |= bit;
    SparseVector& u = UnseenOf(&g, s);
    ReadGlobal(g, &u);
    if (!u.empty() && (g.pending & bit) == 0) {
      g.pending |= bit;
      t.changed.push_back(key);
    }
  }
  all_keys_ |= bit;
}

int OwnerShard::TrackedSlot(const std::string& node_id, uint64_t incarnation) {
  int slot = -1;
  for (size_t s = 0; s < tracked_.size(); ++s) {
    if (tracked_[s].node_id == node_id) slot = static_cast<int>(s);
  }
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

SparseVector OwnerShard::Global(Key key) const {
  absl::MutexLock l(&mu_);
  auto it = globals_.find(key);
  SparseVector out;
  if (it != globals_.end()) ReadGlobal(it->second, &out);
  return out;
}

std::vector<std::pair<Key, SparseVector>> OwnerShard::Snapshot() const {
  absl::MutexLock l(&mu_);
  std::vector<std::pair<Key, SparseVector>> out;
  out.reserve(globals_.size());
  for (const auto& [key, g] : globals_) {
    out.emplace_back(key, SparseVector{});
    ReadGlobal(g, &out.back().second);
  }
  return out;
}

size_t OwnerShard::num_keys() const {
  absl::MutexLock l(&mu_);
  return globals_.size();
}

OwnerShardStats OwnerShard::stats() const {
  absl::MutexLock l(&mu_);
  return stats_;
}

}  // namespace latentd::sync
