#include "sync/internal/epoch_admission.h"

#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sync/sparse_block.h"

namespace latentd::sync::internal {
namespace {

// The most one delta may move a count by (the sampler's counts are int32).
constexpr int64_t kMaxDeltaCount = int64_t{1} << 31;

}  // namespace

void EpochAdmission::Enter(uint64_t epoch) {
  if (epoch != epoch_) keys_created_.clear();
  epoch_ = epoch;
  if (next_admission_.has_value() && next_admission_->first == epoch) {
    admission_ = std::move(next_admission_->second);
    next_admission_.reset();
  }
}

void EpochAdmission::Set(uint64_t epoch, OwnerAdmission admission) {
  if (epoch == epoch_) {
    admission_ = std::move(admission);
  } else if (epoch > epoch_) {
    next_admission_.emplace(epoch, std::move(admission));
  }
}

bool EpochAdmission::Admits(const std::string& node_id) const {
  return !admission_.has_value() || admission_->members.empty() ||
         admission_->members.contains(node_id);
}

absl::Status EpochAdmission::AdmitSender(const DeltaBatch& batch) {
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
    ++stats_->refused_not_member;
    return absl::PermissionDeniedError(absl::StrCat(
        "sender '", batch.node_id(), "' is not a member of ring epoch ", epoch_,
        "; nothing was applied"));
  }
  if (a.max_incarnation) {
    const uint64_t bound = a.max_incarnation();
    if (batch.incarnation() > bound) {
      ++stats_->refused_incarnation;
      return absl::InvalidArgumentError(absl::StrCat(
          "sender ", batch.node_id(), " incarnation ", batch.incarnation(),
          " lies past this owner's clock (bound ", bound,
          "; its clock runs ahead, or it is forged); nothing was applied"));
    }
  }
  return absl::OkStatus();
}

absl::Status EpochAdmission::CheckDeltas(const DeltaBatch& batch,
                                         const KeyTable& keys) {
  if (!admission_.has_value()) return absl::OkStatus();
  const std::function<bool(Key)>* owns =
      admission_->owns ? &admission_->owns : nullptr;
  const bool counts = admission_->counts;
  // The sender's slot, if this incarnation has one (its contributions).
  const int slot = keys.FindSlot(batch.node_id(), batch.incarnation());
  BlockReader deltas(batch.deltas(), keys.dimension());
  SparseVector d;
  static const SparseVector kNone;
  absl::Status status;
  // A sender's part of a key is what it may take back. The lookups and
  // the parts run ahead (look_ahead.h): a large shard misses the cache at
  // every key.
  auto key_of = [&batch](size_t i) { return batch.keys(static_cast<int>(i)); };
  auto fetch_part = [slot](const GlobalValue& g) {
    if (slot >= 0 && static_cast<size_t>(slot) < g.contributed.size()) {
      __builtin_prefetch(g.contributed[slot].data());
    }
  };
  keys.ForEachLookup(
      static_cast<size_t>(batch.keys_size()), key_of, fetch_part,
      [&](size_t i, const GlobalValue* g) {
        const Key key = key_of(i);
        deltas.Next(&d);
        if (owns != nullptr && !(*owns)(key)) {
          ++stats_->refused_key_not_owned;
          status = absl::InvalidArgumentError(absl::StrCat(
              "delta batch from ", batch.node_id(), " holds key ", key,
              ", which this owner does not own in ring epoch ", epoch_,
              "; nothing was applied"));
          return false;
        }
        if (!counts) return true;
        bool negative = false;
        for (const SparseEntry& e : d) {
          if (e.count > kMaxDeltaCount || e.count < -kMaxDeltaCount) {
            ++stats_->refused_negative;
            status = absl::InvalidArgumentError(absl::StrCat(
                "delta batch from ", batch.node_id(), " moves key ", key,
                " topic ", e.topic, " by ", e.count, " (at most ",
                kMaxDeltaCount, " at once); nothing was applied"));
            return false;
          }
          negative = negative || e.count < 0;
        }
        if (!negative) return true;
        const SparseVector& part =
            g != nullptr && slot >= 0 &&
                    static_cast<size_t>(slot) < g->contributed.size()
                ? g->contributed[slot]
                : kNone;
        size_t j = 0;
        for (const SparseEntry& e : d) {
          if (e.count >= 0) continue;
          while (j < part.size() && part[j].topic < e.topic) ++j;
          const int64_t have =
              j < part.size() && part[j].topic == e.topic ? part[j].count : 0;
          if (have + e.count < 0) {
            ++stats_->refused_negative;
            status = absl::InvalidArgumentError(absl::StrCat(
                "delta batch from ", batch.node_id(), " would take key ", key,
                " topic ", e.topic, " to ", have + e.count, " (", e.count,
                " against its own part ", have, "); nothing was applied"));
            return false;
          }
        }
        return true;
      });
  LATENTD_RETURN_IF_ERROR(status);
  const uint64_t cap = admission_->max_new_keys_per_sender;
  if (cap == 0) return absl::OkStatus();
  uint64_t fresh = 0;
  for (int i = 0; i < batch.keys_size(); ++i) {
    fresh += !keys.contains(batch.keys(i));
  }
  uint64_t& created = keys_created_[batch.node_id()];
  if (created + fresh > cap) {
    ++stats_->refused_too_many_keys;
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

}  // namespace latentd::sync::internal
