// Growing vocabulary in a cluster (issue 12, docs/design.md "Growing
// vocabulary in a cluster"): words that no node had reach every node, and
// every node of a drained cluster exports the same files. Redis and the
// daemons run on 127.0.0.1 (Unix socket, kernel-picked ports) and are
// stopped at the end.
#include <chrono>
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

using service::Method;
using service::Protocol;

// Growing vocabulary (issue 12): documents with words no corpus had are
// ingested into A while both train; the words become new keys at their
// owners, which send them (named) to B. Once both have stopped and the
// rounds have drained, both export byte-identical files (α fixed), and
// each new word's row adds up to its count in those documents.
TEST(ClusterVocabulary, NewWordsIngestedOnOneNodeReachEveryNodesExport) {
  TestCluster cluster({.name = "words"});
  ASSERT_TRUE(cluster.ok());
  std::vector<std::string> args = TrainingArgs("20", "10");
  // α is each node's own when learned (docs/design.md): fixed here, so
  // that alpha.txt too is the same on both.
  args.push_back("--optimize-alpha");
  args.push_back("off");
  ASSERT_TRUE(cluster.Start(2, args));
  Daemon* a = cluster.node(0);
  Daemon* b = cluster.node(1);
  auto ca = a->Client(Protocol::kTcp);
  auto cb = b->Client(Protocol::kTcp);
  const std::map<std::string, long long> kNew = {
      {"quokkaphone", 4}, {"zibblewort", 2}, {"snarfleblat", 3}};
  api::IngestRequest ingest;
  ingest.add_documents()->set_text(
      "quokkaphone zibblewort quokkaphone oil prices");
  ingest.add_documents()->set_text("snarfleblat quokkaphone snarfleblat");
  ingest.add_documents()->set_text(
      "zibblewort snarfleblat quokkaphone stock market");
  api::IngestResponse ack;
  const absl::Status ingested = ca->Call(Method::kIngest, ingest, &ack);
  ASSERT_TRUE(ingested.ok()) << ingested << a->Log();
  EXPECT_EQ(ack.accepted(), 3u);

  auto done = [](const api::StatusResponse& s) {
    return !s.training() && s.pending() == 0;
  };
  auto fa = WaitStatus(ca.get(), done, 180);
  auto fb = WaitStatus(cb.get(), done, 180);
  ASSERT_TRUE(fa.ok()) << fa.status() << a->Log();
  ASSERT_TRUE(fb.ok()) << fb.status() << b->Log();
  EXPECT_EQ(fa->documents(), fb->documents() + 3);
  const int64_t tokens = static_cast<int64_t>(fa->tokens() + fb->tokens());
  // The rounds drain in the background: until both views hold the same
  // counts, the exports may differ.
  std::map<std::string, std::string> ea, eb;
  for (int i = 0; i < 120; ++i) {
    ea = ExportFiles(a->tcp(), cluster.dir() + "/export_a");
    eb = ExportFiles(b->tcp(), cluster.dir() + "/export_b");
    if (ea == eb && Sum(TopicTotals(ca.get())) == tokens &&
        RowSum(eb["word_topic_counts.tsv"], "quokkaphone") == 4) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ExpectIdenticalExports(ea, eb);
  ASSERT_EQ(ea.count("error") + eb.count("error"), 0u);
  for (const auto& [word, count] : kNew) {
    EXPECT_NE(ea["vocab.txt"].find(word + "\n"), std::string::npos) << word;
    EXPECT_EQ(RowSum(ea["word_topic_counts.tsv"], word), count) << word;
    EXPECT_EQ(RowSum(eb["word_topic_counts.tsv"], word), count) << word;
  }
  EXPECT_EQ(Sum(TopicTotals(ca.get())), tokens);
  EXPECT_EQ(TopicTotals(ca.get()), TopicTotals(cb.get()));
  // B learned the three words from their owners, and answers for them.
  EXPECT_GE(Metric(b, "latentd_cluster_words_adopted_total"), 3);
  api::WordTopicsRequest wreq;
  wreq.set_word("snarfleblat");
  api::WordTopicsResponse wresp;
  const absl::Status ws = cb->Call(Method::kWordTopics, wreq, &wresp);
  EXPECT_TRUE(ws.ok()) << ws;
  EXPECT_EQ(wresp.count(), 3);
  cluster.StopAll();
}

// Lines [first, last] (1-based) of `path`, each with its newline.
std::string Lines(const std::string& path, int first, int last) {
  std::ifstream in(path);
  std::string line, out;
  for (int n = 1; n <= last && std::getline(in, line); ++n) {
    if (n >= first) out += line + "\n";
  }
  return out;
}

// Grow with another corpus (issue 12): A and B train two halves of a
// subset of the test corpus; C, with documents of another corpus (raw
// text, other.lines: other topics, half its words new), starts with
// --cluster-join and is admitted while they train;
// all three run to --max-sweeps. Then every node exports the same files
// (α fixed), every word's row adds up to that word's tokens in the three
// stores together (words only C had included), and Σ n_k is their total.
TEST(ClusterVocabulary, ANodeWithAnotherCorpusJoinsAndEveryNodeHoldsAllWords) {
  TestCluster cluster({.name = "mixed"});
  ASSERT_TRUE(cluster.ok());
  RedisServer& redis = cluster.redis();
  const std::string& tmp = cluster.dir();
  const std::string docs = TestCorpusFile("corpus.ldac");
  std::ofstream(tmp + "/part_a.dat") << Lines(docs, 1, 150);
  std::ofstream(tmp + "/part_b.dat") << Lines(docs, 151, 300);
  std::ofstream(tmp + "/other.lines")
      << Lines(TestCorpusFile("other.lines"), 1, 150);
  auto common = [&](std::vector<std::string> args) {
    for (const char* a : {"--topics", "10", "--optimize-alpha", "off"}) {
      args.push_back(a);
    }
    return args;
  };
  auto part_args = [&](const char* file) {
    return common({"--corpus", tmp + "/" + file, "--format", "ldac",
                   "--corpus-vocab", TestCorpusFile("vocab.txt"),
                   "--max-sweeps", "150"});
  };
  ASSERT_TRUE(
      cluster.Start({part_args("part_a.dat"), part_args("part_b.dat")}));
  Daemon* a = cluster.node(0);
  Daemon* c =
      cluster.StartJoiner(common({"--corpus", tmp + "/other.lines", "--format",
                                  "lines", "--max-sweeps", "8"}));
  const std::string pending = PendingNode(redis.address(), "mixed");
  ASSERT_FALSE(pending.empty()) << c->Log();
  auto ca = a->Client(Protocol::kTcp);
  api::StatusResponse before;
  ASSERT_TRUE(ca->Call(Method::kStatus, api::StatusRequest(), &before).ok());
  EXPECT_TRUE(before.training()) << "admitted after A had finished";
  auto [rc, out] = Latentctl({"cluster", "add-node", pending, "--cluster-redis",
                              redis.address(), "--cluster", "mixed"});
  ASSERT_EQ(rc, 0) << out << c->Log();
  ASSERT_TRUE(c->WaitForPorts()) << c->Log();

  const std::vector<Daemon*> nodes = cluster.nodes();
  int64_t tokens = 0;
  for (Daemon* d : nodes) {
    auto client = d->Client(Protocol::kTcp);
    auto s = WaitStatus(
        client.get(),
        [](const api::StatusResponse& s) {
          return !s.training() && s.pending() == 0;
        },
        180);
    ASSERT_TRUE(s.ok()) << s.status() << d->Log();
    EXPECT_EQ(s->cluster_members_size(), 3);
    tokens += static_cast<int64_t>(s->tokens());
  }
  std::vector<std::map<std::string, std::string>> files(3);
  for (int i = 0; i < 160; ++i) {
    for (int n = 0; n < 3; ++n) {
      files[n] = ExportFiles(nodes[n]->tcp(), absl::StrCat(tmp, "/export", n));
    }
    if (files[0] == files[1] && files[1] == files[2] &&
        Sum(TopicTotals(ca.get())) == tokens) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  for (int n = 0; n < 3; ++n) {
    ASSERT_EQ(files[n].count("error"), 0u) << files[n]["error"];
    for (const auto& [name, text] : files[0]) {
      EXPECT_FALSE(text.empty()) << name;
      EXPECT_TRUE(text == files[n][name])
          << name << " differs between A and node " << n;
    }
  }
  EXPECT_EQ(Sum(TopicTotals(ca.get())), tokens);
  cluster.StopAll();
  // Word by word: the rows are the three stores' tokens together.
  std::map<std::string, long long> want;
  for (int n = 0; n < 3; ++n) {
    for (const auto& [word, count] : StoreWordCounts(cluster.data_dir(n))) {
      want[word] += count;
    }
  }
  ExpectRowSums(RowSums(files[0]["word_topic_counts.tsv"]), want);
  long long total = 0;
  for (const auto& [word, n] : want) total += n;
  EXPECT_EQ(total, tokens);
  // C's words (other.lines) and A's (corpus.ldac) are all there.
  EXPECT_GT(StoreWordCounts(cluster.data_dir(2)).size(), 100u);
}

}  // namespace
}  // namespace latentd::testing
