// OwnerShardStats: what an OwnerShard (sync/owner_shard.h) has applied,
// retracted and refused since it was made (the daemon's cluster metrics
// read them).
//
// Thread-safety: a value; OwnerShard::stats() returns a copy.
#ifndef LATENTD_SYNC_OWNER_SHARD_STATS_H_
#define LATENTD_SYNC_OWNER_SHARD_STATS_H_

#include <cstdint>

namespace latentd::sync {

struct OwnerShardStats {
  uint64_t batches_applied = 0;
  uint64_t batches_duplicate = 0;
  uint64_t keys_applied = 0;
  // Restarted senders whose earlier incarnation's contributions were taken
  // out, and the keys (and Σ|count|) that took.
  uint64_t senders_retracted = 0;
  uint64_t keys_retracted = 0;
  uint64_t counts_retracted = 0;
  // Batches refused as addressed to an earlier incarnation of this owner
  // (each makes its sender re-seed).
  uint64_t batches_reseed_refused = 0;
  // New batches refused as stale: from a sender incarnation superseded by a
  // later one, or routed by an earlier ring epoch (nothing applied).
  uint64_t batches_stale_refused = 0;
  // New batches refused by admission (sync/owner_shard.h); nothing of
  // them was applied and no tracked slot was taken.
  uint64_t refused_not_member = 0;   // sender not an admitted member
  uint64_t refused_incarnation = 0;  // incarnation past the bound
  uint64_t refused_key_not_owned = 0;
  uint64_t refused_negative = 0;  // would take a key below the sender's part
  uint64_t refused_too_many_keys = 0;  // past max_new_keys_per_sender
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_OWNER_SHARD_STATS_H_
