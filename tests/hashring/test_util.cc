#include "tests/hashring/test_util.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"

namespace latentd::hashring::test_util {

RingConfig MakeConfig(int members, uint32_t virtual_points, uint32_t k) {
  RingConfig config;
  for (int i = 0; i < members; ++i) {
    config.members.push_back(Member{.id = absl::StrCat("node-", i),
                                    .address = absl::StrCat("10.0.0.1:", i),
                                    .weight = 1});
  }
  config.virtual_points_per_weight = virtual_points;
  config.replication = k;
  return config;
}

std::vector<Key> RandomKeys(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Key> keys(count);
  for (Key& key : keys) key = rng();
  return keys;
}

void Die(const std::string& message) {
  std::fprintf(stderr, "test setup failed: %s\n", message.c_str());
  std::abort();
}

std::vector<std::string> ReplicaIds(const Placement& placement, Key key) {
  std::vector<std::string> ids;
  for (MemberIndex m : placement.Replicas(key)) {
    ids.push_back(placement.member(m).id);
  }
  return ids;
}

std::vector<uint64_t> CountOwners(const Placement& placement,
                                  std::span<const Key> keys) {
  std::vector<uint64_t> counts(placement.members().size(), 0);
  for (Key key : keys) ++counts[placement.Owner(key)];
  return counts;
}

double MaxOverMean(const std::vector<uint64_t>& counts) {
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  const double max = *std::max_element(counts.begin(), counts.end());
  return max / (total / static_cast<double>(counts.size()));
}

uint64_t PlacementDigest(const Placement& placement, size_t count,
                         uint64_t seed) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (Key key : RandomKeys(count, seed)) {
    for (MemberIndex m : placement.Replicas(key)) {
      const std::string& id = placement.member(m).id;
      XXH3_64bits_update(state, id.data(), id.size() + 1);  // with the NUL
    }
  }
  const uint64_t digest = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return digest;
}

}  // namespace latentd::hashring::test_util
