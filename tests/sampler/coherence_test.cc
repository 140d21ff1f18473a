// UMass and NPMI coherence against values worked out by hand on a tiny
// corpus.
#include "sampler/coherence.h"

#include <cmath>

#include "gtest/gtest.h"

namespace latentd {
namespace {

// Words a=0, b=1, c=2, d=3, e=4 (e never occurs). Four documents (repeats
// count once):
//   d1 = {a, b, c}, d2 = {a, b, a}, d3 = {a, c}, d4 = {b, d}
// N = 4; D(a) = 3, D(b) = 3, D(c) = 2, D(d) = 1, D(e) = 0;
// D(a,b) = 2 (d1, d2), D(a,c) = 2 (d1, d3), D(b,c) = 1 (d1),
// D(a,d) = 0, D(b,d) = 1 (d4).
constexpr WordId a = 0, b = 1, c = 2, d = 3, e = 4;

CoherenceCounter Counted(std::vector<std::vector<WordId>> topics) {
  CoherenceCounter counter(std::move(topics), 5, 3);
  const std::vector<std::vector<WordId>> docs = {
      {a, b, c}, {a, b, a}, {a, c}, {b, d}};
  for (const auto& doc : docs) counter.AddDocument(doc);
  return counter;
}

TEST(Coherence, MatchesHandComputation) {
  // Topic 0 = (a, b, c), topic 1 = (d, a), topic 2 = (e, a).
  CoherenceReport r = Counted({{a, b, c}, {d, a}, {e, a}}).Report();
  ASSERT_EQ(r.topics.size(), 3u);
  EXPECT_EQ(r.documents, 4u);

  // UMass, topic 0: pairs (later | earlier) with log((D(v_m,v_l)+1)/D(v_l)):
  //   (b|a): log((2+1)/3) = 0
  //   (c|a): log((2+1)/3) = 0
  //   (c|b): log((1+1)/3) = log(2/3) = -0.405465
  //   mean over 3 pairs: log(2/3)/3 = -0.135155
  const double umass0 = std::log(2.0 / 3.0) / 3.0;
  EXPECT_NEAR(*r.topics[0].umass, umass0, 1e-12);
  EXPECT_NEAR(*r.topics[0].umass, -0.135155, 1e-6);
  // Topic 1: (a|d): log((0+1)/1) = 0.
  EXPECT_NEAR(*r.topics[1].umass, 0.0, 1e-12);
  // Topic 2: (a|e) has D(e) = 0: undefined, so the topic has no value.
  EXPECT_FALSE(r.topics[2].umass.has_value());
  // Mean over the topics with a value: (umass0 + 0) / 2.
  EXPECT_NEAR(*r.mean_umass, umass0 / 2, 1e-12);

  // NPMI, topic 0, P(x) = D(x)/4:
  //   (a,b): log(0.5/(0.75*0.75)) / -log(0.5) = log(8/9)/log 2 = -0.169925
  //   (a,c): log(0.5/(0.75*0.5))  / -log(0.5) = log(4/3)/log 2 =  0.415037
  //   (b,c): log(0.25/(0.75*0.5)) / -log(0.25) = log(2/3)/log 4 = -0.292481
  //   mean: -0.047369/3 = -0.015790
  const double npmi0 =
      (std::log(8.0 / 9) / std::log(2.0) + std::log(4.0 / 3) / std::log(2.0) +
       std::log(2.0 / 3) / std::log(4.0)) /
      3;
  EXPECT_NEAR(*r.topics[0].npmi, npmi0, 1e-12);
  EXPECT_NEAR(*r.topics[0].npmi, -0.015790, 1e-6);
  // (d,a) and (e,a) never occur together: Bouma's -1.
  EXPECT_DOUBLE_EQ(*r.topics[1].npmi, -1.0);
  EXPECT_DOUBLE_EQ(*r.topics[2].npmi, -1.0);
  EXPECT_NEAR(*r.mean_npmi, (npmi0 - 2) / 3, 1e-12);
}

// The same corpus under gensim's convention (ε = 1e-12 inside the logs).
TEST(Coherence, GensimConventionMatchesHandComputation) {
  CoherenceCounter counter({{a, b, c}, {d, a}, {e, a}}, 5, 3,
                           CoherenceConvention::kGensim);
  const std::vector<std::vector<WordId>> docs = {
      {a, b, c}, {a, b, a}, {a, c}, {b, d}};
  for (const auto& doc : docs) counter.AddDocument(doc);
  const CoherenceReport r = counter.Report();
  EXPECT_EQ(r.convention, CoherenceConvention::kGensim);
  const double eps = 1e-12;
  // u_mass, topic 0: log((D(v_m,v_l)/N + ε) / (D(v_l)/N)) over the pairs.
  const double umass0 =
      (std::log((0.5 + eps) / 0.75) + std::log((0.5 + eps) / 0.75) +
       std::log((0.25 + eps) / 0.75)) /
      3;
  EXPECT_NEAR(*r.topics[0].umass, umass0, 1e-15);
  // Topic 1: (a|d), never together: log(ε / 0.25), no +1.
  EXPECT_NEAR(*r.topics[1].umass, std::log(eps / 0.25), 1e-12);
  // Topic 2: (a|e), D(e) = 0: gensim scores it 0 and counts it.
  EXPECT_DOUBLE_EQ(*r.topics[2].umass, 0.0);
  // c_npmi, topic 1: log((0 + ε)/(P(d) P(a))) / -log(ε), a little above -1.
  const double npmi1 = std::log(eps / (0.25 * 0.75)) / -std::log(eps);
  EXPECT_NEAR(*r.topics[1].npmi, npmi1, 1e-15);
  EXPECT_GT(*r.topics[1].npmi, -1.0);
  // Topic 2 has a word in no document: left out.
  EXPECT_FALSE(r.topics[2].npmi.has_value());
  const double npmi_ab =
      std::log((0.5 + eps) / (0.75 * 0.75)) / -std::log(0.5 + eps);
  const double npmi_ac =
      std::log((0.5 + eps) / (0.75 * 0.5)) / -std::log(0.5 + eps);
  const double npmi_bc =
      std::log((0.25 + eps) / (0.75 * 0.5)) / -std::log(0.25 + eps);
  EXPECT_NEAR(*r.topics[0].npmi, (npmi_ab + npmi_ac + npmi_bc) / 3, 1e-15);
  EXPECT_NEAR(*r.mean_npmi, ((npmi_ab + npmi_ac + npmi_bc) / 3 + npmi1) / 2,
              1e-15);
}

TEST(Coherence, ConventionNames) {
  EXPECT_EQ(*ParseCoherenceConvention("gensim"), CoherenceConvention::kGensim);
  EXPECT_EQ(*ParseCoherenceConvention("mimno"), CoherenceConvention::kMimno);
  const absl::StatusOr<CoherenceConvention> bad =
      ParseCoherenceConvention("npmi");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'npmi'"), std::string::npos);
  EXPECT_STREQ(CoherenceConventionName(CoherenceConvention::kGensim), "gensim");
}

TEST(Coherence, WordsInEveryDocumentScoreOne) {
  CoherenceCounter counter({{a, b}}, 5, 2);
  const std::vector<WordId> doc = {b, a};
  counter.AddDocument(doc);
  counter.AddDocument(doc);
  CoherenceReport r = counter.Report();
  // P(a,b) = 1: NPMI's limit 1; UMass log((2+1)/2).
  EXPECT_DOUBLE_EQ(*r.topics[0].npmi, 1.0);
  EXPECT_NEAR(*r.topics[0].umass, std::log(1.5), 1e-12);
}

TEST(Coherence, TopicWithOneWordHasNoValue) {
  CoherenceCounter counter({{a}, {a, b}}, 5, 10);
  const std::vector<WordId> doc = {a, b, 7};  // 7: not in the model
  counter.AddDocument(doc);
  CoherenceReport r = counter.Report();
  EXPECT_FALSE(r.topics[0].umass.has_value());
  EXPECT_FALSE(r.topics[0].npmi.has_value());
  // The mean leaves topic 0 out: it is topic 1's.
  EXPECT_DOUBLE_EQ(*r.mean_npmi, 1.0);
  EXPECT_NEAR(*r.mean_umass, std::log(2.0), 1e-12);
}

// The top words come from the counts (n_wk, ties by word id), and the
// store's documents are the reference.
TEST(Coherence, StoreCoherenceUsesTopWordsAndDocuments) {
  // K = 1, V = 5: counts a 5, b 4, c 3, d 1 (e none): top 3 = (a, b, c).
  ModelSnapshot m;
  m.num_topics = 1;
  m.vocab_size = 5;
  m.alpha = {0.1};
  m.word_offsets = {0, 1, 2, 3, 4, 4};
  m.entries = {{0, 5}, {0, 4}, {0, 3}, {0, 1}};
  EXPECT_EQ(TopicTopWords(m, 3), (std::vector<std::vector<WordId>>{{a, b, c}}));
  TokenStoreMeta meta;
  meta.num_topics = 1;
  meta.vocab_size = 5;
  std::unique_ptr<TokenStore> store = CreateInMemoryTokenStore(meta);
  auto writer = store->Rewrite(meta);
  ASSERT_TRUE(writer.ok());
  DocBatch batch;
  const std::vector<std::vector<WordId>> docs = {
      {a, b, c}, {a, b, a}, {a, c}, {b, d}};
  for (const auto& doc : docs) {
    batch.AddDocument("", "", doc, std::vector<TopicId>(doc.size(), 0));
  }
  ASSERT_TRUE((*writer)->Append(batch).ok());
  ASSERT_TRUE((*writer)->Commit().ok());
  CoherenceOptions o;
  o.top_words = 3;
  absl::StatusOr<CoherenceReport> r = StoreCoherence(m, store.get(), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->documents, 4u);
  EXPECT_NEAR(*r->topics[0].umass, std::log(2.0 / 3.0) / 3.0, 1e-12);
  o.top_words = 1;
  EXPECT_EQ(StoreCoherence(m, store.get(), o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace latentd
