// Failure detection and failover (issue 13; docs/design.md, "Failure
// detection and failover"): three daemons train thirds of the test corpus
// under async with a private redis-server (Unix socket). One is killed with
// SIGKILL mid-sweep. The other two keep sampling; a survivor declares it
// down once its heartbeat is older than --failure-timeout, the ring moves
// to an epoch without it, and the survivors take its keys over (with
// --replicas 2, the default, its counts stay in the model from its keys'
// copies until it returns or is removed as lost). Restarted from its data
// directory, it is re-admitted by itself; once all have stopped (--max-sweeps)
// and drained, every node exports the same counts, and each word's row sums to
// its frequency in the three thirds. Every process runs on 127.0.0.1 and is
// stopped at the end.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sync/control/cluster_admin.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"

namespace latentd::testing {
namespace {

using service::Protocol;
using Clock = std::chrono::steady_clock;

// Seconds from `t` to now.
double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

constexpr int kNodes = 3;
constexpr const char* kMaxSweeps = "60";

// The cluster as Redis holds it.
sync::ClusterStatus ReadStatus(const TestCluster& cluster) {
  return ReadStatus(cluster.redis(), cluster.name());
}

const sync::MemberStatus* FindMember(const sync::ClusterStatus& st,
                                     const std::string& id) {
  for (const sync::MemberStatus& m : st.members) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

// The sweeps `d` has completed (its counter, not the published model's).
// Cluster "failover" with a failure timeout of 1 s (what these tests
// test), Redis persistent if `persistent_redis`.
TestClusterOptions FailoverOptions(bool persistent_redis = false) {
  return {.name = "failover",
          .failure_timeout = "1",
          .persistent_redis = persistent_redis};
}

// The arguments of node i of the three training the thirds WriteCorpusParts
// wrote into `dir` (--consistency `consistency`, --max-sweeps
// `max_sweeps`).
std::vector<std::vector<std::string>> ThirdsArgs(const std::string& dir,
                                                 const char* consistency,
                                                 const char* max_sweeps) {
  std::vector<std::vector<std::string>> args(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    args[i] = CorpusPartArgs(dir, i);
    for (const char* a :
         {"--max-sweeps", max_sweeps, "--consistency", consistency}) {
      args[i].push_back(a);
    }
  }
  return args;
}

// ThirdsArgs (--max-sweeps kMaxSweeps) for a cluster whose node 2 (C)
// restarts with the same command line: its id is its API address, fixed
// here; its sync port is picked at the first start (--cluster-listen's
// default, port 0) and asked for again at the restart (kept in its data
// directory). A test failure if no port can be had.
std::vector<std::vector<std::string>> ThirdsArgsFixedC(
    const std::string& dir, const char* consistency) {
  std::vector<std::vector<std::string>> args =
      ThirdsArgs(dir, consistency, kMaxSweeps);
  const std::vector<std::string> fixed = FixedPortArgs({"--listen"});
  EXPECT_EQ(fixed.size(), 2u);
  args[2].insert(args[2].end(), fixed.begin(), fixed.end());
  return args;
}

// Starts the nodes of `cluster` with `args` and waits (up to 60 s) until
// node 2 has done 3 sweeps. False (and a test failure) if a node did not
// start or train.
bool StartThirds(TestCluster* cluster,
                 const std::vector<std::vector<std::string>>& args) {
  if (!cluster->Start(args)) return false;
  Daemon* c = cluster->node(2);
  for (int i = 0; i < 1200 && Sweeps(c) < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(Sweeps(c), 3u) << c->Log();
  return Sweeps(c) >= 3;
}

// Polls Redis (for up to 15 s) until member `id` is down and the failover
// move done; returns the last status read.
sync::ClusterStatus AwaitDown(const TestCluster& cluster,
                              const std::string& id) {
  sync::ClusterStatus st;
  for (const Clock::time_point end = Clock::now() + std::chrono::seconds(15);
       Clock::now() < end;
       std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
    st = ReadStatus(cluster);
    const sync::MemberStatus* m = FindMember(st, id);
    if (m != nullptr && m->state == sync::MemberState::kDown &&
        st.move.has_value() && st.move->status == sync::MoveStatus::kDone) {
      break;
    }
  }
  return st;
}

// After a down node `id` came back: drains and checks the model
// (DrainAndCheckExact), checks that Redis is at `epoch` with `id` active in
// the ring, and stops every node (exit 0).
void ExpectBackAndExact(TestCluster* cluster,
                        const std::map<std::string, long long>& freq,
                        const std::string& id, uint64_t epoch) {
  std::printf("drained %.1f s after the return\n",
              DrainAndCheckExact(*cluster, freq));
  const sync::ClusterStatus back = ReadStatus(*cluster);
  EXPECT_EQ(back.epoch, epoch);
  const sync::MemberStatus* m = FindMember(back, id);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->state, sync::MemberState::kActive);
  EXPECT_TRUE(m->in_ring);
  cluster->StopAll();
}

// The whole story under `consistency` (async, or ssp:1: the survivors are
// held back by the dead node's clock until it is failed over).
void KillFailOverAndReturn(const char* consistency) {
  const Clock::time_point began = Clock::now();
  TestCluster cluster(FailoverOptions());
  ASSERT_TRUE(cluster.ok());
  RedisServer& redis = cluster.redis();
  const std::map<std::string, long long> freq =
      WriteCorpusParts(cluster.dir(), kNodes);
  ASSERT_FALSE(freq.empty());
  ASSERT_TRUE(
      StartThirds(&cluster, ThirdsArgsFixedC(cluster.dir(), consistency)));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  Daemon* c = cluster.node(2);
  const uint64_t epoch_before = ReadStatus(cluster).epoch;
  ASSERT_GE(epoch_before, 1u);
  const std::string c_id = c->tcp();
  const uint64_t a_at_kill = Sweeps(a), b_at_kill = Sweeps(b);
  const uint64_t c_at_kill = Sweeps(c);
  ASSERT_LT(a_at_kill + 10, 60u) << "the survivors must still be training";
  const Clock::time_point killed = Clock::now();
  // Redis stamps the failover move with its own clock (unix ms), the same
  // machine's: the kill on that clock.
  const int64_t killed_unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::printf("%s: killed C at sweep %d of A, %d of B, %.1f s into the test\n",
              consistency, static_cast<int>(a_at_kill),
              static_cast<int>(b_at_kill), SecondsSince(began));
  ASSERT_EQ(c->Stop(SIGKILL, 10), SIGKILL);

  // Sampling never stops on the survivors: both sweep on within 2 s.
  bool advanced = false;
  while (!advanced && Clock::now() - killed < std::chrono::seconds(2)) {
    advanced = Sweeps(a) > a_at_kill && Sweeps(b) > b_at_kill;
    if (!advanced) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(advanced) << "a survivor did not complete a sweep within 2 s "
                           "of the kill"
                        << a->Log() << b->Log();

  if (std::string(consistency) != "async") {
    // ssp:1: past C's last clock (at most one sweep after what was read)
    // plus the staleness, a survivor waits until C no longer counts.
    const uint64_t past = c_at_kill + 1 + 1 + 1;
    while (Clock::now() - killed < std::chrono::seconds(10) &&
           (Sweeps(a) <= past || Sweeps(b) <= past)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_GT(Sweeps(a), past) << a->Log();
    EXPECT_GT(Sweeps(b), past) << b->Log();
    std::printf(
        "%s: both survivors past C's clock + staleness %.2f s after "
        "the kill\n",
        consistency, SecondsSince(killed));
  }

  // A survivor declares C down: a new epoch without C, C marked down.
  const sync::ClusterStatus down = AwaitDown(cluster, c_id);
  const double to_down =
      std::chrono::duration<double>(Clock::now() - killed).count();
  const sync::MemberStatus* c_down = FindMember(down, c_id);
  ASSERT_NE(c_down, nullptr) << a->Log() << b->Log();
  ASSERT_EQ(c_down->state, sync::MemberState::kDown) << a->Log() << b->Log();
  EXPECT_FALSE(c_down->in_ring);
  EXPECT_EQ(down.epoch, epoch_before + 1);
  ASSERT_TRUE(down.ring.has_value());
  EXPECT_EQ(down.ring->members.size(), 2u);
  ASSERT_TRUE(down.move.has_value());
  EXPECT_EQ(down.move->kind, sync::MoveKind::kFailover);
  EXPECT_EQ(down.move->status, sync::MoveStatus::kDone)
      << sync::DescribeMove(*down.move, down.now_ms);
  {
    auto [rc, text] = Latentctl({"cluster", "status", "--cluster-redis",
                                 redis.address(), "--cluster", "failover"});
    EXPECT_EQ(rc, 0) << text;
    EXPECT_NE(text.find("down     no"), std::string::npos) << text;
    auto [jrc, json] =
        Latentctl({"cluster", "status", "--cluster-redis", redis.address(),
                   "--cluster", "failover", "--json"});
    EXPECT_EQ(jrc, 0) << json;
    EXPECT_NE(json.find("\"state\":\"down\",\"inRing\":false"),
              std::string::npos)
        << json;
  }
  // Each survivor's failover, from the detection to its first sync round
  // with the new owners.
  double slowest = 0;
  for (Daemon* s : {a, b}) {
    EXPECT_EQ(Metric(s, "latentd_cluster_failovers_total"), 1) << s->Log();
    const double took = Metric(s, "latentd_cluster_last_failover_seconds");
    EXPECT_GT(took, 0) << s->Log();
    slowest = std::max(slowest, took);
    EXPECT_EQ(Metric(s, "latentd_cluster_members"), 2);
    EXPECT_EQ(Metric(s, "latentd_cluster_epoch"),
              static_cast<double>(down.epoch));
  }
  // The failover time: from the kill to the first sync round the
  // new owners completed = (detection, the move's start, - kill) + the
  // slowest survivor's detection-to-first-round. Reported; its detection
  // part is the failure timeout's (1 s) plus up to a heartbeat period, so
  // only the part after detection is asserted (a loaded CI machine can
  // delay the detector's poll by more than the margin).
  const double kill_to_detection =
      (down.move->started_ms - killed_unix_ms) / 1000.0;
  std::printf(
      "failover: C declared down %.2f s after the kill and the move done "
      "after %.2f s (failure timeout 1 s); detection to the first sync "
      "round with the new owners: %.3f s (slowest survivor); kill to that "
      "round: %.2f s\n",
      kill_to_detection, to_down, slowest, kill_to_detection + slowest);
  EXPECT_GT(kill_to_detection, 0.5) << "declared down before its timeout";
  EXPECT_LT(slowest, 2.0);

  // C starts again from its data directory and is re-admitted by itself.
  c = cluster.Restart(2);
  ASSERT_TRUE(c->ok()) << c->Log();
  EXPECT_NE(c->Log().find("back in cluster failover"), std::string::npos)
      << c->Log();

  ExpectBackAndExact(&cluster, freq, c_id, down.epoch + 1);
}

// Lost for good after an automatic failover (issue 13, must-show 2): C is
// killed mid-training, declared down and failed over by the survivors, and
// never comes back; `latentctl cluster remove-node C --lost` takes it out
// for good. A and B end with identical exports whose word rows sum to the
// frequencies in their own two thirds (C's third was given as a corpus,
// not ingested, so no replica of it exists to adopt).
TEST(DaemonFailover, AFailedOverDaemonRemovedAsLostLeavesTheOthersExact) {
  TestCluster cluster(FailoverOptions());
  ASSERT_TRUE(cluster.ok());
  std::vector<std::map<std::string, long long>> parts;
  ASSERT_FALSE(WriteCorpusParts(cluster.dir(), kNodes, &parts).empty());
  ASSERT_EQ(parts.size(), static_cast<size_t>(kNodes));
  std::map<std::string, long long> kept = parts[0];
  for (const auto& [word, n] : parts[1]) kept[word] += n;
  ASSERT_TRUE(
      StartThirds(&cluster, ThirdsArgs(cluster.dir(), "async", kMaxSweeps)));
  Daemon* c = cluster.node(2);
  const std::string c_id = c->tcp();
  ASSERT_EQ(c->Stop(SIGKILL, 10), SIGKILL);
  const sync::ClusterStatus down = AwaitDown(cluster, c_id);
  const sync::MemberStatus* c_down = FindMember(down, c_id);
  ASSERT_NE(c_down, nullptr);
  ASSERT_EQ(c_down->state, sync::MemberState::kDown) << cluster.node(0)->Log();
  // With --replicas 2 (the default) C's counts stay in the model while it
  // is down: its keys' new owners took over the copies of what only C
  // held, and the survivors re-seeded theirs. So once the survivors have
  // trained and drained, every word row still sums to its frequency in all
  // three thirds, C's included.
  std::map<std::string, long long> all = kept;
  for (const auto& [word, n] : parts[2]) all[word] += n;
  std::printf("failed over, C's counts kept: drained %.1f s after the kill\n",
              DrainAndCheckExact(cluster, all, {0, 1}));
  auto [rc, out] =
      Latentctl({"cluster", "remove-node", c_id, "--lost", "--cluster-redis",
                 cluster.redis().address(), "--cluster", "failover"});
  ASSERT_EQ(rc, 0) << out << cluster.node(0)->Log();
  EXPECT_NE(out.find("removed " + c_id + " (lost)"), std::string::npos) << out;
  std::printf("drained %.1f s after the removal\n",
              DrainAndCheckExact(cluster, kept, {0, 1}));
  const sync::ClusterStatus after = ReadStatus(cluster);
  EXPECT_EQ(FindMember(after, c_id), nullptr) << "C is still listed";
  ASSERT_TRUE(after.ring.has_value());
  EXPECT_EQ(after.ring->members.size(), 2u);
  cluster.StopAll();
}

TEST(DaemonFailover, AKilledDaemonIsFailedOverThenReturnsAndTheModelIsExact) {
  KillFailOverAndReturn("async");
}

// Under SSP the failover also takes the dead node out of the clocks: the
// survivors sweep on within the same 2 s, and the returned node counts
// again.
TEST(DaemonFailover, UnderSspTheSurvivorsStopWaitingForTheDeadNode) {
  KillFailOverAndReturn("ssp:1");
}

// A live node declared down (issue 13): C is stopped (SIGSTOP) longer than
// the failure timeout, so a survivor declares it down and fails it over
// while the survivors sweep on. Continued (SIGCONT), C finds itself down,
// stops sampling, shuts down and starts itself again (the same process
// image, arguments and data directory), and returns as a restarted node
// does: epoch E+2 lists it, and the cluster ends exact.
TEST(DaemonFailover, AStoppedDaemonDeclaredDownReturnsByItself) {
  TestCluster cluster(FailoverOptions());
  ASSERT_TRUE(cluster.ok());
  const std::map<std::string, long long> freq =
      WriteCorpusParts(cluster.dir(), kNodes);
  ASSERT_FALSE(freq.empty());
  std::vector<std::vector<std::string>> args =
      ThirdsArgs(cluster.dir(), "async", kMaxSweeps);
  // Fixed ports: C starts itself again at the same addresses.
  const std::vector<std::string> fixed =
      FixedPortArgs({"--listen", "--cluster-listen", "--http"});
  ASSERT_EQ(fixed.size(), 6u);
  args[2].insert(args[2].end(), fixed.begin(), fixed.end());
  ASSERT_TRUE(StartThirds(&cluster, args));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  Daemon* c = cluster.node(2);
  const std::string c_id = c->tcp();
  const uint64_t epoch_before = ReadStatus(cluster).epoch;
  // The survivors are past their first sweeps (the slowest, on a loaded
  // machine) before C stops.
  EXPECT_GE(AwaitSweeps(a, 3, 60), 3u) << a->Log();
  EXPECT_GE(AwaitSweeps(b, 3, 60), 3u) << b->Log();
  const uint64_t a_at_stop = Sweeps(a), b_at_stop = Sweeps(b);
  const Clock::time_point stopped = Clock::now();
  ASSERT_EQ(::kill(c->pid(), SIGSTOP), 0);
  // Both survivors sweep on while C is stopped (async: nothing waits for
  // it). The bound is loose: CI runs other clusters beside this one on two
  // cores.
  while (SecondsSince(stopped) < 20 &&
         (Sweeps(a) <= a_at_stop || Sweeps(b) <= b_at_stop)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double swept_after = SecondsSince(stopped);
  EXPECT_GT(Sweeps(a), a_at_stop) << a->Log();
  EXPECT_GT(Sweeps(b), b_at_stop) << b->Log();
  const sync::ClusterStatus down = AwaitDown(cluster, c_id);
  std::printf(
      "C stopped at sweep %d of A, %d of B; both swept on %.2f s later; C "
      "declared down and failed over after %.2f s\n",
      static_cast<int>(a_at_stop), static_cast<int>(b_at_stop), swept_after,
      SecondsSince(stopped));
  ASSERT_EQ(::kill(c->pid(), SIGCONT), 0);
  const sync::MemberStatus* c_down = FindMember(down, c_id);
  ASSERT_NE(c_down, nullptr);
  ASSERT_EQ(c_down->state, sync::MemberState::kDown) << a->Log();
  EXPECT_EQ(down.epoch, epoch_before + 1);

  // C finds out, restarts itself and is back.
  for (int i = 0; i < 1200 && c->Log().find("back in cluster failover") ==
                                  std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(c->Log().find("back in cluster failover"), std::string::npos)
      << c->Log();
  EXPECT_NE(c->Log().find("this node was declared down"), std::string::npos);
  EXPECT_NE(c->Log().find("starting again to return"), std::string::npos);
  ExpectBackAndExact(&cluster, freq, c_id, epoch_before + 2);
}

// Redis restart (issue 13, must-show 4): Redis, persistent (an append-only
// file, as an operator runs it), is killed mid-training and started again
// on the same socket 5 s later. Training never stops: every node sweeps on
// during the outage, in both its halves. Each node logs the outage and,
// once Redis is back, writes its heartbeat again; none judges the others
// until they have had a failure timeout to beat again, so nobody is
// declared down, the epoch stays, and the cluster ends exact.
TEST(DaemonRedisOutage, TrainingGoesOnAndNobodyIsDeclaredDown) {
  TestCluster cluster(FailoverOptions(/*persistent_redis=*/true));
  ASSERT_TRUE(cluster.ok());
  RedisServer& redis = cluster.redis();
  const std::map<std::string, long long> freq =
      WriteCorpusParts(cluster.dir(), kNodes);
  ASSERT_FALSE(freq.empty());
  // Long enough to train through the outage and the failure timeouts that
  // follow it, about 15 s: 250 sweeps ran out before the check on a quiet
  // machine (the generated corpus samples at 20+ sweeps a second a node);
  // 600 leave room up to 40 a second and drain within a minute at 10.
  ASSERT_TRUE(StartThirds(&cluster, ThirdsArgs(cluster.dir(), "async", "600")));
  const std::vector<Daemon*> d = cluster.nodes();
  const sync::ClusterStatus before = ReadStatus(cluster);
  ASSERT_GE(before.epoch, 1u);
  ASSERT_EQ(before.members.size(), 3u);

  auto sweeps = [&]() {
    std::vector<uint64_t> v;
    for (Daemon* n : d) v.push_back(Sweeps(n));
    return v;
  };
  const std::vector<uint64_t> at_kill = sweeps();
  redis.Kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const std::vector<uint64_t> half_way = sweeps();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const std::vector<uint64_t> at_restart = sweeps();
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_GT(half_way[i], at_kill[i]) << "node " << i << d[i]->Log();
    EXPECT_GT(at_restart[i], half_way[i]) << "node " << i << d[i]->Log();
    EXPECT_NE(d[i]->Log().find("Redis unreachable"), std::string::npos)
        << d[i]->Log();
  }
  std::printf(
      "Redis down 5 s: sweeps %d/%d/%d at the kill, %d/%d/%d half way, "
      "%d/%d/%d at the restart\n",
      static_cast<int>(at_kill[0]), static_cast<int>(at_kill[1]),
      static_cast<int>(at_kill[2]), static_cast<int>(half_way[0]),
      static_cast<int>(half_way[1]), static_cast<int>(half_way[2]),
      static_cast<int>(at_restart[0]), static_cast<int>(at_restart[1]),
      static_cast<int>(at_restart[2]));
  ASSERT_TRUE(redis.Restart());

  // Every node writes its heartbeat again (logged)...
  for (int i = 0; i < kNodes; ++i) {
    for (int t = 0;
         t < 100 && d[i]->Log().find("Redis back after") == std::string::npos;
         ++t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_NE(d[i]->Log().find("Redis back after"), std::string::npos)
        << d[i]->Log();
  }
  // ... and three failure timeouts later, still training, nobody has been
  // declared down: the same epoch, every member active with a fresh
  // heartbeat, no failover anywhere.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const sync::ClusterStatus after = ReadStatus(cluster);
  EXPECT_EQ(after.epoch, before.epoch);
  ASSERT_EQ(after.members.size(), 3u);
  for (const sync::MemberStatus& m : after.members) {
    EXPECT_EQ(m.state, sync::MemberState::kActive) << m.id;
    EXPECT_TRUE(m.in_ring) << m.id;
    ASSERT_TRUE(m.heartbeat.has_value()) << m.id;
    EXPECT_LT(after.now_ms - m.heartbeat->unix_ms, 1000) << m.id;
  }
  EXPECT_FALSE(after.move.has_value() &&
               after.move->status == sync::MoveStatus::kRunning);
  const std::vector<uint64_t> checked = sweeps();
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_GT(checked[i], at_restart[i]) << "node " << i;
    EXPECT_LT(checked[i], 600u)
        << "node " << i << ": training ended before the check";
    EXPECT_EQ(Metric(d[i], "latentd_cluster_failovers_total"), 0);
    EXPECT_EQ(Metric(d[i], "latentd_cluster_members"), 3);
    EXPECT_EQ(d[i]->Log().find(" down (no heartbeat"), std::string::npos)
        << d[i]->Log();
    EXPECT_EQ(d[i]->Log().find("was declared down"), std::string::npos)
        << d[i]->Log();
  }

  std::printf("drained %.1f s after the check\n",
              DrainAndCheckExact(cluster, freq));
  EXPECT_EQ(ReadStatus(cluster).epoch, before.epoch);
  cluster.StopAll();
}

// What a node logs, once per outage, when Redis is away while it joins.
constexpr const char* kJoinRetryLine =
    "Redis unreachable while joining: retrying every";

// Waits (up to `seconds`) until `d`'s log holds `text`.
bool AwaitLog(Daemon* d, const std::string& text, int seconds) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (d->Log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return d->Log().find(text) != std::string::npos;
}

// How often `text` occurs in `log`.
int Count(const std::string& log, const std::string& text) {
  int n = 0;
  for (size_t at = log.find(text); at != std::string::npos;
       at = log.find(text, at + text.size())) {
    ++n;
  }
  return n;
}

// Fails the test if `d` has exited (it must be waiting out the outage).
void ExpectStillWaiting(Daemon* d) {
  int status = 0;
  EXPECT_FALSE(d->Exited(&status))
      << d->data_dir() << " exited (wait status " << status << ")\n"
      << d->Log();
}

// Redis away while a cluster forms (issue 30): the three nodes start with
// Redis killed, each logs the retry line once and waits (none exits);
// Redis comes back 2.5 s later and they form the cluster, train and end
// exact at epoch 1.
TEST(DaemonJoinRedisOutage, NodesStartedWhileRedisIsDownJoinOnceItIsBack) {
  TestCluster cluster({.name = "joinoutage", .persistent_redis = true});
  ASSERT_TRUE(cluster.ok());
  RedisServer& redis = cluster.redis();
  const std::map<std::string, long long> freq =
      WriteCorpusParts(cluster.dir(), kNodes);
  ASSERT_FALSE(freq.empty());
  redis.Kill();
  ASSERT_TRUE(cluster.Start(ThirdsArgs(cluster.dir(), "async", kMaxSweeps),
                            /*wait=*/false));
  const std::vector<Daemon*> d = cluster.nodes();
  for (Daemon* n : d) {
    EXPECT_TRUE(AwaitLog(n, kJoinRetryLine, 30)) << n->Log();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  for (Daemon* n : d) {
    ExpectStillWaiting(n);
    EXPECT_EQ(Count(n->Log(), kJoinRetryLine), 1) << n->Log();
  }
  ASSERT_TRUE(redis.Restart());
  for (Daemon* n : d) {
    ASSERT_TRUE(n->WaitForPorts()) << n->Log();
    EXPECT_NE(n->Log().find("joining cluster joinoutage goes on"),
              std::string::npos)
        << n->Log();
  }
  std::printf("formed after Redis came back; drained %.1f s later\n",
              DrainAndCheckExact(cluster, freq));
  const sync::ClusterStatus st = ReadStatus(cluster);
  EXPECT_EQ(st.epoch, 1u);
  EXPECT_EQ(st.members.size(), 3u);
  cluster.StopAll();
}

// A failed-over node returning through a Redis outage (issue 30): C is
// killed, declared down and failed over; Redis is killed and C restarted
// with its command line: it finds Redis away as it starts to return, logs
// the retry line and waits; Redis (persistent) comes back 2.5 s later, C
// returns (epoch E+2) and the cluster ends exact.
TEST(DaemonJoinRedisOutage, AFailedOverNodeReturnsOnceRedisIsBack) {
  TestCluster cluster(FailoverOptions(/*persistent_redis=*/true));
  ASSERT_TRUE(cluster.ok());
  RedisServer& redis = cluster.redis();
  const std::map<std::string, long long> freq =
      WriteCorpusParts(cluster.dir(), kNodes);
  ASSERT_FALSE(freq.empty());
  ASSERT_TRUE(StartThirds(&cluster, ThirdsArgsFixedC(cluster.dir(), "async")));
  Daemon* c = cluster.node(2);
  const std::string c_id = c->tcp();
  const uint64_t epoch_before = ReadStatus(cluster).epoch;
  ASSERT_EQ(c->Stop(SIGKILL, 10), SIGKILL);
  const sync::ClusterStatus down = AwaitDown(cluster, c_id);
  const sync::MemberStatus* c_down = FindMember(down, c_id);
  ASSERT_NE(c_down, nullptr) << cluster.Logs();
  ASSERT_EQ(c_down->state, sync::MemberState::kDown) << cluster.Logs();
  ASSERT_EQ(down.epoch, epoch_before + 1);

  redis.Kill();
  c = cluster.Restart(2, /*wait=*/false);
  EXPECT_TRUE(AwaitLog(c, kJoinRetryLine, 30)) << c->Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ExpectStillWaiting(c);
  EXPECT_EQ(Count(c->Log(), kJoinRetryLine), 1) << c->Log();
  EXPECT_EQ(c->Log().find("back in cluster failover"), std::string::npos);
  ASSERT_TRUE(redis.Restart());
  ASSERT_TRUE(c->WaitForPorts()) << c->Log();
  EXPECT_NE(c->Log().find("joining cluster failover goes on"),
            std::string::npos)
      << c->Log();
  EXPECT_NE(c->Log().find("back in cluster failover"), std::string::npos)
      << c->Log();
  ExpectBackAndExact(&cluster, freq, c_id, down.epoch + 1);
}

}  // namespace
}  // namespace latentd::testing
