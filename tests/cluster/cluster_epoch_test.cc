// The ring changes while a 3-node cluster samples (issue 12's ring epochs,
// without a membership change): an operator gives the nodes weights 1, 2
// and 3, so about half of the keys change owner. Each node follows the
// new epoch from Redis, hands off the keys it no longer owns and re-routes
// its rounds, while sampling goes on. At the end the model is exact: every
// node's value of every key equals its new owner's global, the totals add
// up to the corpus, and no key is left at an old owner.
#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hashring/ring_config.h"
#include "service/cluster/local_cluster.h"
#include "sync/control/cluster_admin.h"
#include "sync/control/membership.h"
#include "tests/cluster/cluster_test_util.h"

namespace latentd {
namespace {

// True once `done()` holds, polling for at most a minute: a node that
// failed makes the test fail, not hang until ctest's timeout.
template <typename Done>
bool WaitFor(Done done) {
  const absl::Time deadline = absl::Now() + absl::Minutes(1);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

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
  constexpr int kSweeps = 30;
  absl::Status written;
  uint64_t slowest_at_switch = kSweeps;  // a node's sweep once all switched
  std::thread operator_thread([&] {
    if (!WaitFor([&] { return nodes[0]->sweep() >= 2; })) {
      written = absl::DeadlineExceededError("node0 never reached sweep 2");
      return;
    }
    hashring::RingConfig next = nodes[0]->ring_config();
    for (size_t i = 0; i < next.members.size(); ++i) {
      next.members[i].weight = static_cast<uint32_t>(i + 1);
    }
    next.version = 2;
    written = WriteRing(o.redis_url, o.cluster, next);
    for (auto& n : nodes) {
      if (!WaitFor([&] { return n->epoch() >= 2; })) {
        written = absl::DeadlineExceededError(
            absl::StrCat(n->node_id(), " never reached epoch 2"));
        return;
      }
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

// Grow (issue 12, must-show 1, with the corpus's third shard as the new
// node's documents): two nodes train two thirds of it; a third starts with
// --join, registers as pending, is admitted mid-training (AdmitNode, what
// `latentctl cluster add-node` runs), takes its keys from the two, pushes
// its counts and samples. The model then covers all of it exactly, and the
// move is recorded as done.
void RunGrow(ClusterNodeOptions base) {
  auto cluster = LocalCluster::Start(base, 2, {}, /*shards=*/3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto& nodes = (*cluster)->nodes();
  ClusterNodeOptions joiner = base;
  joiner.join = true;
  joiner.node_id = "node2";
  joiner.shard = 2;
  joiner.num_shards = 3;
  joiner.listen = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<ClusterNode>> third;
  absl::Status admitted = absl::UnknownError("not run");
  std::thread operator_thread([&] {
    if (!WaitFor([&] { return nodes[0]->sweep() >= 2; })) {
      admitted = absl::DeadlineExceededError("node0 never reached sweep 2");
      return;
    }
    auto redis = sync::RedisClient::Connect(base.redis_url);
    if (!redis.ok()) {
      admitted = redis.status();
      return;
    }
    // Wait until the node has registered, then admit it.
    for (int i = 0; i < 600; ++i) {
      auto st = sync::ReadClusterStatus(redis->get(), base.cluster);
      if (st.ok()) {
        for (const auto& m : st->members) {
          if (m.id == "node2" && m.state == sync::MemberState::kPending) {
            admitted =
                sync::AdmitNode(redis->get(), base.cluster, "node2").status();
            return;
          }
        }
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    admitted = absl::DeadlineExceededError("node2 never registered");
  });
  // The new node samples while the others do (under SSP they wait for it).
  absl::Status sampled;
  uint64_t first_clock = 0;
  std::thread joining([&] {
    third = ClusterNode::Create(joiner);
    if (!third.ok()) return;
    first_clock = (*third)->sweep();
    for (int s = 0; s < 6 && sampled.ok(); ++s) {
      sampled = (*third)->Sweep(/*evaluate=*/false).status();
    }
    (*third)->Finish();
  });
  auto run = (*cluster)->RunSweeps(14);
  joining.join();
  operator_thread.join();
  ASSERT_TRUE(admitted.ok()) << admitted;
  ASSERT_TRUE(third.ok()) << third.status();
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(sampled.ok()) << sampled;
  EXPECT_EQ((*third)->epoch(), 2u);
  EXPECT_GE(first_clock, 2u) << "it starts at the cluster's clock";
  (*cluster)->Add(std::move(*third));
  for (auto& n : nodes) EXPECT_EQ(n->epoch(), 2u) << n->node_id();
  auto rounds = (*cluster)->Drain();
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  EXPECT_EQ((*cluster)->total_tokens(), testing::TestCorpusSize().tokens);
  ExpectExact(**cluster);
  auto redis = sync::RedisClient::Connect(base.redis_url);
  ASSERT_TRUE(redis.ok());
  auto move =
      sync::WaitForMove(redis->get(), base.cluster, 2, absl::Seconds(10));
  ASSERT_TRUE(move.ok()) << move.status();
  EXPECT_EQ(move->status, sync::MoveStatus::kDone);
  EXPECT_GT(move->counters.keys, 0u);
}

TEST_F(ClusterTest, GrowAsync) {
  ClusterNodeOptions o = Base("async");
  o.slow_down = absl::Milliseconds(40);
  RunGrow(o);
}

TEST_F(ClusterTest, GrowSsp1) {
  ClusterNodeOptions o = Base("ssp:1");
  o.slow_down = absl::Milliseconds(40);
  RunGrow(o);
}

// Shrink with drop (issue 12, must-show 2b): three nodes train the
// corpus's thirds; the operator removes node2 with --drop mid-training
// (RemoveNode: the drain epoch); node2 stops sampling, takes its
// documents' counts out of the model, pushes that, ends the drain (the
// next epoch's ring lacks it), hands every key it owns to the two left and
// closes the move. The two then hold exactly their own documents' model.
void RunShrinkDrop(ClusterNodeOptions base) {
  auto cluster = LocalCluster::Start(base, 3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto& nodes = (*cluster)->nodes();
  std::vector<absl::Status> status(3);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      for (int s = 0; s < 14 && status[i].ok(); ++s) {
        status[i] = nodes[i]->Sweep(/*evaluate=*/false).status();
      }
      nodes[i]->Finish();
    });
  }
  // Set if the removal could not be started: the leaver then stops.
  std::atomic<bool> give_up{false};
  threads.emplace_back([&] {
    ClusterNode* leaver = nodes[2].get();
    while (!leaver->LeaveRequested().has_value() && status[2].ok() &&
           !give_up.load()) {
      status[2] = leaver->Sweep(/*evaluate=*/false).status();
    }
    if (status[2].ok() && !give_up.load()) status[2] = leaver->Leave();
  });
  // No ASSERT until the threads are joined (an early return would destroy
  // them unjoined).
  absl::StatusOr<sync::MoveRecord> move = absl::UnknownError("not run");
  absl::StatusCode unknown_node = absl::StatusCode::kOk;
  [&] {
    if (!WaitFor([&] { return nodes[0]->sweep() >= 2; })) {
      move = absl::DeadlineExceededError("node0 never reached sweep 2");
      return;
    }
    auto redis = sync::RedisClient::Connect(base.redis_url);
    if (!redis.ok()) {
      move = redis.status();
      return;
    }
    // Not an unknown node: refused.
    unknown_node = sync::RemoveNode(redis->get(), base.cluster, "nobody",
                                    sync::RemoveMode::kDrop)
                       .status()
                       .code();
    auto drain = sync::RemoveNode(redis->get(), base.cluster, "node2",
                                  sync::RemoveMode::kDrop);
    if (!drain.ok()) {
      move = drain.status();
      return;
    }
    move = sync::WaitForMove(redis->get(), base.cluster, drain->version,
                             absl::Seconds(120));
  }();
  if (!move.ok()) give_up.store(true);
  for (auto& t : threads) t.join();
  EXPECT_EQ(unknown_node, absl::StatusCode::kNotFound);
  for (const absl::Status& st : status) ASSERT_TRUE(st.ok()) << st;
  ASSERT_TRUE(move.ok()) << move.status();
  EXPECT_EQ(move->status, sync::MoveStatus::kDone);
  EXPECT_GT(move->counters.documents, 0u);
  (*cluster)->Remove(2);
  for (auto& n : nodes) EXPECT_EQ(n->epoch(), 3u) << n->node_id();
  auto rounds = (*cluster)->Drain();
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  EXPECT_LT((*cluster)->total_tokens(), testing::TestCorpusSize().tokens);
  ExpectExact(**cluster);  // Σ n_k = the two nodes' tokens
  EXPECT_EQ(nodes[0]->ring_config().members.size(), 2u);
}

TEST_F(ClusterTest, ShrinkDropAsync) {
  ClusterNodeOptions o = Base("async");
  o.slow_down = absl::Milliseconds(40);
  RunShrinkDrop(o);
}

TEST_F(ClusterTest, ShrinkDropSsp1) {
  ClusterNodeOptions o = Base("ssp:1");
  o.slow_down = absl::Milliseconds(40);
  RunShrinkDrop(o);
}

}  // namespace
}  // namespace latentd
