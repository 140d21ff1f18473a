// KeyHandoffs: an OwnerShard's side of moving keys between owners when the
// ring changes (sync/owner_shard.h, AdvanceEpoch and ImportKeys): takes the
// keys a new ring gives to others out of the table as KeyHandoff messages,
// and merges hand-offs into the table, each (from_node, epoch, chunk) once.
//
// Thread-compatible: OwnerShard keeps it, and the table it works on, under
// its mutex.
#ifndef LATENTD_SYNC_INTERNAL_KEY_HANDOFFS_H_
#define LATENTD_SYNC_INTERNAL_KEY_HANDOFFS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "sync/internal/key_table.h"
#include "sync/sync.pb.h"

namespace latentd::sync::internal {

class KeyHandoffs {
 public:
  // Removes from `keys` every key whose new_owner(key) is not "" and
  // returns them (globals, names, holders with their unseen changes and
  // contributions) as hand-offs of epoch `epoch` from `from_node`, one
  // destination each, at most `max_keys_per_chunk` keys each, numbered
  // from chunk 0 in (destination, key) order. REQUIRES:
  // max_keys_per_chunk > 0.
  static std::vector<KeyHandoff> Export(
      KeyTable* keys, uint64_t epoch,
      const std::function<std::string(Key)>& new_owner,
      const std::string& from_node, size_t max_keys_per_chunk);

  // Checks a hand-off's form for values of `dimension` topics: matching
  // lengths, valid sparse blocks, holder indexes in range, no repeated
  // key. kInvalidArgument saying what.
  static absl::Status Validate(const KeyHandoff& h, uint32_t dimension);

  // Merges a validated hand-off into `keys` (KeyTable::MergeKey per key),
  // unless its (from_node, epoch, chunk) was imported before (OK, nothing
  // changes). A holder is carried over into its id's slot if it is the
  // incarnation tracked here, takes the slot over if it is a later one,
  // and is left out (its contributions taken out) if it is an earlier
  // one. kResourceExhausted, nothing merged, if the new holders need more
  // tracked slots than are free. REQUIRES: Validate(h, keys->dimension())
  // was OK.
  absl::Status Import(const KeyHandoff& h, KeyTable* keys);

 private:
  // Hand-offs imported: (from_node, epoch, chunk).
  absl::flat_hash_set<std::tuple<std::string, uint64_t, uint32_t>> imported_;
};

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_INTERNAL_KEY_HANDOFFS_H_
