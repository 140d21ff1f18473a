// The kernels draw from the exact collapsed conditional: for fixed counts,
// the empirical distribution of a token's new topic matches p(z | rest).
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "sampler/sampling_kernel.h"

namespace latentd {
namespace {

// Loads counts[word][topic] into an empty table.
absl::Status FillTable(const std::vector<std::vector<Count>>& counts,
                       TopicTable* table) {
  std::vector<WordTopicDelta> deltas;
  for (WordId w = 0; w < counts.size(); ++w) {
    for (TopicId k = 0; k < counts[w].size(); ++k) {
      if (counts[w][k] > 0) deltas.push_back({w, k, counts[w][k]});
    }
  }
  return table->Apply(deltas);
}

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
  ASSERT_TRUE(FillTable(n, &table).ok());

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

// One document against a fixed table: the background counts of every word
// (the document's own tokens are added to them) and the hyperparameters.
struct JointCase {
  TopicId K;
  std::vector<WordId> words;
  std::vector<TopicId> topics;
  std::vector<std::vector<Count>> background;  // [word][topic]
  std::vector<double> alpha;
  double beta;
};

// Samples the document `draws` times and compares the joint law of all its
// new topics with the exact one, enumerated from the sequential
// conditionals — the table fixed for the batch, the document's counts and
// n_k following each draw — by a chi-square test.
void ExpectJointLawMatches(KernelKind kind, const JointCase& c, int draws) {
  const TopicId K = c.K;
  const WordId V = static_cast<WordId>(c.background.size());
  std::vector<std::vector<Count>> n = c.background;
  for (size_t i = 0; i < c.words.size(); ++i) ++n[c.words[i]][c.topics[i]];
  TopicTable table(V, K);
  ASSERT_TRUE(FillTable(n, &table).ok());
  SweepParams params;
  params.table = &table;
  params.alpha = c.alpha;
  params.beta = c.beta;
  params.beta_sum = params.beta * V;
  params.seed = 9;

  const size_t tokens = c.words.size();
  size_t outcomes = 1;
  for (size_t i = 0; i < tokens; ++i) outcomes *= K;
  std::vector<double> exact(outcomes);
  std::vector<double> n_k0(K, 0);
  for (WordId w = 0; w < V; ++w) {
    for (TopicId k = 0; k < K; ++k) n_k0[k] += n[w][k];
  }
  for (size_t o = 0; o < outcomes; ++o) {
    std::vector<TopicId> z = c.topics;
    double p = 1;
    size_t code = o;
    for (size_t i = 0; i < tokens && p > 0; ++i) {
      const TopicId draw = code % K;
      code /= K;
      double total = 0, chosen = 0;
      for (TopicId k = 0; k < K; ++k) {
        double n_dk = 0, n_k = n_k0[k];
        for (size_t j = 0; j < tokens; ++j) n_dk += (j != i && z[j] == k);
        // n_k follows the draws made so far; the table (n_wk) does not.
        for (size_t j = 0; j < i; ++j) {
          n_k += (z[j] == k) - (c.topics[j] == k);
        }
        n_k -= (c.topics[i] == k);
        const double n_wk = n[c.words[i]][k] - (c.topics[i] == k);
        const double mass = (n_dk + params.alpha[k]) * (n_wk + params.beta) /
                            (n_k + params.beta_sum);
        total += mass;
        if (k == draw) chosen = mass;
      }
      p *= chosen / total;
      z[i] = draw;
    }
    exact[o] = p;
  }

  std::unique_ptr<SamplingKernel> kernel = MakeKernel(kind, K);
  std::vector<int> observed(outcomes, 0);
  std::vector<TopicChange> changes;
  for (int d = 0; d < draws; ++d) {
    DocBatch batch;
    batch.index = d;
    batch.AddDocument("d", "", c.words, c.topics);
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
      << "kernel " << KernelKindName(kind) << ", " << cells << " cells";
}

// A document whose word repeats (as bag-of-words corpora store it): word
// 0's row is dense, word 1's sparse (two topics of five), and token 3 is the
// only count of its topic in word 1's row.
TEST_P(KernelExactness, RepeatedWordsJointMatchesSequentialConditionals) {
  ExpectJointLawMatches(GetParam(),
                        {.K = 5,
                         .words = {0, 0, 0, 1, 1},
                         .topics = {0, 3, 0, 4, 1},
                         .background = {{3, 2, 4, 1, 2}, {0, 2, 0, 0, 0}},
                         .alpha = {0.3, 0.2, 0.6, 0.1, 0.4},
                         .beta = 0.2},
                        400000);
}

// Rows of several 8-slot blocks: word 0 dense over 20 topics, word 1 sparse
// with 9 of them.
TEST_P(KernelExactness, LongRowsJointMatchesSequentialConditionals) {
  JointCase c;
  c.K = 20;
  c.words = {0, 0, 1};
  c.topics = {3, 17, 12};
  c.background = {std::vector<Count>(20), std::vector<Count>(20, 0)};
  for (TopicId k = 0; k < 20; ++k) {
    c.background[0][k] = 1 + (k * 7) % 5;
    c.alpha.push_back(0.05 + 0.03 * (k % 4));
  }
  for (TopicId k : {1, 3, 4, 8, 9, 11, 15, 18, 19}) c.background[1][k] = 2;
  c.beta = 0.1;
  ExpectJointLawMatches(GetParam(), c, 400000);
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
