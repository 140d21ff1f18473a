// What the kernels that split the conditional as SparseLDA does share
// (sparse_lda_kernel.h, progressive_start_kernel.h): a batch's topic terms,
// the draws from the document and smoothing buckets (for u within a
// bucket's mass, the topic whose interval holds it, walking the
// document's topics (r) or the smoothing masses' block sums and then one
// block (s, SmoothingBlocks)), the reset of the document terms at a
// document's end, and the prefetch of the coming tokens' rows.
//
// Thread-safety: pure functions; a SmoothingBlocks belongs to one kernel
// (one thread).
#ifndef LATENTD_SAMPLER_INTERNAL_SPARSE_BUCKETS_H_
#define LATENTD_SAMPLER_INTERNAL_SPARSE_BUCKETS_H_

#include <algorithm>
#include <span>
#include <vector>

#include "corpora/types.h"
#include "sampler/internal/batch_overlay.h"
#include "sampler/topic_table.h"

namespace latentd::internal {

// The smoothing bucket's masses α_k β inv_denom[k] summed by blocks of
// kBlock topics, so that a draw walks the block sums and then one block:
// O(K/64 + 64) instead of DrawSmoothingBucket's O(K). At K=10,000 on news20
// the smoothing bucket took a fifth of the draws, and its linear walk was
// 29% of the sampler's time. LoadTopicTerms fills the sums at a batch's
// start, in its pass over the topics; a kernel then adds each change of a
// topic's mass (two per token) to its block.
class SmoothingBlocks {
 public:
  static constexpr TopicId kBlock = 64;

  // Every mass 0, for `num_topics` topics.
  void Reset(TopicId num_topics) {
    num_topics_ = num_topics;
    sums_.assign((num_topics + kBlock - 1) / kBlock, 0.0);
  }
  // Topic k's mass changed by `delta` (from 0 after Reset: its mass).
  void Add(TopicId k, double delta) { sums_[k / kBlock] += delta; }
  // The topic whose interval holds u in [0, s): the block whose sum holds
  // it, then the topic within the block (its last topic, or the last
  // topic of all, where rounding leaves u past the masses).
  TopicId Draw(double u, const double* alpha, double beta,
               const double* inv_denom) const {
    const size_t blocks = sums_.size();
    size_t b = 0;
    for (; b + 1 < blocks && u >= sums_[b]; ++b) u -= sums_[b];
    const TopicId first = static_cast<TopicId>(b * kBlock);
    const TopicId end = std::min<TopicId>(first + kBlock, num_topics_);
    for (TopicId k = first; k < end; ++k) {
      u -= alpha[k] * beta * inv_denom[k];
      if (u <= 0) return k;
    }
    return end - 1;  // rounding
  }

 private:
  TopicId num_topics_ = 0;
  std::vector<double> sums_;
};

// At a batch's start: n_k from the table, inv_denom = 1/(n_k + Vβ), coef =
// α_k inv_denom (no document yet), the smoothing masses' block sums;
// returns s = Σ_k α_k β inv_denom.
inline double LoadTopicTerms(const TopicTable& table, const double* alpha,
                             double beta, double beta_sum, int64_t* n_k,
                             double* inv_denom, double* coef,
                             SmoothingBlocks* smoothing) {
  smoothing->Reset(table.num_topics());
  double s = 0;
  for (TopicId k = 0; k < table.num_topics(); ++k) {
    n_k[k] = table.TopicTotal(k);
    inv_denom[k] = 1.0 / (static_cast<double>(n_k[k]) + beta_sum);
    const double mass = alpha[k] * beta * inv_denom[k];
    s += mass;
    smoothing->Add(k, mass);
    coef[k] = alpha[k] * inv_denom[k];
  }
  return s;
}

// r = Σ_{k in doc_topics} n_dk[k] β inv_denom[k]; u in [0, r).
// REQUIRES: doc_topics not empty.
inline TopicId DrawDocBucket(double u, const std::vector<TopicId>& doc_topics,
                             const Count* n_dk, double beta,
                             const double* inv_denom) {
  for (TopicId k : doc_topics) {
    u -= n_dk[k] * beta * inv_denom[k];
    if (u <= 0) return k;
  }
  return doc_topics.back();  // rounding
}

// s = Σ_k α_k β inv_denom[k] over K topics; u in [0, s). O(K): the
// reference SmoothingBlocks::Draw is checked against.
inline TopicId DrawSmoothingBucket(double u, TopicId num_topics,
                                   const double* alpha, double beta,
                                   const double* inv_denom) {
  for (TopicId k = 0; k < num_topics; ++k) {
    u -= alpha[k] * beta * inv_denom[k];
    if (u <= 0) return k;
  }
  return num_topics - 1;  // rounding
}

// At a document's end: n_dk back to 0 and coef to α_k inv_denom for the
// document's topics, which are then forgotten.
inline void EndDocument(std::vector<TopicId>& doc_topics, Count* n_dk,
                        double* coef, const double* alpha,
                        const double* inv_denom) {
  for (TopicId k : doc_topics) {
    n_dk[k] = 0;
    coef[k] = alpha[k] * inv_denom[k];
  }
  doc_topics.clear();
}

// Before token i of a batch (`words`: the whole batch's, so that the
// prefetch runs on into the next document and a document's first tokens
// are not left to wait): prefetches the row pointer (and the overlay's
// index slot, if `overlay` is not null) of the word 16 tokens ahead, the
// row's first lines 8 tokens ahead and the rest of a dense row 4 tokens
// ahead (which reads the header the first prefetch brought), so that
// their cache misses overlap the work on this one. No effect on results.
inline void PrefetchRows(const TopicTable& table, const BatchOverlay* overlay,
                         std::span<const WordId> words, size_t i) {
  constexpr size_t kPointerAhead = 16, kRowAhead = 8, kRestAhead = 4;
  if (i + kPointerAhead < words.size()) {
    table.PrefetchRowPointer(words[i + kPointerAhead]);
    if (overlay != nullptr) overlay->Prefetch(words[i + kPointerAhead]);
  }
  if (i + kRowAhead < words.size()) table.PrefetchRow(words[i + kRowAhead]);
  if (i + kRestAhead < words.size()) {
    table.PrefetchRowRest(words[i + kRestAhead]);
  }
}

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_SPARSE_BUCKETS_H_
