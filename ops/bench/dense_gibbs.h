// DenseGibbs: the plain collapsed Gibbs sampler for LDA that the benchmarks
// measure latentd against — one thread, documents in memory, dense n_wk and
// n_dk arrays, every token's conditional computed over all K topics, counts
// updated immediately (Griffiths & Steyvers 2004). Exact, simple, O(K) per
// token. Not part of the product.
//
// Thread-safety: none; one thread.
#ifndef LATENTD_OPS_BENCH_DENSE_GIBBS_H_
#define LATENTD_OPS_BENCH_DENSE_GIBBS_H_

#include <cstdint>
#include <vector>

#include "base/random.h"
#include "corpora/types.h"

namespace latentd::bench {

class DenseGibbs {
 public:
  // docs[d] = word ids; topics[d] = initial assignments (same shape).
  DenseGibbs(std::vector<std::vector<WordId>> docs,
             std::vector<std::vector<TopicId>> topics, WordId vocab_size,
             TopicId num_topics, double alpha, double beta, uint64_t seed);

  void Sweep();
  // Exact joint log p(w, z) per token.
  double LogLikelihoodPerToken() const;
  uint64_t num_tokens() const { return num_tokens_; }

 private:
  std::vector<std::vector<WordId>> docs_;
  std::vector<std::vector<TopicId>> z_;
  const WordId V_;
  const TopicId K_;
  const double alpha_, beta_;
  uint64_t num_tokens_ = 0;
  uint64_t sweep_ = 0;
  uint64_t seed_;
  std::vector<int32_t> n_wk_;  // V × K
  std::vector<int64_t> n_k_;
  std::vector<int32_t> n_dk_;  // scratch, K
  std::vector<double> cumulative_;
};

}  // namespace latentd::bench

#endif  // LATENTD_OPS_BENCH_DENSE_GIBBS_H_
