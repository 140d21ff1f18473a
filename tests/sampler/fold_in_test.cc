// Fold-in draws from the exact conditional of the frozen model: the law of
// a two-token document's topics after one sweep from a uniform start,
// enumerated, against many seeded runs.
#include "sampler/fold_in.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace latentd {
namespace {

TEST(FoldIn, OneSweepMatchesTheExactConditionals) {
  const TopicId K = 6;
  const WordId V = 3;
  // Word 0 sparse (3 topics), word 1 dense (all 6), word 2 absent from the
  // model's counts (only smoothing).
  const std::vector<std::vector<Count>> n = {
      {4, 0, 0, 7, 0, 2}, {3, 1, 5, 2, 6, 1}, {0, 0, 0, 0, 0, 0}};
  TopicTable table(V, K);
  std::vector<WordTopicDelta> deltas;
  std::vector<double> n_k(K, 0);
  for (WordId w = 0; w < V; ++w) {
    for (TopicId k = 0; k < K; ++k) {
      if (n[w][k] > 0) deltas.push_back({w, k, n[w][k]});
      n_k[k] += n[w][k];
    }
  }
  ASSERT_TRUE(table.Apply(deltas).ok());
  const std::vector<double> alpha = {0.4, 0.1, 0.3, 0.2, 0.05, 0.6};
  const double beta = 0.1;
  FoldIn fold_in(table, alpha, beta);

  for (const std::vector<WordId>& doc :
       {std::vector<WordId>{0, 1}, std::vector<WordId>{1, 2}}) {
    // p(final topics) = Σ over uniform starts of the two sequential draws.
    auto conditional = [&](WordId w, TopicId k, TopicId other) {
      return ((other == k) + alpha[k]) * (n[w][k] + beta) / (n_k[k] + beta * V);
    };
    std::map<std::pair<TopicId, TopicId>, double> exact;  // sorted pair
    for (TopicId start1 = 0; start1 < K; ++start1) {
      double total0 = 0;
      for (TopicId k = 0; k < K; ++k) total0 += conditional(doc[0], k, start1);
      for (TopicId a = 0; a < K; ++a) {
        const double p0 = conditional(doc[0], a, start1) / total0;
        double total1 = 0;
        for (TopicId k = 0; k < K; ++k) total1 += conditional(doc[1], k, a);
        for (TopicId b = 0; b < K; ++b) {
          const double p1 = conditional(doc[1], b, a) / total1;
          exact[{std::min(a, b), std::max(a, b)}] += p0 * p1 / K;
        }
      }
    }
    InferOptions options;
    options.iterations = 1;
    options.burn_in = 0;
    const int runs = 200000;
    std::map<std::pair<TopicId, TopicId>, int> observed;
    for (int r = 0; r < runs; ++r) {
      auto theta = fold_in.Infer(doc, options, r);
      ASSERT_TRUE(theta.ok()) << theta.status();
      // θ_k = (n_dk + α_k)/(2 + Σα): recover the two topics.
      const double norm = 2 + 1.65;
      std::vector<TopicId> topics;
      for (TopicId k = 0; k < K; ++k) {
        const int count =
            static_cast<int>(std::lround((*theta)[k] * norm - alpha[k]));
        for (int c = 0; c < count; ++c) topics.push_back(k);
      }
      ASSERT_EQ(topics.size(), 2u);
      ++observed[{topics[0], topics[1]}];
    }
    double chi2 = 0;
    for (const auto& [cell, p] : exact) {
      const double expected = p * runs;
      const double diff = observed[cell] - expected;
      chi2 += diff * diff / expected;
    }
    // 20 degrees of freedom: P(chi2 > 45.3) = 0.001.
    EXPECT_LT(chi2, 45.3) << "document " << doc[0] << " " << doc[1];
  }
}

// Assign returns the state of the very chain Infer averages: with one
// sweep and no burn-in, θ is a function of that state. A word id past the
// model is refused by Infer but takes its topic from the document in
// Assign.
TEST(FoldIn, AssignIsTheChainsLastStateAndAcceptsUnseenWords) {
  const TopicId K = 3;
  TopicTable table(/*vocab_size=*/3, K);
  const std::vector<WordTopicDelta> counts = {
      {0, 1, 50}, {1, 2, 50}, {2, 0, 50}};
  ASSERT_TRUE(table.Apply(counts).ok());
  const std::vector<double> alpha = {0.1, 0.1, 0.1};
  FoldIn fold_in(table, alpha, /*beta=*/0.01);
  InferOptions one;
  one.iterations = 1;
  one.burn_in = 0;
  const std::vector<WordId> doc = {0, 1, 0, 0};
  for (uint64_t stream = 0; stream < 50; ++stream) {
    auto theta = fold_in.Infer(doc, one, stream);
    auto z = fold_in.Assign(doc, one, stream);
    ASSERT_TRUE(theta.ok() && z.ok());
    ASSERT_EQ(z->size(), doc.size());
    for (TopicId k = 0; k < K; ++k) {
      const double n_dk =
          static_cast<double>(std::count(z->begin(), z->end(), k));
      EXPECT_NEAR((*theta)[k], (n_dk + alpha[k]) / (4 + 0.3), 1e-12);
    }
  }
  const std::vector<WordId> unseen = {0, 0, 0, 0, 7};
  EXPECT_EQ(fold_in.Infer(unseen, one, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  InferOptions many;
  many.iterations = 30;
  int with_word0 = 0;
  for (uint64_t stream = 0; stream < 100; ++stream) {
    auto z = fold_in.Assign(unseen, many, stream);
    ASSERT_TRUE(z.ok()) << z.status();
    with_word0 += (*z)[4] == 1;
  }
  // p(topic 1) = 4.1/4.3 for the unseen word given the others on topic 1.
  EXPECT_GT(with_word0, 80) << "the unseen word follows the document";
  EXPECT_FALSE(fold_in.Assign({}, many, 1).ok());
}

}  // namespace
}  // namespace latentd
