// Hand-offs that stay exact with replicated ingestion (docs/design.md,
// "Growing and shrinking the cluster" and "Replicated ingestion"): three
// daemons with --replicas 2 train thirds of an LDA-C corpus, and
// `latentctl cluster remove-node C` (hand-off) removes one mid-training.
// A and B take C's documents as ingested records and copy each to its
// backup before they acknowledge it: that backup is never C (it is
// leaving), and a copy keeps the record's words as they are, so a corpus
// whose words the text tokenizer would drop ("the", "1984", "c++") hands
// off too. Either way C exits 0 and A and B end exact: the same exports,
// each word's row summing to its frequency in all three thirds.
// Redis and the daemons run on 127.0.0.1 (Unix socket, kernel-picked
// ports) and are stopped at the end.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "corpora/tokenizer.h"
#include "gtest/gtest.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"
#include "tests/testdata/test_corpus.h"

namespace latentd::testing {
namespace {

using service::Protocol;

constexpr int kNodes = 3;

// Starts three nodes of `cluster`, node i on dir/part<i> (LDA-C) with the
// vocabulary `vocab`, 10 topics, `sweeps` sweeps and two copies of each
// ingested document; true if all serve.
bool StartThirds(TestCluster* cluster, const std::string& vocab,
                 const char* sweeps) {
  std::vector<std::vector<std::string>> args;
  for (int i = 0; i < kNodes; ++i) {
    args.push_back({"--corpus", absl::StrCat(cluster->dir(), "/part", i),
                    "--format", "ldac", "--vocab", vocab, "--topics", "10",
                    "--replicas", "2", "--max-sweeps", sweeps,
                    "--optimize-alpha", "off"});
  }
  return cluster->Start(args);
}

// Removes node 2 (C) of `cluster` with hand-off once it has swept twice
// while A (checked) still trains; expects the removal to succeed and C to
// exit 0.
// Returns the documents C held (0 and a test failure if it did not get
// that far).
uint64_t HandOffC(TestCluster* cluster) {
  Daemon* c = cluster->node(2);
  auto cc = c->Client(Protocol::kTcp);
  auto st = WaitStatus(
      cc.get(),
      [](const api::StatusResponse& s) { return s.version().sweep() >= 2; },
      90);
  EXPECT_TRUE(st.ok()) << st.status() << c->Log();
  if (!st.ok()) return 0;
  auto ca = cluster->node(0)->Client(Protocol::kTcp);
  auto a = WaitStatus(
      ca.get(), [](const api::StatusResponse&) { return true; }, 10);
  EXPECT_TRUE(a.ok() && a->training()) << "A must still be training";
  auto [rc, out] =
      Latentctl({"cluster", "remove-node", c->tcp(), "--cluster-redis",
                 cluster->redis().address(), "--cluster", cluster->name()});
  std::printf("%s", out.c_str());
  EXPECT_EQ(rc, 0) << out << c->Log();
  EXPECT_NE(out.find(absl::StrCat("removed ", c->tcp(), " (handoff)")),
            std::string::npos)
      << out;
  EXPECT_EQ(c->Stop(/*sig=*/0, 30), 0) << c->Log();
  return rc == 0 ? st->documents() : 0;
}

// A member removed for good is no peer any more: once the 3 s a silent peer
// is given (--dead-after's default) have passed since C left at `left`,
// neither A nor B reports it unavailable, in Status or in its log.
void ExpectCRetired(const TestCluster& cluster,
                    std::chrono::steady_clock::time_point left) {
  std::this_thread::sleep_until(left + std::chrono::seconds(4));
  const std::string c = cluster.node(2)->tcp();
  for (int i : {0, 1}) {
    auto client = cluster.node(i)->Client(Protocol::kTcp);
    auto st = WaitStatus(
        client.get(), [](const api::StatusResponse&) { return true; }, 10);
    ASSERT_TRUE(st.ok()) << st.status();
    EXPECT_EQ(st->unavailable_peers_size(), 0) << st->DebugString();
    EXPECT_EQ(cluster.node(i)->Log().find("peer " + c + " unavailable"),
              std::string::npos)
        << cluster.node(i)->Log();
  }
}

// What neither A nor B may log: a copy sent to the leaving node.
void ExpectNoBackupOnC(const TestCluster& cluster) {
  const std::string backup_c = "backup " + cluster.node(2)->tcp();
  for (int i : {0, 1}) {
    EXPECT_EQ(cluster.node(i)->Log().find(backup_c), std::string::npos)
        << cluster.node(i)->Log();
  }
}

TEST(ClusterHandoffExact, TheLeavingNodeIsNoBackupOfWhatItHandsOff) {
  TestCluster cluster({.name = "handoff"});
  ASSERT_TRUE(cluster.ok());
  const std::map<std::string, long long> freq =
      WriteCorpusParts(cluster.dir(), kNodes);
  ASSERT_FALSE(freq.empty());
  ASSERT_TRUE(StartThirds(&cluster, TestCorpusFile("vocab.txt"), "40"));
  const uint64_t handed = HandOffC(&cluster);
  const auto left = std::chrono::steady_clock::now();
  ASSERT_GT(handed, 0u);
  ExpectNoBackupOnC(cluster);
  // Each document handed to A has its copy on B and the other way round:
  // none went to C, whose copies left with it.
  const double copies = Metric(cluster.node(0), "latentd_replica_records") +
                        Metric(cluster.node(1), "latentd_replica_records");
  EXPECT_EQ(copies, static_cast<double>(handed));
  EXPECT_GE(DrainAndCheckExact(cluster, freq, {0, 1}), 0);
  ExpectCRetired(cluster, left);
  cluster.StopAll();
}

// The vocabulary of the corpus below: kOrdinary ordinary words, kDropped
// words the text tokenizer drops (stop words, numbers, single letters once
// split), then words it changes (punctuation; one in upper case, which the
// LDA-C reader lowercases).
constexpr size_t kOrdinary = 14;
constexpr size_t kDropped = 7;
const std::vector<std::string>& Vocabulary() {
  static const std::vector<std::string> words = {
      "river",  "bank",   "money",    "loan",   "water",   "stream", "credit",
      "fish",   "boat",   "interest", "shore",  "deposit", "flood",  "cash",
      "the",    "a",      "of",       "1984",   "42",      "c++",    "x",
      "e-mail", "hello,", "don't",    "The_End"};
  return words;
}

// Writes dir/vocab.txt and 240 LDA-C documents into dir/part0..2 (document
// d into part d % 3), every fourth one made only of words the tokenizer
// drops (as text it would be empty); returns each word's frequency
// (lowercased, as the reader loads it).
std::map<std::string, long long> WriteOddCorpus(const std::string& dir) {
  const std::vector<std::string>& vocab = Vocabulary();
  std::ofstream(dir + "/vocab.txt") << [&] {
    std::string s;
    for (const std::string& w : vocab) s += w + "\n";
    return s;
  }();
  std::vector<std::ofstream> parts;
  for (int i = 0; i < kNodes; ++i) {
    parts.emplace_back(absl::StrCat(dir, "/part", i));
  }
  std::map<std::string, long long> freq;
  uint64_t x = 88172645463325252ULL;  // xorshift64
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int d = 0; d < 240; ++d) {
    const bool odd_only = d % 4 == 0;
    std::map<size_t, int> counts;
    for (int t = 0; t < 12; ++t) {
      const size_t id =
          odd_only ? kOrdinary + next() % kDropped : next() % vocab.size();
      ++counts[id];
    }
    std::string line = absl::StrCat(counts.size());
    for (const auto& [id, n] : counts) {
      absl::StrAppend(&line, " ", id, ":", n);
      freq[LowercaseWord(vocab[id])] += n;
    }
    parts[d % kNodes] << line << "\n";
  }
  return freq;
}

TEST(ClusterHandoffExact, AnLdacCorpusKeepsTheWordsTheTokenizerDrops) {
  TestCluster cluster({.name = "handoff"});
  ASSERT_TRUE(cluster.ok());
  const std::map<std::string, long long> freq = WriteOddCorpus(cluster.dir());
  // Words the text tokenizer drops or changes, each in the corpus.
  for (size_t i = kOrdinary; i < Vocabulary().size(); ++i) {
    const std::string w = LowercaseWord(Vocabulary()[i]);
    ASSERT_GT(freq.count(w), 0u) << w;
    EXPECT_NE(Tokenizer().Tokenize(w), std::vector<std::string>{w}) << w;
    if (i < kOrdinary + kDropped) {
      EXPECT_TRUE(Tokenizer().Tokenize(w).empty()) << w;
    }
  }
  // (No sweep limit: C leaves while the others train; a drain then
  // settles them.)
  ASSERT_TRUE(StartThirds(&cluster, cluster.dir() + "/vocab.txt", "0"));
  ASSERT_GT(HandOffC(&cluster), 0u);
  ExpectNoBackupOnC(cluster);
  EXPECT_GE(DrainAndCheckExact(cluster, freq, {0, 1}), 0);
  cluster.StopAll();
}

}  // namespace
}  // namespace latentd::testing
