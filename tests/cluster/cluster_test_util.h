// Shared by the cluster tests: a fixture with a private redis-server on
// 127.0.0.1 (free port), node options over the test corpus
// (tests/testdata/test_corpus.h), a log sink.
#ifndef LATENTD_TESTS_CLUSTER_CLUSTER_TEST_UTIL_H_
#define LATENTD_TESTS_CLUSTER_CLUSTER_TEST_UTIL_H_

#include <unistd.h>

#include <atomic>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "hashring/ring.h"
#include "service/cluster/local_cluster.h"
#include "tests/testdata/test_corpus.h"

namespace latentd {

inline ReaderOptions TestCorpus() {
  ReaderOptions input;
  input.format = CorpusFormat::kLdaC;
  input.path = testing::TestCorpusFile("corpus.ldac");
  input.vocab_path = testing::TestCorpusFile("vocab.txt");
  return input;
}

struct LogSink {
  absl::Mutex mu;
  std::vector<std::string> lines;
  sync::LogFn fn() {
    return [this](std::string_view l) {
      absl::MutexLock lock(&mu);
      lines.emplace_back(l);
    };
  }
  int Count(std::string_view s) {
    absl::MutexLock lock(&mu);
    int n = 0;
    for (const auto& l : lines) n += l.find(s) != std::string::npos;
    return n;
  }
};

inline constexpr char kTestClusterKey[] = "cluster-test-key-8d2f61c0b94e";

class ClusterTest : public ::testing::Test {
 public:
  void SetUp() override {
    auto redis = RedisProcess::Start();
    ASSERT_TRUE(redis.ok()) << redis.status();
    redis_ = std::move(*redis);
  }
  ClusterNodeOptions Base(const std::string& consistency) {
    ClusterNodeOptions o;
    o.redis_url = redis_->url();
    o.cluster = absl::StrCat("test-", ::getpid(), "-", ++clusters_);
    o.corpus = TestCorpus();
    o.num_topics = 20;
    o.seed = 7;
    o.threads = 1;
    o.join_timeout = absl::Seconds(30);
    o.log = log_.fn();
    o.info = log_.fn();
    o.cluster_key = kTestClusterKey;  // every sync connection authenticated
    auto c = sync::Consistency::Parse(consistency);
    EXPECT_TRUE(c.ok());
    o.consistency = *c;
    return o;
  }

  LogSink log_;
  std::unique_ptr<RedisProcess> redis_;
  int clusters_ = 0;
};

// The owner of the topic totals key in `cluster` (the key every node
// sends in every round); null if no node is.
inline ClusterNode* TotalsOwner(LocalCluster& cluster) {
  const hashring::RingConfig config = cluster.nodes()[0]->ring_config();
  auto ring = hashring::Ring::Build(config);
  EXPECT_TRUE(ring.ok());
  if (!ring.ok()) return nullptr;
  const std::string& id =
      config.members[(*ring)->Owner(sync::kTopicTotalsKey)].id;
  for (auto& n : cluster.nodes()) {
    if (n->node_id() == id) return n.get();
  }
  return nullptr;
}

// A DeltaBatch from `node_id` adding 5 tokens of topic 0 to the topic
// totals (K = 20): applied, it would break the invariant that the totals
// add up to the cluster's tokens. What the security tests send as an
// intruder.
inline std::string TotalsIntrusionBatch(const std::string& node_id) {
  sync::DeltaBatch b;
  b.set_node_id(node_id);
  b.set_incarnation(77);
  b.set_sequence(1);
  b.set_dimension(20);
  b.set_changes_only(true);
  b.add_keys(sync::kTopicTotalsKey);
  b.mutable_deltas()->add_sizes(1);
  b.mutable_deltas()->add_topics(0);
  b.mutable_deltas()->add_counts(5);
  return b.SerializeAsString();
}

// Nodes 0..n-1 of `nodes` sample, each on its own thread, until Stop()
// (at most 90 s). The nodes must outlive it (Stop or destruction).
class BackgroundSweeps {
 public:
  BackgroundSweeps(std::vector<std::unique_ptr<ClusterNode>>& nodes, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      ClusterNode* node = nodes[i].get();
      threads_.emplace_back([this, node] {
        const absl::Time deadline = absl::Now() + absl::Seconds(90);
        while (!stop_.load() && absl::Now() < deadline) {
          if (!node->Sweep(/*evaluate=*/false).ok()) ++errors_;
        }
      });
    }
  }
  ~BackgroundSweeps() { Stop(); }
  // Stops and joins the threads; the number of sweeps that failed.
  int Stop() {
    stop_.store(true);
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    return errors_.load();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> errors_{0};
  std::vector<std::thread> threads_;
};

// At quiescence: every node's local value of every key equals the owner's
// global; the tables hold exactly those values; the global topic totals add
// up to the tokens of all shards, and to the sum of the word globals.
inline void ExpectExact(LocalCluster& cluster) {
  auto& nodes = cluster.nodes();
  const hashring::RingConfig config = nodes[0]->ring_config();
  auto ring = hashring::Ring::Build(config);
  ASSERT_TRUE(ring.ok());
  auto owner_of = [&](sync::Key key) -> ClusterNode* {
    const std::string& id = config.members[(*ring)->Owner(key)].id;
    for (auto& n : nodes) {
      if (n->node_id() == id) return n.get();
    }
    return nullptr;
  };
  uint64_t mismatches = 0, keys = 0;
  for (auto& n : nodes) {
    EXPECT_EQ(n->synced_table().pending_rows(), 0u);
    const SyncedTopicTable& t = n->synced_table();
    sync::SparseVector x;
    for (size_t i = 0; i < t.num_keys(); ++i) {
      ClusterNode* owner = owner_of(t.key(i));
      ASSERT_NE(owner, nullptr);
      t.Read(i, &x);
      ++keys;
      if (x != owner->owner().Global(t.key(i))) ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << keys << " (node, key) pairs";
  const sync::SparseVector totals =
      owner_of(sync::kTopicTotalsKey)->owner().Global(sync::kTopicTotalsKey);
  int64_t sum = 0;
  for (const auto& e : totals) sum += e.count;
  EXPECT_EQ(sum, static_cast<int64_t>(cluster.total_tokens()));
  // The tables' own n_k equal the global totals.
  for (auto& n : nodes) {
    for (const auto& e : totals) {
      EXPECT_EQ(n->table().TopicTotal(e.topic), e.count);
    }
  }
  // Σ_w global n_wk = global n_k.
  std::vector<int64_t> by_topic(20, 0);
  for (auto& n : nodes) {
    for (const auto& [key, g] : n->owner().Snapshot()) {
      if (key == sync::kTopicTotalsKey) continue;
      for (const auto& e : g) by_topic[e.topic] += e.count;
    }
  }
  for (const auto& e : totals) EXPECT_EQ(by_topic[e.topic], e.count);
}

// At quiescence: every key's global, at whichever node owns it, equals the
// sum of every node's own documents' counts of that key (a from-scratch
// count of all stores), and no owner holds a key no store has.
inline void ExpectGlobalsEqualStores(LocalCluster& cluster) {
  absl::flat_hash_map<sync::Key, std::vector<int64_t>> want;
  for (auto& n : cluster.nodes()) {
    auto own = n->OwnCounts();
    ASSERT_TRUE(own.ok()) << own.status();
    for (const auto& [key, v] : *own) {
      std::vector<int64_t>& d = want[key];
      d.resize(n->table().num_topics(), 0);
      for (const auto& e : v) d[e.topic] += e.count;
    }
  }
  size_t wrong = 0, held = 0;
  std::string first;
  for (auto& n : cluster.nodes()) {
    for (const auto& [key, g] : n->owner().Snapshot()) {
      ++held;
      sync::SparseVector expected;
      auto it = want.find(key);
      if (it != want.end()) {
        for (uint32_t k = 0; k < it->second.size(); ++k) {
          if (it->second[k] != 0) expected.push_back({k, it->second[k]});
        }
        it->second.clear();  // seen
      }
      if (g != expected) {
        if (wrong++ == 0)
          first = absl::StrCat("key ", key, " at ", n->node_id());
      }
    }
  }
  size_t missing = 0;
  for (const auto& [key, d] : want) {
    for (int64_t c : d) missing += c != 0;
  }
  EXPECT_EQ(wrong, 0u) << "of " << held << " owned keys; first: " << first;
  EXPECT_EQ(missing, 0u) << "store counts no owner holds";
}

}  // namespace latentd

#endif  // LATENTD_TESTS_CLUSTER_CLUSTER_TEST_UTIL_H_
