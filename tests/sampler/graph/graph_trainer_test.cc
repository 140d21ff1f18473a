// GraphTrainer: the objective decreases, link prediction on a planted
// partition is far better than chance, single-thread epochs reproduce, the
// updater hook sees every step, and bad settings are errors.
#include "sampler/graph/graph_trainer.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "sampler/graph/link_eval.h"
#include "tests/sampler/graph/graph_test_util.h"

namespace latentd {
namespace {

LinkSplit PlantedSplit() {
  absl::StatusOr<GraphData> g =
      GraphData::FromEdgeList(testing::PlantedPartition(4, 50, 0.3, 0.01, 5));
  EXPECT_TRUE(g.ok());
  absl::StatusOr<LinkSplit> split = SplitHeldout(*g, 0.1, 1);
  EXPECT_TRUE(split.ok());
  return *std::move(split);
}

TEST(GraphTrainer, ObjectiveDecreasesAndPredictsPlantedLinks) {
  const LinkSplit split = PlantedSplit();
  GraphTrainerOptions o;
  o.dim = 8;
  o.threads = 2;
  o.batch_edges = 64;
  auto trainer = GraphTrainer::Create(split.train, o);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  auto score = [&](VertexId a, VertexId b) { return (*trainer)->Score(a, b); };
  const double auc0 = EvaluateLinks(split, score).auc;
  double previous = (*trainer)->Objective().total();
  const double first = previous;
  for (int e = 0; e < 15; ++e) {
    absl::StatusOr<EpochResult> r = (*trainer)->RunEpoch();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->epoch, e + 1u);
    EXPECT_EQ(r->edges, split.train.num_edges());
    const double now = (*trainer)->Objective().total();
    // SGD: an epoch may rise a little near the floor, never much.
    EXPECT_LT(now, previous * 1.01) << "epoch " << e + 1;
    previous = now;
  }
  EXPECT_LT(previous, 0.7 * first);
  const LinkScores s = EvaluateLinks(split, score);
  std::printf(
      "planted partition: objective %.1f -> %.1f, AUC %.3f -> %.3f, "
      "AP %.3f\n",
      first, previous, auc0, s.auc, s.average_precision);
  // A quarter of the uniformly drawn negatives fall inside a community,
  // where 70% of pairs are non-edges: about 0.87 is the best an ideal
  // community score gets; chance is 0.5.
  EXPECT_GT(s.auc, 0.8);
  EXPECT_GT(s.average_precision, 0.75);
}

TEST(GraphTrainer, OneThreadEpochsReproduce) {
  const LinkSplit split = PlantedSplit();
  GraphTrainerOptions o;
  o.dim = 4;
  auto a = GraphTrainer::Create(split.train, o);
  auto b = GraphTrainer::Create(split.train, o);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int e = 0; e < 2; ++e) {
    ASSERT_TRUE((*a)->RunEpoch().ok());
    ASSERT_TRUE((*b)->RunEpoch().ok());
  }
  const auto za = (*a)->embeddings(), zb = (*b)->embeddings();
  EXPECT_TRUE(std::equal(za.begin(), za.end(), zb.begin(), zb.end()));
  // Resuming from the vectors at epoch 2 gives epoch 3 of the first run.
  auto c = GraphTrainer::Create(split.train, o,
                                std::vector<float>(za.begin(), za.end()), 2);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*a)->RunEpoch().ok());
  ASSERT_TRUE((*c)->RunEpoch().ok());
  EXPECT_TRUE(std::equal((*a)->embeddings().begin(), (*a)->embeddings().end(),
                         (*c)->embeddings().begin()));
}

TEST(GraphTrainer, UpdaterHookSeesEveryStepAndCanFailTheEpoch) {
  const LinkSplit split = PlantedSplit();
  GraphTrainerOptions o;
  o.dim = 4;
  o.threads = 2;
  auto t = GraphTrainer::Create(split.train, o);
  ASSERT_TRUE(t.ok());
  const std::vector<float> before((*t)->embeddings().begin(),
                                  (*t)->embeddings().end());
  std::vector<float> sum(before.size(), 0.0f);
  (*t)->SetUpdaterHook(
      [&](std::span<const VertexId> v, std::span<const float> s) {
        for (size_t i = 0; i < v.size(); ++i)
          for (int k = 0; k < 4; ++k) sum[v[i] * 4 + k] += s[i * 4 + k];
        return absl::OkStatus();
      });
  ASSERT_TRUE((*t)->RunEpoch().ok());
  for (size_t i = 0; i < sum.size(); ++i) {
    ASSERT_NEAR(before[i] + sum[i], (*t)->embeddings()[i], 1e-5);
  }
  (*t)->SetUpdaterHook(
      [](auto, auto) { return absl::UnavailableError("peer gone"); });
  absl::StatusOr<EpochResult> r = (*t)->RunEpoch();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "peer gone");
}

TEST(GraphTrainer, BadSettingsAndDivergenceAreErrors) {
  const LinkSplit split = PlantedSplit();
  auto expect_bad = [&](GraphTrainerOptions o, const char* what) {
    auto t = GraphTrainer::Create(split.train, o);
    ASSERT_FALSE(t.ok()) << what;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(what), std::string::npos) << t.status();
  };
  GraphTrainerOptions o;
  o.dim = 0;
  expect_bad(o, "dim 0");
  o = {};
  o.negatives = -1;
  expect_bad(o, "negatives -1");
  o = {};
  o.learning_rate = 0;
  expect_bad(o, "learning rate 0");
  o = {};
  o.lambda = NAN;
  expect_bad(o, "lambda nan");
  o = {};
  o.threads = 0;
  expect_bad(o, "threads 0");
  auto wrong = GraphTrainer::Create(split.train, {}, std::vector<float>(3));
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);

  o = {};
  o.learning_rate = 1e6;
  auto t = GraphTrainer::Create(split.train, o);
  ASSERT_TRUE(t.ok());
  absl::Status s = absl::OkStatus();
  for (int e = 0; e < 5 && s.ok(); ++e) s = (*t)->RunEpoch().status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("diverged"), std::string::npos) << s;
  EXPECT_TRUE((*t)->last_epoch_diverged());
}

// With undo_diverged_epoch a diverged epoch leaves the vectors as it found
// them and does not count; at a lower rate the next one trains.
TEST(GraphTrainer, DivergedEpochIsUndoneAndALowerRateTrains) {
  const LinkSplit split = PlantedSplit();
  GraphTrainerOptions o;
  o.learning_rate = 1e6;
  o.undo_diverged_epoch = true;
  auto t = GraphTrainer::Create(split.train, o);
  ASSERT_TRUE(t.ok());
  std::vector<float> before;
  absl::Status s = absl::OkStatus();
  for (int e = 0; e < 5 && s.ok(); ++e) {
    before.assign((*t)->embeddings().begin(), (*t)->embeddings().end());
    s = (*t)->RunEpoch().status();
  }
  ASSERT_FALSE(s.ok()) << "1e6 did not diverge";
  EXPECT_TRUE((*t)->last_epoch_diverged());
  EXPECT_NE(s.message().find("undone"), std::string::npos) << s;
  const uint64_t epochs = (*t)->epoch();
  const std::span<const float> z = (*t)->embeddings();
  ASSERT_EQ(z.size(), before.size());
  EXPECT_TRUE(std::equal(z.begin(), z.end(), before.begin()))
      << "the diverged epoch's steps stayed";

  (*t)->SetLearningRate(0.1);
  absl::StatusOr<EpochResult> r = (*t)->RunEpoch();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE((*t)->last_epoch_diverged());
  EXPECT_EQ((*t)->epoch(), epochs + 1);
  EXPECT_LT(r->learning_rate, 0.1 + 1e-12);
  for (float x : (*t)->embeddings()) ASSERT_TRUE(std::isfinite(x));
}

}  // namespace
}  // namespace latentd
