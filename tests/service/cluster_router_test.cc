// ClusterRouter's pure parts: the ring that places replica copies
// (ReplicaRing).
#include "service/cluster_router.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hashring/ring_config.h"

namespace latentd::service {
namespace {

// The placement ring lists every member for each key, so that a caller
// can skip those that may not hold copies and still find enough.
TEST(ClusterRouter, ReplicaRingListsEveryMember) {
  ClusterRouterOptions options;
  options.cluster_mode = true;
  ClusterRouter router(options);
  hashring::RingConfig config;
  for (const char* id : {"a:1", "b:1", "c:1", "d:1"}) {
    config.members.push_back({.id = id, .address = id});
  }
  config.version = 7;
  auto ring = router.ReplicaRing(config);
  ASSERT_TRUE(ring.ok()) << ring.status();
  for (uint64_t key : {1ULL, 99ULL, 123456789ULL}) {
    std::set<hashring::MemberIndex> seen;
    for (hashring::MemberIndex m : (*ring)->Replicas(key)) seen.insert(m);
    EXPECT_EQ(seen.size(), config.members.size()) << key;
  }
}

}  // namespace
}  // namespace latentd::service
