// Fold-in draws from the exact conditional of the frozen model: the law of
// a two-token document's topics after one sweep from a uniform start,
// enumerated, against many seeded runs.
#include "sampler/fold_in.h"

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

}  // namespace
}  // namespace latentd
