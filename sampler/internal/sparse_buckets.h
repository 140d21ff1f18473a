// What the kernels that split the conditional as SparseLDA does share
// (sparse_lda_kernel.h, progressive_start_kernel.h): a batch's topic terms,
// and the draws from the document and smoothing buckets (for u within a
// bucket's mass, the topic whose interval holds it, walking the
// document's topics (r) or all K (s)).
//
// Thread-safety: pure functions.
#ifndef LATENTD_SAMPLER_INTERNAL_SPARSE_BUCKETS_H_
#define LATENTD_SAMPLER_INTERNAL_SPARSE_BUCKETS_H_

#include <vector>

#include "corpora/types.h"
#include "sampler/topic_table.h"

namespace latentd::internal {

// At a batch's start: n_k from the table, inv_denom = 1/(n_k + Vβ), coef =
// α_k inv_denom (no document yet); returns s = Σ_k α_k β inv_denom.
inline double LoadTopicTerms(const TopicTable& table, const double* alpha,
                             double beta, double beta_sum, int64_t* n_k,
                             double* inv_denom, double* coef) {
  double s = 0;
  for (TopicId k = 0; k < table.num_topics(); ++k) {
    n_k[k] = table.TopicTotal(k);
    inv_denom[k] = 1.0 / (static_cast<double>(n_k[k]) + beta_sum);
    s += alpha[k] * beta * inv_denom[k];
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

// s = Σ_k α_k β inv_denom[k] over K topics; u in [0, s).
inline TopicId DrawSmoothingBucket(double u, TopicId num_topics,
                                   const double* alpha, double beta,
                                   const double* inv_denom) {
  for (TopicId k = 0; k < num_topics; ++k) {
    u -= alpha[k] * beta * inv_denom[k];
    if (u <= 0) return k;
  }
  return num_topics - 1;  // rounding
}

}  // namespace latentd::internal

#endif  // LATENTD_SAMPLER_INTERNAL_SPARSE_BUCKETS_H_
