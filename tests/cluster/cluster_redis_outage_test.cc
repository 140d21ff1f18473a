// Redis is not needed for training (issue 13): with Redis gone (killed, its
// data lost) the nodes go on sampling and synchronizing with the ring they
// have; once a Redis is back at the address, they write their ring back,
// so that operators can change membership again, and the cluster ends
// exact.
#include <atomic>
#include <memory>
#include <thread>

#include "sync/control/cluster_admin.h"
#include "tests/cluster/cluster_test_util.h"

namespace latentd {
namespace {

TEST_F(ClusterTest, TrainingGoesOnWhileRedisIsAwayAndTheRingIsWrittenBack) {
  ClusterNodeOptions base = Base("async");
  base.max_docs = 600;
  base.slow_down = absl::Milliseconds(10);
  auto cluster = LocalCluster::Start(base, 3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto& nodes = (*cluster)->nodes();
  BackgroundSweeps sampling(nodes, nodes.size());
  auto wait_sweeps = [&](uint64_t past) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    for (auto& n : nodes) {
      while (n->sweep() <= past && absl::Now() < deadline) {
        absl::SleepFor(absl::Milliseconds(10));
      }
    }
  };
  wait_sweeps(2);
  redis_->Kill();
  uint64_t at_kill[3];
  for (int i = 0; i < 3; ++i) at_kill[i] = nodes[i]->sweep();
  // Every node keeps sampling, and its rounds keep completing.
  const uint64_t rounds = nodes[0]->counters().rounds.load();
  absl::SleepFor(absl::Seconds(2));
  for (int i = 0; i < 3; ++i) {
    EXPECT_GT(nodes[i]->sweep(), at_kill[i] + 2) << nodes[i]->node_id();
  }
  EXPECT_GT(nodes[0]->counters().rounds.load(), rounds);
  ASSERT_TRUE(redis_->Restart().ok());
  // The members write their ring back.
  auto admin = sync::RedisClient::Connect(redis_->url());
  ASSERT_TRUE(admin.ok()) << admin.status();
  absl::StatusOr<sync::ClusterStatus> st;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    st = sync::ReadClusterStatus(admin->get(), base.cluster);
    if (st.ok() && st->ring.has_value()) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_TRUE(st.ok()) << st.status();
  ASSERT_TRUE(st->ring.has_value()) << "no member wrote the ring back";
  EXPECT_EQ(st->epoch, nodes[0]->epoch());
  EXPECT_EQ(st->ring->members.size(), 3u);
  // (Logged just after the write.)
  for (int i = 0; i < 100 && log_.Count("wrote epoch") == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(log_.Count("wrote epoch"), 1) << "one member wins the write";

  EXPECT_EQ(sampling.Stop(), 0);
  for (auto& n : nodes) n->Finish();
  for (auto& n : nodes) EXPECT_TRUE(n->WaitAllFinished(absl::Seconds(30)));
  auto drained = (*cluster)->Drain();
  ASSERT_TRUE(drained.ok()) << drained.status();
  ExpectExact(**cluster);
  ExpectGlobalsEqualStores(**cluster);
}

}  // namespace
}  // namespace latentd
