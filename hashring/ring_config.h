// The ring configuration and its wire form (hashring/ring_config.proto).
//
// A RingConfig is what every node agrees on: the members, the number of ring
// points per unit of weight, the replication factor and a version. Nodes
// exchange it as bytes and each builds its own Ring from it:
//
//   absl::StatusOr<RingConfig> config = ParseRingConfig(bytes_from_redis);
//   if (!config.ok()) return config.status();
//   absl::StatusOr<std::shared_ptr<const Ring>> ring = Ring::Build(*config);
#ifndef LATENTD_HASHRING_RING_CONFIG_H_
#define LATENTD_HASHRING_RING_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace latentd::hashring {

// Ring points per unit of weight unless the config says otherwise.
inline constexpr uint32_t kDefaultVirtualPointsPerWeight = 256;
// Upper bound on the sum over members of weight × virtual_points_per_weight.
// A ring keeps 8 + 4k bytes per point, so this caps one at 160 MiB.
inline constexpr uint64_t kMaxTotalPoints = uint64_t{1} << 22;
// Upper bound on the replication factor k.
inline constexpr uint32_t kMaxReplication = 8;
// Upper bound on the length of a member id, in bytes.
inline constexpr size_t kMaxMemberIdBytes = 255;

// One node of the cluster.
struct Member {
  // Stable identity; the node's ring points are hashed from it. Non-empty,
  // valid UTF-8, at most kMaxMemberIdBytes, unique within a config.
  std::string id;
  // Where peers reach the node ("host:port"), valid UTF-8; not used for
  // placement.
  std::string address;
  // Relative capacity, >= 1: the node gets weight × V ring points.
  uint32_t weight = 1;

  friend bool operator==(const Member&, const Member&) = default;
};

struct RingConfig {
  // The members, in any order: placement depends on ids, not on the order.
  // Placement APIs report members by their index in this vector.
  std::vector<Member> members;
  // V, ring points per unit of weight, >= 1.
  uint32_t virtual_points_per_weight = kDefaultVirtualPointsPerWeight;
  // k, copies of each key (the owner plus k-1 replicas);
  // 1 <= k <= min(members.size(), kMaxReplication).
  uint32_t replication = 1;
  // Monotonic membership version; carried along, not used for placement.
  uint64_t version = 0;

  friend bool operator==(const RingConfig&, const RingConfig&) = default;
};

// Returns OK if `config` can build a ring, else kInvalidArgument naming the
// first problem and the member (index and id) it concerns: no members, an id
// that is empty, too long, not UTF-8 or repeated, an address that is not
// UTF-8, a zero weight, V == 0, k == 0, k > members or k > kMaxReplication,
// or more than kMaxTotalPoints ring points in all. Thread-safe (pure
// function).
absl::Status ValidateRingConfig(const RingConfig& config);

// Decodes a serialized RingConfigProto and validates it. Returns
// kInvalidArgument if the bytes are not a RingConfigProto or the config fails
// ValidateRingConfig. Thread-safe (pure function).
absl::StatusOr<RingConfig> ParseRingConfig(std::string_view bytes);

// Encodes `config` as a RingConfigProto. Does not validate: encoding an
// invalid config succeeds, and ParseRingConfig rejects it on the way back.
// REQUIRES: member ids and addresses are valid UTF-8 (proto3 strings), as
// ValidateRingConfig checks. Thread-safe (pure function).
std::string SerializeRingConfig(const RingConfig& config);

}  // namespace latentd::hashring

#endif  // LATENTD_HASHRING_RING_CONFIG_H_
