// Shrinking a training cluster (issue 12, "Must show" 2; docs/design.md
// "Growing and shrinking the cluster"): three daemons train thirds of
// the test corpus; while they train, `latentctl cluster remove-node C`
// removes one.
// With --handoff (the default: no mode given) C stops sampling and ships
// its documents with their topics to A and B, which add them to their
// token stores; with --drop its documents leave the model. Either way C
// takes its counts out, leaves the ring and exits 0, and once A and B have
// stopped and drained they export the same counts, each word's row sums to
// its frequency in the documents the model should now hold (all three
// thirds; A's and B's with drop), and Σ n_k is those documents' tokens.
// Redis and the daemons run on 127.0.0.1 (Unix socket, kernel-picked
// ports) and are stopped at the end.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"

namespace latentd::testing {
namespace {

using service::Protocol;

constexpr int kNodes = 3;

// The sweeps `d` has completed.
// Starts the three nodes of `cluster` on the thirds WriteCorpusParts wrote into
// its directory, node i with `extra[i]` (if given) added to its arguments;
// true if all serve.
bool StartThirds(TestCluster* cluster,
                 const std::vector<std::vector<std::string>>& extra = {}) {
  std::vector<std::vector<std::string>> args;
  for (int i = 0; i < kNodes; ++i) {
    args.push_back(CorpusPartArgs(cluster->dir(), i));
    for (const char* a : {"--max-sweeps", "40", "--optimize-alpha", "off"}) {
      args.back().push_back(a);
    }
    if (static_cast<size_t>(i) < extra.size()) {
      args.back().insert(args.back().end(), extra[i].begin(), extra[i].end());
    }
  }
  return cluster->Start(args);
}

// Removes C with `mode` ("" = the default, hand-off; "--drop") mid-training
// and checks the two left (see the top).
void RemoveOneMidTraining(const std::string& mode) {
  const bool drop = mode == "--drop";
  const uint64_t corpus = TestCorpusSize().documents;
  TestCluster cluster({.name = "handoff"});
  ASSERT_TRUE(cluster.ok());
  RedisServer& redis = cluster.redis();
  std::vector<std::map<std::string, long long>> parts;
  std::map<std::string, long long> freq =
      WriteCorpusParts(cluster.dir(), kNodes, &parts);
  ASSERT_FALSE(freq.empty());
  if (drop) {  // the model keeps A's and B's documents only
    freq = parts[0];
    for (const auto& [word, n] : parts[1]) freq[word] += n;
  }
  long long total_tokens = 0;
  for (const auto& [word, n] : freq) total_tokens += n;
  ASSERT_TRUE(StartThirds(&cluster));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  Daemon* c = cluster.node(2);
  auto cc = c->Client(Protocol::kTcp);
  auto c_status = WaitStatus(
      cc.get(), [](const api::StatusResponse& s) { return s.documents() > 0; },
      60);
  ASSERT_TRUE(c_status.ok()) << c_status.status() << c->Log();
  const uint64_t c_documents = c_status->documents();
  EXPECT_EQ(c_documents, corpus / kNodes);
  for (int i = 0; i < 1200 && Sweeps(c) < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(Sweeps(c), 3u) << c->Log();
  ASSERT_LT(Sweeps(a), 30u) << "A must still be training";

  std::vector<std::string> remove = {
      "cluster",       "remove-node", c->tcp(), "--cluster-redis",
      redis.address(), "--cluster",   "handoff"};
  if (!mode.empty()) remove.push_back(mode);
  auto [rc, out] = Latentctl(remove);
  ASSERT_EQ(rc, 0) << out << c->Log();
  std::printf("%s", out.c_str());
  EXPECT_NE(out.find(absl::StrCat("removed ", c->tcp(),
                                  drop ? " (drop)" : " (handoff)")),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(absl::StrCat(c_documents, drop ? " documents taken out"
                                                    : " documents handed")),
            std::string::npos)
      << out;
  // The removed daemon has exited, cleanly, by itself.
  EXPECT_EQ(c->Stop(/*sig=*/0, 30), 0) << c->Log();
  EXPECT_EQ(c->Log().find("hand-off: ") != std::string::npos, !drop)
      << c->Log();

  auto done = [](const api::StatusResponse& s) {
    return !s.training() && s.pending() == 0 && s.cluster_members_size() == 2;
  };
  auto ca = a->Client(Protocol::kTcp);
  auto cb = b->Client(Protocol::kTcp);
  auto fa = WaitStatus(ca.get(), done, 150);
  auto fb = WaitStatus(cb.get(), done, 150);
  ASSERT_TRUE(fa.ok()) << fa.status() << a->Log();
  ASSERT_TRUE(fb.ok()) << fb.status() << b->Log();
  // Every document of the three thirds (with drop: A's and B's), and
  // every token.
  EXPECT_EQ(fa->documents() + fb->documents(),
            drop ? corpus - c_documents : corpus);
  if (!drop) {  // each adopted some
    EXPECT_GT(fa->documents(), corpus / kNodes);
    EXPECT_GT(fb->documents(), corpus / kNodes);
  }
  EXPECT_EQ(static_cast<long long>(fa->tokens() + fb->tokens()), total_tokens);

  // Once the rounds have drained: the same files on both, each word's row
  // summing to its frequency in the three thirds, Σ n_k every token.
  std::map<std::string, std::string> ea, eb;
  std::map<std::string, long long> sums;
  for (int i = 0; i < 120; ++i) {
    ea = ExportFiles(a->tcp(), cluster.dir() + "/export_a");
    eb = ExportFiles(b->tcp(), cluster.dir() + "/export_b");
    sums = RowSums(ea["word_topic_counts.tsv"]);
    if (ea == eb && sums == freq &&
        Sum(TopicTotals(ca.get())) == total_tokens) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ExpectIdenticalExports(ea, eb);
  ASSERT_EQ(ea.count("error") + eb.count("error"), 0u);
  ExpectRowSums(sums, freq);
  EXPECT_EQ(Sum(TopicTotals(ca.get())), total_tokens);
  EXPECT_EQ(TopicTotals(ca.get()), TopicTotals(cb.get()));
  cluster.StopAll();
}

TEST(ClusterShrink, ARemovedDaemonHandsItsDocumentsToTheOthers) {
  RemoveOneMidTraining("");
}

TEST(ClusterShrink, ADroppedDaemonTakesItsDocumentsOutOfTheModel) {
  RemoveOneMidTraining("--drop");
}

// A hand-off the others refuse (here C's peer token is not one A and B
// know: its Ingest calls are unauthenticated) rolls the removal back, and
// latentctl says why; nothing was handed off, the ring has C active again
// and the move is marked rolled back; C (its API port not fixed, so it
// cannot restart itself) stays up, not sampling, and says so.
TEST(ClusterShrink, AHandoffTheOthersRefuseFailsTheRemovalAndSaysWhy) {
  TestCluster cluster({.name = "handoff"});
  ASSERT_TRUE(cluster.ok());
  RedisServer& redis = cluster.redis();
  ASSERT_FALSE(WriteCorpusParts(cluster.dir(), kNodes).empty());
  const std::string kRead = "read-token-0123456789abcdef";
  auto tokens = [&](const std::string& name, const std::string& admin) {
    const std::string path = cluster.dir() + "/" + name;
    std::ofstream(path) << "read " << kRead << "\nadmin " << admin << "\n";
    return std::vector<std::string>{"--api-tokens", path};
  };
  const std::vector<std::string> ab =
      tokens("tokens_ab", "admin-ab-0123456789abcdef");
  ASSERT_TRUE(StartThirds(
      &cluster, {ab, ab, tokens("tokens_c", "admin-c-0123456789abcdef")}));
  Daemon* c = cluster.node(2);
  for (int i = 0; i < 1200 && Sweeps(c) < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(Sweeps(c), 2u) << c->Log();

  auto [rc, out] =
      Latentctl({"cluster", "remove-node", c->tcp(), "--cluster-redis",
                 redis.address(), "--cluster", "handoff"});
  EXPECT_NE(rc, 0) << out;
  std::printf("%s", out.c_str());
  EXPECT_NE(out.find(c->tcp() + " could not leave, rolled back to epoch "),
            std::string::npos)
      << out << c->Log();
  EXPECT_NE(out.find("documents off to "), std::string::npos) << out;
  // C is up and answers; the ring still holds the three, all active.
  auto cc = c->Client(Protocol::kTcp);
  cc->set_token(kRead);
  auto st = WaitStatus(
      cc.get(), [](const api::StatusResponse& s) { return !s.training(); }, 30);
  ASSERT_TRUE(st.ok()) << st.status() << c->Log();
  EXPECT_EQ(st->cluster_members_size(), 3);
  auto [src, status] =
      Latentctl({"cluster", "status", "--cluster-redis", redis.address(),
                 "--cluster", "handoff", "--json"});
  EXPECT_EQ(src, 0) << status;
  EXPECT_EQ(status.find("\"state\":\"leaving\""), std::string::npos) << status;
  EXPECT_NE(status.find("\"status\":\"rolled_back\""), std::string::npos)
      << status;
  EXPECT_NE(c->Log().find("stops sampling until it is restarted"),
            std::string::npos)
      << c->Log();
  cluster.StopAll();
}

}  // namespace
}  // namespace latentd::testing
