// Shared helpers for the hashring tests.
#ifndef LATENTD_TESTS_HASHRING_TEST_UTIL_H_
#define LATENTD_TESTS_HASHRING_TEST_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hashring/placement.h"
#include "hashring/ring_config.h"
#include "hashring/ring_position.h"

namespace latentd::hashring::test_util {

// `members` members "node-0" .. "node-<members-1>", weight 1.
RingConfig MakeConfig(int members, uint32_t virtual_points, uint32_t k);

// `count` keys from std::mt19937_64(seed): the same in every process.
std::vector<Key> RandomKeys(size_t count, uint64_t seed);

// Prints `message` and aborts; for setup steps that cannot fail.
[[noreturn]] void Die(const std::string& message);

// Builds a P (Ring or Rendezvous) or aborts: the tests' configs are valid.
template <typename P>
std::shared_ptr<const P> MustBuild(const RingConfig& config) {
  auto built = P::Build(config);
  if (!built.ok()) Die(built.status().ToString());
  return *std::move(built);
}

// The replica ids of `key`, owner first.
std::vector<std::string> ReplicaIds(const Placement& placement, Key key);

// Keys owned by each member, indexed by MemberIndex.
std::vector<uint64_t> CountOwners(const Placement& placement,
                                  std::span<const Key> keys);

// max(counts) / mean(counts).
double MaxOverMean(const std::vector<uint64_t>& counts);

// A 64-bit digest of the owner and replica ids of `count` RandomKeys(seed).
uint64_t PlacementDigest(const Placement& placement, size_t count,
                         uint64_t seed);

}  // namespace latentd::hashring::test_util

#endif  // LATENTD_TESTS_HASHRING_TEST_UTIL_H_
