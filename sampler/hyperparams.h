// Model quality and hyperparameter updates computed from the counts.
//
// Thread-safety: pure functions of their arguments; WordLogLikelihood reads
// the table and must not run while it changes if an exact figure is wanted.
#ifndef LATENTD_SAMPLER_HYPERPARAMS_H_
#define LATENTD_SAMPLER_HYPERPARAMS_H_

#include <vector>

#include "sampler/doc_topic_stats.h"
#include "sampler/topic_table.h"

namespace latentd {

// log p(w | z, β) = Σ_k [lnΓ(Vβ) − lnΓ(n_k + Vβ)] + Σ_k Σ_w [lnΓ(n_wk + β)
// − lnΓ(β)] (Griffiths & Steyvers 2004), with V = table.vocab_size().
// Together with DocTopicStats::log_likelihood() it is the exact joint
// log p(w, z).
double WordLogLikelihood(const TopicTable& table, double beta);

struct AlphaUpdateOptions {
  int iterations = 50;      // fixed-point iterations per update
  double min_alpha = 1e-6;  // floor, so an empty topic keeps a tiny α_k
};

// Minka's fixed-point update of an asymmetric α from the count histograms
// of one sweep (Wallach 2008's digamma recurrence, as Mallet does):
// α_k ← α_k · Σ_n h_k(n)[ψ(n+α_k) − ψ(α_k)] / Σ_n h(n)[ψ(n+α₀) − ψ(α₀)].
// Returns the new α; `alpha` is the one the stats were collected with.
std::vector<double> UpdateAlpha(const std::vector<double>& alpha,
                                const DocTopicStats& stats,
                                const AlphaUpdateOptions& options);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_HYPERPARAMS_H_
