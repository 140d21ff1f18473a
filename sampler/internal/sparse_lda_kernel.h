// SparseLDA kernel (Yao, Mimno & McCallum, KDD 2009). The conditional mass
// splits into a smoothing bucket s = Σ_k α_k β/(n_k+Vβ), a document bucket
// r = Σ_k n_dk β/(n_k+Vβ) over the document's topics, and a word bucket
// q = Σ_k n_wk (α_k+n_dk)/(n_k+Vβ) over the word's non-zero topics; s and r
// are kept up to date incrementally, so a token costs O(non-zeros of its
// word row + document) instead of O(K).
//
// Within a batch the kernel sees the table as it was when the batch began
// plus its own changes to n_dk and n_k; other tokens' changes to n_wk reach
// it once the count updater applies them (as in YahooLDA).
#ifndef LATENTD_SAMPLER_INTERNAL_SPARSE_LDA_KERNEL_H_
#define LATENTD_SAMPLER_INTERNAL_SPARSE_LDA_KERNEL_H_

#include <vector>

#include "sampler/sampling_kernel.h"

namespace latentd::internal {

class SparseLdaKernel final : public SamplingKernel {
 public:
  explicit SparseLdaKernel(TopicId num_topics);
  void SampleBatch(const SweepParams& params, DocBatch* batch,
                   std::vector<TopicChange>* changes) override;

 private:
  // Moves the document's count of `topic` by `by` (±1), keeping s, r, the
  // coefficients and the list of the document's topics consistent.
  void MoveCount(TopicId topic, int by);

  const TopicId num_topics_;
  // Per batch.
  const double* alpha_ = nullptr;
  double beta_ = 0, beta_sum_ = 0;
  double s_ = 0, r_ = 0;
  std::vector<int64_t> n_k_;       // n_k as seen by this batch
  std::vector<double> inv_denom_;  // 1 / (n_k + Vβ)
  std::vector<double> coef_;       // (α_k + n_dk) / (n_k + Vβ)
  // Per document.
  std::vector<Count> n_dk_;
  std::vector<TopicId> doc_topics_;  // topics with n_dk > 0
  std::vector<uint32_t> doc_pos_;    // position of a topic in doc_topics_
  // Per token.
  std::vector<TopicId> q_topics_;
  std::vector<double> q_mass_;  // running sum of the q masses
};

// The plain O(K) conditional over dense scratch; exact reference.
class DenseKernel final : public SamplingKernel {
 public:
  explicit DenseKernel(TopicId num_topics);
  void SampleBatch(const SweepParams& params, DocBatch* batch,
                   std::vector<TopicChange>* changes) override;

 private:
  const TopicId num_topics_;
  std::vector<int64_t> n_k_;
  std::vector<Count> n_dk_;
  std::vector<Count> n_wk_;
  std::vector<double> cumulative_;
};

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_SPARSE_LDA_KERNEL_H_
