// Text exports of a trained model, for people and other tools.
//
// Thread-safety: pure functions of their arguments.
#ifndef LATENTD_SAMPLER_MODEL_EXPORT_H_
#define LATENTD_SAMPLER_MODEL_EXPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "corpora/token_store.h"
#include "corpora/vocabulary.h"
#include "sampler/model_snapshot.h"

namespace latentd {

struct TopicSummary {
  TopicId topic = 0;
  double alpha = 0;
  int64_t tokens = 0;  // n_k
  // The most probable words, φ_wk = (n_wk + β)/(n_k + Vβ), best first.
  std::vector<std::pair<WordId, double>> top_words;
};

// The `top_n` most probable words of every topic.
std::vector<TopicSummary> SummarizeTopics(const ModelRows& model, int top_n);

// "topic <k>\talpha=<α_k>\ttokens=<n_k>" then one "  <word>\t<φ>" line per
// top word, for every topic.
std::string FormatTopics(const std::vector<TopicSummary>& topics,
                         const Vocabulary& vocab);

// Writes, atomically, into `dir`:
//   topics.txt             FormatTopics with `top_n` words
//   word_topic_counts.tsv  "<word>\t<topic>:<count> ..." per word
//   alpha.txt              "<k>\t<α_k>" per topic
// REQUIRES: vocab.size() == model.vocab_size().
absl::Status ExportModelText(const ModelRows& model, const Vocabulary& vocab,
                             int top_n, const std::string& dir);

// Writes `path` (atomically): one line per document of `store`,
// "<doc index>\t<doc id>\t<k>:<θ_dk> ..." with θ_dk = (n_dk + α_k)/(n_d +
// Σα) for the topics the document uses (the others have θ_dk = α_k/(n_d +
// Σα)). Fails if the store is damaged.
absl::Status ExportDocTopics(TokenStore* store,
                             const std::vector<double>& alpha,
                             const std::string& path);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_MODEL_EXPORT_H_
