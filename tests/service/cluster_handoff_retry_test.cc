// A hand-off that fails halfway, then is retried (docs/operations.md,
// "Growing and shrinking"): three daemons train thirds of the test corpus,
// and `latentctl cluster remove-node C` (hand-off) fails halfway: C sends
// one document a call, in store order, and B refuses those whose source
// is longer than its --max-id-bytes (from the 101st document on), so A and
// B have each taken some of C's documents durably, and C keeps all of them
// (those count twice meanwhile). B is killed (SIGKILL), restarted from its
// data directory with the limit lifted (its --config file), and the
// removal run again: C ships every document again, A and B skip those
// they hold (by source), C takes its counts out and exits 0, and A and B
// end exact: every document counted once. Redis and the daemons run on
// 127.0.0.1 (Unix socket; fixed ports, so that B returns at its address
// and the sources' length is known).
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"
#include "tests/testdata/test_corpus.h"

namespace latentd::testing {
namespace {

using service::Protocol;

constexpr int kNodes = 3;

TEST(ClusterHandoffRetry, AFailedHandoffRetriedEndsWithEveryDocumentOnce) {
  const uint64_t corpus = TestCorpusSize().documents;
  TestCluster cluster({.name = "handoff"});
  ASSERT_TRUE(cluster.ok());
  const std::map<std::string, long long> freq =
      WriteCorpusParts(cluster.dir(), kNodes);
  ASSERT_FALSE(freq.empty());
  std::vector<std::vector<std::string>> args;
  for (int i = 0; i < kNodes; ++i) {
    args.push_back(CorpusPartArgs(cluster.dir(), i));
    // (No copies: B would refuse A's copies of C's documents too.)
    for (const char* a : {"--max-sweeps", "400", "--optimize-alpha", "off",
                          "--replicas", "1"}) {
      args.back().push_back(a);
    }
    for (const std::string& a :
         FixedPortArgs({"--listen", "--cluster-listen", "--http"})) {
      args.back().push_back(a);
    }
  }
  ASSERT_EQ(args[2].end()[-6], "--listen");
  const std::string c_id = args[2].end()[-5];
  // B takes the sources handoff:C/0 to handoff:C/99 only.
  const std::string b_conf = cluster.dir() + "/b.conf";
  std::ofstream(b_conf) << "max-id-bytes = "
                        << absl::StrCat("handoff:", c_id, "/99").size() << "\n";
  args[1].insert(args[1].end(), {"--config", b_conf});
  args[2].insert(args[2].end(), {"--max-ingest-docs", "1"});
  ASSERT_TRUE(cluster.Start(args));
  Daemon* a = cluster.node(0);
  Daemon* c = cluster.node(2);
  ASSERT_EQ(c->tcp(), c_id);
  auto cc = c->Client(Protocol::kTcp);
  auto st = WaitStatus(
      cc.get(),
      [](const api::StatusResponse& s) { return s.version().sweep() >= 2; },
      90);
  ASSERT_TRUE(st.ok()) << st.status() << c->Log();
  const uint64_t c_documents = st->documents();
  auto any = [](const api::StatusResponse&) { return true; };
  std::vector<uint64_t> own;  // A's and B's documents before
  for (int i : {0, 1}) {
    auto client = cluster.node(i)->Client(Protocol::kTcp);
    auto s = WaitStatus(client.get(), any, 30);
    ASSERT_TRUE(s.ok()) << s.status();
    own.push_back(s->documents());
  }

  const std::vector<std::string> remove = {"cluster",
                                           "remove-node",
                                           c_id,
                                           "--cluster-redis",
                                           cluster.redis().address(),
                                           "--cluster",
                                           cluster.name()};
  auto [rc, out] = Latentctl(remove);
  std::printf("%s", out.c_str());
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find(c_id + " could not leave: handing 1 documents off to " +
                     cluster.node(1)->tcp()),
            std::string::npos)
      << out << c->Log();
  // A and B took some of C's documents; C is up, leaving, and has all.
  std::vector<uint64_t> took;
  for (int i : {0, 1}) {
    auto client = cluster.node(i)->Client(Protocol::kTcp);
    auto s = WaitStatus(
        client.get(),
        [&](const api::StatusResponse& s) {
          return s.pending() == 0 && s.documents() > own[i];
        },
        30);
    ASSERT_TRUE(s.ok()) << s.status() << cluster.node(i)->Log();
    took.push_back(s->documents() - own[i]);
  }
  std::printf("before the retry A took %llu, B %llu of C's %llu documents\n",
              static_cast<unsigned long long>(took[0]),
              static_cast<unsigned long long>(took[1]),
              static_cast<unsigned long long>(c_documents));
  auto sc = WaitStatus(
      cc.get(), [](const api::StatusResponse& s) { return !s.training(); }, 30);
  ASSERT_TRUE(sc.ok()) << sc.status() << c->Log();
  EXPECT_EQ(sc->documents(), c_documents);

  // B back from its data directory, taking every source now.
  ASSERT_NE(cluster.node(1)->Stop(/*sig=*/9, 30), -1);
  std::ofstream(b_conf) << "max-id-bytes = 1024\n";
  Daemon* b = cluster.Restart(1);
  ASSERT_TRUE(b->ok()) << b->Log();
  auto [rc2, out2] = Latentctl(remove);
  std::printf("%s", out2.c_str());
  ASSERT_EQ(rc2, 0) << out2 << c->Log();
  EXPECT_NE(out2.find(absl::StrCat("removed ", c_id, " (handoff)")),
            std::string::npos)
      << out2;
  EXPECT_EQ(c->Stop(/*sig=*/0, 30), 0) << c->Log();
  EXPECT_GE(DrainAndCheckExact(cluster, freq, {0, 1}), 0);
  // Every document of the three thirds, once.
  auto ca = a->Client(Protocol::kTcp);
  auto cb = b->Client(Protocol::kTcp);
  auto fa = WaitStatus(ca.get(), any, 10);
  auto fb = WaitStatus(cb.get(), any, 10);
  ASSERT_TRUE(fa.ok() && fb.ok());
  EXPECT_EQ(fa->documents() + fb->documents(), corpus);
  cluster.StopAll();
}

}  // namespace
}  // namespace latentd::testing
