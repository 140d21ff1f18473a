// latentd in cluster mode, grown (part of service_DaemonCluster, with
// daemon_cluster_test.cc): a third daemon joins two that train, then is
// killed and started again with its command line.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"
#include "tests/testdata/test_corpus.h"

namespace latentd::testing {
namespace {

using service::Protocol;

// Grow: a third daemon started with --cluster-join waits as
// pending (it serves its API only once joined), `latentctl cluster
// add-node` admits it while the two train, the two hand it its keys, and
// after training the three hold one model: the same topic totals, adding
// up to the tokens of all three stores.
TEST(DaemonCluster, ADaemonJoinsARunningClusterWhenAdmitted) {
  TestCluster cluster({.name = "grow"});
  ASSERT_TRUE(cluster.ok());
  RedisServer& redis = cluster.redis();
  ASSERT_TRUE(cluster.Start(2, TrainingArgs("20", "15")));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  // (Fixed ports: the node id is its --listen address, kept on restart.)
  std::vector<std::string> joiner_args = TrainingArgs("20", "6");
  for (std::string& f : FixedPortArgs({"--listen", "--cluster-listen"})) {
    joiner_args.push_back(std::move(f));
  }
  Daemon* c = cluster.StartJoiner(joiner_args);

  // The operator finds the pending node in `cluster status`; two
  // operators admit it at once: one wins (epoch 1 -> 2), the other is told
  // why it changed nothing (the node is no longer pending, a move runs, or
  // the ring changed under it).
  const std::string pending = PendingNode(redis.address(), "grow");
  ASSERT_FALSE(pending.empty()) << c->Log();
  std::pair<int, std::string> admits[2];
  {
    std::vector<std::thread> operators;
    for (auto& result : admits) {
      operators.emplace_back([&result, &pending, &redis] {
        result = Latentctl({"cluster", "add-node", pending, "--cluster-redis",
                            redis.address(), "--cluster", "grow"});
      });
    }
    for (std::thread& t : operators) t.join();
  }
  const int won = admits[0].first == 0 ? 0 : 1;
  const auto& [rc, out] = admits[won];
  const auto& [lost_rc, lost_out] = admits[1 - won];
  ASSERT_EQ(rc, 0) << out << c->Log();
  EXPECT_NE(out.find("admitted " + pending + ": epoch 1 -> 2"),
            std::string::npos)
      << out;
  EXPECT_NE(lost_rc, 0) << lost_out;
  EXPECT_TRUE(lost_out.find("not pending") != std::string::npos ||
              lost_out.find("a move is already running") != std::string::npos ||
              lost_out.find("changed concurrently") != std::string::npos ||
              lost_out.find("admitted concurrently") != std::string::npos)
      << lost_out;
  // A later admission of the same node changes nothing either.
  auto [again, again_out] =
      Latentctl({"cluster", "add-node", pending, "--cluster-redis",
                 redis.address(), "--cluster", "grow"});
  EXPECT_NE(again, 0) << again_out;
  EXPECT_NE(again_out.find("not pending"), std::string::npos) << again_out;
  ASSERT_TRUE(c->WaitForPorts()) << c->Log();
  EXPECT_EQ(c->tcp(), pending);

  auto ca = a->Client(Protocol::kTcp);
  auto cb = b->Client(Protocol::kTcp);
  auto cc = c->Client(Protocol::kTcp);
  auto done = [](const api::StatusResponse& s) {
    return !s.training() && s.pending() == 0;
  };
  std::vector<absl::StatusOr<api::StatusResponse>> finals;
  for (auto* client : {ca.get(), cb.get(), cc.get()}) {
    finals.push_back(WaitStatus(client, done, 180));
    ASSERT_TRUE(finals.back().ok()) << finals.back().status();
    EXPECT_EQ(finals.back()->cluster_members_size(), 3);
  }
  int64_t tokens = 0;
  for (const auto& f : finals) tokens += static_cast<int64_t>(f->tokens());
  // The three nodes' topic totals, once equal and adding up to `tokens`
  // (up to 30 s).
  auto expect_one_model = [&]() {
    std::vector<int64_t> na, nb, nc;
    for (int i = 0; i < 300; ++i) {
      na = TopicTotals(ca.get());
      nb = TopicTotals(cb.get());
      nc = TopicTotals(cc.get());
      if (Sum(na) == tokens && na == nb && nb == nc) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(Sum(na), tokens);
    EXPECT_EQ(na, nb);
    EXPECT_EQ(nb, nc);
  };
  expect_one_model();
  // Each member's heartbeat (about once a second) shows in cluster status.
  const std::string documents =
      absl::StrCat(" ", TestCorpusSize().documents, " documents");
  std::string status_out;
  for (int i = 0; i < 50; ++i) {
    auto [src, sout] = Latentctl({"cluster", "status", "--cluster-redis",
                                  redis.address(), "--cluster", "grow"});
    status_out = sout;
    if (src == 0 && sout.find(" ago (sweep ") != std::string::npos &&
        sout.find(documents) != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(status_out.find(documents), std::string::npos) << status_out;

  // The admitted node killed and started again with its command line,
  // --cluster-join included: a restart (or, if the others failed it over
  // meanwhile, a return), not a second admission; the three end exact.
  const size_t first_run = c->Log().size();
  ASSERT_EQ(c->Stop(SIGKILL, 10), SIGKILL);
  c = cluster.Restart(2);
  ASSERT_TRUE(c->WaitForPorts()) << c->Log();
  cc = c->Client(Protocol::kTcp);
  auto back = WaitStatus(
      cc.get(),
      [](const api::StatusResponse& s) {
        return s.cluster_members_size() == 3 && s.pending() == 0;
      },
      60);
  ASSERT_TRUE(back.ok()) << back.status() << c->Log();
  EXPECT_EQ(c->Log().find("registered as pending", first_run),
            std::string::npos)
      << c->Log();
  expect_one_model();
  cluster.StopAll();
}

}  // namespace
}  // namespace latentd::testing
