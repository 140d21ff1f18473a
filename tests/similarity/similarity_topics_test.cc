// Similar documents on a corpus with known structure: the synthetic LDA
// generator's documents, their θ folded in against the true topics' counts,
// ranked by Hellinger distance. A document drawn mostly from one topic must
// find documents of the same topic first, by the scan and by the graph.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "corpora/synthetic_corpus.h"
#include "gtest/gtest.h"
#include "sampler/fold_in.h"
#include "sampler/topic_table.h"
#include "similarity/similarity_index.h"

namespace latentd {
namespace {

TEST(SimilarDocuments, DocumentsOfOneTopicRankTheirSiblingsFirst) {
  SyntheticCorpusOptions corpus_options;
  corpus_options.num_topics = 10;
  corpus_options.vocab_size = 500;
  corpus_options.num_docs = 1000;
  corpus_options.mean_doc_length = 80;
  corpus_options.alpha = 0.05;
  corpus_options.seed = 34;
  auto corpus = GenerateSyntheticCorpus(corpus_options);
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  const uint32_t K = corpus->num_topics;

  // The model: word-topic counts of the true assignments.
  TopicTable table(corpus->vocab_size, K);
  std::vector<WordTopicDelta> deltas;
  for (size_t d = 0; d < corpus->docs.size(); ++d) {
    for (size_t i = 0; i < corpus->docs[d].size(); ++i) {
      deltas.push_back({corpus->docs[d][i], corpus->topics[d][i], 1});
    }
  }
  ASSERT_TRUE(table.Apply(deltas).ok());
  FoldIn fold_in(table, std::vector<double>(K, corpus_options.alpha),
                 corpus_options.beta);
  InferOptions infer;
  infer.iterations = 30;
  infer.burn_in = 10;

  SimilarityOptions options;
  options.dim = K;
  options.exact_threshold = 0;  // the graph answers kAuto
  auto index = SimilarityIndex::Create(options);
  ASSERT_TRUE(index.ok());
  std::vector<uint32_t> true_topic(corpus->docs.size());
  std::vector<bool> dominant(corpus->docs.size());
  for (size_t d = 0; d < corpus->docs.size(); ++d) {
    auto theta = fold_in.Infer(corpus->docs[d], infer, d);
    ASSERT_TRUE(theta.ok()) << theta.status();
    ASSERT_TRUE((*index)->Upsert(d, std::span<const double>(*theta), 1).ok());
    const double* row = &corpus->theta[d * K];
    true_topic[d] = std::max_element(row, row + K) - row;
    dominant[d] = row[true_topic[d]] >= 0.8;
  }
  ASSERT_TRUE((*index)->Rebuild().ok());

  for (SearchMode mode : {SearchMode::kExact, SearchMode::kAuto}) {
    size_t queries = 0, first_is_sibling = 0, siblings_in_top10 = 0;
    for (size_t d = 0; d < corpus->docs.size(); ++d) {
      if (!dominant[d]) continue;
      auto answer = (*index)->QueryById(d, 10, mode);
      ASSERT_TRUE(answer.ok()) << answer.status();
      ASSERT_EQ(answer->items.size(), 10u);
      EXPECT_EQ(answer->exact, mode == SearchMode::kExact);
      ++queries;
      first_is_sibling += true_topic[answer->items[0].id] == true_topic[d];
      for (const SimilarItem& hit : answer->items) {
        siblings_in_top10 += true_topic[hit.id] == true_topic[d];
      }
    }
    const double first = static_cast<double>(first_is_sibling) / queries;
    const double precision =
        static_cast<double>(siblings_in_top10) / (10.0 * queries);
    std::printf(
        "%s: %zu dominant documents, nearest a sibling %.3f, "
        "siblings in the top 10 %.3f\n",
        mode == SearchMode::kExact ? "exact" : "graph", queries, first,
        precision);
    ASSERT_GE(queries, 300u);  // enough documents have a dominant topic
    // One topic in ten: ranking at random would give 0.1.
    EXPECT_GE(first, 0.98);
    EXPECT_GE(precision, 0.95);
  }
}

}  // namespace
}  // namespace latentd
