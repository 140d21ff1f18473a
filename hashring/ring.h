// Ring: consistent hashing with virtual points and k replicas.
//
// Each member sits at weight × V points on a 64-bit ring; point i of member
// `id` is at internal::PointHash(id, i) (XXH3-64 of the id and the index, see
// hashring/internal/point_hash.h). A key at position p = RingPosition(key) is
// owned by the first point strictly clockwise of p: the point with the
// smallest position > p, wrapping past 2^64 - 1 to the first point. So the
// point at position x owns the positions [previous point's position, x).
// The key's replicas are that owner followed by the next k-1 distinct members
// met walking clockwise from that point.
//
// Points with equal positions (a 64-bit collision) are ordered by member id,
// then point index; the later one owns an empty range but still counts in
// replica walks. The ring therefore depends only on the ids, weights, V and k,
// never on the order of the config's members or on the process.
//
// Cost: Owner and Replicas are one binary search over the sorted point
// positions plus a copy of k precomputed member indices (8 + 4k bytes per
// point). Building sorts the points: O(P log P) for P = Σ weight × V points.
//
// Thread safety: a Ring is immutable once built; any number of threads may
// call its const methods at once.
#ifndef LATENTD_HASHRING_RING_H_
#define LATENTD_HASHRING_RING_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "hashring/placement.h"
#include "hashring/ring_config.h"
#include "hashring/ring_position.h"

namespace latentd::hashring {

class Ring final : public Placement {
 public:
  // Builds the ring for `config` (copied into the ring). Returns
  // kInvalidArgument, from ValidateRingConfig, if the config is invalid.
  // The result is immutable; share the pointer between threads freely.
  static absl::StatusOr<std::shared_ptr<const Ring>> Build(
      const RingConfig& config);

  MemberIndex Owner(Key key) const override {
    return OwnerAt(RingPosition(key));
  }
  ReplicaList Replicas(Key key) const override {
    return ReplicasAt(RingPosition(key));
  }

  // Owner / replicas of whatever key sits at ring `position` (any uint64).
  MemberIndex OwnerAt(uint64_t position) const {
    return table_[PointAfter(position) * k_];
  }
  ReplicaList ReplicasAt(uint64_t position) const;

  // The ring's point positions, ascending (equal positions are adjacent).
  std::span<const uint64_t> point_positions() const { return positions_; }

 private:
  explicit Ring(RingConfig config);

  // Index of the first point with position > `position`; 0 if none (wrap).
  // Branchless binary search.
  size_t PointAfter(uint64_t position) const {
    const uint64_t* base = positions_.data();
    size_t len = positions_.size();
    while (len > 1) {
      const size_t half = len / 2;
      base = base[half] <= position ? base + half : base;
      len -= half;
    }
    const size_t index =
        static_cast<size_t>(base - positions_.data()) + (*base <= position);
    return index == positions_.size() ? 0 : index;
  }

  const uint32_t k_;
  std::vector<uint64_t> positions_;  // sorted
  // Row p (k_ entries) holds the replicas of every position point p owns:
  // its member, then the next k_-1 distinct members clockwise.
  std::vector<MemberIndex> table_;
};

}  // namespace latentd::hashring

#endif  // LATENTD_HASHRING_RING_H_
