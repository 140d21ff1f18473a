#include "tests/service/netfault_cluster.h"

#include <chrono>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace latentd::testing {

NetCluster::NetCluster(int nodes, const std::string& failure_timeout,
                       int docs_per_node) {
  absl::StatusOr<std::unique_ptr<NetTopology>> made =
      NetTopology::Create(nodes);
  EXPECT_TRUE(made.ok()) << made.status();
  if (!made.ok()) return;
  net = std::move(*made);
  NetTopology* topo = net.get();
  cluster = std::make_unique<TestCluster>(TestClusterOptions{
      .name = "netfault",
      .failure_timeout = failure_timeout,
      .redis_placement = {.exec_prefix = topo->Exec(NetTopology::kRedis),
                          .tcp = topo->Address(NetTopology::kRedis) + ":6379"},
      .node_exec = [topo](int i) { return topo->Exec(i); }});
  EXPECT_TRUE(cluster->ok()) << "Redis in its namespace did not start";
  if (!cluster->ok()) return;
  base = WriteCorpusParts(cluster->dir(), nodes, /*per_part=*/nullptr,
                          size_t(nodes) * docs_per_node);
  if (base.empty()) return;
  const char* sweep_ms = std::getenv("LATENTD_NETFAULT_SWEEP_MS");
  if (sweep_ms == nullptr) sweep_ms = "20";
  std::vector<std::vector<std::string>> args;
  for (int i = 0; i < nodes; ++i) {
    args.push_back(CorpusPartArgs(cluster->dir(), i));
    const std::string at = topo->Address(i);
    for (const std::string& a : std::vector<std::string>{
             "--listen", at + ":7071", "--http", at + ":7070",
             "--cluster-listen", at + ":7072", "--replicas", "2", "--threads",
             "1", "--checkpoint-every", "0", "--sweep-interval-ms", sweep_ms}) {
      args.back().push_back(a);
    }
  }
  const auto began = std::chrono::steady_clock::now();
  EXPECT_TRUE(cluster->Start(args)) << cluster->Logs();
  up_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
             .count();
}

bool NetCluster::ok() const {
  return !::testing::Test::HasFailure() && cluster != nullptr && !base.empty();
}

}  // namespace latentd::testing
