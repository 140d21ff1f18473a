// A member that restarts alone while the cluster samples must not join: its
// previous incarnation's counts are still in the owners' globals, so its
// initial push would count its tokens twice. It fails before pushing, with
// a message that says so; the running nodes go on.
#include <memory>
#include <thread>

#include "tests/cluster/cluster_test_util.h"

namespace latentd {
namespace {

class ClusterRejoinTest : public ClusterTest {};

TEST_F(ClusterRejoinTest, AMemberRestartingAloneIsRefusedBeforeItPushes) {
  ClusterNodeOptions base = Base("async");
  base.expected_members = 2;
  base.num_shards = 2;
  base.max_docs = 200;
  std::unique_ptr<ClusterNode> nodes[2];
  std::thread starts[2];
  for (uint32_t i = 0; i < 2; ++i) {
    starts[i] = std::thread([&, i] {
      ClusterNodeOptions o = base;
      o.shard = i;
      o.node_id = absl::StrCat("n", i);
      auto n = ClusterNode::Create(o);
      ASSERT_TRUE(n.ok()) << n.status();
      nodes[i] = std::move(*n);
    });
  }
  for (std::thread& t : starts) t.join();
  ASSERT_TRUE(nodes[0] && nodes[1]);
  ASSERT_TRUE(nodes[0]->Sweep().ok());
  // Σ_k of the global topic totals: sampling moves tokens between topics,
  // so only a second push of a shard's counts could change it.
  auto global_tokens = [&] {
    int64_t sum = 0;
    for (const auto& n : nodes) {
      for (const sync::SparseEntry& e :
           n->owner().Global(sync::kTopicTotalsKey)) {
        sum += e.count;
      }
    }
    return sum;
  };
  const int64_t tokens =
      static_cast<int64_t>(nodes[0]->tokens() + nodes[1]->tokens());
  ASSERT_EQ(global_tokens(), tokens);

  // n1 "restarts": a new process with the same id and shard.
  ClusterNodeOptions again = base;
  again.shard = 1;
  again.node_id = "n1";
  auto restarted = ClusterNode::Create(again);
  ASSERT_FALSE(restarted.ok());
  EXPECT_EQ(restarted.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(restarted.status().message().find("already training"),
            std::string::npos)
      << restarted.status();
  // Nothing of it reached the owners, and n0 samples on.
  EXPECT_EQ(global_tokens(), tokens);
  EXPECT_TRUE(nodes[0]->Sweep().ok());
}

}  // namespace
}  // namespace latentd
