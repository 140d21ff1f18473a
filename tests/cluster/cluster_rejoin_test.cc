// Restart and rejoin (docs/design.md, "Restart and rejoin"): a member
// that dies while the cluster samples (its unsent changes and its owner
// shard lost with it) and starts again with the same id and address
// rejoins the running cluster. The owners replace its previous counts with
// the new process's, the members re-seed its new owner shard, and after a
// drain every global equals a from-scratch count of all stores: nothing
// lost, nothing counted twice.
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "sync/control/cluster_admin.h"
#include "tests/cluster/cluster_test_util.h"

namespace latentd {
namespace {

class ClusterRejoinTest : public ClusterTest {
 protected:
  void RestartMidTraining(const std::string& consistency);
};

void ClusterRejoinTest::RestartMidTraining(const std::string& consistency) {
  ClusterNodeOptions base = Base(consistency);
  base.max_docs = 600;
  base.dead_after = absl::Seconds(1);
  base.slow_down = absl::Milliseconds(10);  // leave the CPU to the restart
  auto cluster = LocalCluster::Start(base, 3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto& nodes = (*cluster)->nodes();

  // Nodes 0 and 1 sample until told to stop; node 2 samples 3 sweeps and
  // "dies": it stops at once, without pushing what it has not sent.
  BackgroundSweeps sampling(nodes, 2);
  for (int s = 0; s < 3; ++s) {
    EXPECT_TRUE(nodes[2]->Sweep(false).ok());
  }
  // The others have announced a sweep before node 2 dies: else, on a
  // loaded machine, the cluster's clock the restart takes is still 0.
  for (int i = 0;
       i < 1000 && (nodes[0]->sweep() == 0 || nodes[1]->sweep() == 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string id = nodes[2]->node_id();
  const std::string address = nodes[2]->address();
  std::unique_ptr<ClusterNode> dead = (*cluster)->Remove(2);
  dead.reset();  // the process is gone: its owner shard with it

  // The same member starts again: same id and address, its shard, but a
  // different start (another seed: its store's assignments differ from
  // anything its previous process pushed).
  ClusterNodeOptions again = base;
  again.node_id = id;
  again.listen = address;
  again.shard = 2;
  again.num_shards = 3;
  again.seed = base.seed + 100;
  auto restarted = ClusterNode::Create(again);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  EXPECT_GT((*restarted)->sweep(), 0u) << "starts at the cluster's clock";
  for (int s = 0; s < 3; ++s) {
    EXPECT_TRUE((*restarted)->Sweep(false).ok());
  }
  (*cluster)->Add(std::move(*restarted));
  EXPECT_EQ(sampling.Stop(), 0);

  for (auto& n : nodes) n->Finish();
  for (auto& n : nodes) EXPECT_TRUE(n->WaitAllFinished(absl::Seconds(30)));
  auto rounds = (*cluster)->Drain();
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  ExpectExact(**cluster);
  ExpectGlobalsEqualStores(**cluster);
  // (After the drain: a failed round waits retry_interval, so a sender may
  // reach the restarted owner only once sampling has stopped.)
  EXPECT_GE(log_.Count("re-seeding it"), 2) << "both others re-seeded node2";
  uint64_t retracted = 0;
  for (auto& n : nodes) retracted += n->owner().stats().senders_retracted;
  EXPECT_GE(retracted, 2u) << "both others took node2's old counts out";
}

TEST_F(ClusterRejoinTest, AKilledMemberRestartsAndTheGlobalStaysExactAsync) {
  RestartMidTraining("async");
}

TEST_F(ClusterRejoinTest, AKilledMemberRestartsAndTheGlobalStaysExactSsp1) {
  RestartMidTraining("ssp:1");
}

// A member lost for good (issue 13, remove-node --lost): it dies mid-
// training and never comes back. The operator's removal takes it out of
// the ring without it driving anything; the two left take its counts out,
// rebuild the keys it owned from their own contributions, and end the
// move. Every global then equals the count of the two stores left.
TEST_F(ClusterRejoinTest, AMemberLostForGoodIsTakenOutOfTheModel) {
  ClusterNodeOptions base = Base("async");
  base.max_docs = 600;
  base.dead_after = absl::Seconds(1);
  base.slow_down = absl::Milliseconds(10);
  auto cluster = LocalCluster::Start(base, 3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto& nodes = (*cluster)->nodes();
  BackgroundSweeps sampling(nodes, 2);
  for (int s = 0; s < 3; ++s) {
    EXPECT_TRUE(nodes[2]->Sweep(false).ok());
  }
  // The others have announced a sweep before node 2 dies: else, on a
  // loaded machine, the cluster's clock the restart takes is still 0.
  for (int i = 0;
       i < 1000 && (nodes[0]->sweep() == 0 || nodes[1]->sweep() == 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string id = nodes[2]->node_id();
  (*cluster)->Remove(2).reset();  // gone, and never back

  auto redis = sync::RedisClient::Connect(redis_->url());
  ASSERT_TRUE(redis.ok()) << redis.status();
  auto ring =
      sync::RemoveNode(redis->get(), base.cluster, id, sync::RemoveMode::kLost);
  ASSERT_TRUE(ring.ok()) << ring.status();
  auto next = sync::FinishMove(redis->get(), base.cluster, ring->version, {});
  ASSERT_TRUE(next.ok()) << next.status();
  auto done = sync::WaitForMove(redis->get(), base.cluster, ring->version,
                                absl::Seconds(60));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->to_epoch, ring->version + 1);
  EXPECT_EQ(sampling.Stop(), 0);
  for (auto& n : nodes) {
    EXPECT_EQ(n->epoch(), ring->version + 1);
    EXPECT_EQ(n->ring_config().members.size(), 2u);
  }
  EXPECT_EQ(log_.Count("lost; its counts taken out here"), 2);

  for (auto& n : nodes) n->Finish();
  for (auto& n : nodes) EXPECT_TRUE(n->WaitAllFinished(absl::Seconds(30)));
  auto rounds = (*cluster)->Drain();
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  ExpectExact(**cluster);
  ExpectGlobalsEqualStores(**cluster);
}

}  // namespace
}  // namespace latentd
