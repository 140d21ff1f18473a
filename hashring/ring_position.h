// Keys and their positions on the ring.
//
// Every placement decision in hashring/ starts from RingPosition(key): ring
// points, owner lookups and move-plan ranges all live in this one 64-bit
// position space. A caller that holds a PositionRange (from a MovePlan) asks
// whether it covers a key with range.Contains(RingPosition(key)).
//
//   for (Key key : my_keys) {
//     if (range.Contains(RingPosition(key))) HandOff(key);
//   }
#ifndef LATENTD_HASHRING_RING_POSITION_H_
#define LATENTD_HASHRING_RING_POSITION_H_

#include <cstdint>

namespace latentd::hashring {

// A key as latentd stores it: usually already a 64-bit hash (xxh64 of a
// word), but possibly clustered (small integers in tests, user ids).
using Key = uint64_t;

// The key's position on the ring, in [0, 2^64).
//
// Keys are remixed, not placed raw: position = splitmix64's finalizer applied
// to key + 0x9E3779B97F4A7C15. The mix is a bijection, so distinct keys keep
// distinct positions, well-spread keys stay uniform, and clustered keys
// (0, 1, 2, ...) spread over the whole ring instead of landing on one arc.
// This formula is part of the placement: changing it moves every key.
//
// Pure function; safe from any thread.
constexpr uint64_t RingPosition(Key key) {
  uint64_t z = key + 0x9E3779B97F4A7C15u;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

// A clockwise arc of ring positions, [begin, end) modulo 2^64:
//   begin < end   the plain interval;
//   end < begin   the arc wraps past 2^64 - 1 to 0 ([begin, 2^64) + [0, end));
//   end == 0      the arc runs to the top of the space ([begin, 2^64));
//   begin == end  the whole ring.
// An arc is never empty. A plain value type; safe to share between threads.
struct PositionRange {
  uint64_t begin = 0;
  uint64_t end = 0;

  // True for the whole ring.
  constexpr bool full() const { return begin == end; }

  // True if `position` lies on the arc.
  constexpr bool Contains(uint64_t position) const {
    return full() || position - begin < end - begin;  // unsigned wrap
  }

  // The arc's share of the ring, in (0, 1].
  constexpr double Fraction() const {
    return full() ? 1.0 : static_cast<double>(end - begin) * 0x1p-64;
  }

  friend bool operator==(const PositionRange&, const PositionRange&) = default;
};

}  // namespace latentd::hashring

#endif  // LATENTD_HASHRING_RING_POSITION_H_
