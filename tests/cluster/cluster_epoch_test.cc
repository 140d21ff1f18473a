// The ring changes while a 3-node cluster samples (issue 12's ring epochs,
// without a membership change): an operator gives the nodes weights 1, 2
// and 3, so about half of the keys change owner. Each node follows the
// new epoch from Redis, hands off the keys it no longer owns and re-routes
// its rounds, while sampling goes on. At the end the model is exact: every
// node's value of every key equals its new owner's global, the totals add
// up to the corpus, and no key is left at an old owner.
#include <algorithm>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hashring/ring_config.h"
#include "service/cluster/local_cluster.h"
#include "sync/membership.h"
#include "tests/cluster/cluster_test_util.h"

namespace latentd {
namespace {

// Writes `config` as the cluster's ring (what an operator's change does).
absl::Status WriteRing(const std::string& redis_url, const std::string& name,
                       const hashring::RingConfig& config) {
  auto redis = sync::RedisClient::Connect(redis_url);
  if (!redis.ok()) return redis.status();
  return (*redis)
      ->Command(
          {"SET", sync::RingKey(name), hashring::SerializeRingConfig(config)})
      .status();
}

void RunThroughEpochChange(ClusterNodeOptions o) {
  auto cluster = LocalCluster::Start(o, 3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto& nodes = (*cluster)->nodes();
  ASSERT_EQ(nodes[0]->epoch(), 1u);
  constexpr int kSweeps = 16;
  absl::Status written;
  uint64_t slowest_at_switch = kSweeps;  // a node's sweep once all switched
  std::thread operator_thread([&] {
    while (nodes[0]->sweep() < 2) absl::SleepFor(absl::Milliseconds(5));
    hashring::RingConfig next = nodes[0]->ring_config();
    for (size_t i = 0; i < next.members.size(); ++i) {
      next.members[i].weight = static_cast<uint32_t>(i + 1);
    }
    next.version = 2;
    written = WriteRing(o.redis_url, o.cluster, next);
    for (auto& n : nodes) {
      while (n->epoch() < 2) absl::SleepFor(absl::Milliseconds(5));
    }
    for (auto& n : nodes)
      slowest_at_switch = std::min(slowest_at_switch, n->sweep());
  });
  auto run = (*cluster)->RunSweeps(kSweeps);
  operator_thread.join();
  ASSERT_TRUE(written.ok()) << written;
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_LT(slowest_at_switch, static_cast<uint64_t>(kSweeps))
      << "the ring changed only after sampling ended";
  for (auto& n : nodes) EXPECT_EQ(n->epoch(), 2u) << n->node_id();
  auto rounds = (*cluster)->Drain();
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  ExpectExact(**cluster);
  // Each owner holds only the keys the new ring gives it.
  const hashring::RingConfig config = nodes[0]->ring_config();
  auto ring = hashring::Ring::Build(config);
  ASSERT_TRUE(ring.ok());
  uint64_t misplaced = 0, owned = 0;
  for (auto& n : nodes) {
    for (const auto& [key, g] : n->owner().Snapshot()) {
      ++owned;
      misplaced += config.members[(*ring)->Owner(key)].id != n->node_id();
    }
  }
  EXPECT_EQ(misplaced, 0u) << "of " << owned << " keys";
}

// Sweeps are slowed (40 ms each) so that the change lands mid-training
// whatever the machine's speed.
TEST_F(ClusterTest, ExactThroughARingEpochChangeAsync) {
  ClusterNodeOptions o = Base("async");
  o.slow_down = absl::Milliseconds(40);
  RunThroughEpochChange(o);
  EXPECT_EQ(log_.Count("ring epoch 1 -> 2"), 3);
}

TEST_F(ClusterTest, ExactThroughARingEpochChangeSsp1) {
  ClusterNodeOptions o = Base("ssp:1");
  o.slow_down = absl::Milliseconds(40);
  RunThroughEpochChange(o);
  EXPECT_EQ(log_.Count("ring epoch 1 -> 2"), 3);
}

}  // namespace
}  // namespace latentd
