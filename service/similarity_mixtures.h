// The topic mixtures the similarity index holds (service/similarity_
// service.h), read from a node's model: each document's topic counts from
// its assignments in the token store, each user's from the published
// view's profile counts. Kept as their non-zero counts; smoothed as the
// model is when a dense θ is needed (Smoothed):
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
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "corpora/token_store.h"
#include "service/store_merge.h"

namespace latentd::service {

// One item's id and topic counts.
struct Mixture {
  std::string id;
  std::vector<std::pair<uint32_t, uint64_t>> counts;  // (k, n_k), n_k > 0
  uint64_t total = 0;                                 // n
};

// θ of `m` (alpha.size() floats); counts of topics ≥ K are left out.
std::vector<float> Smoothed(const Mixture& m, std::span<const double> alpha);

// The id a document is found by: a training document's corpus id as
// stored, an ingested one's client id (IngestDocId's last part); "" for
// a user's document (users are found as users) and an ingested document
// sent without an id.
std::string DocumentKeyName(std::string_view doc_id, std::string_view user);

// The counts of every document of the store from index `first_doc` on
// that has a DocumentKeyName and at least one token, in store order (topics
// ≥ num_topics left out). Fails with the store's error.
absl::StatusOr<std::vector<Mixture>> ReadDocumentMixtures(
    TokenStore* store, uint32_t num_topics, uint64_t first_doc = 0);

// The counts of each user of `users` whose events count differs from
// `seen`'s (all of them when `seen` is empty), in no particular order.
std::vector<Mixture> UserMixtures(
    const absl::flat_hash_map<std::string, UserTopics>& users,
    const absl::flat_hash_map<std::string, uint64_t>& seen);

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_SIMILARITY_MIXTURES_H_
