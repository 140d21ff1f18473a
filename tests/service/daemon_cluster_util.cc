#include "tests/service/daemon_cluster_util.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "corpora/input_file.h"
#include "corpora/token_store.h"
#include "corpora/vocabulary.h"
#include "gtest/gtest.h"
#include "sampler/model_dir.h"
#include "sampler/store_counts.h"
#include "service/cluster/local_cluster.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::testing {

using service::Method;

std::pair<int, std::string> Latentctl(const std::vector<std::string>& args) {
  const char* env = std::getenv("LATENTD_BIN");
  if (env == nullptr) return {-1, "LATENTD_BIN is not set"};
  std::string bin = env;
  bin = bin.substr(0, bin.rfind('/') + 1) + "latentctl";
  std::string cmd = bin;
  for (const std::string& a : args) absl::StrAppend(&cmd, " '", a, "'");
  absl::StrAppend(&cmd, " 2>&1");
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (p != nullptr && std::fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  const int status = p != nullptr ? ::pclose(p) : -1;
  return {status, out};
}

double Metric(Daemon* daemon, const std::string& name) {
  const std::string& http = daemon->http();
  const HttpReply r =
      HttpGet(std::stoi(http.substr(http.rfind(':') + 1)), "/metrics");
  EXPECT_EQ(r.status, 200) << r.body;
  for (absl::string_view line : absl::StrSplit(r.body, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(' ', 1));
    double v;
    if (kv.first == name && absl::SimpleAtod(kv.second, &v)) return v;
  }
  ADD_FAILURE() << "no " << name << " in: " << r.body;
  return -1;
}

std::string UniqueWord(int i) {
  std::string w = "zq";
  do {
    w.push_back(static_cast<char>('a' + i % 26));
    i /= 26;
  } while (i > 0);
  return w;
}

uint64_t Sweeps(Daemon* daemon) {
  return static_cast<uint64_t>(Metric(daemon, "latentd_sweeps_total"));
}

uint64_t AwaitSweeps(Daemon* daemon, uint64_t n, int seconds) {
  uint64_t sweeps = Sweeps(daemon);
  for (int t = 0; t < seconds * 20 && sweeps < n; ++t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sweeps = Sweeps(daemon);
  }
  return sweeps;
}

std::string ExportCounts(Daemon* daemon, const std::string& out_dir) {
  auto [rc, text] = Latentctl(
      {"export", "--addr", daemon->tcp(), "--out", out_dir, "--overwrite"});
  EXPECT_EQ(rc, 0) << text;
  if (rc != 0) return "";
  std::ifstream in(out_dir + "/word_topic_counts.tsv");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, long long> RowSums(const std::string& counts) {
  std::map<std::string, long long> sums;
  for (absl::string_view line : absl::StrSplit(counts, '\n')) {
    if (line.empty()) continue;
    std::vector<absl::string_view> cells = absl::StrSplit(line, '\t');
    long long& sum = sums[std::string(cells[0])];
    for (size_t i = 1; i < cells.size(); ++i) {
      std::pair<absl::string_view, absl::string_view> kc =
          absl::StrSplit(cells[i], ':');
      long long c = 0;
      EXPECT_TRUE(absl::SimpleAtoi(kc.second, &c)) << line;
      sum += c;
    }
  }
  return sums;
}

long long RowSum(const std::string& counts, const std::string& word) {
  const std::map<std::string, long long> sums = RowSums(counts);
  auto it = sums.find(word);
  return it == sums.end() ? -1 : it->second;
}

void ExpectRowSums(const std::map<std::string, long long>& sums,
                   const std::map<std::string, long long>& want) {
  EXPECT_EQ(sums.size(), want.size()) << "words exported";
  size_t wrong = 0;
  for (const auto& [word, n] : want) {
    auto it = sums.find(word);
    const long long got = it == sums.end() ? -1 : it->second;
    if (got != n && ++wrong <= 5) {
      ADD_FAILURE() << "word '" << word << "': " << n << " tokens, row sum "
                    << got;
    }
  }
  EXPECT_EQ(wrong, 0u) << "words whose row sum is wrong";
}

std::vector<int64_t> TopicTotals(service::ApiClient* client) {
  api::ListTopicsRequest req;
  req.set_top_words(1);
  api::ListTopicsResponse resp;
  absl::Status s = client->Call(Method::kListTopics, req, &resp);
  EXPECT_TRUE(s.ok()) << s;
  std::vector<int64_t> n;
  for (const api::Topic& t : resp.topics()) n.push_back(t.tokens());
  return n;
}

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

TestCluster::TestCluster(TestClusterOptions options)
    : options_(std::move(options)),
      redis_(tmp_.path(), options_.persistent_redis, options_.redis_password,
             options_.redis_placement) {
  if (options_.key) key_args_ = ClusterKeyArgs(tmp_.path());
}

TestCluster::~TestCluster() {
  // Nodes first (their Daemon SIGKILLs a running process), then Redis
  // (redis_'s destructor), then the directory (tmp_'s).
  nodes_.clear();
}

std::vector<std::string> TestCluster::Flags() const {
  std::vector<std::string> flags = {
      "--cluster",
      options_.name,
      "--cluster-redis",
      redis_.tcp_address().empty() ? redis_.address() : redis_.tcp_address(),
      "--failure-timeout",
      options_.failure_timeout};
  if (options_.key) {
    flags.insert(flags.end(), key_args_.begin(), key_args_.end());
  } else {
    flags.push_back("--insecure");
    flags.push_back("on");
  }
  return flags;
}

Daemon* TestCluster::Add(std::vector<std::string> args, bool wait) {
  const std::vector<std::string> flags = Flags();
  args.insert(args.end(), flags.begin(), flags.end());
  Node node;
  if (options_.node_exec) node.exec = options_.node_exec(size());
  node.daemon =
      std::make_unique<Daemon>(data_dir(size()), args, wait, node.exec);
  node.args = std::move(args);
  nodes_.push_back(std::move(node));
  return nodes_.back().daemon.get();
}

bool TestCluster::Start(const std::vector<std::vector<std::string>>& node_args,
                        bool wait) {
  EXPECT_TRUE(nodes_.empty()) << "Start on a started cluster";
  const std::string n = absl::StrCat(node_args.size());
  for (std::vector<std::string> args : node_args) {
    args.push_back("--cluster-size");
    args.push_back(n);
    Add(std::move(args), /*wait=*/false);
  }
  if (!wait) return true;
  bool all = true;
  for (const Node& node : nodes_) {
    if (!node.daemon->WaitForPorts()) {
      all = false;
      ADD_FAILURE() << node.daemon->data_dir() << " does not serve:\n"
                    << node.daemon->Log();
    }
  }
  return all;
}

bool TestCluster::Start(int nodes, const std::vector<std::string>& args) {
  return Start(std::vector<std::vector<std::string>>(nodes, args));
}

Daemon* TestCluster::StartJoiner(const std::vector<std::string>& args) {
  std::vector<std::string> joiner = args;
  // The alias given bare (an on|off setting without a value is on).
  joiner.push_back("--join");
  if (std::find(args.begin(), args.end(), "--join-timeout") == args.end()) {
    joiner.insert(joiner.end(), {"--join-timeout", "120"});
  }
  return Add(std::move(joiner), /*wait=*/false);
}

Daemon* TestCluster::Restart(int i, bool wait) {
  Node& node = nodes_[i];
  node.daemon.reset();  // SIGKILL if it still runs
  node.daemon =
      std::make_unique<Daemon>(data_dir(i), node.args, wait, node.exec);
  return node.daemon.get();
}

std::vector<Daemon*> TestCluster::nodes() const {
  std::vector<Daemon*> d;
  for (const Node& node : nodes_) d.push_back(node.daemon.get());
  return d;
}

std::string TestCluster::data_dir(int i) const {
  return absl::StrCat(tmp_.path(), "/node", i);
}

std::string TestCluster::Logs() const {
  std::string logs;
  for (const Node& node : nodes_) {
    absl::StrAppend(&logs, "\n--- ", node.daemon->data_dir(), " ---\n",
                    node.daemon->Log());
  }
  return logs;
}

void TestCluster::StopAll() {
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    Daemon* d = it->daemon.get();
    if (d->running()) {
      EXPECT_EQ(d->Stop(), 0) << d->Log();
    }
  }
}

std::vector<std::string> TrainingArgs(const char* topics,
                                      const char* max_sweeps) {
  std::vector<std::string> args = TestCorpusArgs();
  for (const char* a : {"--topics", topics, "--max-sweeps", max_sweeps}) {
    args.push_back(a);
  }
  return args;
}

std::vector<std::string> CorpusPartArgs(const std::string& dir, int part,
                                        const std::vector<std::string>& extra) {
  std::vector<std::string> args = {
      "--corpus", absl::StrCat(dir, "/part", part), "--format", "ldac",
      "--vocab",  TestCorpusFile("vocab.txt"),      "--topics", "10"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> FixedPortArgs(
    std::initializer_list<const char*> flags) {
  std::vector<std::string> args;
  for (const char* flag : flags) {
    absl::StatusOr<int> port = PickFreePort();
    EXPECT_TRUE(port.ok()) << flag << ": " << port.status();
    if (!port.ok()) continue;
    args.push_back(flag);
    args.push_back(absl::StrCat("127.0.0.1:", *port));
  }
  return args;
}

std::map<std::string, std::string> ExportFiles(const std::string& addr,
                                               const std::string& dir) {
  std::map<std::string, std::string> files;
  auto [rc, out] =
      Latentctl({"export", "--addr", addr, "--out", dir, "--overwrite"});
  if (rc != 0) return {{"error", out}};
  for (const char* name :
       {"vocab.txt", "word_topic_counts.tsv", "alpha.txt", "topics.txt"}) {
    std::ifstream in(dir + "/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    files[name] = ss.str();
  }
  return files;
}

void ExpectIdenticalExports(const std::map<std::string, std::string>& a,
                            const std::map<std::string, std::string>& b) {
  for (const auto* e : {&a, &b}) {
    auto error = e->find("error");
    if (error != e->end()) ADD_FAILURE() << "export: " << error->second;
  }
  if (a.count("error") || b.count("error")) return;
  for (const auto& [name, text] : a) {
    EXPECT_FALSE(text.empty()) << name;
    auto other = b.find(name);
    EXPECT_TRUE(other != b.end() && text == other->second)
        << name << " differs between the two nodes";
  }
}

std::string PendingNode(const std::string& redis, const std::string& cluster) {
  for (int i = 0; i < 600; ++i) {
    auto [rc, out] = Latentctl({"cluster", "status", "--cluster-redis", redis,
                                "--cluster", cluster, "--json"});
    EXPECT_EQ(rc, 0) << out;
    const size_t at = out.find("\"state\":\"pending\"");
    const size_t id = at == std::string::npos ? at : out.rfind("\"id\":\"", at);
    if (id != std::string::npos) {
      const size_t begin = id + 6;
      return out.substr(begin, out.find('"', begin) - begin);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

std::map<std::string, long long> StoreWordCounts(const std::string& dir) {
  std::map<std::string, long long> out;
  const ModelPaths paths(dir);
  absl::StatusOr<Vocabulary> vocab = Vocabulary::Load(paths.vocab());
  EXPECT_TRUE(vocab.ok()) << vocab.status();
  absl::StatusOr<std::unique_ptr<TokenStore>> store =
      OpenFileTokenStore(paths.tokens());
  EXPECT_TRUE(store.ok()) << store.status();
  if (!vocab.ok() || !store.ok()) return out;
  absl::StatusOr<std::vector<WordTopicDelta>> counts =
      StoreCounts(store->get(), +1);
  EXPECT_TRUE(counts.ok()) << counts.status();
  if (!counts.ok()) return out;
  for (const WordTopicDelta& d : *counts) out[vocab->word(d.word)] += d.delta;
  return out;
}

std::map<std::string, long long> WriteCorpusParts(
    const std::string& dir, int parts,
    std::vector<std::map<std::string, long long>>* per_part,
    size_t max_documents) {
  if (per_part != nullptr) per_part->assign(parts, {});
  std::vector<std::string> vocab;
  std::map<std::string, long long> freq;
  auto words = InputFile::Open(TestCorpusFile("vocab.txt"));
  EXPECT_TRUE(words.ok()) << words.status();
  if (!words.ok()) return freq;
  std::string line;
  while ((*words)->ReadLine(&line).value_or(false)) vocab.push_back(line);
  auto docs = InputFile::Open(TestCorpusFile("corpus.ldac"));
  EXPECT_TRUE(docs.ok()) << docs.status();
  if (!docs.ok()) return freq;
  std::vector<std::ofstream> out;
  for (int i = 0; i < parts; ++i) {
    out.emplace_back(absl::StrCat(dir, "/part", i));
  }
  for (size_t d = 0;
       d < max_documents && (*docs)->ReadLine(&line).value_or(false);) {
    if (line.empty()) continue;
    const int part = static_cast<int>(d++ % parts);
    out[part] << line << "\n";
    std::vector<absl::string_view> cells =
        absl::StrSplit(line, ' ', absl::SkipWhitespace());
    for (size_t j = 1; j < cells.size(); ++j) {
      std::pair<absl::string_view, absl::string_view> ic =
          absl::StrSplit(cells[j], ':');
      size_t id = 0;
      long long count = 0;
      if (absl::SimpleAtoi(ic.first, &id) &&
          absl::SimpleAtoi(ic.second, &count) && id < vocab.size()) {
        freq[vocab[id]] += count;
        if (per_part != nullptr) (*per_part)[part][vocab[id]] += count;
      } else {
        ADD_FAILURE() << "test corpus document " << d << ": " << cells[j];
      }
    }
  }
  return freq;
}

sync::ClusterStatus ReadStatus(const RedisServer& redis,
                               const std::string& cluster) {
  auto client = sync::RedisClient::Connect(redis.address());
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return {};
  auto st = sync::ReadClusterStatus(client->get(), cluster);
  EXPECT_TRUE(st.ok()) << st.status();
  return st.ok() ? *st : sync::ClusterStatus{};
}

bool DrainCluster(const TestCluster& cluster, int seconds) {
  auto [rc, out] = Latentctl(
      {"cluster", "drain", "--cluster-redis", cluster.redis().address(),
       "--cluster", cluster.name(), "--timeout", std::to_string(seconds)});
  const bool settled = rc == 0 && out.find("settled: ") != std::string::npos;
  EXPECT_TRUE(settled) << "latentctl cluster drain exited " << rc << ": "
                       << out;
  return settled;
}

double DrainAndCheckExact(const TestCluster& cluster,
                          const std::map<std::string, long long>& freq,
                          std::vector<int> nodes, bool drain) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point began = Clock::now();
  if (drain && !DrainCluster(cluster, 150)) return -1;
  const int members = static_cast<int>(nodes.size());
  auto done = [members](const api::StatusResponse& s) {
    return !s.training() && s.pending() == 0 &&
           s.cluster_members_size() == members;
  };
  for (int i : nodes) {
    Daemon* n = cluster.node(i);
    auto c = n->Client(service::Protocol::kTcp);
    auto f = WaitStatus(c.get(), done, 150);
    EXPECT_TRUE(f.ok()) << f.status() << n->Log();
    if (!f.ok()) return -1;
  }
  // The rounds drain in the background: until every node holds the same
  // counts, the exports may differ.
  std::vector<std::string> counts(nodes.size());
  std::map<std::string, long long> sums;
  auto same = [&counts] {
    return std::all_of(counts.begin(), counts.end(),
                       [&](const std::string& c) { return c == counts[0]; });
  };
  for (const Clock::time_point end = Clock::now() + std::chrono::seconds(30);
       Clock::now() < end;
       std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    for (size_t j = 0; j < nodes.size(); ++j) {
      counts[j] = ExportCounts(cluster.node(nodes[j]),
                               absl::StrCat(cluster.dir(), "/x", nodes[j]));
    }
    sums = RowSums(counts[0]);
    if (sums == freq && same()) break;
  }
  for (size_t j = 1; j < nodes.size(); ++j) {
    EXPECT_TRUE(counts[j] == counts[0])
        << "node " << nodes[j] << " exports other counts than node "
        << nodes[0];
  }
  ExpectRowSums(sums, freq);
  return std::chrono::duration<double>(Clock::now() - began).count();
}

}  // namespace latentd::testing
