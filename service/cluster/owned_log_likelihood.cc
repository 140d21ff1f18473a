#include "service/cluster/owned_log_likelihood.h"

#include "base/log_gamma.h"

namespace latentd {

double OwnedWordLogLikelihood(const sync::OwnerShard& owner, double beta,
                              uint64_t vocab_size) {
  const double vbeta = beta * static_cast<double>(vocab_size);
  const double lg_beta = LogGamma(beta);
  double ll = 0;
  for (const auto& [key, g] : owner.Snapshot()) {
    if (key == sync::kTopicTotalsKey) {
      // Topics with n_k = 0 contribute lnΓ(Vβ) − lnΓ(Vβ) = 0.
      for (const sync::SparseEntry& e : g) {
        ll += LogGamma(vbeta) - LogGamma(static_cast<double>(e.count) + vbeta);
      }
      continue;
    }
    for (const sync::SparseEntry& e : g) {
      ll += LogGamma(static_cast<double>(e.count) + beta) - lg_beta;
    }
  }
  return ll;
}

}  // namespace latentd
