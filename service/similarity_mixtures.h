// The topic mixtures the similarity index holds (service/similarity_
// service.h), read from a node's model: each document's θ_d from its topic
// assignments in the token store, each user's θ_u from the published
// view's profile counts, both smoothed as the model is:
//   θ_k = (n_k + α_k) / (n + Σα).
//
// Thread-safety: functions of their arguments; ReadDocumentMixtures reads
// the store, which must not be used by anyone else meanwhile (the training
// thread, between sweeps).
#ifndef LATENTD_SERVICE_SIMILARITY_MIXTURES_H_
#define LATENTD_SERVICE_SIMILARITY_MIXTURES_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "corpora/token_store.h"
#include "service/store_merge.h"

namespace latentd::service {

// One item's id and θ (K floats).
struct Mixture {
  std::string id;
  std::vector<float> theta;
};

// The id a document is found by: a training document's corpus id as
// stored, an ingested one's client id (IngestDocId's last part); "" for
// a user's document (users are found as users) and an ingested document
// sent without an id.
std::string DocumentKeyName(std::string_view doc_id, std::string_view user);

// θ of every document of the store from index `first_doc` on that has a
// DocumentKeyName and at least one token, in store order. `alpha` has K
// entries. Fails with the store's error.
absl::StatusOr<std::vector<Mixture>> ReadDocumentMixtures(
    TokenStore* store, std::span<const double> alpha, uint64_t first_doc = 0);

// θ of each user of `users` whose events count differs from `seen`'s (all
// of them when `seen` is empty), in no particular order.
std::vector<Mixture> UserMixtures(
    const absl::flat_hash_map<std::string, UserTopics>& users,
    std::span<const double> alpha,
    const absl::flat_hash_map<std::string, uint64_t>& seen);

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_SIMILARITY_MIXTURES_H_
