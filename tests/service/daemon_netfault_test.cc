// Network faults, Jepsen-style: four latentd nodes, each in a network
// namespace of its own, and Redis in another (tests/service/
// netns_topology.h), train small quarters of the test corpus with
// --replicas 2 and a failure timeout of 1 s while a client ingests one
// document per call into nodes drawn from the seed. A sequence of seeded
// fault schedules (tests/service/netfault_schedule.h) runs on that one
// cluster: a node cut off from everyone, a node cut off from Redis only,
// the four cut into two halves (Redis with both or with one half), a link
// flapping down and up every second. After each schedule the links are
// healed and the checker runs:
// - recovery: all four are back in the ring within 60 s with nobody's help
//   (a node failed over while alive restarts itself and returns; one that
//   exits is started again as systemd would, reported: kExitOnReturn),
//   and only a node that could not reach Redis may have been failed over;
// - every document whose call failed is sent again with its source until
//   acknowledged (so every document sent is acknowledged);
// - the cluster drains (nothing pending, every node with four members) and
//   every node's export is exact: each word's row sums to its tokens in the
//   quarters and the documents sent, so every acknowledged document counts
//   once; no count is negative; Σ_k n_k is every token;
// - every user's events are all in its profile, none twice, on every node
//   (also those an interim owner acknowledged while the user's owner was
//   failed over: the owner adds up every member's part), and every node
//   answers Infer and ListTopics.
// One line per schedule says what happened. At the end every node stops
// with exit 0.
//
// Skipped (exit 77, the reason printed) when not root or `ip netns` is
// unavailable. LATENTD_NETFAULT_SEED (1), LATENTD_NETFAULT_SCHEDULES (6),
// LATENTD_NETFAULT_CUT_MS ("2000-2500"), LATENTD_NETFAULT_FLAP_MS (1000)
// and LATENTD_NETFAULT_FLAP_CYCLES (3) set the campaign (ops/chaos.sh);
// LATENTD_NETFAULT_SWEEP_MS (20) spaces each node's sweeps (NetCluster);
// LATENTD_NETFAULT_KINDS ("halves,flap": only those kinds; default all)
// and LATENTD_NETFAULT_GDB=1 writes the stacks of a node that does not come
// back into the test directory (kept with LATENTD_KEEP_TEST_DIRS).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "sync/control/cluster_admin.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"
#include "tests/service/netfault_cluster.h"
#include "tests/service/netfault_schedule.h"
#include "tests/service/netfault_workload.h"
#include "tests/service/netns_topology.h"

namespace latentd::testing {
namespace {

using service::Method;
using service::Protocol;
using Clock = std::chrono::steady_clock;

constexpr int kNodes = 4;
constexpr int kDocsPerNode = 30;
constexpr int kUsers = 12;

struct Campaign {
  uint32_t seed = 1;
  // Seeds 1-6: every kind (seed % 4), a node cut from Redis and halves
  // twice each, halves with Redis on one side (seed 2) and with both
  // (seed 6). Longer campaigns: ops/chaos.sh.
  int schedules = 6;
  // Only schedules of these kinds run (FaultKindName); empty: all.
  std::set<std::string> kinds;
  FaultDurations durations{
      .cut_min_ms = 2000, .cut_max_ms = 2500, .lead_max_ms = 600};
};

Campaign ReadCampaign() {
  Campaign c;
  auto num = [](const char* name, auto* out) {
    const char* s = std::getenv(name);
    if (s != nullptr) {
      EXPECT_TRUE(absl::SimpleAtoi(s, out)) << name << "=" << s;
    }
  };
  num("LATENTD_NETFAULT_SEED", &c.seed);
  num("LATENTD_NETFAULT_SCHEDULES", &c.schedules);
  num("LATENTD_NETFAULT_FLAP_MS", &c.durations.flap_ms);
  num("LATENTD_NETFAULT_FLAP_CYCLES", &c.durations.flap_cycles);
  if (const char* s = std::getenv("LATENTD_NETFAULT_KINDS")) {
    std::vector<std::string> kinds = absl::StrSplit(s, ',', absl::SkipEmpty());
    for (const std::string& k : kinds) {
      bool known = false;
      for (FaultKind f : {FaultKind::kIsolate, FaultKind::kRedisCut,
                          FaultKind::kHalves, FaultKind::kFlap}) {
        known = known || k == FaultKindName(f);
      }
      EXPECT_TRUE(known) << "LATENTD_NETFAULT_KINDS: no kind '" << k
                         << "' (isolate, redis-cut, halves, flap)";
      c.kinds.insert(k);
    }
  }
  if (const char* s = std::getenv("LATENTD_NETFAULT_CUT_MS")) {
    std::vector<std::string> mm = absl::StrSplit(s, '-');
    EXPECT_TRUE(mm.size() == 2 &&
                absl::SimpleAtoi(mm[0], &c.durations.cut_min_ms) &&
                absl::SimpleAtoi(mm[1], &c.durations.cut_max_ms))
        << "LATENTD_NETFAULT_CUT_MS=" << s << " (want MIN-MAX)";
  }
  return c;
}

// The node whose API address is `id`; -1 if none.
int NodeOf(const TestCluster& cluster, const std::string& id) {
  for (int i = 0; i < cluster.size(); ++i) {
    if (cluster.node(i)->tcp() == id) return i;
  }
  return -1;
}

// One node's view, for the checker.
struct NodeCheck {
  bool ok = false;
  std::string why;  // what is not right yet
};

// Whether node i has drained and exports the exact model `want` (row sums)
// with Σ n_k = `tokens` and no negative count.
NodeCheck CheckNode(const TestCluster& cluster, int i,
                    const std::map<std::string, long long>& want,
                    long long tokens) {
  Daemon* d = cluster.node(i);
  auto c =
      service::ApiClient::Create(d->tcp(), Protocol::kTcp, absl::Seconds(10));
  if (!c.ok()) return {false, c.status().ToString()};
  api::StatusRequest req;
  api::StatusResponse st;
  if (absl::Status s = (*c)->Call(Method::kStatus, req, &st); !s.ok()) {
    return {false, absl::StrCat("Status: ", s.ToString())};
  }
  if (st.pending() != 0 || st.cluster_members_size() != kNodes) {
    return {false, absl::StrCat(st.pending(), " pending, ",
                                st.cluster_members_size(), " members")};
  }
  const std::string dir = absl::StrCat(cluster.dir(), "/x", i);
  auto [rc, out] =
      Latentctl({"export", "--addr", d->tcp(), "--out", dir, "--overwrite"});
  if (rc != 0) return {false, "export: " + out};
  std::ifstream in(dir + "/word_topic_counts.tsv");
  std::stringstream text;
  text << in.rdbuf();
  const std::string counts = text.str();
  if (counts.find(":-") != std::string::npos) {
    return {false, "a negative count in the export"};
  }
  const std::map<std::string, long long> sums = RowSums(counts);
  if (sums != want) {
    int wrong = 0;
    std::string first;
    for (const auto& [w, n] : want) {
      auto it = sums.find(w);
      const long long got = it == sums.end() ? -1 : it->second;
      if (got != n && wrong++ < 8) {
        absl::StrAppend(&first, wrong > 1 ? ", " : "", "'", w, "' ", got,
                        " instead of ", n);
      }
    }
    return {false,
            absl::StrCat(wrong, " words off (", first, "), ", sums.size(),
                         " words exported of ", want.size())};
  }
  api::ListTopicsRequest topics_req;
  topics_req.set_top_words(1);
  api::ListTopicsResponse topics;
  if (absl::Status s = (*c)->Call(Method::kListTopics, topics_req, &topics);
      !s.ok()) {
    return {false, absl::StrCat("ListTopics: ", s.ToString())};
  }
  std::vector<int64_t> n_k;
  for (const api::Topic& t : topics.topics()) n_k.push_back(t.tokens());
  if (Sum(n_k) != tokens ||
      std::any_of(n_k.begin(), n_k.end(), [](int64_t n) { return n < 0; })) {
    return {false,
            absl::StrCat("sum of n_k ", Sum(n_k), " instead of ", tokens)};
  }
  return {true, ""};
}

// Reported on the schedule's line: a node that exited by itself. A node
// returning (or joining) retries Redis errors that say Redis is away (a
// flapping link) until --join-timeout (service/cluster/internal/
// join_redis.h), so an exit now means an outage longer than that or a
// refusal (the error is quoted); systemd (Restart=on-failure) starts it
// again, and so does the checker.
constexpr const char* kExitOnReturn =
    "EXITED (exit on return): a failed-over node exited while it joined "
    "again (a Redis outage past --join-timeout, or a refusal: see its "
    "error); restarted as systemd would";

// Every user's events in its profile, none counted twice, and the
// queries, on every node.
void CheckQueries(const TestCluster& cluster,
                  const std::map<std::string, int>& events) {
  for (int i = 0; i < cluster.size(); ++i) {
    auto c = cluster.node(i)->Client(Protocol::kTcp);
    EXPECT_NE(c, nullptr);
    if (c == nullptr) return;
    for (const auto& [user, n] : events) {
      api::GetUserProfileRequest req;
      req.set_user(user);
      api::GetUserProfileResponse resp;
      absl::Status s = c->Call(Method::kGetUserProfile, req, &resp);
      EXPECT_TRUE(s.ok()) << "node " << i << ", " << user << ": " << s;
      EXPECT_EQ(resp.events(), static_cast<uint64_t>(n))
          << "node " << i << ": " << user << "'s profile has " << resp.events()
          << " of its " << n << " events";
      EXPECT_EQ(resp.missing_members_size(), 0)
          << "node " << i << ", " << user << ": a member's part is missing";
    }
    api::InferDocumentRequest infer;
    infer.set_text("market prices rose");
    api::InferDocumentResponse topics;
    EXPECT_TRUE(c->Call(Method::kInferDocument, infer, &topics).ok())
        << "node " << i << " does not answer Infer";
    api::ListTopicsRequest list;
    api::ListTopicsResponse listed;
    EXPECT_TRUE(c->Call(Method::kListTopics, list, &listed).ok())
        << "node " << i << " does not answer ListTopics";
  }
}

// The failed-over members (down in Redis), as node indexes.
std::vector<int> DownNodes(const TestCluster& cluster,
                           const sync::ClusterStatus& st) {
  std::vector<int> down;
  for (const sync::MemberStatus& m : st.members) {
    if (m.state == sync::MemberState::kDown) {
      down.push_back(NodeOf(cluster, m.id));
    }
  }
  return down;
}

bool AllBack(const sync::ClusterStatus& st) {
  if (st.move.has_value() && st.move->status == sync::MoveStatus::kRunning) {
    return false;
  }
  int in_ring = 0;
  for (const sync::MemberStatus& m : st.members) {
    if (m.state != sync::MemberState::kActive || !m.in_ring) return false;
    ++in_ring;
  }
  return in_ring == kNodes;
}

// What one schedule did, for its summary line.
struct Outcome {
  std::vector<int> failed_over;
  double back_s = -1, exact_s = -1;
  std::vector<std::string> exited;  // nodes that exited, and why
  int sent = 0, acked_first = 0, failed_calls = 0, left = 0;
  bool exact = false;
};

void ApplyFaults(NetTopology* net, const FaultSchedule& s) {
  SleepMs(s.lead_ms);
  for (int cycle = 0; cycle < s.cycles; ++cycle) {
    if (cycle > 0) SleepMs(s.cut_ms);
    for (const auto& [a, b] : s.links) ASSERT_TRUE(net->Cut(a, b).ok());
    SleepMs(s.cut_ms);
    ASSERT_TRUE(net->HealAll().ok());
  }
}

// Waits (up to 60 s) until every node is back in the ring, as active
// members, with no move running: a node failed over while alive restarts
// itself (latentd re-executes itself with its command line) and returns.
// Records who was failed over; only a node cut from Redis may be. Returns
// the seconds it took, -1 if they did not come back.
double AwaitBack(TestCluster* cluster, const FaultSchedule& s, Outcome* out) {
  const Clock::time_point healed = Clock::now();
  std::set<int> seen_down;
  bool dumped = false;
  while (Since(healed) < 60) {
    // A node that exited by itself is restarted, as its systemd unit does
    // (Restart=on-failure), and reported: see kExitOnReturn.
    for (int i = 0; i < cluster->size(); ++i) {
      int status = 0;
      if (!cluster->node(i)->Exited(&status)) continue;
      const std::string log = cluster->node(i)->Log();
      const size_t error = log.rfind(" error ");
      out->exited.push_back(absl::StrCat(
          "n", i, " exited (status ", WEXITSTATUS(status), ": ",
          error == std::string::npos
              ? std::string("?")
              : log.substr(error + 7, log.find('\n', error) - error - 7),
          ")"));
      SleepMs(1000);
      EXPECT_TRUE(cluster->Restart(i)->ok())
          << "node " << i << " did not start again:\n"
          << cluster->node(i)->Log();
    }
    const sync::ClusterStatus st =
        ReadStatus(cluster->redis(), cluster->name());
    if (AllBack(st)) return Since(healed);
    for (int i : DownNodes(*cluster, st)) {
      if (seen_down.insert(i).second) {
        out->failed_over.push_back(i);
        EXPECT_TRUE(std::find(s.cut_from_redis.begin(), s.cut_from_redis.end(),
                              i) != s.cut_from_redis.end())
            << "node " << i << " was failed over though it reached Redis";
      }
    }
    if (!dumped && Since(healed) > 20 && std::getenv("LATENTD_NETFAULT_GDB")) {
      dumped = true;
      for (int i : seen_down) {
        const std::string cmd =
            absl::StrCat("gdb -p ", cluster->node(i)->pid(),
                         " -batch -ex 'thread apply all bt' > ", cluster->dir(),
                         "/stack", i, ".txt 2>&1");
        std::system(cmd.c_str());
      }
    }
    SleepMs(200);
  }
  return -1;
}

Outcome RunSchedule(TestCluster* cluster, NetTopology* net, Workload* load,
                    const FaultSchedule& s,
                    const std::map<std::string, long long>& base) {
  Outcome out;
  load->Start();
  ApplyFaults(net, s);
  out.back_s = AwaitBack(cluster, s, &out);
  load->Pause();
  const Workload::Counts before = load->counts();
  out.sent = before.sent;
  out.acked_first = before.acked;
  out.failed_calls = before.failed_calls;
  EXPECT_GE(out.back_s, 0) << "the cluster did not come back within 60 s"
                           << cluster->Logs();
  if (out.back_s < 0) return out;
  out.left = load->Settle(30);
  EXPECT_EQ(out.left, 0) << "documents still not acknowledged 30 s after "
                            "the cluster came back; last error: "
                         << load->counts().last_error;

  std::map<std::string, long long> want = base;
  long long tokens = 0;
  for (const auto& [w, n] : load->Freq()) want[w] += n;
  for (const auto& [w, n] : want) tokens += n;
  const Clock::time_point checking = Clock::now();
  std::vector<NodeCheck> checks(kNodes);
  while (Since(checking) < 60) {
    out.exact = true;
    for (int i = 0; i < kNodes; ++i) {
      checks[i] = CheckNode(*cluster, i, want, tokens);
      out.exact &= checks[i].ok;
    }
    if (out.exact) break;
    SleepMs(250);
  }
  out.exact_s = Since(checking);
  for (int i = 0; i < kNodes; ++i) {
    EXPECT_TRUE(checks[i].ok) << "node " << i << " is not exact 60 s after "
                              << "the cluster came back: " << checks[i].why;
  }
  if (!out.exact) {
    ADD_FAILURE() << cluster->Logs();
    return out;
  }
  CheckQueries(*cluster, load->UserEvents());
  return out;
}

std::string Nodes(const std::vector<int>& v) {
  if (v.empty()) return "none";
  std::vector<std::string> n;
  for (int i : v) n.push_back(absl::StrCat("n", i));
  return absl::StrJoin(n, ",");
}

TEST(DaemonNetFault, SeededPartitionsHealExact) {
  const std::string why = NetTopology::Unavailable();
  if (!why.empty()) GTEST_SKIP() << "no network namespaces: " << why;
  const Campaign campaign = ReadCampaign();
  NetCluster net(kNodes, "1", kDocsPerNode);
  ASSERT_TRUE(net.ok());
  TestCluster& cluster = *net.cluster;
  NetTopology* topo = net.net.get();
  const std::map<std::string, long long>& base = net.base;
  const Clock::time_point began = Clock::now();
  std::vector<std::string> addresses;
  for (Daemon* d : cluster.nodes()) addresses.push_back(d->tcp());
  std::printf("netfault: 4 nodes up in %.1f s; seed %u, %d schedules\n",
              net.up_s, campaign.seed, campaign.schedules);
  Workload load(addresses, campaign.seed, kUsers, /*call_timeout_ms=*/2000,
                /*pause_ms=*/30);
  int passed = 0;
  // `schedules` schedules run, of consecutive seeds (with a kind filter,
  // up to eight times as many seeds are drawn: a kind is every fourth).
  const uint32_t seeds = (campaign.kinds.empty() ? 1 : 8) * campaign.schedules;
  int ran = 0;
  for (uint32_t seed = campaign.seed;
       ran < campaign.schedules && seed < campaign.seed + seeds; ++seed) {
    const FaultSchedule s = MakeSchedule(seed, kNodes, campaign.durations);
    if (!campaign.kinds.empty() &&
        !campaign.kinds.contains(FaultKindName(s.kind))) {
      continue;
    }
    ++ran;
    SCOPED_TRACE(
        absl::StrCat("schedule ", ran, " (seed ", s.seed, "): ", Describe(s)));
    const Clock::time_point t = Clock::now();
    const Outcome o = RunSchedule(&cluster, topo, &load, s, base);
    const bool ok = !::testing::Test::HasFailure();
    passed += ok ? 1 : 0;
    std::printf(
        "netfault schedule %d seed %u [%s] %s: %.1f s; %d documents sent, "
        "%d acknowledged at first (%d calls failed), %d left; failed over: "
        "%s; all back %.1f s after the heal, exact %.1f s later%s%s\n",
        ran, s.seed, ok ? "ok" : "FAILED", Describe(s).c_str(), Since(t),
        o.sent, o.acked_first, o.failed_calls, o.left,
        Nodes(o.failed_over).c_str(), o.back_s, o.exact_s,
        o.exited.empty() ? "" : "; ",
        o.exited.empty()
            ? ""
            : absl::StrCat(absl::StrJoin(o.exited, ", "), ": ", kExitOnReturn)
                  .c_str());
    std::fflush(stdout);
    if (!ok) break;
  }
  EXPECT_GE(ran, campaign.schedules) << "too few schedules of those kinds";
  std::printf("netfault: %d of %d schedules passed in %.1f s\n", passed, ran,
              Since(began));
  cluster.StopAll();
}

}  // namespace
}  // namespace latentd::testing
