// Rendezvous (highest-random-weight) placement, written as argmin.
//
// Member j with weight w has w scores for a key at position p =
// RingPosition(key): RendezvousScore(p, PointHash(id_j, i)) for i < w (see
// hashring/internal/point_hash.h); its score is the smallest of them. The
// owner is the member with the smallest score, the replicas the k smallest,
// in increasing order; equal scores go to the smaller id. A member therefore
// owns a share weight / Σ weight of the keys, exactly in expectation, and
// adding or removing a member moves only keys whose top k it enters or
// leaves. V (virtual_points_per_weight) is not used.
//
// It is the reference the ring is tested against and a fine choice for small
// clusters: Owner and Replicas cost O(Σ weight) hashes per key, with no
// memory beyond one seed per unit of weight.
//
// Thread safety: immutable once built; any number of threads may call its
// const methods at once.
#ifndef LATENTD_HASHRING_RENDEZVOUS_H_
#define LATENTD_HASHRING_RENDEZVOUS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "hashring/placement.h"
#include "hashring/ring_config.h"
#include "hashring/ring_position.h"

namespace latentd::hashring {

class Rendezvous final : public Placement {
 public:
  // Builds the placement for `config` (copied). Returns kInvalidArgument,
  // from ValidateRingConfig, if the config is invalid. The result is
  // immutable; share the pointer between threads freely.
  static absl::StatusOr<std::shared_ptr<const Rendezvous>> Build(
      const RingConfig& config);

  MemberIndex Owner(Key key) const override;
  ReplicaList Replicas(Key key) const override;

 private:
  explicit Rendezvous(RingConfig config);

  // Member j's score for a key at `position`: the least over its seeds.
  uint64_t Score(uint64_t position, MemberIndex j) const;
  // Seeds of member j: seeds_[seed_begin_[j] .. seed_begin_[j + 1]).
  std::vector<uint64_t> seeds_;
  std::vector<uint32_t> seed_begin_;
};

}  // namespace latentd::hashring

#endif  // LATENTD_HASHRING_RENDEZVOUS_H_
