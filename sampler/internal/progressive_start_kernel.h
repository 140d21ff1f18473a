// KernelKind::kProgressiveStart: the pass of the progressive start
// (TrainerOptions::progressive_start). The table is cleared before the
// pass, so it counts only the tokens the pass has placed so far; each token
// is drawn from the collapsed conditional given those tokens — the
// document's tokens before it, the word's tokens in the batches already
// applied and in its own batch (the batch overlay, following every word) —
// and then counted. This is the first sweep of an online Gibbs sampler
// (Canini, Shi & Griffiths 2009, "o-LDA"): the chain starts near where a
// few sweeps from the uniform start would be, with word rows only as dense
// as the data makes them, so the pass costs what a late SparseLDA sweep
// does. Unlike the sparse start it imposes nothing on the rows, so
// the topics are the data's.
//
// The pass may run in two stages (SweepParams::progressive_stride, set by
// the Trainer): the kernel then samples one stage's batches and passes the
// other's through, uncounted, to the stage that samples them.
//
// Every token is reported as a TopicChange from kUncounted: the combiner
// then only adds it (the table did not count it at its old topic).
//
// The conditional is split as in SparseLDA: s = Σ_k α_k β/(n_k+Vβ), r over
// the document's topics so far, q over the word's non-zero counts.
#ifndef LATENTD_SAMPLER_INTERNAL_PROGRESSIVE_START_KERNEL_H_
#define LATENTD_SAMPLER_INTERNAL_PROGRESSIVE_START_KERNEL_H_

#include <vector>

#include "sampler/internal/batch_overlay.h"
#include "sampler/internal/sparse_buckets.h"
#include "sampler/sampling_kernel.h"

namespace latentd::internal {

class ProgressiveStartKernel final : public SamplingKernel {
 public:
  explicit ProgressiveStartKernel(TopicId num_topics);
  // REQUIRES: params.table counts only the tokens already placed by this
  // pass (it was cleared before it).
  void SampleBatch(const SweepParams& params, DocBatch* batch,
                   std::vector<TopicChange>* changes) override;

 private:
  // Counts one more token of the document in `topic`, keeping s, r and the
  // coefficients current.
  void Add(TopicId topic, double& s, double& r);

  const TopicId num_topics_;
  BatchOverlay overlay_;  // the batch's own tokens, every word followed
  const double* alpha_ = nullptr;
  double beta_ = 0, beta_sum_ = 0;
  std::vector<int64_t> n_k_;       // the table's n_k plus the batch's
  std::vector<double> inv_denom_;  // 1 / (n_k + Vβ)
  SmoothingBlocks smoothing_;      // the s bucket's masses by block
  std::vector<double> coef_;       // (α_k + n_dk) / (n_k + Vβ)
  std::vector<Count> n_dk_;        // the document's tokens placed so far
  std::vector<TopicId> doc_topics_;
  std::vector<TopicId> q_topics_;  // the q bucket's slots
  std::vector<double> q_mass_;     // running sum of their masses
};

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_PROGRESSIVE_START_KERNEL_H_
