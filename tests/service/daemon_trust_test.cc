// Issue 29 ("trust") at the daemon's level: what latentd processes say and
// refuse on their real listeners.
//
// ReadyzAfterSamplingStoppedSaysWhy: a node that stopped sampling (--max-sweeps
// reached) still answers queries and stays ready, and its /readyz body says
// that sampling stopped and why.
//
// OwnerRefusesNegativeAndNotOwnedBatches: a process holding the cluster key
// sends real DeltaBatch frames over the sync port of a 2-node cluster, speaking
// as the other member: one takes the topic totals below the sender's own part
// (negative), the same batch at the node that does not own the totals
// (key_not_owned). Each is refused, nothing of it changes either node's
// export nor supersedes the member spoken for, and
// latentd_sync_batches_refused_total{reason=...} counts it.
#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sync/owner_shard.h"
#include "sync/transport/peer_auth.h"
#include "sync/transport/transport.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::testing {
namespace {

using service::Method;
using service::Protocol;

int HttpPort(const Daemon& d) {
  return std::stoi(d.http().substr(d.http().rfind(':') + 1));
}

TEST(DaemonTrust, ReadyzAfterSamplingStoppedSaysWhy) {
  TempDir tmp;
  Daemon d(tmp.path() + "/node", TrainingArgs("5", "2"));
  ASSERT_TRUE(d.ok()) << d.Log();
  auto client = d.Client(Protocol::kTcp);
  auto stopped = WaitStatus(
      client.get(),
      [](const api::StatusResponse& s) {
        return !s.training() && s.version().sweep() >= 2;
      },
      120);
  ASSERT_TRUE(stopped.ok()) << stopped.status() << d.Log();
  // The training thread records why with training off; poll briefly.
  HttpReply ready;
  for (int i = 0; i < 100; ++i) {
    ready = HttpGet(HttpPort(d), "/readyz");
    if (ready.body.find("sampling stopped") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(ready.body.rfind("ready\n", 0), 0u) << ready.body;
  EXPECT_NE(ready.body.find("sampling stopped: --max-sweeps 2 reached"),
            std::string::npos)
      << ready.body;
  EXPECT_EQ(HttpGet(HttpPort(d), "/healthz").body, "ok\n");
  // It still answers queries from its last model.
  api::ListTopicsResponse topics;
  ASSERT_TRUE(
      client->Call(Method::kListTopics, api::ListTopicsRequest(), &topics)
          .ok());
  EXPECT_EQ(topics.topics_size(), 5);
  EXPECT_EQ(d.Stop(), 0) << d.Log();
}

// id -> sync address of every member, from the cluster's registry.
std::map<std::string, std::string> Members(TestCluster& cluster) {
  std::map<std::string, std::string> out;
  redisContext* rc = cluster.redis().Connect();
  EXPECT_NE(rc, nullptr);
  if (rc == nullptr) return out;
  const std::string key = absl::StrCat("latentd:", cluster.name(), ":members");
  auto* r =
      static_cast<redisReply*>(redisCommand(rc, "HGETALL %s", key.c_str()));
  if (r != nullptr && r->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      out[r->element[i]->str] = r->element[i + 1]->str;
    }
  }
  if (r != nullptr) freeReplyObject(r);
  redisFree(rc);
  return out;
}

// A batch from `sender` (a new incarnation: its own part of
// every key is 0) taking 10^9 from topic 0 of the topic totals.
std::string NegativeTotalsBatch(const std::string& sender) {
  sync::DeltaBatch b;
  b.set_node_id(sender);
  b.set_incarnation(sync::IncarnationAt(absl::Now(), 0));
  b.set_sequence(1);
  b.set_dimension(10);
  b.set_changes_only(true);
  b.add_keys(sync::kTopicTotalsKey);
  sync::AppendToBlock({{0, -1000000000}}, b.mutable_deltas());
  return b.SerializeAsString();
}

double Refused(Daemon* d, const char* reason) {
  return Metric(d, absl::StrCat("latentd_sync_batches_refused_total{reason=\"",
                                reason, "\"}"));
}

TEST(DaemonTrust, OwnerRefusesNegativeAndNotOwnedBatches) {
  TestCluster cluster({.name = "trust"});
  ASSERT_TRUE(cluster.ok());
  ASSERT_TRUE(cluster.Start(2, TrainingArgs("10", "2")));
  Daemon* nodes[] = {cluster.node(0), cluster.node(1)};
  std::unique_ptr<service::ApiClient> clients[2];
  int64_t tokens = 0;
  for (int i = 0; i < 2; ++i) {
    clients[i] = nodes[i]->Client(Protocol::kTcp);
    auto done = WaitStatus(
        clients[i].get(),
        [](const api::StatusResponse& s) {
          return !s.training() && s.pending() == 0 &&
                 s.cluster_members_size() == 2;
        },
        180);
    ASSERT_TRUE(done.ok()) << done.status() << cluster.Logs();
    tokens += static_cast<int64_t>(done->tokens());
  }
  // Drained: both hold the one model over their tokens.
  std::vector<int64_t> totals[2];
  for (int i = 0; i < 300; ++i) {
    totals[0] = TopicTotals(clients[0].get());
    totals[1] = TopicTotals(clients[1].get());
    if (Sum(totals[0]) == tokens && totals[0] == totals[1]) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(Sum(totals[0]), tokens);
  ASSERT_EQ(totals[0], totals[1]);
  std::string before[2];
  for (int i = 0; i < 2; ++i) {
    before[i] = ExportCounts(nodes[i], absl::StrCat(cluster.dir(), "/b", i));
    ASSERT_FALSE(before[i].empty());
  }
  double stale[2];
  for (int i = 0; i < 2; ++i) {
    stale[i] = Metric(nodes[i], "latentd_cluster_stale_refused_total");
  }
  const std::map<std::string, std::string> members = Members(cluster);
  ASSERT_EQ(members.size(), 2u);
  auto key = sync::LoadClusterKey(cluster.dir() + "/cluster.key");
  ASSERT_TRUE(key.ok()) << key.status();
  // To each node, the batch as the other member. One of them owns the
  // totals (negative); the other does not (key_not_owned).
  sync::EventLoop loop(1);
  for (const auto& [target, address] : members) {
    std::string sender;
    for (const auto& m : members) {
      if (m.first != target) sender = m.first;
    }
    sync::ClientOptions co;
    ASSERT_TRUE(sync::SplitHostPort(address, &co.host, &co.port).ok());
    co.auth = std::make_shared<sync::PeerAuth>(sync::PeerAuth{*key, sender});
    sync::Client client(&loop, co);
    auto r = client.CallSync(sync::MESSAGE_TYPE_DELTA_BATCH,
                             NegativeTotalsBatch(sender), absl::Seconds(10));
    EXPECT_FALSE(r.ok()) << "batch to " << target << " was applied";
  }
  double negative = 0, not_owned = 0;
  for (Daemon* d : nodes) {
    const double n = Refused(d, "negative");
    const double o = Refused(d, "key_not_owned");
    // Each node refused exactly one batch, for one of the two reasons.
    EXPECT_EQ(n + o, 1) << d->Log();
    negative += n;
    not_owned += o;
  }
  EXPECT_EQ(negative, 1);
  EXPECT_EQ(not_owned, 1);
  // Nothing changed: the same exports, the same totals.
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ExportCounts(nodes[i], absl::StrCat(cluster.dir(), "/a", i)),
              before[i])
        << "node " << i;
    EXPECT_EQ(TopicTotals(clients[i].get()), totals[0]) << "node " << i;
  }
  // The member spoken for was not superseded: none of its batches has been
  // refused as from an earlier process since.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(Metric(nodes[i], "latentd_cluster_stale_refused_total"), stale[i])
        << "node " << i;
  }
  EXPECT_NE(cluster.Logs().find("rejected delta batch from"), std::string::npos)
      << cluster.Logs();
  cluster.StopAll();
}

}  // namespace
}  // namespace latentd::testing
