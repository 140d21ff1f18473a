// DocTopicStats: what the pipeline's writer stage learns about the documents
// of a sweep from their final topic assignments — the document half of the
// joint log-likelihood, and the count histograms that Minka's fixed-point
// update of α needs (Wallach 2008; as in Mallet).
//
// Thread-safety: not thread-safe; the writer stage is serial.
#ifndef LATENTD_SAMPLER_DOC_TOPIC_STATS_H_
#define LATENTD_SAMPLER_DOC_TOPIC_STATS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "corpora/types.h"

namespace latentd {

class DocTopicStats {
 public:
  // REQUIRES: alpha.size() == K > 0.
  explicit DocTopicStats(std::vector<double> alpha);

  // Adds one document's topic assignments.
  void AddDocument(std::span<const TopicId> topics);

  // log p(z | α) = Σ_d [lnΓ(Σα) − lnΓ(n_d + Σα) + Σ_k lnΓ(n_dk + α_k) −
  // lnΓ(α_k)] over the documents added.
  double log_likelihood() const { return log_likelihood_; }
  uint64_t documents() const { return documents_; }
  uint64_t tokens() const { return tokens_; }

  // topic_histogram()[k][n]: documents in which topic k has n tokens (n ≥ 1).
  const std::vector<std::vector<uint32_t>>& topic_histogram() const {
    return topic_histogram_;
  }
  // length_histogram()[n]: documents of n tokens.
  const std::vector<uint32_t>& length_histogram() const {
    return length_histogram_;
  }

 private:
  std::vector<double> alpha_;
  std::vector<double> lgamma_alpha_;
  double alpha_sum_ = 0;
  double log_likelihood_ = 0;
  uint64_t documents_ = 0;
  uint64_t tokens_ = 0;
  std::vector<Count> n_dk_;
  std::vector<TopicId> touched_;
  std::vector<std::vector<uint32_t>> topic_histogram_;
  std::vector<uint32_t> length_histogram_;
};

}  // namespace latentd

#endif  // LATENTD_SAMPLER_DOC_TOPIC_STATS_H_
