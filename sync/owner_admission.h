// Admission of delta batches at an owner (docs/operations.md, "Threat
// model"; sync/owner_shard.h applies it): which senders, sender
// incarnations, keys and deltas an owner takes in one ring epoch, and how
// sender incarnations are drawn and bounded.
//
// Thread-safety: OwnerAdmission is a value; OwnerShard calls its functions
// under the shard's lock. The incarnation functions are pure.
#ifndef LATENTD_SYNC_OWNER_ADMISSION_H_
#define LATENTD_SYNC_OWNER_ADMISSION_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "sync/abelian_table.h"

namespace latentd::sync {

// Who may send this owner batches, and what it owns, for one ring epoch.
struct OwnerAdmission {
  // The ids whose batches apply: the ring's members (during a ring change
  // the old ring's and the new one's, so that a joiner is served in its
  // own hand-off). Empty: every sender.
  absl::flat_hash_set<std::string> members;
  // Whether this owner owns `key` in the epoch; null: every key. Called
  // under the shard's lock: it must not call back into the shard.
  std::function<bool(Key)> owns;
  // The largest sender incarnation taken now (called per batch); null: no
  // bound. ClusterLink: IncarnationBound(absl::Now(), kMaxClockSkew).
  std::function<uint64_t()> max_incarnation;
  // The values are counts (topic counts; not a graph's fixed-point
  // coordinates): no sender may take a key below its own part, nor move
  // a count by more than 2^31 at once.
  bool counts = false;
  // The most keys one sender (by node id) may create at this owner in an
  // epoch, so that no member can grow an owner's memory without bound
  // with made-up keys; a batch that would pass it is refused whole. Keys
  // that arrive by a hand-off or a replica copy are not counted. 0: no
  // bound.
  uint64_t max_new_keys_per_sender = 0;
};

// Sender incarnations as ClusterLink draws them: µs since 1970 at the
// start, shifted left 12 bits, then 12 random bits; increasing over time.
uint64_t IncarnationAt(absl::Time start, uint32_t random_bits);
// The largest incarnation a process started by `now + skew` can have.
uint64_t IncarnationBound(absl::Time now, absl::Duration skew);
// How far ahead of an owner's clock a sender's may run (its incarnation
// is refused past that): NTP keeps members within milliseconds.
inline constexpr absl::Duration kMaxClockSkew = absl::Minutes(10);

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_OWNER_ADMISSION_H_
