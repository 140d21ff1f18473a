// The move plan between two rings: which keys change hands when the config
// changes, and between whom.
//
// Ranges are arcs of ring positions (RingPosition(key), the space the ring
// places keys in; see hashring/ring_position.h). A key is in the plan if and
// only if its replica list, owner first and in order, differs between the
// two rings; the range that holds it gives both lists. That is exactly what
// a node hands off (ranges it held before and not after) or fetches (ranges
// it holds after and not before) when a member is added or removed.
//
//   MovePlan plan = ComputeMovePlan(*old_ring, *new_ring);
//   for (const MoveRange& r : plan.ranges) {
//     if (absl::c_linear_search(r.Gained(), my_id)) Fetch(r.range, r.before);
//   }
//   for (Key key : my_keys) {
//     if (const MoveRange* r = plan.Find(RingPosition(key))) ...
//   }
#ifndef LATENTD_HASHRING_MOVE_PLAN_H_
#define LATENTD_HASHRING_MOVE_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "hashring/ring.h"
#include "hashring/ring_position.h"

namespace latentd::hashring {

// One arc whose keys all have the same replica lists in both rings, and
// different ones between them.
struct MoveRange {
  PositionRange range;
  // Member ids holding the arc's keys, owner first: in the old ring (before)
  // and in the new ring (after). Each list has its ring's k distinct ids.
  std::vector<std::string> before;
  std::vector<std::string> after;

  // True if the owner changes (else only the replicas, or their order, do).
  bool owner_changed() const { return before.front() != after.front(); }
  // Ids in `after` but not in `before`: members that must fetch the keys.
  std::vector<std::string> Gained() const;
  // Ids in `before` but not in `after`: members that hand the keys off.
  std::vector<std::string> Lost() const;
};

// A plain value; safe to share between threads once built.
struct MovePlan {
  uint64_t before_version = 0;  // config versions of the two rings
  uint64_t after_version = 0;
  // Disjoint and maximal (neighbouring ranges differ in before or after),
  // sorted by range.begin; a range that wraps past 0 comes last.
  std::vector<MoveRange> ranges;

  // The range that holds `position`, or nullptr if the keys there keep their
  // replica lists. O(log ranges). The pointer lives as long as the plan.
  const MoveRange* Find(uint64_t position) const;
  // The share of the ring that moves, in [0, 1].
  double Fraction() const;
};

// Compares two rings point by point. The rings may differ in anything:
// members, weights, V, k. Members are matched by id. Never fails.
// Cost: O(P log P) time for P points in both rings together, and one range
// (2k ids) per moved arc: adding or removing one member of weight w yields
// about k·w·V ranges (769 for 1024 -> 1025 members, V = 256, k = 3), while a
// change that reshuffles most of the ring can yield up to P.
// Thread-safe: reads both rings only.
MovePlan ComputeMovePlan(const Ring& before, const Ring& after);

}  // namespace latentd::hashring

#endif  // LATENTD_HASHRING_MOVE_PLAN_H_
