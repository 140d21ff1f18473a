// The kernels draw from the exact collapsed conditional: for fixed counts,
// the empirical distribution of a token's new topic matches p(z | rest);
// and with the batch overlay a batch's later tokens see its own moves.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"
#include "sampler/internal/batch_overlay.h"
#include "sampler/internal/mh_kernel.h"
#include "sampler/internal/sparse_buckets.h"
#include "sampler/sampling_kernel.h"
#include "tests/sampler/chi_square.h"

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

// A kernel under test: its kind and, for MH, enough steps per token that
// the chain's draw is the conditional up to far less than the tests'
// sampling error.
struct KernelUnderTest {
  KernelKind kind;
  MhOptions mh;
  bool overlay = true;
  // Whether n_wk follows the batch's own draws (the overlay; MH keeps its
  // snapshot of the row instead).
  bool SeesOwnMoves() const { return overlay && kind != KernelKind::kMh; }
  // The order the kernel resamples a batch's tokens in: MH in word order
  // groups them by word (stable), every other kernel goes in batch order.
  std::vector<size_t> VisitOrder(const std::vector<WordId>& words) const {
    std::vector<size_t> order(words.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (kind == KernelKind::kMh && mh.word_order) {
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return words[a] < words[b]; });
    }
    return order;
  }
};
std::string Name(const KernelUnderTest& k) {
  return std::string(KernelKindName(k.kind)) +
         (k.overlay ? "" : "_without_overlay") +
         (k.kind == KernelKind::kMh && !k.mh.word_order ? "_document_order"
                                                        : "");
}
std::unique_ptr<SamplingKernel> Make(const KernelUnderTest& k, TopicId K) {
  return MakeKernel(k.kind, K, {.mh = k.mh, .batch_overlay = k.overlay});
}

class KernelExactness : public ::testing::TestWithParam<KernelUnderTest> {};

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

  std::unique_ptr<SamplingKernel> kernel = Make(GetParam(), K);
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
  EXPECT_LT(chi2, 20.5) << "kernel " << Name(GetParam());
}

// One batch against a fixed table: the background counts of every word
// (the batch's own tokens are added to them) and the hyperparameters. The
// batch is one document, or documents of `doc_lengths` tokens in order.
struct JointCase {
  TopicId K;
  std::vector<WordId> words;
  std::vector<TopicId> topics;
  std::vector<std::vector<Count>> background;  // [word][topic]
  std::vector<double> alpha;
  double beta;
  std::vector<size_t> doc_lengths = {};
};

// Samples the batch `draws` times and compares the joint law of all its
// new topics with the exact one, enumerated from the sequential
// conditionals in the kernel's visiting order — the document's counts and
// n_k following each draw, and n_wk too for a kernel that sees its own
// moves (else the table's, fixed for the batch) — by a chi-square test.
void ExpectJointLawMatches(const KernelUnderTest& kind, const JointCase& c,
                           int draws) {
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
  std::vector<size_t> doc_of(tokens, 0);
  std::vector<size_t> lengths = c.doc_lengths;
  if (lengths.empty()) lengths = {tokens};
  for (size_t d = 0, at = 0; d < lengths.size(); at += lengths[d++]) {
    for (size_t j = at; j < at + lengths[d]; ++j) doc_of[j] = d;
  }
  const bool own_moves = kind.SeesOwnMoves();
  size_t outcomes = 1;
  for (size_t i = 0; i < tokens; ++i) outcomes *= K;
  std::vector<double> exact(outcomes);
  std::vector<double> n_k0(K, 0);
  for (WordId w = 0; w < V; ++w) {
    for (TopicId k = 0; k < K; ++k) n_k0[k] += n[w][k];
  }
  const std::vector<size_t> order = kind.VisitOrder(c.words);
  std::vector<TopicId> draws_of(tokens);
  for (size_t o = 0; o < outcomes; ++o) {
    // Outcome o: token i drew digit i of o in base K.
    for (size_t i = 0, code = o; i < tokens; ++i, code /= K) {
      draws_of[i] = static_cast<TopicId>(code % K);
    }
    std::vector<TopicId> z = c.topics;
    double p = 1;
    for (size_t step = 0; step < tokens && p > 0; ++step) {
      const size_t i = order[step];
      const TopicId draw = draws_of[i];
      double total = 0, chosen = 0;
      for (TopicId k = 0; k < K; ++k) {
        double n_dk = 0, n_k = n_k0[k];
        for (size_t j = 0; j < tokens; ++j) {
          n_dk += (j != i && doc_of[j] == doc_of[i] && z[j] == k);
        }
        // n_k follows the draws made so far (a token not drawn yet still
        // has z = its topic); n_wk too if own_moves.
        double n_wk = n[c.words[i]][k] - (c.topics[i] == k);
        for (size_t j = 0; j < tokens; ++j) {
          if (j == i) continue;
          n_k += (z[j] == k) - (c.topics[j] == k);
          if (own_moves && c.words[j] == c.words[i]) {
            n_wk += (z[j] == k) - (c.topics[j] == k);
          }
        }
        n_k -= (c.topics[i] == k);
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

  std::unique_ptr<SamplingKernel> kernel = Make(kind, K);
  std::vector<int> observed(outcomes, 0);
  std::vector<TopicChange> changes;
  for (int d = 0; d < draws; ++d) {
    DocBatch batch;
    batch.index = d;
    for (size_t doc = 0, at = 0; doc < lengths.size(); at += lengths[doc++]) {
      batch.AddDocument("d", "", std::span(c.words).subspan(at, lengths[doc]),
                        std::span(c.topics).subspan(at, lengths[doc]));
    }
    changes.clear();
    kernel->SampleBatch(params, &batch, &changes);
    size_t code = 0;
    for (size_t i = tokens; i-- > 0;) code = code * K + batch.topics[i];
    ++observed[code];
  }
  int cells = 0;
  const double chi2 = ChiSquare(observed, exact, draws, &cells);
  EXPECT_LT(chi2, ChiSquareBound(cells))
      << "kernel " << Name(kind) << ", " << cells << " cells";
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

// A sparse row long enough for the vector walk (row_masses.h, 16 slots or
// more: word 0 has 36 topics of 80, under the dense threshold of 40),
// whose cache the word's second token reuses.
TEST_P(KernelExactness, VectorWalkRowJointMatchesSequentialConditionals) {
  JointCase c;
  c.K = 80;
  c.words = {0, 0};
  c.topics = {6, 45};
  c.background = {std::vector<Count>(80, 0), std::vector<Count>(80, 0)};
  for (TopicId k = 0; k < 80; ++k) {
    if (k % 9 < 4) c.background[0][k] = 1 + (k * 7) % 6;
    c.alpha.push_back(0.02 + 0.01 * (k % 3));
  }
  c.background[1][3] = 4;
  c.beta = 0.05;
  ExpectJointLawMatches(GetParam(), c, 400000);
}

// Two documents sharing words: the overlay carries the first document's
// moves over to the second, whose coefficients differ. Word 0's row is
// dense (5 of 6 topics), word 1's sparse with one topic, so a move of word
// 1 to another topic lands outside its row. (Not run for MH, whose
// snapshots the other cases check.)
class OverlayExactness : public KernelExactness {};

TEST_P(OverlayExactness, TwoDocumentsJointMatchesSequentialConditionals) {
  ExpectJointLawMatches(GetParam(),
                        {.K = 6,
                         .words = {0, 1, 1, 0, 1},
                         .topics = {2, 5, 5, 0, 5},
                         .background = {{2, 1, 0, 3, 0, 1}, {0, 0, 0, 0, 0, 1}},
                         .alpha = {0.2, 0.5, 0.1, 0.3, 0.4, 0.2},
                         .beta = 0.05,
                         .doc_lengths = {2, 3}},
                        400000);
}

// A sparse row's cache built while the overlay holds the word's moves:
// word 1 (three topics of six, so sparse) moves in the first document, and
// the second repeats it three times, so its cache is built with the
// overlay's deltas as slots of their own (a row this short is built again
// for each token rather than reused; the next case reuses one).
TEST_P(OverlayExactness, RepeatedSparseWordAfterItsMovesMatches) {
  ExpectJointLawMatches(GetParam(),
                        {.K = 6,
                         .words = {1, 0, 1, 1, 1},
                         .topics = {2, 0, 5, 5, 2},
                         .background = {{2, 1, 0, 3, 0, 1}, {0, 3, 0, 0, 0, 0}},
                         .alpha = {0.2, 0.5, 0.1, 0.3, 0.4, 0.2},
                         .beta = 0.05,
                         .doc_lengths = {2, 3}},
                        400000);
}

// The same with a sparse row long enough to be reused (kMinReusedSlots,
// 16 slots): word 1 holds 17 of 36 topics (under the dense threshold of
// 18) and is the only word of both documents; the second document's first
// token builds its cache with the first document's moves in the overlay,
// and its second token reuses it.
TEST_P(OverlayExactness, ReusedLongSparseRowAfterItsMovesMatches) {
  JointCase c;
  c.K = 36;
  c.words = {1, 1, 1};
  c.topics = {2, 5, 5};
  c.doc_lengths = {1, 2};
  c.background = {std::vector<Count>(36, 0), std::vector<Count>(36, 0)};
  for (TopicId k = 0; k < 36; ++k) {
    c.background[0][k] = 1 + (k * 5) % 4;
    if (k % 2 == 0 && k < 32) c.background[1][k] = 1 + k % 3;
    c.alpha.push_back(0.03 + 0.02 * (k % 4));
  }
  c.beta = 0.05;
  ExpectJointLawMatches(GetParam(), c, 400000);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, KernelExactness,
    ::testing::Values(KernelUnderTest{KernelKind::kSparseLda, {}},
                      KernelUnderTest{
                          KernelKind::kSparseLda, {}, /*overlay=*/false},
                      KernelUnderTest{KernelKind::kDense, {}},
                      KernelUnderTest{KernelKind::kMh, {.steps = 48}}),
    [](const auto& info) { return Name(info.param); });

// MH in either order on a batch whose words interleave across two
// documents: in word order the tokens of word 0 (in both documents) are
// drawn before those of word 1, and the joint law is the sequential
// conditionals' in that order.
class MhOrderExactness : public ::testing::TestWithParam<KernelUnderTest> {};

TEST_P(MhOrderExactness, InterleavedWordsJointMatchesVisitOrder) {
  ExpectJointLawMatches(GetParam(),
                        {.K = 4,
                         .words = {1, 0, 1, 0, 1},
                         .topics = {0, 3, 2, 0, 3},
                         .background = {{2, 1, 3, 0}, {0, 4, 1, 2}},
                         .alpha = {0.4, 0.2, 0.3, 0.1},
                         .beta = 0.1,
                         .doc_lengths = {2, 3}},
                        400000);
}

INSTANTIATE_TEST_SUITE_P(
    Orders, MhOrderExactness,
    ::testing::Values(KernelUnderTest{KernelKind::kMh, {.steps = 48}},
                      KernelUnderTest{KernelKind::kMh,
                                      {.steps = 48, .word_order = false}}),
    [](const auto& info) { return Name(info.param); });

INSTANTIATE_TEST_SUITE_P(
    Kernels, OverlayExactness,
    ::testing::Values(KernelUnderTest{KernelKind::kSparseLda, {}},
                      KernelUnderTest{
                          KernelKind::kSparseLda, {}, /*overlay=*/false},
                      KernelUnderTest{KernelKind::kDense, {}}),
    [](const auto& info) { return Name(info.param); });

// The overlay's effect, on a case where it decides the outcome. Two
// one-token documents of word 0, at topics 0 and 1, are the word's only
// tokens; β is tiny, so a token all but surely joins the topic of the
// word's other token. The first flips to topic 1 (where the second is).
// Seeing that move, the second stays at 1; with the rows as the batch
// began it would flip to 0, where the first token was. Counts, over 200
// batches, how often both end at 1 and how often they swapped.
struct TwoTokenOutcome {
  int both_at_one = 0, swapped = 0;
};
TwoTokenOutcome SampleTwoTokensOfOneWord(
    KernelKind kind, const KernelOptions& options,
    int64_t run_cap = kDefaultOverlayMaxWordTokens) {
  const TopicId K = 2;
  TopicTable table(2, K);
  // Word 1 (in no document of the batch) keeps n_k balanced.
  EXPECT_TRUE(FillTable({{1, 1}, {50, 50}}, &table).ok());
  SweepParams params;
  params.table = &table;
  params.alpha = {1.0, 1.0};
  params.beta = 1e-4;
  params.beta_sum = params.beta * 2;
  params.overlay_max_word_tokens = run_cap;
  std::unique_ptr<SamplingKernel> kernel = MakeKernel(kind, K, options);
  TwoTokenOutcome outcome;
  std::vector<TopicChange> changes;
  for (uint64_t b = 0; b < 200; ++b) {
    DocBatch batch;
    batch.index = b;
    const WordId w0[] = {0};
    const TopicId t0[] = {0}, t1[] = {1};
    batch.AddDocument("a", "", w0, t0);
    batch.AddDocument("b", "", w0, t1);
    changes.clear();
    kernel->SampleBatch(params, &batch, &changes);
    outcome.both_at_one += batch.topics[0] == 1 && batch.topics[1] == 1;
    outcome.swapped += batch.topics[0] == 1 && batch.topics[1] == 0;
  }
  return outcome;
}

TEST(BatchOverlay, LaterTokensOfTheBatchSeeItsMoves) {
  for (KernelKind kind : {KernelKind::kSparseLda, KernelKind::kDense}) {
    for (bool overlay : {true, false}) {
      const TwoTokenOutcome o =
          SampleTwoTokensOfOneWord(kind, {.mh = {}, .batch_overlay = overlay});
      const std::string name =
          std::string(KernelKindName(kind)) + (overlay ? " with" : " without");
      EXPECT_GE(overlay ? o.both_at_one : o.swapped, 198) << name;
    }
  }
}

// The same case with overlay_max_word_tokens 1 (the word has 2 tokens) is
// sampled as without the overlay, and with 2 as with it.
TEST(BatchOverlay, KernelsFollowOnlyWordsUpToTheLimit) {
  for (KernelKind kind : {KernelKind::kSparseLda, KernelKind::kDense}) {
    for (int64_t limit : {1, 2}) {
      const TwoTokenOutcome o = SampleTwoTokensOfOneWord(
          kind, {.mh = {}, .overlay_max_word_tokens = limit});
      EXPECT_GE(limit == 2 ? o.both_at_one : o.swapped, 198)
          << KernelKindName(kind) << " limit " << limit;
    }
  }
}

// Left to the corpus (the default), the limit is the run's
// (SweepParams::overlay_max_word_tokens); a limit set in the options wins.
TEST(BatchOverlay, AnAutoLimitIsTheRunsAndASetOneWins) {
  for (KernelKind kind : {KernelKind::kSparseLda, KernelKind::kDense}) {
    for (int64_t run_cap : {1, 2}) {
      const TwoTokenOutcome o = SampleTwoTokensOfOneWord(kind, {}, run_cap);
      EXPECT_GE(run_cap == 2 ? o.both_at_one : o.swapped, 198)
          << KernelKindName(kind) << " run's limit " << run_cap;
      const TwoTokenOutcome set = SampleTwoTokensOfOneWord(
          kind, {.mh = {}, .overlay_max_word_tokens = 2}, run_cap);
      EXPECT_GE(set.both_at_one, 198) << KernelKindName(kind);
    }
  }
}

// Auto follows words of up to 256 tokens where documents average under 64
// tokens (or there are none yet), 64 from there; the setting's text is
// "auto" or a count.
TEST(BatchOverlay, AutoLimitFollowsTheDocumentsLength) {
  EXPECT_EQ(AutoOverlayMaxWordTokens(0, 0), 256);
  EXPECT_EQ(AutoOverlayMaxWordTokens(56'264, 56'264 * 8), 256);  // sentences
  EXPECT_EQ(AutoOverlayMaxWordTokens(100, 6'399), 256);
  EXPECT_EQ(AutoOverlayMaxWordTokens(100, 6'400), 64);
  EXPECT_EQ(AutoOverlayMaxWordTokens(18'805, 2'181'914), 64);  // news20
  EXPECT_EQ(*ParseOverlayMaxWordTokens("auto"), kOverlayMaxWordTokensAuto);
  EXPECT_EQ(*ParseOverlayMaxWordTokens("0"), 0);
  EXPECT_EQ(*ParseOverlayMaxWordTokens("300"), 300);
  for (const char* bad : {"-1", "x", "", "4611686018427387905"}) {
    EXPECT_EQ(ParseOverlayMaxWordTokens(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(OverlayMaxWordTokensName(kOverlayMaxWordTokensAuto), "auto");
  EXPECT_EQ(OverlayMaxWordTokensName(64), "64");
}

// The MH kernel's moves leave the exact conditional invariant: if the
// token's topic before the draw is distributed as p(z | rest), so is its
// topic after ONE cycle (a word and a document move), whatever the
// proposals — no mixing error, so a wrong acceptance ratio shows at once.
// The token's current topic s0 is drawn from p; the table holds the
// background plus the document with the token at s0 (one table per s0, so
// the excluded conditional is the same for every s0). Word 0 is dense,
// word 1 sparse (3 of K topics: the smoothing proposal reaches the others);
// the token under test is the document's first, and the first visited in
// either order (its word has the smallest id).
void ExpectMhStationary(const JointCase& c, int draws, bool word_order) {
  const TopicId K = c.K;
  const WordId V = static_cast<WordId>(c.background.size());
  const WordId w0 = c.words[0];
  std::vector<double> n_k(K, 0);
  for (WordId w = 0; w < V; ++w) {
    for (TopicId k = 0; k < K; ++k) n_k[k] += c.background[w][k];
  }
  // The document's other tokens count in n_dk, n_k and (same word) n_wk.
  std::vector<double> n_d(K, 0),
      n_w(c.background[w0].begin(), c.background[w0].end());
  for (size_t i = 1; i < c.words.size(); ++i) {
    ++n_d[c.topics[i]];
    ++n_k[c.topics[i]];
    if (c.words[i] == w0) ++n_w[c.topics[i]];
  }
  std::vector<double> p(K);
  double total = 0;
  for (TopicId k = 0; k < K; ++k) {
    p[k] = (n_d[k] + c.alpha[k]) * (n_w[k] + c.beta) / (n_k[k] + c.beta * V);
    total += p[k];
  }
  for (double& x : p) x /= total;

  std::vector<std::unique_ptr<TopicTable>> tables;
  std::vector<std::unique_ptr<SamplingKernel>> kernels;
  for (TopicId s0 = 0; s0 < K; ++s0) {
    std::vector<std::vector<Count>> n = c.background;
    for (size_t i = 0; i < c.words.size(); ++i) {
      ++n[c.words[i]][i == 0 ? s0 : c.topics[i]];
    }
    tables.push_back(std::make_unique<TopicTable>(V, K));
    ASSERT_TRUE(FillTable(n, tables.back().get()).ok());
    kernels.push_back(MakeKernel(
        KernelKind::kMh, K, {.mh = {.steps = 1, .word_order = word_order}}));
  }
  SweepParams params;
  params.alpha = c.alpha;
  params.beta = c.beta;
  params.beta_sum = c.beta * V;
  params.seed = 5;
  Rng start(77);
  std::vector<double> cumulative(K);
  double run = 0;
  for (TopicId k = 0; k < K; ++k) cumulative[k] = (run += p[k]);
  std::vector<int> observed(K, 0);
  std::vector<TopicChange> changes;
  std::vector<TopicId> topics = c.topics;
  int moved = 0;
  for (int d = 0; d < draws; ++d) {
    const double u = start.Uniform();
    TopicId s0 = 0;
    while (s0 + 1 < K && cumulative[s0] <= u) ++s0;
    topics[0] = s0;
    params.table = tables[s0].get();
    DocBatch batch;
    batch.index = d;
    batch.AddDocument("d", "", c.words, topics);
    changes.clear();
    kernels[s0]->SampleBatch(params, &batch, &changes);
    ++observed[batch.topics[0]];
    moved += batch.topics[0] != s0;
  }
  int cells = 0;
  const double chi2 = ChiSquare(observed, p, draws, &cells);
  EXPECT_LT(chi2, ChiSquareBound(cells)) << cells << " cells";
  // A chain that never leaves s0 keeps p too: the moves must move.
  EXPECT_GT(moved, draws / 10);
}

TEST(MhKernel, OneCycleKeepsConditionalDenseRow) {
  for (bool word_order : {true, false}) {
    SCOPED_TRACE(word_order ? "word order" : "document order");
    ExpectMhStationary({.K = 6,
                        .words = {0, 1, 0, 2, 0},
                        .topics = {0, 2, 1, 4, 3},
                        .background = {{7, 2, 0, 5, 0, 1},
                                       {0, 3, 4, 0, 9, 0},
                                       {2, 0, 0, 1, 6, 3}},
                        .alpha = {0.5, 0.1, 0.2, 0.05, 0.3, 0.4},
                        .beta = 0.1},
                       300000, word_order);
  }
}

TEST(MhKernel, OneCycleKeepsConditionalSparseRow) {
  JointCase c;
  c.K = 24;
  c.words = {0, 1, 0, 1, 1};
  c.topics = {0, 5, 9, 5, 20};
  c.background = {std::vector<Count>(24, 0), std::vector<Count>(24)};
  for (TopicId k = 0; k < 24; ++k) {
    c.background[1][k] = 1 + (k * 5) % 7;
    c.alpha.push_back(0.02 + 0.05 * (k % 3));
  }
  // Word 0: 3 topics of 24 (sparse), plus the token itself.
  c.background[0][2] = 6;
  c.background[0][9] = 3;
  c.background[0][17] = 1;
  c.beta = 0.05;
  for (bool word_order : {true, false}) {
    SCOPED_TRACE(word_order ? "word order" : "document order");
    ExpectMhStationary(c, 300000, word_order);
  }
}

// A batch whose documents' counts would not fit in word order's bound is
// visited in document order: the same draws as a kernel set to it. A
// smaller batch is visited by word: its draws differ.
TEST(MhKernel, WordOrderFallsBackToDocumentOrderForLargeBatches) {
  auto sample = [](TopicId K, size_t docs, bool word_order) {
    const WordId V = 3;
    TopicTable table(V, K);
    std::vector<std::vector<Count>> n(V, std::vector<Count>(K, 0));
    DocBatch batch;
    for (size_t d = 0; d < docs; ++d) {
      const std::vector<WordId> words = {2, 0, 1, 0};
      std::vector<TopicId> topics;
      for (size_t i = 0; i < words.size(); ++i) {
        topics.push_back(static_cast<TopicId>((d * 7 + i * 3) % K));
        ++n[words[i]][topics.back()];
      }
      batch.AddDocument("d", "", words, topics);
    }
    EXPECT_TRUE(FillTable(n, &table).ok());
    SweepParams params;
    params.table = &table;
    params.alpha.assign(K, 0.1);
    params.beta = 0.01;
    params.beta_sum = params.beta * V;
    params.seed = 3;
    std::unique_ptr<SamplingKernel> kernel = MakeKernel(
        KernelKind::kMh, K, {.mh = {.steps = 2, .word_order = word_order}});
    std::vector<TopicChange> changes;
    kernel->SampleBatch(params, &batch, &changes);
    return batch.topics;
  };
  constexpr size_t kBound = internal::MhKernel::kMaxWordOrderDocCounts;
  const TopicId big_k = 1024;
  const size_t many = kBound / big_k + 1;  // documents × K just past it
  EXPECT_EQ(sample(big_k, many, true), sample(big_k, many, false));
  EXPECT_NE(sample(big_k, many - 2, true), sample(big_k, many - 2, false));
}

// Moves word 0 (2 topics, small) and words 1 and 2 (23 topics each, past
// kSmall) in an overlay of K topics over two batches, and expects every
// word's net moves from Delta and ForEachEntry, whichever form holds them.
void ExpectNetMoves(TopicId K) {
  internal::BatchOverlay overlay(K);
  for (int batch = 0; batch < 2; ++batch) {
    overlay.Reset(4);
    std::vector<std::vector<int>> expected(4, std::vector<int>(K, 0));
    auto move = [&](WordId w, TopicId from, TopicId to) {
      overlay.Focus(w);
      overlay.Move(from, to, /*word_tokens=*/1);
      --expected[w][from];
      ++expected[w][to];
    };
    move(0, 1, 2);  // word 0 stays small
    move(0, 2, 3);
    for (WordId w : {1u, 2u}) {
      move(w, 5, 6);  // grows past kSmall: 2 + 3·7 topics
      for (TopicId k = 7; k < 28; k += 3) {
        move(w, k, k + 1), move(w, k + 1, k + 2);
      }
      move(w, 6, 5);  // back to 0 for topics 5 and 6
    }
    move(0, 3, 1);
    move(1, 10, 1);  // a move after another word's
    for (WordId w : {0u, 1u, 2u, 3u}) {
      overlay.Focus(w);
      EXPECT_EQ(overlay.empty(), w == 3) << "word " << w;
      std::vector<int> seen(K, 0), listed(K, 0);
      overlay.ForEachEntry([&](TopicId k, int32_t d) {
        seen[k] = d;
        ++listed[k];
      });
      for (TopicId k = 0; k < K; ++k) {
        ASSERT_EQ(overlay.Delta(k), expected[w][k]) << w << " " << k;
        ASSERT_EQ(seen[k], expected[w][k]) << w << " " << k;
        ASSERT_LE(listed[k], 1) << "topic listed twice";
      }
    }
  }
}

// The overlay's record of a word counts its net moves, in both forms: a
// small list, and the K-array it becomes past kSmall topics; Reset forgets
// them and the next batch starts clean.
TEST(BatchOverlay, CountsNetMovesSmallAndBig) { ExpectNetMoves(40); }

// At a K where kMaxBigBytes holds one K-array, the second word past kSmall
// stays a list, and counts the same.
TEST(BatchOverlay, PastItsBudgetABigWordStaysAList) {
  const TopicId K = internal::BatchOverlay::kMaxBigBytes / 5 + 1;
  ExpectNetMoves(K);
}

// A word with more tokens than max_word_tokens at its first move in a
// batch is not followed for the rest of that batch (whatever its count
// then); the next batch decides afresh.
TEST(BatchOverlay, FrequentWordsAreNotFollowed) {
  const TopicId K = 4;
  internal::BatchOverlay overlay(K, /*max_word_tokens=*/10);
  overlay.Reset(2);
  overlay.Focus(0);
  overlay.Move(0, 1, /*word_tokens=*/11);  // frequent: not followed
  EXPECT_FALSE(overlay.followed());
  overlay.Move(1, 2, /*word_tokens=*/3);
  EXPECT_TRUE(overlay.empty());
  overlay.Focus(1);
  overlay.Move(0, 1, /*word_tokens=*/10);  // at the limit: followed
  EXPECT_TRUE(overlay.followed());
  overlay.Focus(0);  // the decision holds across focus changes
  EXPECT_FALSE(overlay.followed());
  EXPECT_TRUE(overlay.empty());
  overlay.Focus(1);
  EXPECT_EQ(overlay.Delta(1), 1);
  overlay.Reset(2);
  overlay.Focus(0);
  EXPECT_TRUE(overlay.followed());
  overlay.Move(0, 1, /*word_tokens=*/5);
  EXPECT_EQ(overlay.Delta(1), 1);
}

// The blocked smoothing bucket draws what the linear walk over all K draws
// for the same u, after a batch's worth of changes to topics' masses (K not
// a multiple of the block: the last block is short), and without the
// changes it would not.
TEST(SmoothingBlocks, DrawsAsTheLinearWalkAfterChanges) {
  constexpr TopicId K = 1000;
  constexpr double beta = 0.01;
  Rng rng = Rng::ForStream(7, 0, 0);
  std::vector<double> alpha(K), inv_denom(K);
  for (TopicId k = 0; k < K; ++k) {
    alpha[k] = 0.01 + rng.Uniform();
    inv_denom[k] = 1.0 / (1 + 1000 * rng.Uniform());
  }
  internal::SmoothingBlocks blocks, stale;
  blocks.Reset(K);
  stale.Reset(K);
  double s = 0;
  for (TopicId k = 0; k < K; ++k) {
    const double mass = alpha[k] * beta * inv_denom[k];
    s += mass;
    blocks.Add(k, mass);
    stale.Add(k, mass);
  }
  for (int change = 0; change < 5000; ++change) {
    const TopicId k = static_cast<TopicId>(rng.Uniform() * K);
    const double inv = 1.0 / (1 + 1000 * rng.Uniform());
    const double delta = alpha[k] * beta * (inv - inv_denom[k]);
    inv_denom[k] = inv;
    s += delta;
    blocks.Add(k, delta);
  }
  int stale_differs = 0;
  for (int draw = 0; draw < 20000; ++draw) {
    const double u = rng.Uniform() * s;
    const TopicId want = internal::DrawSmoothingBucket(u, K, alpha.data(), beta,
                                                       inv_denom.data());
    ASSERT_EQ(blocks.Draw(u, alpha.data(), beta, inv_denom.data()), want)
        << "u " << u << " of " << s;
    stale_differs +=
        stale.Draw(u, alpha.data(), beta, inv_denom.data()) != want;
  }
  EXPECT_GT(stale_differs, 1000);
  // At the very end of the mass: the last topic, or one near it.
  EXPECT_GE(blocks.Draw(s * (1 - 1e-15), alpha.data(), beta, inv_denom.data()),
            K - 64);
}

TEST(KernelKind, ParsesNames) {
  EXPECT_EQ(*ParseKernelKind("sparse"), KernelKind::kSparseLda);
  EXPECT_EQ(*ParseKernelKind("dense"), KernelKind::kDense);
  EXPECT_EQ(*ParseKernelKind("mh"), KernelKind::kMh);
  EXPECT_EQ(*ParseKernelKind("auto"), KernelKind::kAuto);
  EXPECT_FALSE(ParseKernelKind("alias").ok());
  for (KernelKind k : {KernelKind::kSparseLda, KernelKind::kDense,
                       KernelKind::kMh, KernelKind::kAuto}) {
    EXPECT_EQ(*ParseKernelKind(KernelKindName(k)), k);
  }
}

}  // namespace
}  // namespace latentd
