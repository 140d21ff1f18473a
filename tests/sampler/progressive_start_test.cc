// The progressive start (sampler/internal/progressive_start_kernel.h): each
// token of the pass is drawn from the conditional given the tokens placed
// before it and only added to the counts; the trainer runs the pass once,
// from a cleared table, and ends with exact counts; and the state it
// leaves is far better than the uniform start's.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "base/random.h"
#include "corpora/synthetic_corpus.h"
#include "gtest/gtest.h"
#include "sampler/internal/delta_combiner.h"
#include "sampler/sampling_kernel.h"
#include "sampler/sweep_pipeline.h"
#include "sampler/trainer.h"
#include "tests/sampler/chi_square.h"
#include "tests/sampler/store_writer_util.h"

namespace latentd {
namespace {

// Two documents in one batch over a table that already counts tokens of
// earlier batches. The joint law of the four draws, enumerated: token i
// sees the earlier tokens of its document (n_dk), the table plus every
// earlier token of its word (n_wk) and of the batch (n_k), and not itself.
TEST(ProgressiveStartKernel, JointLawIsTheSequentialConditionals) {
  const TopicId K = 3;
  const std::vector<WordId> words = {0, 1, 0, 0};
  const std::vector<size_t> doc_of = {0, 0, 0, 1};
  const std::vector<std::vector<Count>> background = {{2, 0, 1}, {0, 3, 0}};
  const std::vector<double> alpha = {0.5, 0.2, 0.9};
  const double beta = 0.3;
  const WordId V = 2;

  TopicTable table(V, K);
  std::vector<WordTopicDelta> fill;
  for (WordId w = 0; w < V; ++w) {
    for (TopicId k = 0; k < K; ++k) {
      if (background[w][k] > 0) fill.push_back({w, k, background[w][k]});
    }
  }
  ASSERT_TRUE(table.Apply(fill).ok());
  SweepParams params;
  params.table = &table;
  params.alpha = alpha;
  params.beta = beta;
  params.beta_sum = beta * V;
  params.seed = 5;

  const size_t tokens = words.size();
  size_t outcomes = 1;
  for (size_t i = 0; i < tokens; ++i) outcomes *= K;
  std::vector<double> exact(outcomes);
  for (size_t o = 0; o < outcomes; ++o) {
    std::vector<TopicId> z(tokens);
    for (size_t i = 0, code = o; i < tokens; ++i, code /= K) z[i] = code % K;
    double p = 1;
    for (size_t i = 0; i < tokens; ++i) {
      double total = 0, chosen = 0;
      for (TopicId k = 0; k < K; ++k) {
        double n_dk = 0, n_wk = background[words[i]][k], n_k = 0;
        for (WordId w = 0; w < V; ++w) n_k += background[w][k];
        for (size_t j = 0; j < i; ++j) {
          if (z[j] != k) continue;
          n_dk += doc_of[j] == doc_of[i];
          n_wk += words[j] == words[i];
          ++n_k;
        }
        const double mass =
            (n_dk + alpha[k]) * (n_wk + beta) / (n_k + params.beta_sum);
        total += mass;
        if (k == z[i]) chosen = mass;
      }
      p *= chosen / total;
    }
    exact[o] = p;
  }

  std::unique_ptr<SamplingKernel> kernel =
      MakeKernel(KernelKind::kProgressiveStart, K);
  const int draws = 200000;
  std::vector<int> observed(outcomes, 0);
  std::vector<TopicChange> changes;
  const std::vector<TopicId> start = {2, 2, 1, 0};  // never counted
  for (int d = 0; d < draws; ++d) {
    DocBatch batch;
    batch.index = d;
    batch.AddDocument("a", "", std::span(words).first(3),
                      std::span(start).first(3));
    batch.AddDocument("b", "", std::span(words).last(1),
                      std::span(start).last(1));
    changes.clear();
    kernel->SampleBatch(params, &batch, &changes);
    // Every token is reported, as an addition only.
    ASSERT_EQ(changes.size(), tokens);
    size_t code = 0;
    for (size_t i = tokens; i-- > 0;) {
      ASSERT_EQ(changes[i].old_topic, kUncounted);
      ASSERT_EQ(changes[i].new_topic, batch.topics[i]);
      code = code * K + batch.topics[i];
    }
    ++observed[code];
  }
  int cells = 0;
  const double chi2 = ChiSquare(observed, exact, draws, &cells);
  EXPECT_GT(cells, 60);
  EXPECT_LT(chi2, ChiSquareBound(cells));
}

TEST(DeltaCombiner, UncountedChangesOnlyAdd) {
  internal::DeltaCombiner combiner;
  std::vector<WordTopicDelta> deltas;
  combiner.Combine({{4, kUncounted, 2},
                    {4, kUncounted, 2},
                    {1, 0, 3},
                    {4, 2, 1},
                    {1, kUncounted, 0}},
                   &deltas);
  std::vector<std::tuple<WordId, TopicId, int32_t>> got;
  for (const WordTopicDelta& d : deltas)
    got.emplace_back(d.word, d.topic, d.delta);
  std::sort(got.begin(), got.end());
  const std::vector<std::tuple<WordId, TopicId, int32_t>> want = {
      {1, 3, 1}, {4, 1, 1}, {4, 2, 1}};
  EXPECT_EQ(got, want);
}

// A corpus from the LDA model (12 topics) in a store with uniformly random
// topics, as the corpus builder writes it.
std::unique_ptr<TokenStore> SyntheticStore(TopicId K) {
  SyntheticCorpusOptions o;
  o.num_topics = 12;
  o.vocab_size = 600;
  o.num_docs = 800;
  o.mean_doc_length = 60;
  o.seed = 11;
  absl::StatusOr<SyntheticCorpus> corpus = GenerateSyntheticCorpus(o);
  EXPECT_TRUE(corpus.ok()) << corpus.status();
  TokenStoreMeta meta;
  meta.num_topics = K;
  meta.vocab_size = o.vocab_size;
  std::unique_ptr<TokenStore> store = CreateInMemoryTokenStore(meta);
  testing::StoreFill fill(store.get(), meta, 3000);
  Rng rng(3);
  for (const std::vector<WordId>& doc : corpus->docs) {
    std::vector<TopicId> z(doc.size());
    for (TopicId& t : z) t = static_cast<TopicId>(rng.UniformInt(K));
    fill.Add("", doc, z);
  }
  fill.Commit();
  return store;
}

// The table after the pass and the sweeps equals the counts of the store's
// assignments: every token counted once, at its topic.
void ExpectTableMatchesStore(Trainer& trainer) {
  const TopicTable& table = trainer.table();
  TopicTable rebuilt(table.vocab_size(), table.num_topics());
  ASSERT_TRUE(RebuildTable(trainer.store(), &rebuilt).ok());
  for (WordId w = 0; w < table.vocab_size(); ++w) {
    ASSERT_EQ(rebuilt.RowNonZeros(w), table.RowNonZeros(w)) << "word " << w;
    table.ForEachNonZero(w, [&](TopicId k, Count c) {
      ASSERT_EQ(rebuilt.Get(w, k), c) << "word " << w << " topic " << k;
    });
  }
  for (TopicId k = 0; k < table.num_topics(); ++k) {
    ASSERT_EQ(rebuilt.TopicTotal(k), table.TopicTotal(k)) << "topic " << k;
  }
}

// The topics of every token of the store, in order.
std::vector<TopicId> StoreTopics(TokenStore& store) {
  std::vector<TopicId> topics;
  absl::StatusOr<std::unique_ptr<BatchReader>> reader = store.Read();
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return topics;
  DocBatch batch;
  for (;;) {
    absl::StatusOr<bool> more = (*reader)->Next(&batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return topics;
    topics.insert(topics.end(), batch.topics.begin(), batch.topics.end());
  }
}

// The parameters of the pass tests' progressive passes.
SweepParams PassParams(const TopicTable& table) {
  SweepParams params;
  params.table = &table;
  params.alpha.assign(table.num_topics(), 0.1);
  params.beta = 0.01;
  params.beta_sum = 0.01 * static_cast<double>(table.vocab_size());
  params.seed = 5;
  return params;
}

// The serial prefix (PipelineOptions::serial_prefix_batches): a batch in
// it is sampled once every batch before it is applied, so a pass whose
// every batch is in it draws on two threads exactly what it draws on one.
TEST(ProgressiveStartPass, SerialPrefixDrawsOnTwoThreadsAsOnOne) {
  const TopicId K = 12;
  auto pass = [&](int threads, int serial_batches) {
    std::unique_ptr<TokenStore> store = SyntheticStore(K);
    EXPECT_GE(store->meta().num_batches, 8u);
    PipelineOptions po;
    po.threads = threads;
    po.max_batches_in_flight = threads;
    po.serial_prefix_batches = serial_batches;
    po.kernel = KernelKind::kProgressiveStart;
    SweepPipeline pipeline(po, K);
    TopicTable table(store->meta().vocab_size, K);
    SweepParams params = PassParams(table);
    absl::StatusOr<SweepResult> r =
        pipeline.Run(store.get(), &table, params, nullptr);
    EXPECT_TRUE(r.ok()) << r.status();
    return StoreTopics(*store);
  };
  const std::vector<TopicId> one = pass(1, 0);
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(pass(2, 1000), one);
}

// The pass in two stages (SweepParams::progressive_stride): the first
// draws store batches 0, s, 2s, ... into the empty table and leaves the
// others' topics as they were, uncounted; the second draws the rest, so
// that every token is counted once.
TEST(ProgressiveStartPass, TwoStagesDrawEveryTokenOnce) {
  const TopicId K = 12;
  const uint32_t stride = 4;
  std::unique_ptr<TokenStore> store = SyntheticStore(K);
  ASSERT_GE(store->meta().num_batches, 2 * stride);
  const std::vector<TopicId> before = StoreTopics(*store);
  // The store's batch of each token.
  std::vector<uint64_t> batch_of;
  {
    absl::StatusOr<std::unique_ptr<BatchReader>> reader = store->Read();
    ASSERT_TRUE(reader.ok()) << reader.status();
    DocBatch batch;
    while (*(*reader)->Next(&batch)) {
      batch_of.insert(batch_of.end(), batch.num_tokens(), batch.index);
    }
  }
  PipelineOptions po;
  po.threads = 2;
  po.max_batches_in_flight = 2;
  po.kernel = KernelKind::kProgressiveStart;
  SweepPipeline pipeline(po, K);
  TopicTable table(store->meta().vocab_size, K);
  SweepParams params = PassParams(table);
  params.progressive_stride = stride;

  params.progressive_first_stage = true;
  absl::StatusOr<SweepResult> first =
      pipeline.Run(store.get(), &table, params, nullptr);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::vector<TopicId> after_first = StoreTopics(*store);
  ASSERT_EQ(after_first.size(), before.size());
  int64_t first_tokens = 0;
  size_t moved_first = 0, moved_other = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    const bool in_first = batch_of[i] % stride == 0;
    first_tokens += in_first;
    (in_first ? moved_first : moved_other) += after_first[i] != before[i];
  }
  EXPECT_EQ(table.TotalTokens(), first_tokens);
  EXPECT_EQ(moved_other, 0u);
  EXPECT_GT(moved_first, 0u);

  params.progressive_first_stage = false;
  absl::StatusOr<SweepResult> second =
      pipeline.Run(store.get(), &table, params, nullptr);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(table.TotalTokens(), static_cast<int64_t>(before.size()));
  const std::vector<TopicId> after_second = StoreTopics(*store);
  size_t moved_again = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    if (batch_of[i] % stride == 0) {
      moved_again += after_second[i] != after_first[i];
    }
  }
  EXPECT_EQ(moved_again, 0u);
  TopicTable rebuilt(table.vocab_size(), K);
  ASSERT_TRUE(RebuildTable(store.get(), &rebuilt).ok());
  for (WordId w = 0; w < table.vocab_size(); ++w) {
    for (TopicId k = 0; k < K; ++k) {
      ASSERT_EQ(table.Get(w, k), rebuilt.Get(w, k)) << w << " " << k;
    }
  }
}

class ProgressiveStartTrainer : public ::testing::TestWithParam<int> {};

TEST_P(ProgressiveStartTrainer, OnePassFirstThenExactSweepsFromABetterState) {
  const TopicId K = 12;
  auto run = [&](bool progressive, int sweeps) {
    TrainerOptions options;
    options.num_topics = K;
    options.alpha = 0.1;
    options.optimize_alpha = false;
    options.progressive_start = progressive;
    options.pipeline.threads = GetParam();
    options.pipeline.kernel = KernelKind::kAuto;
    auto trainer = Trainer::Create(options, SyntheticStore(K));
    EXPECT_TRUE(trainer.ok()) << trainer.status();
    double ll = 0;
    for (int s = 0; s < sweeps; ++s) {
      auto report = (*trainer)->Sweep();
      EXPECT_TRUE(report.ok()) << report.status();
      if (!report.ok()) return ll;
      EXPECT_EQ(report->progressive_start, progressive && s == 0);
      if (report->progressive_start) {
        EXPECT_GT(report->init_seconds, 0);
        EXPECT_GE(report->result.seconds, report->init_seconds);
      }
      EXPECT_EQ(report->kernel, KernelKind::kSparseLda);  // ends exact
      ll = report->log_likelihood_per_token;
      ExpectTableMatchesStore(**trainer);
    }
    return ll;
  };
  // One progressive pass and sweep beat five sweeps from the uniform start
  // on a corpus with structure to find.
  const double progressive = run(true, 1);
  const double uniform = run(false, 5);
  EXPECT_GT(progressive, uniform);
}

// The second stage's larger β (TrainerOptions::progressive_smoothing)
// spreads the rows it draws: after the pass and a sweep more (word, topic)
// cells hold counts than with β throughout, and the counts stay the
// store's.
TEST(ProgressiveStartTrainer, SmoothedSecondStageSpreadsTheRows) {
  const TopicId K = 12;
  auto cells_after_first_sweep = [&](double smoothing) {
    TrainerOptions options;
    options.num_topics = K;
    options.alpha = 0.1;
    options.optimize_alpha = false;
    options.progressive_start = true;
    options.progressive_smoothing = smoothing;
    auto trainer = Trainer::Create(options, SyntheticStore(K));
    EXPECT_TRUE(trainer.ok()) << trainer.status();
    if (!trainer.ok()) return 0;
    EXPECT_TRUE((*trainer)->Sweep().ok());
    ExpectTableMatchesStore(**trainer);
    const TopicTable& table = (*trainer)->table();
    int cells = 0;
    for (WordId w = 0; w < table.vocab_size(); ++w) {
      for (TopicId k = 0; k < K; ++k) cells += table.Get(w, k) > 0;
    }
    return cells;
  };
  const int sharp = cells_after_first_sweep(0);
  const int smoothed =
      cells_after_first_sweep(TrainerOptions().progressive_smoothing);
  EXPECT_GT(smoothed, sharp + sharp / 10) << sharp << " " << smoothed;
  TrainerOptions negative;
  negative.num_topics = K;
  negative.progressive_smoothing = -1;
  EXPECT_FALSE(Trainer::Create(negative, SyntheticStore(K)).ok());
}

INSTANTIATE_TEST_SUITE_P(Threads, ProgressiveStartTrainer,
                         ::testing::Values(1, 2));

}  // namespace
}  // namespace latentd
