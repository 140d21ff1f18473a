// Restart is the same command (docs/operations.md, "Restarts and
// failover"): three daemons train thirds of the test corpus with failure
// detection on (timeout 1 s) and the sync port left to its default (picked
// at the first start, kept in the data directory). Every node is killed
// with SIGKILL (or stopped with SIGTERM) mid-training and started again
// with its command line, in a seeded random order with seeded delays: the
// cluster comes back with all three in the ring, nobody failed over or
// removed, and once drained every node exports the same counts, exact
// against the three thirds. Also: every node killed in the middle of a
// failover or of an add, a node restarted after the others finished, a
// taken sync port.
// LATENTD_RESTART_SEED picks another order and delays,
// LATENTD_RESTART_MAX_DELAY_MS their bound, LATENTD_RESTART_REPLICAS the
// --replicas (2, latentd's default).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "hashring/ring_config.h"
#include "sync/control/cluster_admin.h"
#include "sync/control/membership.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"

namespace latentd::testing {
namespace {

constexpr int kNodes = 3;

uint32_t Env(const char* name, uint32_t fallback) {
  const char* s = std::getenv(name);
  return s == nullptr ? fallback
                      : static_cast<uint32_t>(std::strtoul(s, nullptr, 10));
}

// Each node's command line: its third of the corpus (CorpusPartArgs), a
// fixed API address (the node id, kept as an operator's would be; the
// sync port is the default: 0, picked once, then kept) and `extra`.
std::vector<std::vector<std::string>> NodeArgs(
    const TestCluster& cluster, const std::vector<std::string>& extra) {
  std::vector<std::vector<std::string>> args(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    args[i] = CorpusPartArgs(cluster.dir(), i, extra);
    for (const std::string& a : FixedPortArgs({"--listen"})) {
      args[i].push_back(a);
    }
  }
  return args;
}

// A and B training on their thirds (swept 3 times each) and C started as
// a joiner, pending: returns C's id ("" and a test failure if it never
// shows as pending). The word counts of all three thirds go to *freq.
std::string StartTwoAndAJoiner(TestCluster& cluster,
                               const std::vector<std::string>& extra,
                               std::map<std::string, long long>* freq) {
  *freq = WriteCorpusParts(cluster.dir(), kNodes);
  EXPECT_FALSE(freq->empty());
  const std::vector<std::vector<std::string>> args = NodeArgs(cluster, extra);
  EXPECT_TRUE(cluster.Start({args[0], args[1]}));
  Daemon* c = cluster.StartJoiner(args[2]);
  const std::string pending =
      PendingNode(cluster.redis().address(), cluster.name());
  EXPECT_FALSE(pending.empty()) << c->Log();
  for (int i = 0; i < 2; ++i) {
    EXPECT_GE(AwaitSweeps(cluster.node(i), 3), 3u) << cluster.node(i)->Log();
  }
  return pending;
}

// Starts the three nodes on thirds of the test corpus (written into
// cluster's directory; their word counts into *freq) and waits until each
// has swept 3 times.
void StartTraining(TestCluster& cluster,
                   std::map<std::string, long long>* freq) {
  const std::string replicas =
      std::to_string(Env("LATENTD_RESTART_REPLICAS", 2));
  *freq = WriteCorpusParts(cluster.dir(), kNodes);
  ASSERT_FALSE(freq->empty());
  const std::vector<std::vector<std::string>> args =
      NodeArgs(cluster, {"--max-sweeps", "80", "--replicas", replicas});
  ASSERT_TRUE(cluster.Start(args));
  for (int i = 0; i < kNodes; ++i) {
    Daemon* d = cluster.node(i);
    ASSERT_GE(AwaitSweeps(d, 3), 3u) << d->Log();
  }
}

// The whole cluster stopped at once with `sig` (every node sent it, then
// each waited for) and started again in a seeded order, delays up to
// `max_delay_ms` (or the environment's).
void StopAllAndRestart(int sig, int max_delay_default_ms) {
  const uint32_t seed = Env("LATENTD_RESTART_SEED", 1);
  const int max_delay_ms = static_cast<int>(
      Env("LATENTD_RESTART_MAX_DELAY_MS", max_delay_default_ms));
  TestCluster cluster({.name = "restart", .failure_timeout = "1"});
  ASSERT_TRUE(cluster.ok());
  std::map<std::string, long long> freq;
  StartTraining(cluster, &freq);
  if (::testing::Test::HasFatalFailure()) return;
  const sync::ClusterStatus before = ReadStatus(cluster.redis(), "restart");

  std::mt19937 rng(seed);
  std::vector<int> order = {0, 1, 2};
  std::shuffle(order.begin(), order.end(), rng);
  std::uniform_int_distribution<int> delay_ms(0, max_delay_ms);
  for (int i = 0; i < kNodes; ++i) ::kill(cluster.node(i)->pid(), sig);
  for (int i = 0; i < kNodes; ++i) {
    // (A clean stop exits 0.)
    ASSERT_EQ(cluster.node(i)->Stop(sig, 30), sig == SIGKILL ? SIGKILL : 0);
  }
  std::string plan;
  for (int i : order) {
    const int ms = delay_ms(rng);
    absl::StrAppend(&plan, " node", i, " after ", ms, " ms;");
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    cluster.Restart(i, /*wait=*/false);
  }
  std::printf("seed %u:%s\n", seed, plan.c_str());
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_TRUE(cluster.node(i)->WaitForPorts()) << plan << cluster.Logs();
  }
  std::printf("drained %.1f s after the restarts\n",
              DrainAndCheckExact(cluster, freq));
  const sync::ClusterStatus after = ReadStatus(cluster.redis(), "restart");
  ASSERT_TRUE(after.ring.has_value());
  EXPECT_EQ(after.ring->members.size(), 3u) << plan << cluster.Logs();
  for (const sync::MemberStatus& m : after.members) {
    EXPECT_EQ(m.state, sync::MemberState::kActive) << m.id;
    EXPECT_TRUE(m.in_ring) << m.id;
  }
  // Nobody failed over: the ring's epoch is the one the cluster had.
  EXPECT_EQ(after.epoch, before.epoch) << plan << cluster.Logs();
  if (::testing::Test::HasFailure()) {
    std::printf("%s\n", cluster.Logs().c_str());
  }
  cluster.StopAll();
}

// With a move of `cluster` (named `name`) left running, restarts every
// node in `order`, without waiting between them, then waits until all
// serve, drains and checks them exact against `freq`; expects three ring
// members, all active, and a move record. Returns the cluster's status
// after (its move for the caller).
sync::ClusterStatus RestartAllExpectExact(
    TestCluster& cluster, const std::string& name,
    const std::vector<int>& order,
    const std::map<std::string, long long>& freq) {
  const sync::ClusterStatus mid = ReadStatus(cluster.redis(), name);
  EXPECT_TRUE(mid.move.has_value() &&
              mid.move->status == sync::MoveStatus::kRunning);
  for (int i : order) cluster.Restart(i, /*wait=*/false);
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_TRUE(cluster.node(i)->WaitForPorts()) << cluster.Logs();
    if (::testing::Test::HasFailure()) return {};
  }
  std::printf("drained %.1f s after the restarts\n",
              DrainAndCheckExact(cluster, freq));
  sync::ClusterStatus after = ReadStatus(cluster.redis(), name);
  EXPECT_TRUE(after.ring.has_value());
  if (after.ring.has_value()) {
    EXPECT_EQ(after.ring->members.size(), 3u) << cluster.Logs();
  }
  for (const sync::MemberStatus& m : after.members) {
    EXPECT_EQ(m.state, sync::MemberState::kActive) << m.id;
  }
  EXPECT_TRUE(after.move.has_value());
  return after;
}

TEST(DaemonRestart, AWholeClusterKilledComesBackInAnyOrder) {
  StopAllAndRestart(SIGKILL, 5000);
}

// Stopped cleanly (SIGTERM to every node at once, as `systemctl stop` on
// every machine): a node still shutting down declares nobody down, so no
// failover starts that nobody is left to finish (it did: the move stayed
// running, and the first node stopped could not return).
TEST(DaemonRestart, AWholeClusterStoppedComesBackInAnyOrder) {
  StopAllAndRestart(SIGTERM, 3000);
}

// Every node killed in the middle of a failover: node 0 declared down
// (epoch 1 -> 2, the move running) with nobody left to follow it. On the
// restart the two members put epoch 2 in effect, the last ends the move,
// and node 0 returns (it was refused while the move ran): all three in the
// ring, exact.
TEST(DaemonRestart, AFailoverEveryNodeLeftEndsOnTheRestart) {
  TestCluster cluster({.name = "restart", .failure_timeout = "1"});
  ASSERT_TRUE(cluster.ok());
  std::map<std::string, long long> freq;
  StartTraining(cluster, &freq);
  if (HasFatalFailure()) return;
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_EQ(cluster.node(i)->Stop(SIGKILL, 10), SIGKILL);
  }
  const std::string lost = cluster.node(0)->tcp();
  auto redis = sync::RedisClient::Connect(cluster.redis().address());
  ASSERT_TRUE(redis.ok()) << redis.status();
  absl::StatusOr<hashring::RingConfig> ring;
  for (int i = 0; i < 50; ++i) {  // once its heartbeat is old enough
    ring = sync::DeclareDown(redis->get(), "restart", lost, absl::Seconds(1));
    if (ring.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(ring.ok()) << ring.status();
  ASSERT_EQ(ring->version, 2u);
  const sync::ClusterStatus after =
      RestartAllExpectExact(cluster, "restart", {1, 2, 0}, freq);
  ASSERT_TRUE(after.move.has_value()) << cluster.Logs();
  EXPECT_NE(after.move->status, sync::MoveStatus::kRunning);
  if (HasFailure()) std::printf("%s\n", cluster.Logs().c_str());
  cluster.StopAll();
}

// Every node killed in the middle of an add: A and B train, C waits as
// pending; all three are killed and C is admitted while nobody runs (the
// add-node's move is left running). Restarted with their command lines,
// the three come back in the new ring (C at the sync address it had while
// pending: it was kept only once a node had joined, and C came back on
// another port that nobody could reach) and once drained they are exact.
// The last of them back ends the add's move record ("done"), as the
// joiner would have, so that the next add or remove can start.
TEST(DaemonRestart, AnAddEveryNodeLeftComesBackExact) {
  TestCluster cluster({.name = "restartadd", .failure_timeout = "1"});
  ASSERT_TRUE(cluster.ok());
  std::map<std::string, long long> freq;
  const std::string pending =
      StartTwoAndAJoiner(cluster, {"--max-sweeps", "80"}, &freq);
  if (HasFailure()) return;
  for (int i = 0; i < kNodes; ++i) ::kill(cluster.node(i)->pid(), SIGKILL);
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_EQ(cluster.node(i)->Stop(SIGKILL, 10), SIGKILL);
  }
  auto redis = sync::RedisClient::Connect(cluster.redis().address());
  ASSERT_TRUE(redis.ok()) << redis.status();
  absl::StatusOr<hashring::RingConfig> ring =
      sync::AdmitNode(redis->get(), "restartadd", pending);
  ASSERT_TRUE(ring.ok()) << ring.status();
  ASSERT_EQ(ring->members.size(), 3u);
  const sync::ClusterStatus after =
      RestartAllExpectExact(cluster, "restartadd", {2, 0, 1}, freq);
  ASSERT_TRUE(after.move.has_value()) << cluster.Logs();
  // The last node back ends the add, so that the next move can start.
  EXPECT_EQ(after.move->status, sync::MoveStatus::kDone);
  if (HasFailure()) std::printf("%s\n", cluster.Logs().c_str());
  cluster.StopAll();
}

// A member killed while a node is admitted, and restarted with its command
// line while the add runs: the keys it owned died with it, so it marks
// the epoch "restarted", and the joiner fails its join naming it (at the
// latest after --join-timeout, 8 s), never serving a partial table.
// Restarted, the joiner's
// new owner shard is re-seeded by every member, it ends the add, and the
// three are exact. (The failure timeout is long: a restart, not a
// failover.)
TEST(DaemonRestart, AMemberRestartedDuringAnAddEndsExactOnceTheJoinerIs) {
  TestCluster cluster({.name = "midadd", .failure_timeout = "30"});
  ASSERT_TRUE(cluster.ok());
  std::map<std::string, long long> freq;
  const std::string pending = StartTwoAndAJoiner(
      cluster, {"--max-sweeps", "80", "--join-timeout", "8"}, &freq);
  if (HasFailure()) return;
  Daemon* c = cluster.node(2);
  ASSERT_EQ(cluster.node(1)->Stop(SIGKILL, 10), SIGKILL);
  auto redis = sync::RedisClient::Connect(cluster.redis().address());
  ASSERT_TRUE(redis.ok()) << redis.status();
  ASSERT_TRUE(sync::AdmitNode(redis->get(), "midadd", pending).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  cluster.Restart(1, /*wait=*/false);
  int status = 0;
  for (int i = 0; i < 300 && !c->Exited(&status); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(c->running()) << "the joiner served with a member's keys "
                                "lost: "
                             << c->Log();
  EXPECT_NE(status, 0);
  EXPECT_NE(c->Log().find(cluster.node(1)->tcp()), std::string::npos)
      << c->Log();
  cluster.Restart(2, /*wait=*/false);
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_TRUE(cluster.node(i)->WaitForPorts()) << cluster.Logs();
  }
  std::printf("drained %.1f s after the restarts\n",
              DrainAndCheckExact(cluster, freq));
  const sync::ClusterStatus after = ReadStatus(cluster.redis(), "midadd");
  ASSERT_TRUE(after.ring.has_value() && after.move.has_value());
  EXPECT_EQ(after.ring->members.size(), 3u);
  EXPECT_EQ(after.move->status, sync::MoveStatus::kDone) << cluster.Logs();
  if (HasFailure()) std::printf("%s\n", cluster.Logs().c_str());
  cluster.StopAll();
}

// Every node killed in the middle of a remove of C: the move is started
// (and, for kKeys, advanced past its drain phase, C out of the ring) while
// nobody runs. Restarted with their command lines (C too, unless it is no
// member or never returns), the nodes end it: in the drain phase C
// resumes leaving (drop: takes its counts out; handoff: ships its
// documents), in the keys phase the last member back ends it, and a C
// that never returns is aborted and removed --lost by the operator; C's
// entries go and A and B are exact over what they hold.
enum class Interrupted {
  kDrain,       // in the drain phase; C restarted with the others
  kDrainCLost,  // in the drain phase; C never returns
  kKeys,        // in the keys phase (C out of the ring)
};

void RemoveLeftRunningEnds(const std::string& name, sync::RemoveMode mode,
                           Interrupted when) {
  const bool keys_phase = when == Interrupted::kKeys;
  TestCluster cluster({.name = name, .failure_timeout = "1"});
  ASSERT_TRUE(cluster.ok());
  std::vector<std::map<std::string, long long>> part;
  std::map<std::string, long long> kept =
      WriteCorpusParts(cluster.dir(), kNodes, &part);
  ASSERT_FALSE(kept.empty());
  if (mode == sync::RemoveMode::kDrop || when == Interrupted::kDrainCLost) {
    for (const auto& [word, n] : part[2]) kept[word] -= n;
    std::erase_if(kept, [](const auto& wn) { return wn.second == 0; });
  }
  const std::vector<std::vector<std::string>> args =
      NodeArgs(cluster, {"--max-sweeps", "80"});
  ASSERT_TRUE(cluster.Start(args));
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_GE(AwaitSweeps(cluster.node(i), 3), 3u) << cluster.node(i)->Log();
  }
  const std::string leaving = cluster.node(2)->tcp();
  for (int i = 0; i < kNodes; ++i) ::kill(cluster.node(i)->pid(), SIGKILL);
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_EQ(cluster.node(i)->Stop(SIGKILL, 10), SIGKILL);
  }
  auto redis = sync::RedisClient::Connect(cluster.redis().address());
  ASSERT_TRUE(redis.ok()) << redis.status();
  auto drain = sync::RemoveNode(redis->get(), name, leaving, mode);
  ASSERT_TRUE(drain.ok()) << drain.status();
  if (keys_phase) {
    auto keys = sync::FinishMove(redis->get(), name, drain->version, {});
    ASSERT_TRUE(keys.ok()) << keys.status();
  }
  const std::vector<int> order = when == Interrupted::kDrain
                                     ? std::vector<int>{2, 1, 0}
                                     : std::vector<int>{1, 0};
  for (int i : order) cluster.Restart(i, /*wait=*/false);
  for (int i : {0, 1}) {
    ASSERT_TRUE(cluster.node(i)->WaitForPorts()) << cluster.Logs();
  }
  if (when == Interrupted::kDrainCLost) {
    // The operator's way out: abort the move (nothing rolled back), then
    // remove C for good.
    const std::vector<std::string> where = {
        "--cluster-redis", cluster.redis().address(), "--cluster", name};
    auto with = [&where](std::vector<std::string> args) {
      args.insert(args.end(), where.begin(), where.end());
      return args;
    };
    auto [rc, out] = Latentctl(with({"cluster", "abort-move"}));
    EXPECT_NE(rc, 0) << out;  // --reason is required
    std::tie(rc, out) = Latentctl(
        with({"cluster", "abort-move", "--reason", "its disk is gone"}));
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("remove of " + leaving), std::string::npos) << out;
    EXPECT_NE(out.find("marked failed: its disk is gone"), std::string::npos)
        << out;
    std::tie(rc, out) =
        Latentctl(with({"cluster", "abort-move", "--reason", "again"}));
    EXPECT_NE(out.find("no move of cluster " + name + " is running"),
              std::string::npos)
        << out;
    std::tie(rc, out) =
        Latentctl(with({"cluster", "remove-node", leaving, "--lost"}));
    ASSERT_EQ(rc, 0) << out << cluster.Logs();
  }
  std::printf("drained %.1f s after the restarts\n",
              DrainAndCheckExact(cluster, kept, {0, 1}));
  const sync::ClusterStatus after = ReadStatus(cluster.redis(), name);
  ASSERT_TRUE(after.ring.has_value() && after.move.has_value());
  EXPECT_EQ(after.ring->members.size(), 2u);
  EXPECT_EQ(after.move->status, sync::MoveStatus::kDone) << cluster.Logs();
  for (const sync::MemberStatus& m : after.members) {
    EXPECT_NE(m.id, leaving);
    EXPECT_EQ(m.state, sync::MemberState::kActive) << m.id;
  }
  if (::testing::Test::HasFailure()) {
    std::printf("%s\n", cluster.Logs().c_str());
  }
  cluster.StopAll();
}

TEST(DaemonRestart, ADropRemoveLeftInItsDrainPhaseResumes) {
  RemoveLeftRunningEnds("restartdrop", sync::RemoveMode::kDrop,
                        Interrupted::kDrain);
}

TEST(DaemonRestart, AHandoffRemoveLeftInItsDrainPhaseResumes) {
  RemoveLeftRunningEnds("restarthand", sync::RemoveMode::kHandoff,
                        Interrupted::kDrain);
}

TEST(DaemonRestart, ARemoveLeftInItsKeysPhaseEnds) {
  RemoveLeftRunningEnds("restartkeys", sync::RemoveMode::kDrop,
                        Interrupted::kKeys);
}

// In the drain phase, C never returning (its disk is gone): the move stays
// running until the operator aborts it (`cluster abort-move`) and removes
// C with --lost; A and B end exact over their own parts.
TEST(DaemonRestart, ARemoveWhoseNodeNeverReturnsIsAbortedThenLost) {
  RemoveLeftRunningEnds("abortrm", sync::RemoveMode::kDrop,
                        Interrupted::kDrainCLost);
}

// A node killed (SIGKILL) and restarted once the others have reached
// --max-sweeps and stopped sampling: they re-seed its keys and it takes
// theirs, so every node ends with the same counts, exact.
TEST(DaemonRestart, ANodeRestartedAfterTheOthersFinishedEndsExact) {
  TestCluster cluster({.name = "late"});
  ASSERT_TRUE(cluster.ok());
  const std::map<std::string, long long> freq =
      WriteCorpusParts(cluster.dir(), kNodes);
  ASSERT_FALSE(freq.empty());
  const std::vector<std::vector<std::string>> args =
      NodeArgs(cluster, {"--max-sweeps", "30", "--replicas", "1"});
  ASSERT_TRUE(cluster.Start(args));
  auto finished = [](const api::StatusResponse& s) { return !s.training(); };
  for (int i = 0; i < kNodes; ++i) {
    auto c = cluster.node(i)->Client(service::Protocol::kTcp);
    auto s = WaitStatus(c.get(), finished, 120);
    ASSERT_TRUE(s.ok()) << s.status() << cluster.node(i)->Log();
  }
  ASSERT_EQ(cluster.node(1)->Stop(SIGKILL, 10), SIGKILL);
  ASSERT_TRUE(cluster.Restart(1)->ok()) << cluster.node(1)->Log();
  std::printf("drained %.1f s after the restart\n",
              DrainAndCheckExact(cluster, freq));
  if (HasFailure()) std::printf("%s\n", cluster.Logs().c_str());
  cluster.StopAll();
}

// The sync port a node had (kept in DIR/cluster.address) taken by another
// process: the restarted node exits saying which port and what to do.
TEST(DaemonRestart, ARestartWhoseSyncPortIsTakenSaysSo) {
  TestCluster cluster({.name = "porttaken"});
  ASSERT_TRUE(cluster.ok());
  std::vector<std::string> args = TrainingArgs();
  for (const std::string& a : FixedPortArgs({"--listen"})) args.push_back(a);
  ASSERT_TRUE(cluster.Start(1, args));
  ASSERT_EQ(cluster.node(0)->Stop(), 0) << cluster.node(0)->Log();
  std::ifstream in(cluster.data_dir(0) + "/cluster.address");
  std::string address;
  std::getline(in, address);
  std::pair<std::string, std::string> hp =
      absl::StrSplit(address, absl::MaxSplits(':', 1));
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(hp.second, &port)) << address;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0)
      << "port " << port;
  ASSERT_EQ(::listen(fd, 1), 0);
  Daemon* d = cluster.Restart(0, /*wait=*/false);
  EXPECT_FALSE(d->WaitForPorts());
  EXPECT_NE(d->Log().find(absl::StrCat("the sync address ", address,
                                       " is the one this node had")),
            std::string::npos)
      << d->Log();
  EXPECT_NE(d->Log().find("free the port, or give --cluster-listen"),
            std::string::npos)
      << d->Log();
  ::close(fd);
}

}  // namespace
}  // namespace latentd::testing
