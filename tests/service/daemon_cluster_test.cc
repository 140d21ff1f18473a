// latentd in cluster mode (issue 5: "the same daemon is a cluster node"):
// two daemons join one cluster through a private redis-server (Unix socket)
// and train one model over their own token stores; users' events (over the
// API or a Redis stream) and profile queries go to the user's owner by the
// ring, whichever node they reach. Every process runs on 127.0.0.1 and is
// stopped at the end.
#include <google/protobuf/util/message_differencer.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "service/cluster/local_cluster.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"
#include "tests/service/gateway_test_util.h"
#include "tests/sync/test_pki.h"

namespace latentd::testing {
namespace {

using service::Method;
using service::Protocol;

constexpr int kUsers = 20;        // events ingested over the API
constexpr int kStreamUsers = 10;  // events read from a Redis stream
const char* kEvents[] = {
    "oil prices rose as opec ministers met in vienna",
    "the stock market fell sharply on wall street today",
};

// Once the two daemons have stopped training (the ring holding just them)
// and drained: both see the same topic totals, adding up to the tokens of
// their two stores.
void ExpectOneModelOverTheirTokens(Daemon* a, Daemon* b) {
  auto ca = a->Client(Protocol::kTcp);
  auto cb = b->Client(Protocol::kTcp);
  auto done = [](const api::StatusResponse& s) {
    return !s.training() && s.pending() == 0 && s.cluster_members_size() == 2;
  };
  auto fa = WaitStatus(ca.get(), done, 180);
  auto fb = WaitStatus(cb.get(), done, 180);
  ASSERT_TRUE(fa.ok()) << fa.status() << a->Log();
  ASSERT_TRUE(fb.ok()) << fb.status() << b->Log();
  const int64_t tokens = static_cast<int64_t>(fa->tokens() + fb->tokens());
  std::vector<int64_t> na, nb;
  for (int i = 0; i < 300; ++i) {
    na = TopicTotals(ca.get());
    nb = TopicTotals(cb.get());
    if (Sum(na) == tokens && na == nb) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Sum(na), tokens) << a->Log() << b->Log();
  EXPECT_EQ(na, nb);
}

// Whether the node `c` talks to holds a document of `user` (its part of
// the user's profile, as the user's owner asks for it).
bool HoldsPart(service::ApiClient* c, const std::string& user) {
  api::GetUserProfileRequest req;
  req.set_user(user);
  req.set_local(true);
  req.set_part(true);
  api::GetUserProfileResponse p;
  return c->Call(Method::kGetUserProfile, req, &p).ok();
}

// Cluster mode needs the cluster key or an explicit --insecure; a key file
// others can read is refused. Each refusal says what to do.
// Every reason of latentd_sync_batches_refused_total is exported, and 0:
// no member was refused anything (issue 29).
void ExpectNoRefusals(Daemon* d) {
  for (const char* reason :
       {"not_member", "incarnation", "key_not_owned", "negative",
        "sender_mismatch", "handoff_not_member", "replica_not_member",
        "identity", "progress_not_member"}) {
    EXPECT_EQ(Metric(d, absl::StrCat("latentd_sync_batches_refused_total{"
                                     "reason=\"",
                                     reason, "\"}")),
              0)
        << reason;
  }
}

TEST(DaemonCluster, ClusterModeWithoutAKeyRefusesToStart) {
  TempDir tmp;
  RedisServer redis(tmp.path());
  ASSERT_TRUE(redis.ok());
  std::vector<std::string> args = {"--topics",        "5",
                                   "--cluster-redis", redis.address(),
                                   "--cluster",       "nokey"};
  for (const std::string& a : TestCorpusArgs()) args.push_back(a);
  Daemon none(tmp.path() + "/none", args, false);
  EXPECT_FALSE(none.WaitForPorts());
  EXPECT_NE(none.Log().find("needs the cluster key: --cluster-key FILE"),
            std::string::npos)
      << none.Log();
  std::vector<std::string> exposed = args;
  for (const std::string& a : ClusterKeyArgs(tmp.path())) exposed.push_back(a);
  ::chmod(exposed.back().c_str(), 0644);
  Daemon open(tmp.path() + "/open", exposed, false);
  EXPECT_FALSE(open.WaitForPorts());
  EXPECT_NE(open.Log().find("chmod 600"), std::string::npos) << open.Log();
}

TEST(DaemonCluster, TwoNodesTrainOneModelAndRouteUsersToTheirOwner) {
  // B's death below is about the survivor's view of a dead peer, without
  // failover (TestCluster's default; daemon_failover_test has that).
  TestCluster cluster({.name = "test"});
  ASSERT_TRUE(cluster.ok());
  RedisServer& redis = cluster.redis();
  const std::vector<std::string> args = TrainingArgs("20", "12");
  // A also consumes a Redis stream of users' events.
  std::vector<std::string> a_args = args;
  for (const std::string& f :
       {std::string("--redis"), redis.address(), std::string("--redis-stream"),
        std::string("events")}) {
    a_args.push_back(f);
  }
  ASSERT_TRUE(cluster.Start({a_args, args}));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  auto ca = a->Client(Protocol::kTcp);
  auto cb = b->Client(Protocol::kHttpJson);

  // Both report the same two-member ring, each under its API address.
  api::StatusResponse sa, sb;
  ASSERT_TRUE(ca->Call(Method::kStatus, api::StatusRequest(), &sa).ok());
  absl::Status sbs = cb->Call(Method::kStatus, api::StatusRequest(), &sb);
  ASSERT_TRUE(sbs.ok()) << sbs << b->Log();
  EXPECT_EQ(sa.node_id(), a->tcp());
  EXPECT_EQ(sb.node_id(), b->tcp());
  ASSERT_EQ(sa.cluster_members_size(), 2);
  EXPECT_EQ(sa.cluster_members(0), sb.cluster_members(0));
  EXPECT_EQ(sa.cluster_members(1), sb.cluster_members(1));

  // Every user's events arrive at A; each must end up on its owner.
  api::IngestRequest ingest;
  for (int u = 0; u < kUsers; ++u) {
    for (int e = 0; e < 2; ++e) {
      api::Document* d = ingest.add_documents();
      d->set_user(absl::StrCat("user", u));
      d->set_text(kEvents[e]);
      d->set_source(absl::StrCat("event-", u, "-", e));
    }
  }
  api::IngestResponse ack;
  ASSERT_TRUE(ca->Call(Method::kIngest, ingest, &ack).ok());
  EXPECT_EQ(ack.accepted(), 2u * kUsers);
  // Sent again (same sources): every copy is dropped, here or at the owner.
  ASSERT_TRUE(ca->Call(Method::kIngest, ingest, &ack).ok());
  EXPECT_EQ(ack.accepted(), 0u);
  // A forwarded request (local) whose document has only words no node
  // holds is taken whole: the vocabulary grows (new keys at their owners).
  api::IngestRequest forwarded;
  forwarded.set_local(true);
  forwarded.add_documents()->set_text("zqxjv wkpfq");
  forwarded.add_documents()->set_text(kEvents[0]);
  absl::Status fs = ca->Call(Method::kIngest, forwarded, &ack);
  ASSERT_TRUE(fs.ok()) << fs;
  EXPECT_EQ(ack.accepted(), 2u);
  // The stream's events reach their owners too, and are acknowledged.
  redisContext* rc = redis.Connect();
  ASSERT_NE(rc, nullptr);
  for (int u = 0; u < kStreamUsers; ++u) {
    XAdd(rc, "events", absl::StrCat("s", u), absl::StrCat("streamer", u),
         kEvents[u % 2]);
  }

  // Training stops at sweep 12 on both; then the background rounds bring
  // both nodes to the same global counts: Σ_k n_k = both stores' tokens.
  for (int i = 0; i < 300 && RedisPending(rc, "events") != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(RedisPending(rc, "events"), 0);
  redisFree(rc);
  auto done = [](const api::StatusResponse& s) {
    return !s.training() && s.pending() == 0;
  };
  auto fa = WaitStatus(ca.get(), done, 120);
  auto fb = WaitStatus(cb.get(), done, 120);
  ASSERT_TRUE(fa.ok()) << fa.status() << a->Log();
  ASSERT_TRUE(fb.ok()) << fb.status() << b->Log();
  EXPECT_EQ(fa->users() + fb->users(),
            static_cast<uint64_t>(kUsers + kStreamUsers));
  EXPECT_GT(fa->users(), 0u) << "20 users, none owned by A";
  EXPECT_GT(fb->users(), 0u) << "20 users, none owned by B";
  const int64_t tokens = static_cast<int64_t>(fa->tokens() + fb->tokens());
  std::vector<int64_t> na, nb;
  for (int i = 0; i < 300; ++i) {
    na = TopicTotals(ca.get());
    nb = TopicTotals(cb.get());
    if (Sum(na) == tokens && na == nb) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Sum(na), tokens);
  EXPECT_EQ(na, nb);

  // A profile query gets the owner's answer from either node.
  for (int u = 0; u < kUsers; ++u) {
    api::GetUserProfileRequest req;
    req.set_user(absl::StrCat("user", u));
    api::GetUserProfileResponse pa, pb;
    absl::Status s = ca->Call(Method::kGetUserProfile, req, &pa);
    ASSERT_TRUE(s.ok()) << req.user() << ": " << s;
    ASSERT_TRUE(cb->Call(Method::kGetUserProfile, req, &pb).ok());
    EXPECT_EQ(pa.events(), 2u) << req.user();
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(pa, pb))
        << req.user() << "\nA: " << pa.ShortDebugString()
        << "\nB: " << pb.ShortDebugString();
  }
  for (int u = 0; u < kStreamUsers; ++u) {
    api::GetUserProfileRequest req;
    req.set_user(absl::StrCat("streamer", u));
    api::GetUserProfileResponse p;
    absl::Status s = cb->Call(Method::kGetUserProfile, req, &p);
    ASSERT_TRUE(s.ok()) << req.user() << ": " << s;
    EXPECT_EQ(p.events(), 1u) << req.user();
  }
  // A user's events on a member that is not its owner (as an interim
  // owner keeps those it acknowledged during a failover): the owner adds
  // that member's part, so either node's answer counts every event once.
  {
    std::string a_user;  // one A owns
    for (int u = 0; u < kUsers && a_user.empty(); ++u) {
      if (HoldsPart(ca.get(), absl::StrCat("user", u))) {
        a_user = absl::StrCat("user", u);
      }
    }
    ASSERT_FALSE(a_user.empty());
    api::IngestRequest kept;  // kept on B (local), not forwarded to A
    kept.set_local(true);
    api::Document* d = kept.add_documents();
    d->set_user(a_user);
    d->set_text(kEvents[1]);
    ASSERT_TRUE(cb->Call(Method::kIngest, kept, &ack).ok());
    ASSERT_EQ(ack.accepted(), 1u);
    ASSERT_TRUE(WaitStatus(cb.get(), done, 60).ok()) << b->Log();
    for (auto* c : {ca.get(), cb.get()}) {
      api::GetUserProfileRequest req;
      req.set_user(a_user);
      api::GetUserProfileResponse p;
      absl::Status s = c->Call(Method::kGetUserProfile, req, &p);
      ASSERT_TRUE(s.ok()) << a_user << ": " << s;
      EXPECT_EQ(p.events(), 3u) << a_user << ": " << p.ShortDebugString();
      EXPECT_EQ(p.missing_members_size(), 0) << p.ShortDebugString();
    }
    // B's part alone, as the owner asks for it.
    api::GetUserProfileRequest part;
    part.set_user(a_user);
    part.set_local(true);
    part.set_part(true);
    api::GetUserProfileResponse p;
    ASSERT_TRUE(cb->Call(Method::kGetUserProfile, part, &p).ok());
    EXPECT_EQ(p.events(), 1u);
    uint64_t counted = 0;
    for (const api::TopicCount& c : p.part_counts()) counted += c.count();
    EXPECT_EQ(counted, p.tokens());
    EXPECT_EQ(p.topics_size(), 0);
  }
  api::GetUserProfileRequest unknown;
  unknown.set_user("nobody");
  api::GetUserProfileResponse none;
  EXPECT_EQ(ca->Call(Method::kGetUserProfile, unknown, &none).code(),
            absl::StatusCode::kNotFound);

  // B is killed: A reports it unavailable, says so to a query about a
  // user B owns, goes on answering the rest, and still stops cleanly.
  std::string b_user;  // one B owns: its documents on B only
  for (int u = 0; u < kUsers && b_user.empty(); ++u) {
    const std::string user = absl::StrCat("user", u);
    if (HoldsPart(cb.get(), user) && !HoldsPart(ca.get(), user)) b_user = user;
  }
  ASSERT_FALSE(b_user.empty());
  ASSERT_EQ(b->Stop(SIGKILL, 10), SIGKILL) << b->Log();
  auto down = WaitStatus(
      ca.get(),
      [](const api::StatusResponse& s) {
        return s.unavailable_peers_size() == 1;
      },
      30);
  ASSERT_TRUE(down.ok()) << down.status() << a->Log();
  EXPECT_EQ(down->unavailable_peers(0), b->tcp());
  {
    api::GetUserProfileRequest req;
    req.set_user(b_user);
    api::GetUserProfileResponse p;
    absl::Status s = ca->Call(Method::kGetUserProfile, req, &p);
    EXPECT_TRUE(absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)) << s;
    EXPECT_NE(s.message().find(b->tcp()), std::string::npos) << s;
  }
  api::InferDocumentRequest infer;
  infer.set_text(kEvents[0]);
  api::InferDocumentResponse mixture;
  EXPECT_TRUE(ca->Call(Method::kInferDocument, infer, &mixture).ok());
  EXPECT_EQ(a->Stop(), 0) << a->Log();
}

// Mutual TLS on the sync port (--cluster-tls-*): two daemons train one
// exact model over it, and /metrics reports the sync port's connections
// and caps (--cluster-max-connections*).
// Hardened: mutual TLS on the sync port, and a Redis that requires a
// password (the nodes' --cluster-redis url carries it; latentctl takes it
// from $LATENTD_CLUSTER_REDIS, out of ps, and never prints it).
TEST(DaemonCluster, TwoNodesTrainOverMutualTlsAndAPasswordedRedis) {
  TestCluster cluster({.name = "tls", .redis_password = "r3dis-pw"});
  ASSERT_TRUE(cluster.ok());
  sync::testing::TestPki pki;
  ASSERT_TRUE(pki.ok()) << "openssl failed";
  std::vector<std::string> args = TrainingArgs("10", "3");
  for (const std::string& a :
       {std::string("--cluster-tls-cert"), pki.path("server.pem"),
        std::string("--cluster-tls-key"), pki.path("server.key"),
        std::string("--cluster-tls-ca"), pki.path("ca.pem"),
        std::string("--cluster-max-connections-per-address"),
        std::string("64")}) {
    args.push_back(a);
  }
  ASSERT_TRUE(cluster.Start(2, args));
  Daemon* a = cluster.node(0);
  ExpectOneModelOverTheirTokens(a, cluster.node(1));
  EXPECT_EQ(Metric(a, "latentd_connections_max{listener=\"sync\"}"), 1024);
  EXPECT_EQ(Metric(a,
                   "latentd_connections_max_per_address{listener="
                   "\"sync\"}"),
            64);
  EXPECT_GE(Metric(a, "latentd_connections{listener=\"sync\"}"), 1);
  ExpectNoRefusals(a);
  ExpectNoRefusals(cluster.node(1));
  ::setenv("LATENTD_CLUSTER_REDIS", cluster.redis().address().c_str(), 1);
  auto [rc, out] = Latentctl({"cluster", "status", "--cluster", "tls"});
  ::unsetenv("LATENTD_CLUSTER_REDIS");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(a->tcp()), std::string::npos) << out;
  EXPECT_EQ(out.find("r3dis-pw"), std::string::npos) << out;
  const std::string wrong = "unix://:wr0ng-pw@" + cluster.dir() + "/redis.sock";
  auto [bad_rc, bad_out] = Latentctl(
      {"cluster", "status", "--cluster", "tls", "--cluster-redis", wrong});
  EXPECT_NE(bad_rc, 0) << bad_out;
  EXPECT_NE(bad_out.find("refused the credentials"), std::string::npos)
      << bad_out;
  EXPECT_EQ(bad_out.find("wr0ng-pw"), std::string::npos) << bad_out;
  cluster.StopAll();
}

// With api-tokens (one file shared by both nodes), users' events and profile
// queries still reach their owners: each node forwards with the file's
// admin token. A call without a token is refused, one with a read token
// cannot ingest. After the file changes and SIGHUP, the nodes forward with
// its new admin token.
TEST(DaemonCluster, ForwardingCarriesTheAdminTokenWhenTokensAreOn) {
  TestCluster cluster({.name = "auth"});
  ASSERT_TRUE(cluster.ok());
  const std::string tokens = cluster.dir() + "/tokens";
  const std::string kRead = "read-token-0123456789abcdef";
  const std::string kWrite = "write-token-0123456789abcdef";
  {
    FILE* f = std::fopen(tokens.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, "read %s\nwrite %s\nadmin admin-token-0123456789abcdef\n",
                 kRead.c_str(), kWrite.c_str());
    std::fclose(f);
  }
  std::vector<std::string> args = TrainingArgs("10", "3");
  args.push_back("--api-tokens");
  args.push_back(tokens);
  ASSERT_TRUE(cluster.Start(2, args));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  auto ca = a->Client(Protocol::kTcp);
  auto cb = b->Client(Protocol::kHttpJson);

  api::StatusResponse status;
  EXPECT_EQ(ca->Call(Method::kStatus, api::StatusRequest(), &status).code(),
            absl::StatusCode::kUnauthenticated);
  ca->set_token(kRead);
  cb->set_token(kRead);
  ASSERT_TRUE(ca->Call(Method::kStatus, api::StatusRequest(), &status).ok());
  ASSERT_EQ(status.cluster_members_size(), 2);

  api::IngestRequest ingest;
  for (int u = 0; u < kUsers; ++u) {
    api::Document* d = ingest.add_documents();
    d->set_user(absl::StrCat("user", u));
    d->set_text(kEvents[u % 2]);
  }
  api::IngestResponse ack;
  EXPECT_EQ(ca->Call(Method::kIngest, ingest, &ack).code(),
            absl::StatusCode::kPermissionDenied);
  ca->set_token(kWrite);
  // Some users are B's: A forwards them, which B accepts only with a token.
  const absl::Status ingested = ca->Call(Method::kIngest, ingest, &ack);
  ASSERT_TRUE(ingested.ok()) << ingested << a->Log();
  EXPECT_EQ(ack.accepted(), static_cast<uint64_t>(kUsers));
  // Every profile answers from either node (forwarded to the owner).
  for (int u = 0; u < kUsers; ++u) {
    api::GetUserProfileRequest req;
    req.set_user(absl::StrCat("user", u));
    api::GetUserProfileResponse profile;
    absl::Status got;
    for (int i = 0; i < 100; ++i) {
      got = cb->Call(Method::kGetUserProfile, req, &profile);
      if (got.ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(got.ok()) << req.user() << ": " << got << b->Log();
  }

  // The tokens file changes (its admin token replaced) and both nodes get
  // SIGHUP: they forward with the new admin token, the only one the owner
  // still takes.
  const std::string kWrite2 = "write-token-second-0123456789";
  {
    FILE* f = std::fopen(tokens.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fprintf(f, "read %s\nwrite %s\nadmin admin-token-second-012345\n",
                 kRead.c_str(), kWrite2.c_str());
    std::fclose(f);
  }
  for (Daemon* d : {a, b}) ASSERT_EQ(::kill(d->pid(), SIGHUP), 0);
  for (Daemon* d : {a, b}) {
    for (int i = 0; i < 100 && d->Log().find("reload: forwarding to peers") ==
                                   std::string::npos;
         ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_NE(d->Log().find("reload: forwarding to peers"), std::string::npos)
        << d->Log();
  }
  EXPECT_EQ(ca->Call(Method::kIngest, ingest, &ack).code(),
            absl::StatusCode::kUnauthenticated);  // the old write token
  ca->set_token(kWrite2);
  const absl::Status again = ca->Call(Method::kIngest, ingest, &ack);
  ASSERT_TRUE(again.ok()) << again << a->Log() << b->Log();
  EXPECT_EQ(ack.accepted(), static_cast<uint64_t>(kUsers));
  cluster.StopAll();
}

// Shrink with drop (issue 12): of three daemons, `latentctl cluster
// remove-node ID --drop` removes one while they train: it takes its
// documents' counts out of the model, hands its keys to the two left and
// exits 0 by itself; the two end with one model over their own documents.
// Bad removals (an unknown node, two modes, the last node) change nothing
// and say why.
TEST(DaemonCluster, ARemovedDaemonTakesItsDocumentsOutAndExits) {
  // Loopback development without a cluster key: allowed, and said loudly.
  TestCluster cluster({.name = "shrink", .key = false});
  ASSERT_TRUE(cluster.ok());
  RedisServer& redis = cluster.redis();
  ASSERT_TRUE(cluster.Start(3, TrainingArgs()));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  Daemon* c = cluster.node(2);
  EXPECT_NE(a->Log().find("INSECURE: the sync port"), std::string::npos)
      << a->Log();
  EXPECT_NE(a->Log().find("runs without authentication (--insecure)"),
            std::string::npos)
      << a->Log();
  const std::vector<std::string> where = {"--cluster-redis", redis.address(),
                                          "--cluster", "shrink"};
  auto ctl = [&](std::vector<std::string> v) {
    v.insert(v.end(), where.begin(), where.end());
    return Latentctl(v);
  };
  auto [unknown, unknown_out] =
      ctl({"cluster", "remove-node", "127.0.0.1:1", "--drop"});
  EXPECT_NE(unknown, 0);
  EXPECT_NE(unknown_out.find("127.0.0.1:1"), std::string::npos) << unknown_out;
  auto [both, both_out] =
      ctl({"cluster", "remove-node", c->tcp(), "--handoff", "--drop"});
  EXPECT_NE(both, 0);
  EXPECT_NE(both_out.find("give one of --drop, --lost and --handoff"),
            std::string::npos)
      << both_out;
  auto [rc, out] = ctl({"cluster", "remove-node", c->tcp(), "--drop"});
  ASSERT_EQ(rc, 0) << out << c->Log();
  EXPECT_NE(out.find("removed " + c->tcp() + " (drop)"), std::string::npos)
      << out;
  // The removed daemon has exited, cleanly, by itself.
  EXPECT_EQ(c->Stop(/*sig=*/0, 30), 0) << c->Log();  // 0: just wait

  ExpectOneModelOverTheirTokens(a, b);
  // Down to one node: its removal is refused and the ring stays as it was.
  auto [rb, rb_out] = ctl({"cluster", "remove-node", b->tcp(), "--drop"});
  ASSERT_EQ(rb, 0) << rb_out << b->Log();
  EXPECT_EQ(b->Stop(/*sig=*/0, 30), 0) << b->Log();
  auto [before_rc, before] = ctl({"cluster", "status", "--json"});
  ASSERT_EQ(before_rc, 0) << before;
  auto [last, last_out] = ctl({"cluster", "remove-node", a->tcp()});
  EXPECT_NE(last, 0) << last_out;
  EXPECT_NE(last_out.find("is the last active member"), std::string::npos)
      << last_out;
  auto [after_rc, after] = ctl({"cluster", "status", "--json"});
  ASSERT_EQ(after_rc, 0) << after;
  auto epoch_of = [](const std::string& json) {
    const size_t at = json.find("\"epoch\"");
    return at == std::string::npos ? std::string()
                                   : json.substr(at, json.find(',', at) - at);
  };
  EXPECT_FALSE(epoch_of(before).empty()) << before;
  EXPECT_EQ(epoch_of(before), epoch_of(after)) << after;
  EXPECT_NE(after.find(a->tcp()), std::string::npos) << after;
  cluster.StopAll();
}

// Restart and rejoin (issue 12): B is killed with SIGKILL mid-training
// and started again from its data directory with the same addresses. It
// rejoins the running cluster; the owners replace what B's dead process
// had pushed with its store's counts, and A re-seeds B's new owner shard.
// At the end both nodes hold the same topic totals, adding up to the
// tokens of both stores, and export the same model.
TEST(DaemonCluster, AKilledDaemonRestartsFromItsDirectoryAndStaysExact) {
  // A restart within the ring it left (no failover meanwhile, as
  // TestCluster's default: that path, a down node's return, is
  // daemon_failover_test's).
  TestCluster cluster({.name = "rejoin"});
  ASSERT_TRUE(cluster.ok());
  const std::vector<std::string> args = TrainingArgs();
  std::vector<std::string> b_args = args;
  for (const std::string& a : FixedPortArgs({"--listen", "--cluster-listen"})) {
    b_args.push_back(a);
  }
  ASSERT_EQ(b_args.size(), args.size() + 4);
  ASSERT_TRUE(cluster.Start({args, b_args}));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  {
    auto cb = b->Client(Protocol::kTcp);
    auto trained = WaitStatus(
        cb.get(),
        [](const api::StatusResponse& s) { return s.version().sweep() >= 3; },
        120);
    ASSERT_TRUE(trained.ok()) << trained.status() << b->Log();
    ASSERT_LT(trained->version().sweep(), 25u) << "killed mid-training";
  }
  ASSERT_EQ(b->Stop(SIGKILL, 10), SIGKILL) << b->Log();
  b = cluster.Restart(1);
  ASSERT_TRUE(b->ok()) << b->Log();

  ExpectOneModelOverTheirTokens(a, b);
  // Word by word, too: both export the same counts.
  std::string counts[2];
  for (int n = 0; n < 2; ++n) {
    counts[n] = ExportCounts(cluster.node(n),
                             absl::StrCat(cluster.dir(), "/export", n));
  }
  EXPECT_FALSE(counts[0].empty());
  EXPECT_TRUE(counts[0] == counts[1]) << "the two nodes export other counts";
  // /metrics: A took B's dead process's contributions out of the keys it
  // owns; B's new owner shard refused A's batches for the dead one (A then
  // re-seeded it). Both route by the same epoch of a 2-member ring.
  EXPECT_GE(Metric(a, "latentd_cluster_senders_retracted_total"), 1);
  EXPECT_GE(Metric(a, "latentd_cluster_counts_retracted_total"), 1);
  EXPECT_EQ(Metric(a, "latentd_cluster_reseed_refused_total"), 0);
  EXPECT_GE(Metric(b, "latentd_cluster_reseed_refused_total"), 1);
  EXPECT_EQ(Metric(b, "latentd_cluster_senders_retracted_total"), 0);
  EXPECT_GE(Metric(a, "latentd_cluster_epoch"), 1);
  EXPECT_EQ(Metric(a, "latentd_cluster_epoch"),
            Metric(b, "latentd_cluster_epoch"));
  EXPECT_EQ(Metric(a, "latentd_cluster_members"), 2);
  EXPECT_EQ(Metric(a, "latentd_cluster_peers_unreachable"), 0);
  // The restarted member's new process was taken, not refused.
  ExpectNoRefusals(a);
  ExpectNoRefusals(b);
  EXPECT_GT(Metric(a, "latentd_cluster_owned_keys") +
                Metric(b, "latentd_cluster_owned_keys"),
            100);
  cluster.StopAll();
}

// Lost for good (issue 13): C is killed with SIGKILL mid-training and never
// comes back; `latentctl cluster remove-node C --lost` takes it out of the
// ring. A and B take C's counts out and rebuild the keys C owned: they end
// with the same topic totals, adding up to their own two stores' tokens.
TEST(DaemonCluster, ADaemonLostForGoodIsRemovedAndTheModelIsTheRest) {
  // The operator removes C while the ring still lists it (no failover, as
  // TestCluster's default).
  TestCluster cluster({.name = "lost"});
  ASSERT_TRUE(cluster.ok());
  RedisServer& redis = cluster.redis();
  ASSERT_TRUE(cluster.Start(3, TrainingArgs()));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  Daemon* c = cluster.node(2);
  ASSERT_GE(AwaitSweeps(c, 2, 120), 2u) << c->Log();
  const std::string lost = c->tcp();
  ASSERT_EQ(c->Stop(SIGKILL, 10), SIGKILL) << c->Log();
  auto [rc, out] =
      Latentctl({"cluster", "remove-node", lost, "--lost", "--cluster-redis",
                 redis.address(), "--cluster", "lost"});
  ASSERT_EQ(rc, 0) << out << a->Log();
  EXPECT_NE(out.find("removed " + lost + " (lost)"), std::string::npos) << out;

  ExpectOneModelOverTheirTokens(a, b);
  // /metrics: both survivors route by the epoch after the removal (the
  // drain epoch, then the one without C: at least 3), in a 2-member ring,
  // and between them took C's contributions out of the keys they own.
  const double epoch = Metric(a, "latentd_cluster_epoch");
  EXPECT_GE(epoch, 3);
  EXPECT_EQ(Metric(b, "latentd_cluster_epoch"), epoch);
  EXPECT_EQ(Metric(a, "latentd_cluster_members"), 2);
  EXPECT_EQ(Metric(b, "latentd_cluster_members"), 2);
  EXPECT_GE(Metric(a, "latentd_cluster_senders_retracted_total") +
                Metric(b, "latentd_cluster_senders_retracted_total"),
            1);
  EXPECT_GE(Metric(a, "latentd_cluster_counts_retracted_total") +
                Metric(b, "latentd_cluster_counts_retracted_total"),
            1);
  // `cluster status`: both survivors' heartbeats (about once a second)
  // carry that epoch (C, dead before the removal, never wrote it).
  std::string status;
  const std::string at_epoch =
      absl::StrCat("; epoch ", static_cast<uint64_t>(epoch), ", ");
  size_t carrying = 0;  // heartbeats at that epoch
  for (int i = 0; i < 50 && carrying != 2; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto [src, sout] = Latentctl({"cluster", "status", "--cluster-redis",
                                  redis.address(), "--cluster", "lost"});
    ASSERT_EQ(src, 0) << sout;
    status = sout;
    carrying = 0;
    for (size_t at = status.find(at_epoch); at != std::string::npos;
         at = status.find(at_epoch, at + 1)) {
      ++carrying;
    }
  }
  EXPECT_EQ(carrying, 2u) << status;
  EXPECT_NE(status.find(" retracted, "), std::string::npos) << status;
  cluster.StopAll();
}

// The two epochs of a lost member's removal (the drain epoch, the same
// ring; then the ring without it) usually reach the survivors together;
// here each survivor follows the drain epoch alone first. Its copies of the
// lost member's keys must outlive that epoch: they are what the keys' new
// owners take over in the next one (in CI a survivor that saw the drain
// epoch alone dropped them, and the totals ended 96,092 above the tokens).
TEST(DaemonCluster, ALostDaemonsDrainEpochSeenAloneKeepsTheModelExact) {
  TestCluster cluster({.name = "lostslow"});
  ASSERT_TRUE(cluster.ok());
  ASSERT_TRUE(cluster.Start(3, TrainingArgs()));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  Daemon* c = cluster.node(2);
  ASSERT_GE(AwaitSweeps(c, 2, 120), 2u) << c->Log();
  ASSERT_EQ(c->Stop(SIGKILL, 10), SIGKILL) << c->Log();
  auto redis = sync::RedisClient::Connect(cluster.redis().address());
  ASSERT_TRUE(redis.ok()) << redis.status();
  auto drain = sync::RemoveNode(redis->get(), "lostslow", c->tcp(),
                                sync::RemoveMode::kLost);
  ASSERT_TRUE(drain.ok()) << drain.status();
  for (Daemon* d : {a, b}) {
    bool followed = false;
    for (int i = 0; i < 600 && !followed; ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      followed = Metric(d, "latentd_cluster_epoch") == drain->version;
    }
    ASSERT_TRUE(followed) << d->Log();
  }
  auto keys = sync::FinishMove(redis->get(), "lostslow", drain->version, {});
  ASSERT_TRUE(keys.ok()) << keys.status();
  ExpectOneModelOverTheirTokens(a, b);
  cluster.StopAll();
}

}  // namespace
}  // namespace latentd::testing
