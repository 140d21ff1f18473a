// Cluster tests (label cluster): a private redis-server and 3 in-process
// nodes on 127.0.0.1, talking over loopback TCP, each training on a third
// of the test corpus (tests/testdata/test_corpus.h; document i goes to
// node i % 3, or by its id's hash).
//
// Sizes are kept small for a 2-core CI machine: K = 20, 20 sweeps for the
// exactness tests (the whole corpus, 436k tokens), fewer sweeps and the
// first 600 documents for the SSP, failure and bad-frame tests.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "corpora/corpus_builder.h"
#include "gtest/gtest.h"
#include "hashring/ring.h"
#include "sampler/trainer.h"
#include "service/cluster/local_cluster.h"
#include "sync/transport/frame.h"
#include "tests/cluster/cluster_test_util.h"
#include "tests/data_dir.h"

namespace latentd {
namespace {

void RunExactness(ClusterNodeOptions base) {
  auto cluster = LocalCluster::Start(base, 3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto run = (*cluster)->RunSweeps(20);
  ASSERT_TRUE(run.ok()) << run.status();
  for (const auto& r : run->reports) EXPECT_EQ(r.size(), 20u);
  auto rounds = (*cluster)->Drain();
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  // All of the corpus, no pruning.
  EXPECT_EQ((*cluster)->total_tokens(), testing::TestCorpusSize().tokens);
  ExpectExact(**cluster);
  uint64_t bytes = 0, r = 0;
  for (auto& n : (*cluster)->nodes()) {
    bytes += n->counters().bytes_sent.load();
    r += n->counters().rounds.load();
  }
  std::printf("%.1f s, %llu rounds, %.2f bytes sent per sampled token\n",
              run->seconds, static_cast<unsigned long long>(r),
              static_cast<double>(bytes) / run->tokens_sampled);
}

TEST_F(ClusterTest, ExactAfterDrainAsync) { RunExactness(Base("async")); }
TEST_F(ClusterTest, ExactAfterDrainSsp1) { RunExactness(Base("ssp:1")); }
// BSP also splits the corpus by document id (ShardBy::kId): the total of
// its tokens then checks that the three shards are disjoint and cover it.
TEST_F(ClusterTest, ExactAfterDrainBsp) {
  ClusterNodeOptions o = Base("bsp");
  o.shard_by = ShardBy::kId;
  RunExactness(o);
}

// The 3-node run's joint log-likelihood per token after N = 80 sweeps is
// within 2% of a single-node Trainer's on the whole of Blei's AP corpus
// (same K, α, β; real data: the ctest test cluster_test_real_data, label
// data). The bound and the figures below are AP's: on the generated test
// corpus the gap is about 2%, over the bound in 2 of 7 runs.
// The first sweep's log-likelihood is about 30% worse, so the check has
// room to fail. The cluster runs ssp:1 (1.5-1.8% behind after 50 sweeps,
// less after 80); async with the per-sweep flush is 1.8-2.1% behind after
// 40 sweeps on this 2-core machine, too close to the bound for a stable
// test (ops/bench/cluster_bench.sh reports both).
TEST_F(ClusterTest, QualityWithinTwoPercentOfOneNode) {
  LATENTD_REQUIRE_DATA("blei-ap/ap.dat.zst", "blei-ap/vocab.txt.zst");
  ReaderOptions ap;
  ap.format = CorpusFormat::kLdaC;
  ap.path = testing::RealDataPath("blei-ap/ap.dat.zst");
  ap.vocab_path = testing::RealDataPath("blei-ap/vocab.txt.zst");
  constexpr int kSweeps = 80;
  constexpr TopicId kTopics = 20;
  auto reader = OpenDocumentReader(ap);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::unique_ptr<TokenStore> store = CreateInMemoryTokenStore({});
  CorpusBuilderOptions build;
  build.num_topics = kTopics;
  build.seed = 7;
  auto built = BuildCorpus(**reader, build, store.get());
  ASSERT_TRUE(built.ok()) << built.status();
  TrainerOptions options;
  options.num_topics = kTopics;
  options.alpha = 50.0 / kTopics;
  options.optimize_alpha = false;
  options.beta = 0.01;
  options.seed = 7;
  options.eval_every = 1;
  auto trainer = Trainer::Create(options, std::move(store));
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  double ll_first = 0, ll_one = 0;
  for (int s = 0; s < kSweeps; ++s) {
    auto report = (*trainer)->Sweep();
    ASSERT_TRUE(report.ok()) << report.status();
    if (s == 0) ll_first = report->log_likelihood_per_token;
    ll_one = report->log_likelihood_per_token;
  }

  ClusterNodeOptions base = Base("ssp:1");
  base.corpus = ap;
  auto cluster = LocalCluster::Start(base, 3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto run = (*cluster)->RunSweeps(kSweeps);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE((*cluster)->Drain().ok());
  const double ll_three = (*cluster)->LogLikelihoodPerToken(*run);
  for (auto& n : (*cluster)->nodes()) {
    const auto& c = n->counters();
    std::printf(
        "%s: %llu rounds, mean round %.1f ms, staleness mean %.2f "
        "max %llu sweeps\n",
        n->node_id().c_str(), static_cast<unsigned long long>(c.rounds.load()),
        c.round_micros_total.load() / 1000.0 /
            std::max<uint64_t>(1, c.rounds.load()),
        static_cast<double>(c.staleness_sum.load()) /
            std::max<uint64_t>(1, c.staleness_samples.load()),
        static_cast<unsigned long long>(c.staleness_max.load()));
  }
  std::printf(
      "log-likelihood per token after %d sweeps: 1 node %.4f "
      "(sweep 1: %.4f), 3 nodes %.4f\n",
      kSweeps, ll_one, ll_first, ll_three);
  EXPECT_GT(std::abs(ll_first - ll_one) / std::abs(ll_one), 0.02);
  EXPECT_LT(std::abs(ll_three - ll_one) / std::abs(ll_one), 0.02);
}

}  // namespace
}  // namespace latentd
