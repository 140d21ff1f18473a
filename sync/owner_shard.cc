#include "sync/owner_shard.h"

#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"

namespace latentd::sync {
namespace {

// The longest key name (a word) a batch may give.
constexpr size_t kMaxNameBytes = 4096;

// Apply's checks of a batch's form, before the lock: kInvalidArgument
// saying what, for a shard of `dimension` topics.
absl::Status ValidateBatch(const DeltaBatch& batch, uint32_t dimension) {
  if (!batch.changes_only()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "delta batch from ", batch.node_id(),
        " does not set changes_only: this owner answers only senders that "
        "send their tables' changes (sync/synchronizer.h)"));
  }
  if (batch.dimension() != dimension) {
    return absl::InvalidArgumentError(absl::StrCat("delta batch has dimension ",
                                                   batch.dimension(),
                                                   ", this owner ", dimension));
  }
  BlockReader deltas(batch.deltas(), dimension);
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
  return absl::OkStatus();
}

}  // namespace

OwnerShard::OwnerShard(uint32_t dimension, bool awaits_ring)
    : dimension_(dimension),
      awaits_ring_(awaits_ring),
      incarnation_(std::random_device{}() |
                   (uint64_t{std::random_device{}()} << 32) | 1),
      admission_(&stats_),
      keys_(dimension, &stats_) {}

absl::Status OwnerShard::Apply(const DeltaBatch& batch, DeltaReply* reply,
                               Origin origin) {
  reply->Clear();
  LATENTD_RETURN_IF_ERROR(ValidateBatch(batch, dimension_));
  absl::MutexLock l(&mu_);
  if (awaits_ring_ && admission_.epoch() == 0) {
    // (Its sender keeps the batch and sends it again, as for any owner
    // that has not reached the batch's epoch yet.)
    return absl::UnavailableError(
        "owner starting: it has not read its ring epoch yet; nothing was "
        "applied");
  }
  LATENTD_RETURN_IF_ERROR(admission_.AdmitSender(batch));
  if (batch.owner_incarnation() != 0 &&
      batch.owner_incarnation() != incarnation_) {
    ++stats_.batches_reseed_refused;
    return absl::AbortedError(
        absl::StrCat("owner restarted: batch addressed to owner incarnation ",
                     batch.owner_incarnation(), ", this is ", incarnation_,
                     "; nothing was applied (re-seed this owner)"));
  }
  if (const uint64_t later =
          keys_.LaterIncarnation(batch.node_id(), batch.incarnation());
      later != 0) {
    ++stats_.batches_stale_refused;
    return absl::AbortedError(absl::StrCat(
        "sender ", batch.node_id(), " incarnation ", batch.incarnation(),
        " is superseded by its later incarnation ", later,
        "; nothing was applied"));
  }
  auto done = applied_.find({batch.node_id(), batch.incarnation()});
  const bool duplicate =
      done != applied_.end() && batch.sequence() <= done->second;
  if (!duplicate) {
    // Before anything changes (a new incarnation's slot retracts the old
    // one's part): a batch applied under the old epoch is answered as a
    // duplicate whatever its epoch, so that its sender never routes its
    // deltas elsewhere.
    const uint64_t epoch = admission_.epoch();
    if (epoch != 0 && batch.epoch() != 0 && batch.epoch() != epoch) {
      if (batch.epoch() < epoch) {
        ++stats_.batches_stale_refused;
        return absl::FailedPreconditionError(absl::StrCat(
            "stale epoch: batch routed by ring epoch ", batch.epoch(),
            ", this owner serves epoch ", epoch, "; nothing was applied"));
      }
      return absl::UnavailableError(
          absl::StrCat("owner at ring epoch ", epoch, " has not reached epoch ",
                       batch.epoch(), " yet; nothing was applied"));
    }
    if (origin == Origin::kPeer) {
      LATENTD_RETURN_IF_ERROR(admission_.CheckDeltas(batch, keys_));
    }
  }
  const int slot = keys_.TrackedSlot(batch.node_id(), batch.incarnation());
  if (slot < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("owner tracks at most ", internal::kMaxTrackedSenders,
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
  keys_.ApplyBatch(batch, duplicate, slot, reply);
  return absl::OkStatus();
}

void OwnerShard::SetEpoch(uint64_t epoch) {
  absl::MutexLock l(&mu_);
  admission_.Enter(epoch);
}

void OwnerShard::SetAdmission(uint64_t epoch, OwnerAdmission admission) {
  absl::MutexLock l(&mu_);
  admission_.Set(epoch, std::move(admission));
}

bool OwnerShard::Admits(const std::string& node_id) const {
  absl::MutexLock l(&mu_);
  return admission_.Admits(node_id);
}

uint64_t OwnerShard::epoch() const {
  absl::MutexLock l(&mu_);
  return admission_.epoch();
}

std::vector<KeyHandoff> OwnerShard::AdvanceEpoch(
    uint64_t epoch, const std::function<std::string(Key)>& new_owner,
    const std::string& from_node, size_t max_keys_per_chunk) {
  LATENTD_CHECK(max_keys_per_chunk > 0);
  absl::MutexLock l(&mu_);
  LATENTD_CHECK(epoch > admission_.epoch());
  admission_.Enter(epoch);
  return internal::KeyHandoffs::Export(&keys_, epoch, new_owner, from_node,
                                       max_keys_per_chunk);
}

absl::Status OwnerShard::ImportKeys(const KeyHandoff& h) {
  LATENTD_RETURN_IF_ERROR(internal::KeyHandoffs::Validate(h, dimension_));
  absl::MutexLock l(&mu_);
  return handoffs_.Import(h, &keys_);
}

void OwnerShard::RetractSender(const std::string& node_id) {
  {
    absl::MutexLock l(&mu_);
    keys_.RetractSender(node_id);
  }
  ForgetSender(node_id);
}

void OwnerShard::ForgetSender(const std::string& node_id) {
  absl::MutexLock l(&mu_);
  keys_.ForgetSender(node_id);
  absl::erase_if(applied_, [&node_id](const auto& entry) {
    return entry.first.first == node_id;
  });
}

OwnerShard::ReplicaEntries OwnerShard::ReplicaSnapshot(
    const std::string& self_id,
    const std::function<bool(const std::string&)>& live,
    const absl::flat_hash_set<Key>* only) const {
  ReplicaEntries out;
  absl::MutexLock l(&mu_);
  // Per slot: its index in out.contributors if replicated, else -1.
  std::vector<int> index(keys_.num_slots(), -1);
  for (int s = 0; s < keys_.num_slots(); ++s) {
    const internal::Tracked& t = keys_.slot(s);
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
  keys_.ForEach([&](Key key, const internal::GlobalValue& g) {
    if (only != nullptr && !only->contains(key)) return;
    internal::KeyTable::ReadGlobal(g, &residual);
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
  });
  return out;
}

SparseVector OwnerShard::Global(Key key) const {
  absl::MutexLock l(&mu_);
  SparseVector out;
  if (const internal::GlobalValue* g = keys_.Find(key)) {
    internal::KeyTable::ReadGlobal(*g, &out);
  }
  return out;
}

std::vector<std::pair<Key, SparseVector>> OwnerShard::Snapshot() const {
  absl::MutexLock l(&mu_);
  std::vector<std::pair<Key, SparseVector>> out;
  out.reserve(keys_.size());
  keys_.ForEach([&out](Key key, const internal::GlobalValue& g) {
    out.emplace_back(key, SparseVector{});
    internal::KeyTable::ReadGlobal(g, &out.back().second);
  });
  return out;
}

size_t OwnerShard::num_keys() const {
  absl::MutexLock l(&mu_);
  return keys_.size();
}

OwnerShardStats OwnerShard::stats() const {
  absl::MutexLock l(&mu_);
  return stats_;
}

}  // namespace latentd::sync
