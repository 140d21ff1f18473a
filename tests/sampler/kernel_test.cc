// The kernels draw from the exact collapsed conditional: for fixed counts,
// the empirical distribution of a token's new topic matches p(z | rest).
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "sampler/sampling_kernel.h"

namespace latentd {
namespace {

class KernelExactness : public ::testing::TestWithParam<KernelKind> {};

TEST_P(KernelExactness, FirstTokenMatchesConditionalChiSquare) {
  const TopicId K = 6;
  const WordId V = 3;
  TopicTable table(V, K);
  // The document under test: words and current topics.
  const std::vector<WordId> words = {0, 1, 0, 2, 0};
  const std::vector<TopicId> topics = {1, 2, 1, 4, 3};
  // Background counts from other documents, plus the document's own tokens.
  std::vector<std::vector<Count>> n(V, std::vector<Count>(K, 0));
  n[0] = {7, 2, 0, 5, 0, 1};
  n[1] = {0, 3, 4, 0, 9, 0};
  n[2] = {2, 0, 0, 1, 6, 3};
  for (size_t i = 0; i < words.size(); ++i) ++n[words[i]][topics[i]];
  std::vector<WordTopicDelta> deltas;
  for (WordId w = 0; w < V; ++w) {
    for (TopicId k = 0; k < K; ++k) {
      if (n[w][k] > 0) deltas.push_back({w, k, n[w][k]});
    }
  }
  ASSERT_TRUE(table.Apply(deltas).ok());

  SweepParams params;
  params.table = &table;
  params.alpha = {0.5, 0.1, 0.2, 0.05, 0.3, 0.4};
  params.beta = 0.1;
  params.beta_sum = params.beta * V;
  params.seed = 42;

  // Exact conditional of token 0 (word 0, topic 1), itself excluded.
  std::vector<double> p(K);
  double total = 0;
  for (TopicId k = 0; k < K; ++k) {
    double n_dk = 0, n_k = 0;
    for (TopicId t : topics) n_dk += (t == k);
    for (WordId w = 0; w < V; ++w) n_k += n[w][k];
    double n_wk = n[0][k];
    if (k == topics[0]) --n_dk, --n_wk, --n_k;
    p[k] = (n_dk + params.alpha[k]) * (n_wk + params.beta) /
           (n_k + params.beta_sum);
    total += p[k];
  }
  for (double& x : p) x /= total;

  std::unique_ptr<SamplingKernel> kernel = MakeKernel(GetParam(), K);
  const int draws = 200000;
  std::vector<int> observed(K, 0);
  std::vector<TopicChange> changes;
  for (int i = 0; i < draws; ++i) {
    DocBatch batch;
    batch.index = i;
    batch.AddDocument("d", "", words, topics);
    changes.clear();
    kernel->SampleBatch(params, &batch, &changes);
    ++observed[batch.topics[0]];
  }
  double chi2 = 0;
  for (TopicId k = 0; k < K; ++k) {
    const double expected = p[k] * draws;
    chi2 += (observed[k] - expected) * (observed[k] - expected) / expected;
  }
  // 5 degrees of freedom: P(chi2 > 20.5) = 0.001.
  EXPECT_LT(chi2, 20.5) << "kernel " << KernelKindName(GetParam());
}

// A whole document whose word repeats (as bag-of-words corpora store it):
// the joint law of all its new topics, enumerated exactly from the
// sequential conditionals — the table fixed for the batch, the document's
// counts and n_k following each draw — against many sampled documents.
TEST_P(KernelExactness, RepeatedWordsJointMatchesSequentialConditionals) {
  // Word 0's row is dense, word 1's sparse (two topics of five).
  const TopicId K = 5;
  const WordId V = 2;
  const std::vector<WordId> words = {0, 0, 0, 1, 1};
  const std::vector<TopicId> topics = {0, 3, 0, 4, 1};
  // Token 3 is the only count of its topic in word 1's row.
  std::vector<std::vector<Count>> n = {{3, 2, 4, 1, 2}, {0, 2, 0, 0, 0}};
  for (size_t i = 0; i < words.size(); ++i) ++n[words[i]][topics[i]];
  TopicTable table(V, K);
  std::vector<WordTopicDelta> deltas;
  for (WordId w = 0; w < V; ++w) {
    for (TopicId k = 0; k < K; ++k) {
      if (n[w][k] > 0) deltas.push_back({w, k, n[w][k]});
    }
  }
  ASSERT_TRUE(table.Apply(deltas).ok());
  SweepParams params;
  params.table = &table;
  params.alpha = {0.3, 0.2, 0.6, 0.1, 0.4};
  params.beta = 0.2;
  params.beta_sum = params.beta * V;
  params.seed = 9;

  // Exact probability of every outcome (K^5 = 3125), by enumeration.
  const size_t tokens = words.size();
  size_t outcomes = 1;
  for (size_t i = 0; i < tokens; ++i) outcomes *= K;
  std::vector<double> exact(outcomes);
  for (size_t o = 0; o < outcomes; ++o) {
    std::vector<TopicId> z = topics;
    double p = 1;
    size_t code = o;
    for (size_t i = 0; i < tokens; ++i) {
      const TopicId draw = code % K;
      code /= K;
      std::vector<double> cond(K);
      double total = 0;
      for (TopicId k = 0; k < K; ++k) {
        double n_dk = 0, n_k = 0;
        for (size_t j = 0; j < tokens; ++j) n_dk += (j != i && z[j] == k);
        for (WordId w = 0; w < V; ++w) n_k += n[w][k];
        // n_k follows the draws made so far; the table (n_wk) does not.
        for (size_t j = 0; j < i; ++j) {
          n_k += (z[j] == k) - (topics[j] == k);
        }
        n_k -= (topics[i] == k);
        const double n_wk = n[words[i]][k] - (topics[i] == k);
        cond[k] = (n_dk + params.alpha[k]) * (n_wk + params.beta) /
                  (n_k + params.beta_sum);
        total += cond[k];
      }
      p *= cond[draw] / total;
      z[i] = draw;
    }
    exact[o] = p;
  }

  std::unique_ptr<SamplingKernel> kernel = MakeKernel(GetParam(), K);
  const int draws = 400000;
  std::vector<int> observed(outcomes, 0);
  std::vector<TopicChange> changes;
  for (int d = 0; d < draws; ++d) {
    DocBatch batch;
    batch.index = d;
    batch.AddDocument("d", "", words, topics);
    changes.clear();
    kernel->SampleBatch(params, &batch, &changes);
    size_t code = 0;
    for (size_t i = tokens; i-- > 0;) code = code * K + batch.topics[i];
    ++observed[code];
  }
  // Chi-square over the outcomes expected at least 5 times; the rest pooled.
  double chi2 = 0, pooled_expected = 0, pooled_observed = 0;
  int cells = 0;
  for (size_t o = 0; o < outcomes; ++o) {
    const double expected = exact[o] * draws;
    if (expected < 5) {
      pooled_expected += expected;
      pooled_observed += observed[o];
      continue;
    }
    chi2 += (observed[o] - expected) * (observed[o] - expected) / expected;
    ++cells;
  }
  if (pooled_expected > 0) {
    chi2 += (pooled_observed - pooled_expected) *
            (pooled_observed - pooled_expected) / pooled_expected;
    ++cells;
  }
  // P(chi2 > dof + 4.3·sqrt(2·dof)) < 0.001 for these degrees of freedom.
  const double dof = cells - 1;
  EXPECT_LT(chi2, dof + 4.3 * std::sqrt(2 * dof))
      << "kernel " << KernelKindName(GetParam()) << ", " << cells << " cells";
}

INSTANTIATE_TEST_SUITE_P(Kernels, KernelExactness,
                         ::testing::Values(KernelKind::kSparseLda,
                                           KernelKind::kDense));

TEST(KernelKind, ParsesNames) {
  EXPECT_EQ(*ParseKernelKind("sparse"), KernelKind::kSparseLda);
  EXPECT_EQ(*ParseKernelKind("dense"), KernelKind::kDense);
  EXPECT_FALSE(ParseKernelKind("alias").ok());
}

}  // namespace
}  // namespace latentd
