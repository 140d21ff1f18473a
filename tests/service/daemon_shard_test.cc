// One corpus file shared by a cluster (issue 30): each of two nodes is
// given the whole file with --shard I/2 and builds its store from its own
// half of the documents. Together they hold every document of the file
// once, and the model they train is exact over those tokens.
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
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

// Documents and tokens of an LDA-C file ("N id:count ..." per line).
std::pair<uint64_t, uint64_t> CountLdac(const std::string& path) {
  std::ifstream in(path);
  uint64_t docs = 0, tokens = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream cells(line);
    std::string cell;
    if (!(cells >> cell)) continue;  // the count of distinct words
    ++docs;
    while (cells >> cell) {
      tokens += std::stoull(cell.substr(cell.find(':') + 1));
    }
  }
  return {docs, tokens};
}

TEST(DaemonShard, TwoNodesShareOneCorpusFileByShards) {
  const auto [file_docs, file_tokens] =
      CountLdac(TestCorpusFile("corpus.ldac"));
  ASSERT_GT(file_docs, 100u);
  TestCluster cluster({.name = "shard"});
  ASSERT_TRUE(cluster.ok());
  std::vector<std::vector<std::string>> args(2, TrainingArgs("10", "20"));
  for (int i = 0; i < 2; ++i) {
    args[i].push_back("--shard");
    args[i].push_back(absl::StrCat(i, "/2"));
  }
  ASSERT_TRUE(cluster.Start(args));
  auto done = [](const api::StatusResponse& s) {
    return !s.training() && s.pending() == 0 && s.cluster_members_size() == 2;
  };
  uint64_t docs = 0, tokens = 0;
  std::vector<std::unique_ptr<service::ApiClient>> clients;
  for (int i = 0; i < 2; ++i) {
    clients.push_back(cluster.node(i)->Client(service::Protocol::kTcp));
    auto st = WaitStatus(clients.back().get(), done, 180);
    ASSERT_TRUE(st.ok()) << st.status() << cluster.node(i)->Log();
    // Each its half (positions i, i+2, ...).
    EXPECT_NEAR(static_cast<double>(st->documents()), file_docs / 2.0, 1);
    EXPECT_NE(cluster.node(i)->Log().find("left to other shards"),
              std::string::npos);
    docs += st->documents();
    tokens += st->tokens();
  }
  EXPECT_EQ(docs, file_docs);
  EXPECT_EQ(tokens, file_tokens);
  // One model over exactly those tokens, the same on both nodes.
  std::vector<int64_t> na, nb;
  for (int i = 0; i < 300; ++i) {
    na = TopicTotals(clients[0].get());
    nb = TopicTotals(clients[1].get());
    if (Sum(na) == static_cast<int64_t>(file_tokens) && na == nb) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Sum(na), static_cast<int64_t>(file_tokens)) << cluster.Logs();
  EXPECT_EQ(na, nb);
  cluster.StopAll();
}

}  // namespace
}  // namespace latentd::testing
