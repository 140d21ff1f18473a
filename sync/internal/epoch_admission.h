// EpochAdmission: the ring epoch an OwnerShard serves and the admission in
// effect for it (sync/owner_admission.h), with one waiting for a later
// epoch, and the keys each sender created in the epoch. Its checks refuse
// a new batch before anything of it applies, and count the refusals.
//
// Thread-compatible: OwnerShard keeps it under its mutex, so that the
// epoch, the admission and the keys owned change in one step.
#ifndef LATENTD_SYNC_INTERNAL_EPOCH_ADMISSION_H_
#define LATENTD_SYNC_INTERNAL_EPOCH_ADMISSION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "sync/internal/key_table.h"
#include "sync/owner_admission.h"
#include "sync/owner_shard_stats.h"
#include "sync/sync.pb.h"

namespace latentd::sync::internal {

class EpochAdmission {
 public:
  // Counts refusals into *stats (refused_*), which must outlive this.
  explicit EpochAdmission(OwnerShardStats* stats) : stats_(stats) {}

  // The ring epoch served (0 = unversioned).
  uint64_t epoch() const { return epoch_; }
  // Moves to `epoch`, taking a waiting admission for it into effect; a
  // new epoch starts the senders' created-key counts afresh.
  void Enter(uint64_t epoch);
  // Admission for `epoch`: in effect at once if it is the epoch served,
  // else waiting for it (replacing any admission waiting); ignored for an
  // earlier epoch.
  void Set(uint64_t epoch, OwnerAdmission admission);
  // Whether the admission in effect lists `node_id` (true without one).
  bool Admits(const std::string& node_id) const;

  // The sender's checks of a new batch: a member (kPermissionDenied, or
  // kUnavailable for a batch routed by an epoch not reached yet), and its
  // incarnation within the bound (kInvalidArgument). OK without an
  // admission. Changes nothing but the refusal counts.
  absl::Status AdmitSender(const DeltaBatch& batch);
  // The keys' and deltas' checks of a new, validated batch against the
  // table it would apply to: every key owned (kInvalidArgument), for
  // counts no delta past 2^31 nor below the sender's own part
  // (kInvalidArgument), and the sender's created keys within the bound
  // (kResourceExhausted). A batch that passes counts its new keys.
  absl::Status CheckDeltas(const DeltaBatch& batch, const KeyTable& keys);

 private:
  uint64_t epoch_ = 0;
  // The admission in effect (unset: every sender), and one waiting for its
  // epoch.
  std::optional<OwnerAdmission> admission_;
  std::optional<std::pair<uint64_t, OwnerAdmission>> next_admission_;
  // Keys each sender created in this epoch (OwnerAdmission::
  // max_new_keys_per_sender); cleared when the epoch changes.
  absl::flat_hash_map<std::string, uint64_t> keys_created_;
  OwnerShardStats* const stats_;
};

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_INTERNAL_EPOCH_ADMISSION_H_
