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
