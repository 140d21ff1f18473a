#include "ops/bench/dense_gibbs.h"

#include <algorithm>
#include <cmath>

namespace latentd::bench {

DenseGibbs::DenseGibbs(std::vector<std::vector<WordId>> docs,
                       std::vector<std::vector<TopicId>> topics,
                       WordId vocab_size, TopicId num_topics, double alpha,
                       double beta, uint64_t seed)
    : docs_(std::move(docs)),
      z_(std::move(topics)),
      V_(vocab_size),
      K_(num_topics),
      alpha_(alpha),
      beta_(beta),
      seed_(seed),
      n_wk_(size_t{vocab_size} * num_topics, 0),
      n_k_(num_topics, 0),
      n_dk_(num_topics, 0),
      cumulative_(num_topics, 0) {
  for (size_t d = 0; d < docs_.size(); ++d) {
    for (size_t i = 0; i < docs_[d].size(); ++i) {
      ++n_wk_[size_t{docs_[d][i]} * K_ + z_[d][i]];
      ++n_k_[z_[d][i]];
      ++num_tokens_;
    }
  }
}

void DenseGibbs::Sweep() {
  Rng rng = Rng::ForStream(seed_, sweep_++, 0xde45e);
  const double v_beta = V_ * beta_;
  for (size_t d = 0; d < docs_.size(); ++d) {
    std::fill(n_dk_.begin(), n_dk_.end(), 0);
    for (TopicId t : z_[d]) ++n_dk_[t];
    for (size_t i = 0; i < docs_[d].size(); ++i) {
      const WordId w = docs_[d][i];
      int32_t* row = &n_wk_[size_t{w} * K_];
      TopicId t = z_[d][i];
      --n_dk_[t];
      --row[t];
      --n_k_[t];
      double total = 0;
      for (TopicId k = 0; k < K_; ++k) {
        total += (n_dk_[k] + alpha_) * (row[k] + beta_) / (n_k_[k] + v_beta);
        cumulative_[k] = total;
      }
      const double u = rng.Uniform() * total;
      t = static_cast<TopicId>(std::min<size_t>(
          std::upper_bound(cumulative_.begin(), cumulative_.end(), u) -
              cumulative_.begin(),
          K_ - 1));
      ++n_dk_[t];
      ++row[t];
      ++n_k_[t];
      z_[d][i] = t;
    }
  }
}

double DenseGibbs::LogLikelihoodPerToken() const {
  const double v_beta = V_ * beta_;
  double ll = 0;
  for (TopicId k = 0; k < K_; ++k) {
    ll += std::lgamma(v_beta) - std::lgamma(n_k_[k] + v_beta);
  }
  const double lg_beta = std::lgamma(beta_);
  for (int32_t c : n_wk_) {
    if (c > 0) ll += std::lgamma(c + beta_) - lg_beta;
  }
  const double alpha_sum = K_ * alpha_;
  const double lg_alpha = std::lgamma(alpha_);
  std::vector<int32_t> n_dk(K_);
  for (const auto& z : z_) {
    std::fill(n_dk.begin(), n_dk.end(), 0);
    for (TopicId t : z) ++n_dk[t];
    ll += std::lgamma(alpha_sum) - std::lgamma(z.size() + alpha_sum);
    for (int32_t c : n_dk) {
      if (c > 0) ll += std::lgamma(c + alpha_) - lg_alpha;
    }
  }
  return ll / static_cast<double>(num_tokens_);
}

}  // namespace latentd::bench
