// Drain and settle (sync/control/drain.h): three daemons train thirds of
// the test corpus with no sweep limit; `latentctl cluster drain` returns
// once every member holds the same table, and then every node's export is
// byte-identical and exact against the three thirds, no node sweeps, and
// `cluster status` says settled. `cluster resume` and every node samples
// again. Under BSP the same drain settles, and every node stops after it.
// Redis and the daemons run on 127.0.0.1.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"

namespace latentd::testing {
namespace {

constexpr int kNodes = 3;

// Starts kNodes nodes of `cluster` on thirds of the test corpus (their
// word frequencies into *freq) with no sweep limit and `consistency`, and
// waits until each has swept 5 times.
void StartThirds(TestCluster* cluster, const char* consistency,
                 std::map<std::string, long long>* freq) {
  ASSERT_TRUE(cluster->ok());
  *freq = WriteCorpusParts(cluster->dir(), kNodes);
  ASSERT_FALSE(freq->empty());
  std::vector<std::vector<std::string>> args(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    args[i] = CorpusPartArgs(
        cluster->dir(), i,
        {"--max-sweeps", "0", "--replicas", "1", "--consistency", consistency});
  }
  ASSERT_TRUE(cluster->Start(args));
  for (int i = 0; i < kNodes; ++i) {
    Daemon* d = cluster->node(i);
    ASSERT_GE(AwaitSweeps(d, 5), 5u) << d->Log();
  }
}

TEST(ClusterDrain, DrainSettlesEveryNodeOnOneTableAndResumeSamples) {
  TestCluster cluster({.name = "drain"});
  std::map<std::string, long long> freq;
  ASSERT_NO_FATAL_FAILURE(StartThirds(&cluster, "async", &freq));
  const std::vector<std::string> where = {"--cluster-redis",
                                          cluster.redis().address(),
                                          "--cluster", cluster.name()};
  auto with = [&where](std::vector<std::string> a) {
    a.insert(a.end(), where.begin(), where.end());
    return a;
  };
  auto [rc, out] = Latentctl(with({"cluster", "drain", "--timeout", "60"}));
  std::printf("%s", out.c_str());
  ASSERT_EQ(rc, 0) << out << cluster.Logs();
  EXPECT_NE(out.find("settled: the 3 members of epoch"), std::string::npos)
      << out;

  // Settled: byte-identical exports, exact, and nobody sweeps.
  std::vector<uint64_t> paused;
  for (int i = 0; i < kNodes; ++i) paused.push_back(Sweeps(cluster.node(i)));
  std::vector<std::string> counts;
  for (int i = 0; i < kNodes; ++i) {
    counts.push_back(
        ExportCounts(cluster.node(i), absl::StrCat(cluster.dir(), "/x", i)));
    ASSERT_FALSE(counts.back().empty());
    EXPECT_TRUE(counts[i] == counts[0])
        << "node " << i << " exports other counts than node 0";
  }
  ExpectRowSums(RowSums(counts[0]), freq);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_EQ(Sweeps(cluster.node(i)), paused[i]) << "node " << i;
  }
  auto [src, status] = Latentctl(with({"cluster", "status"}));
  EXPECT_EQ(src, 0) << status;
  EXPECT_NE(status.find("drain: requested; settled (checksum "),
            std::string::npos)
      << status;

  auto [rrc, resumed] = Latentctl(with({"cluster", "resume"}));
  ASSERT_EQ(rrc, 0) << resumed;
  for (int i = 0; i < kNodes; ++i) {
    Daemon* d = cluster.node(i);
    EXPECT_GE(AwaitSweeps(d, paused[i] + 3, 30), paused[i] + 3) << d->Log();
  }
  auto [s2, status2] = Latentctl(with({"cluster", "status"}));
  EXPECT_NE(status2.find("drain: none (sampling)"), std::string::npos)
      << status2;
  if (HasFailure()) std::printf("%s\n", cluster.Logs().c_str());
  cluster.StopAll();
}

// Under BSP a node waits before each sweep for its peers' last one, and a
// drain reaches the members at different heartbeats, so a node may wait
// for a peer that has already paused: the cluster still settles exact and
// every node then exits on SIGTERM. (A returned node that never heard its
// paused peers' clocks waited for good: DaemonFailover's SSP test drains
// just after such a return.)
TEST(ClusterDrain, UnderBspTheClusterSettlesAndStops) {
  TestCluster cluster({.name = "drainbsp"});
  std::map<std::string, long long> freq;
  ASSERT_NO_FATAL_FAILURE(StartThirds(&cluster, "bsp", &freq));
  EXPECT_GE(DrainAndCheckExact(cluster, freq), 0);
  for (int i = 0; i < kNodes; ++i) {
    Daemon* d = cluster.node(i);
    EXPECT_EQ(d->Stop(SIGTERM, 20), 0) << d->Log();
  }
  if (HasFailure()) std::printf("%s\n", cluster.Logs().c_str());
}

}  // namespace
}  // namespace latentd::testing
