// A hand-off that fails halfway rolls back, then is retried
// (docs/operations.md, "Growing and shrinking"): three daemons train
// thirds of the test corpus, and `latentctl cluster remove-node C`
// (hand-off, one document a call) fails halfway, because B refuses the
// later documents or because B is killed (SIGKILL) mid-hand-off. A and B
// have staged some of C's documents durably, uncounted. The removal is
// rolled back: `cluster status` shows the move rolled back and the ring
// has C active again; C restarts itself and samples on; A and B drop what
// they staged (B once restarted from its data directory); and the three
// end exact, every document counted once. The removal, run again, then
// succeeds: C ships every document again, takes its counts out and exits
// 0, and A and B end exact. Redis and the daemons run on 127.0.0.1 (Unix
// socket; fixed ports, so that B and C return at their addresses).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
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

constexpr int kNodes = 3;

// Starts three nodes of `cluster` on thirds of the test corpus
// (WriteCorpusParts wrote them), at fixed ports, without copies, node i with
// extra[i] added; C hands off one document a call. Returns C's id ("" and a
// test failure if a node does not serve).
std::string StartThree(TestCluster* cluster,
                       std::vector<std::vector<std::string>> extra) {
  std::vector<std::vector<std::string>> args;
  for (int i = 0; i < kNodes; ++i) {
    args.push_back(CorpusPartArgs(cluster->dir(), i));
    // (No copies: with B refusing or dead, A could not copy what it takes.)
    // (Few sweeps: every node has stopped sampling when the removal runs,
    // so what the hand-offs add travels in the rounds of idle nodes.)
    for (const char* a :
         {"--max-sweeps", "20", "--optimize-alpha", "off", "--replicas", "1"}) {
      args.back().push_back(a);
    }
    for (const std::string& a :
         FixedPortArgs({"--listen", "--cluster-listen", "--http"})) {
      args.back().push_back(a);
    }
    args.back().insert(args.back().end(), extra[i].begin(), extra[i].end());
  }
  args[2].insert(args[2].end(), {"--max-ingest-docs", "1"});
  EXPECT_TRUE(cluster->Start(args));
  return cluster->size() == kNodes && cluster->node(2)->ok()
             ? cluster->node(2)->tcp()
             : "";
}

std::vector<std::string> RemoveC(const TestCluster& cluster) {
  return {"cluster",
          "remove-node",
          cluster.node(2)->tcp(),
          "--cluster-redis",
          cluster.redis().address(),
          "--cluster",
          cluster.name()};
}

// The documents of A and B now, once they have merged what they took.
std::vector<uint64_t> Documents(const TestCluster& cluster) {
  std::vector<uint64_t> docs;
  for (int i : {0, 1}) {
    auto client = cluster.node(i)->Client(Protocol::kTcp);
    auto s = WaitStatus(
        client.get(),
        [](const api::StatusResponse& s) { return s.pending() == 0; }, 30);
    EXPECT_TRUE(s.ok()) << s.status() << cluster.node(i)->Log();
    docs.push_back(s.ok() ? s->documents() : 0);
  }
  return docs;
}

// After the failed removal of C (`removal`, latentctl's output; B since
// restarted): the move is rolled back and the ring has C active; A and B
// drop what they staged and hold their `own` documents; C, restarted by
// itself, trains on; and the three end exact.
void CheckRolledBack(const TestCluster& cluster, const std::string& removal,
                     const std::vector<uint64_t>& own,
                     const std::map<std::string, long long>& freq) {
  EXPECT_NE(removal.find("rolled back"), std::string::npos) << removal;
  const sync::ClusterStatus st = ReadStatus(cluster.redis(), cluster.name());
  ASSERT_TRUE(st.move.has_value());
  EXPECT_EQ(st.move->status, sync::MoveStatus::kRolledBack);
  EXPECT_EQ(st.move->to_epoch, st.epoch);
  for (const sync::MemberStatus& m : st.members) {
    EXPECT_EQ(m.state, sync::MemberState::kActive) << m.id;
  }
  for (int i : {0, 1}) {
    auto client = cluster.node(i)->Client(Protocol::kTcp);
    auto s = WaitStatus(
        client.get(),
        [](const api::StatusResponse& s) {
          return s.staged_handoff_documents() == 0 && s.pending() == 0;
        },
        30);
    ASSERT_TRUE(s.ok()) << s.status() << cluster.node(i)->Log();
    EXPECT_EQ(s->documents(), own[i]) << "node " << i;
  }
  EXPECT_NE(cluster.node(2)->Log().find("removal was rolled back: shutting "
                                        "down, then starting again"),
            std::string::npos)
      << cluster.node(2)->Log();
  // Trained to the end (20 sweeps), C too.
  EXPECT_GE(DrainAndCheckExact(cluster, freq, {0, 1, 2}, /*drain=*/false), 0);
  if (::testing::Test::HasFailure()) {
    std::printf("%s\n", cluster.Logs().c_str());
  }
}

// After a rolled-back removal of C: C still has its `c_documents`; run
// again, the removal succeeds, C exits 0, and A and B end exact, every
// document of the test corpus once.
void RetryAndCheck(TestCluster* cluster, uint64_t c_documents,
                   const std::map<std::string, long long>& freq) {
  Daemon* c = cluster->node(2);
  auto cc = c->Client(Protocol::kTcp);
  auto sc = WaitStatus(
      cc.get(), [](const api::StatusResponse& s) { return !s.training(); }, 30);
  ASSERT_TRUE(sc.ok()) << sc.status() << c->Log();
  EXPECT_EQ(sc->documents(), c_documents);
  auto [rc, out] = Latentctl(RemoveC(*cluster));
  std::printf("%s", out.c_str());
  ASSERT_EQ(rc, 0) << out << c->Log();
  EXPECT_NE(out.find(absl::StrCat("removed ", c->tcp(), " (handoff)")),
            std::string::npos)
      << out;
  EXPECT_EQ(c->Stop(/*sig=*/0, 30), 0) << c->Log();
  // Trained to the end (20 sweeps): what a finished cluster holds.
  EXPECT_GE(DrainAndCheckExact(*cluster, freq, {0, 1}, /*drain=*/false), 0);
  const std::vector<uint64_t> docs = Documents(*cluster);
  EXPECT_EQ(docs[0] + docs[1], TestCorpusSize().documents);
  if (::testing::Test::HasFailure()) {
    std::printf("%s\n", cluster->Logs().c_str());
  }
}

// The documents C has once it has swept twice.
uint64_t CDocuments(const TestCluster& cluster) {
  auto cc = cluster.node(2)->Client(Protocol::kTcp);
  auto st = WaitStatus(
      cc.get(),
      [](const api::StatusResponse& s) { return s.version().sweep() >= 2; },
      90);
  EXPECT_TRUE(st.ok()) << st.status() << cluster.node(2)->Log();
  return st.ok() ? st->documents() : 0;
}

// B refuses the sources handoff:C/EPOCH/100 on (--max-id-bytes, in its
// --config file), so the removal fails at once; B returns with the limit
// lifted.
TEST(ClusterHandoffRetry, ARefusedHandoffRetriedEndsWithEveryDocumentOnce) {
  TestCluster cluster({.name = "handoff"});
  ASSERT_TRUE(cluster.ok());
  const std::map<std::string, long long> freq =
      WriteCorpusParts(cluster.dir(), kNodes);
  ASSERT_FALSE(freq.empty());
  const std::string b_conf = cluster.dir() + "/b.conf";
  std::ofstream(b_conf) << "max-id-bytes = 1024\n";
  const std::string c_id = StartThree(&cluster, {{}, {"--config", b_conf}, {}});
  ASSERT_FALSE(c_id.empty());
  // (C's id is known now, and the removal's drain epoch, the next; B
  // reads the file at its start: restarted.)
  const uint64_t drain = ReadStatus(cluster.redis(), cluster.name()).epoch + 1;
  std::ofstream(b_conf)
      << "max-id-bytes = "
      << absl::StrCat("handoff:", c_id, "/", drain, "/99").size() << "\n";
  ASSERT_NE(cluster.node(1)->Stop(/*sig=*/9, 30), -1);
  ASSERT_TRUE(cluster.Restart(1)->ok()) << cluster.node(1)->Log();
  const uint64_t c_documents = CDocuments(cluster);
  const std::vector<uint64_t> own = Documents(cluster);
  ASSERT_EQ(ReadStatus(cluster.redis(), cluster.name()).epoch + 1, drain);

  auto [rc, out] = Latentctl(RemoveC(cluster));
  std::printf("%s", out.c_str());
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("handing 1 documents off to " + cluster.node(1)->tcp()),
            std::string::npos)
      << out << cluster.node(2)->Log();
  CheckRolledBack(cluster, out, own, freq);

  ASSERT_NE(cluster.node(1)->Stop(/*sig=*/9, 30), -1);
  std::ofstream(b_conf) << "max-id-bytes = 1024\n";
  ASSERT_TRUE(cluster.Restart(1)->ok()) << cluster.node(1)->Log();
  RetryAndCheck(&cluster, c_documents, freq);
  cluster.StopAll();
}

// B is killed (SIGKILL) while C hands off; C gives up on it after its
// --join-timeout. B's last call may or may not have reached its disk.
TEST(ClusterHandoffRetry, AReceiverKilledMidHandoffRetriedEndsExact) {
  TestCluster cluster({.name = "handoff"});
  ASSERT_TRUE(cluster.ok());
  const std::map<std::string, long long> freq =
      WriteCorpusParts(cluster.dir(), kNodes);
  ASSERT_FALSE(freq.empty());
  ASSERT_FALSE(
      StartThree(&cluster, {{}, {}, {"--join-timeout", "10"}}).empty());
  const uint64_t c_documents = CDocuments(cluster);
  const std::vector<uint64_t> own = Documents(cluster);

  std::pair<int, std::string> removal;
  std::thread remove([&] { removal = Latentctl(RemoveC(cluster)); });
  // Once C has handed some off (a document a call: a few seconds for all).
  Daemon* c = cluster.node(2);
  for (int i = 0; i < 600; ++i) {
    if (c->Log().find("this node is being removed") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int killed = cluster.node(1)->Stop(/*sig=*/9, 30);
  remove.join();
  ASSERT_NE(killed, -1);
  std::printf("%s", removal.second.c_str());
  ASSERT_NE(removal.first, 0)
      << "B was killed after the hand-off ended: " << removal.second;
  EXPECT_NE(removal.second.find(" could not leave, rolled back"),
            std::string::npos)
      << removal.second << c->Log();
  // (B's staged documents wait in DIR/handoff for it to return.)
  ASSERT_TRUE(cluster.Restart(1)->ok()) << cluster.node(1)->Log();
  CheckRolledBack(cluster, removal.second, own, freq);
  RetryAndCheck(&cluster, c_documents, freq);
  cluster.StopAll();
}

}  // namespace
}  // namespace latentd::testing
