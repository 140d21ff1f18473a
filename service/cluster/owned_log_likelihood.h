// The owner's side of a cluster's joint log-likelihood (docs/design.md,
// "Many nodes"): each node computes it over the keys it owns, so that the
// nodes' parts, added to their documents' log p(z_d | α), sum to the
// cluster's log p(w, z) with every word counted once.
//
// Thread-safety: reads `owner` through its Snapshot (its own lock).
#ifndef LATENTD_SERVICE_CLUSTER_OWNED_LOG_LIKELIHOOD_H_
#define LATENTD_SERVICE_CLUSTER_OWNED_LOG_LIKELIHOOD_H_

#include <cstdint>

#include "sync/owner_shard.h"

namespace latentd {

// Σ over the word keys `owner` holds of Σ_k [lnΓ(g_wk + β) − lnΓ(β)], plus,
// if it holds the topic totals (sync::kTopicTotalsKey), Σ_k [lnΓ(Vβ) −
// lnΓ(n_k + Vβ)] with V = vocab_size (the cluster's vocabulary).
double OwnedWordLogLikelihood(const sync::OwnerShard& owner, double beta,
                              uint64_t vocab_size);

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_OWNED_LOG_LIKELIHOOD_H_
