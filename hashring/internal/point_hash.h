// The hashes that put members on the ring. Both are part of the placement:
// changing either moves keys in every cluster.
#ifndef LATENTD_HASHRING_INTERNAL_POINT_HASH_H_
#define LATENTD_HASHRING_INTERNAL_POINT_HASH_H_

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace latentd::hashring::internal {

// Fixed seed for every placement hash ("latentd!" in ASCII).
inline constexpr uint64_t kPlacementSeed = 0x6C6174656E746421u;

// Writes `value` as 8 little-endian bytes, whatever the host's byte order.
inline void StoreLittleEndian64(uint64_t value, unsigned char out[8]) {
  if constexpr (std::endian::native == std::endian::big) {
    value = __builtin_bswap64(value);
  }
  std::memcpy(out, &value, 8);
}

// The ring position of point `point_index` of the member `member_id`:
// XXH3-64, seeded with kPlacementSeed, of the id's bytes followed by the
// index as 4 little-endian bytes (the fixed-width suffix keeps the encoding
// of (id, index) unambiguous). Rendezvous uses the same value as the seed of
// the member's `point_index`-th score.
inline uint64_t PointHash(std::string_view member_id, uint32_t point_index,
                          std::string& scratch) {
  scratch.assign(member_id);
  unsigned char index_bytes[8];
  StoreLittleEndian64(point_index, index_bytes);
  scratch.append(reinterpret_cast<const char*>(index_bytes), 4);
  return XXH3_64bits_withSeed(scratch.data(), scratch.size(), kPlacementSeed);
}

// Rendezvous score of a key at ring position `position` for a member point
// seeded by PointHash: XXH3-64 of the position's 8 little-endian bytes.
inline uint64_t RendezvousScore(uint64_t position, uint64_t point_seed) {
  unsigned char bytes[8];
  StoreLittleEndian64(position, bytes);
  return XXH3_64bits_withSeed(bytes, 8, point_seed);
}

}  // namespace latentd::hashring::internal

#endif  // LATENTD_HASHRING_INTERNAL_POINT_HASH_H_
