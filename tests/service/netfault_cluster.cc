#include "tests/service/netfault_cluster.h"

#include <chrono>
#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "corpora/input_file.h"
#include "gtest/gtest.h"
#include "tests/testdata/test_corpus.h"

namespace latentd::testing {

NetCluster::NetCluster(int nodes, const std::string& failure_timeout,
                       int docs_per_node) {
  absl::StatusOr<std::unique_ptr<NetTopology>> made =
      NetTopology::Create(nodes);
  EXPECT_TRUE(made.ok()) << made.status();
  if (!made.ok()) return;
  net = std::move(*made);
  NetTopology* topo = net.get();
  cluster = std::make_unique<TestCluster>(TestClusterOptions{
      .name = "netfault",
      .failure_timeout = failure_timeout,
      .redis_placement = {.exec_prefix = topo->Exec(NetTopology::kRedis),
                          .tcp = topo->Address(NetTopology::kRedis) + ":6379"},
      .node_exec = [topo](int i) { return topo->Exec(i); }});
  EXPECT_TRUE(cluster->ok()) << "Redis in its namespace did not start";
  if (!cluster->ok()) return;
  base = WriteSmallParts(cluster->dir(), nodes, docs_per_node);
  if (base.empty()) return;
  std::vector<std::vector<std::string>> args;
  for (int i = 0; i < nodes; ++i) {
    args.push_back(CorpusPartArgs(cluster->dir(), i));
    const std::string at = topo->Address(i);
    for (const std::string& a : std::vector<std::string>{
             "--listen", at + ":7071", "--http", at + ":7070",
             "--cluster-listen", at + ":7072", "--replicas", "2", "--threads",
             "1", "--checkpoint-every", "0"}) {
      args.back().push_back(a);
    }
  }
  const auto began = std::chrono::steady_clock::now();
  EXPECT_TRUE(cluster->Start(args)) << cluster->Logs();
  up_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
             .count();
}

bool NetCluster::ok() const {
  return !::testing::Test::HasFailure() && cluster != nullptr && !base.empty();
}

std::map<std::string, long long> WriteSmallParts(const std::string& dir,
                                                 int nodes, int docs_per_node) {
  std::map<std::string, long long> freq;
  std::vector<std::string> vocab;
  std::ifstream words(TestCorpusFile("vocab.txt"));
  for (std::string w; std::getline(words, w);) vocab.push_back(w);
  auto docs = InputFile::Open(TestCorpusFile("corpus.ldac"));
  EXPECT_TRUE(docs.ok()) << docs.status();
  EXPECT_FALSE(vocab.empty()) << TestCorpusFile("vocab.txt");
  if (!docs.ok() || vocab.empty()) return {};
  std::vector<std::ofstream> parts;
  for (int i = 0; i < nodes; ++i) {
    parts.emplace_back(absl::StrCat(dir, "/part", i));
  }
  std::string line;
  for (int d = 0;
       d < nodes * docs_per_node && (*docs)->ReadLine(&line).value_or(false);) {
    if (line.empty()) continue;
    parts[d++ % nodes] << line << "\n";
    std::vector<absl::string_view> cells =
        absl::StrSplit(line, ' ', absl::SkipWhitespace());
    for (size_t j = 1; j < cells.size(); ++j) {
      std::pair<absl::string_view, absl::string_view> ic =
          absl::StrSplit(cells[j], ':');
      size_t id = 0;
      long long count = 0;
      if (!absl::SimpleAtoi(ic.first, &id) ||
          !absl::SimpleAtoi(ic.second, &count) || id >= vocab.size()) {
        ADD_FAILURE() << "test corpus document " << d << ": " << cells[j];
        return {};
      }
      freq[vocab[id]] += count;
    }
  }
  return freq;
}

}  // namespace latentd::testing
