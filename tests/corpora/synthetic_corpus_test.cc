#include "corpora/synthetic_corpus.h"

#include <cmath>
#include <numeric>
#include <vector>

#include "corpora/corpus_builder.h"
#include "gtest/gtest.h"

namespace latentd {
namespace {

SyntheticCorpusOptions Small() {
  SyntheticCorpusOptions o;
  o.num_topics = 5;
  o.vocab_size = 60;
  o.num_docs = 400;
  o.mean_doc_length = 50;
  o.alpha = 0.2;
  o.beta = 0.1;
  o.seed = 9;
  return o;
}

TEST(SyntheticCorpus, SameSeedSameCorpus) {
  auto a = GenerateSyntheticCorpus(Small());
  auto b = GenerateSyntheticCorpus(Small());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->docs, b->docs);
  EXPECT_EQ(a->topics, b->topics);
  EXPECT_EQ(a->phi, b->phi);
  SyntheticCorpusOptions o = Small();
  o.seed = 10;
  auto c = GenerateSyntheticCorpus(o);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->docs, c->docs);
}

TEST(SyntheticCorpus, ShapesAndDistributionsAreConsistent) {
  auto c = GenerateSyntheticCorpus(Small());
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->phi.size(), 5u * 60);
  ASSERT_EQ(c->theta.size(), 400u * 5);
  ASSERT_EQ(c->docs.size(), 400u);
  for (int k = 0; k < 5; ++k) {
    double sum = std::accumulate(c->phi.begin() + k * 60,
                                 c->phi.begin() + (k + 1) * 60, 0.0);
    EXPECT_NEAR(sum, 1.0, 1e-9);
  }
  double total = 0;
  for (size_t d = 0; d < c->docs.size(); ++d) {
    ASSERT_EQ(c->docs[d].size(), c->topics[d].size());
    EXPECT_GE(c->docs[d].size(), 1u);
    total += c->docs[d].size();
    for (size_t i = 0; i < c->docs[d].size(); ++i) {
      EXPECT_LT(c->docs[d][i], 60u);
      EXPECT_LT(c->topics[d][i], 5u);
    }
  }
  EXPECT_NEAR(total / 400, 50, 1.5);  // Poisson lengths around the mean
  EXPECT_EQ(c->num_tokens(), static_cast<uint64_t>(total));
  SyntheticCorpusOptions fixed = Small();
  fixed.poisson_length = false;
  auto f = GenerateSyntheticCorpus(fixed);
  ASSERT_TRUE(f.ok());
  for (const auto& doc : f->docs) EXPECT_EQ(doc.size(), 50u);
}

TEST(SyntheticCorpus, EmpiricalWordFrequenciesPerTopicMatchPhi) {
  SyntheticCorpusOptions o = Small();
  o.num_docs = 2000;
  o.mean_doc_length = 100;
  auto c = GenerateSyntheticCorpus(o);
  ASSERT_TRUE(c.ok());
  const size_t v = o.vocab_size;
  std::vector<double> counts(o.num_topics * v, 0), per_topic(o.num_topics, 0);
  for (size_t d = 0; d < c->docs.size(); ++d) {
    for (size_t i = 0; i < c->docs[d].size(); ++i) {
      counts[c->topics[d][i] * v + c->docs[d][i]] += 1;
      per_topic[c->topics[d][i]] += 1;
    }
  }
  for (uint32_t k = 0; k < o.num_topics; ++k) {
    ASSERT_GT(per_topic[k], 5000) << k;
    double tv = 0;  // total variation distance
    for (size_t w = 0; w < v; ++w) {
      tv += std::fabs(counts[k * v + w] / per_topic[k] - c->phi[k * v + w]);
    }
    EXPECT_LT(tv / 2, 0.04) << "topic " << k;
  }
  // Topics differ from each other far more than sampling noise.
  double tv01 = 0;
  for (size_t w = 0; w < v; ++w) tv01 += std::fabs(c->phi[w] - c->phi[v + w]);
  EXPECT_GT(tv01 / 2, 0.2);
}

TEST(SyntheticCorpus, TinyPriorsStayFinite) {
  SyntheticCorpusOptions o = Small();
  o.alpha = 1e-3;
  o.beta = 1e-4;
  auto c = GenerateSyntheticCorpus(o);
  ASSERT_TRUE(c.ok());
  for (double p : c->phi) ASSERT_TRUE(std::isfinite(p));
  for (double p : c->theta) ASSERT_TRUE(std::isfinite(p));
}

TEST(SyntheticCorpus, RejectsBadOptions) {
  for (auto mutate : std::vector<void (*)(SyntheticCorpusOptions&)>{
           [](SyntheticCorpusOptions& o) { o.num_topics = 0; },
           [](SyntheticCorpusOptions& o) { o.vocab_size = 0; },
           [](SyntheticCorpusOptions& o) { o.alpha = 0; },
           [](SyntheticCorpusOptions& o) { o.beta = -1; },
           [](SyntheticCorpusOptions& o) { o.mean_doc_length = 0; },
           [](SyntheticCorpusOptions& o) { o.num_docs = uint64_t{1} << 40; },
           [](SyntheticCorpusOptions& o) { o.vocab_size = 1u << 30; }}) {
    SyntheticCorpusOptions o = Small();
    mutate(o);
    EXPECT_EQ(GenerateSyntheticCorpus(o).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(SyntheticCorpus, GoesThroughTheCorpusBuilder) {
  auto c = GenerateSyntheticCorpus(Small());
  ASSERT_TRUE(c.ok());
  auto store = CreateInMemoryTokenStore({});
  CorpusBuilderOptions o;
  o.num_topics = 5;
  auto built = BuildCorpusFromDocuments(c->WordDocuments(), o, store.get());
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->stats.tokens, c->num_tokens());
  EXPECT_LE(built->vocab.size(), 60u);
  EXPECT_TRUE(built->vocab.Find(SyntheticCorpus::WordName(0)).has_value() ||
              c->phi[0] < 1e-3);
}

}  // namespace
}  // namespace latentd
