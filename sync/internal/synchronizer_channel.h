// Internal to the synchronizer (included by synchronizer*.cc only): the
// state Synchronizer keeps per owner it sends to, its rounds' scheduling
// and the round in progress (the keys routed to it are BatchBuilder's).
// Not a public header.
#ifndef LATENTD_SYNC_INTERNAL_SYNCHRONIZER_CHANNEL_H_
#define LATENTD_SYNC_INTERNAL_SYNCHRONIZER_CHANNEL_H_

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "sync/synchronizer.h"

namespace latentd::sync {

struct Synchronizer::Channel {
  std::unique_ptr<OwnerChannel> owner;
  uint32_t index = 0;
  // Guarded by Synchronizer::mu_.
  bool busy = false;
  uint64_t served_kick = 0;
  absl::Time next_due = absl::InfinitePast();
  uint64_t served_pass = 0;
  bool pass_quiet = true;
  bool available = true;
  // Owns no key in the current epoch (Reroute) and has nothing to resend:
  // no rounds, and passes do not wait for it.
  bool retired = false;
  // Its owner was lost (Reroute's `lost`) and it has been retired: a later
  // epoch's channel of the same name (the node returned, with a new owner
  // shard filled by hand-offs) gets a new Channel, not this one's sequence
  // and owner incarnation (which would make it re-seed, counting twice).
  bool gone = false;
  // Its unavailability is an owner's refusal of another epoch's batch.
  bool epoch_refused = false;
  // Owned by the round in progress (busy == true).
  uint64_t sequence = 0;
  std::optional<DeltaBatch> inflight;
  std::vector<uint32_t> inflight_keys;
  uint64_t round_pass = 0;      // Flush generation served, 0 = none
  bool round_complete = false;  // ignores min_key_weight
  // When the last complete round was built (SynchronizerOptions::
  // max_key_delay). Guarded by Synchronizer::mu_.
  absl::Time last_complete = absl::InfinitePast();
  // The owner incarnation its last reply came from (0: none yet).
  uint64_t owner_incarnation = 0;
  // The owner restarted: the next round re-seeds it.
  bool reseed = false;
  bool round_quiet = true;
  std::chrono::steady_clock::time_point sent_at;
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_INTERNAL_SYNCHRONIZER_CHANNEL_H_
