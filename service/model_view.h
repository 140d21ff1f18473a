// ModelView: an immutable copy of the model that queries read — counts, α,
// vocabulary, precomputed topic summaries and user profiles — built by the
// training thread after each sweep or merge and published as a
// shared_ptr<const ModelView>. Queries hold the pointer for the length of a
// call, so they never see a half-applied sweep and never stall training.
//
// Thread-safety: immutable after Build(); any number of threads may read it.
#ifndef LATENTD_SERVICE_MODEL_VIEW_H_
#define LATENTD_SERVICE_MODEL_VIEW_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "corpora/token_store.h"
#include "corpora/vocabulary.h"
#include "sampler/model_export.h"
#include "sampler/model_snapshot.h"
#include "sampler/topic_table.h"
#include "service/store_merge.h"

namespace latentd::service {

struct ModelView {
  uint64_t sweep = 0;
  uint64_t version = 0;  // bumped on every publication
  ModelSnapshot snapshot;
  std::unique_ptr<TopicTable> table;  // snapshot's counts, for fold-in
  Vocabulary vocab;                   // at least snapshot.vocab_size words
  std::vector<int64_t> totals;        // n_k
  std::vector<int64_t> word_totals;   // n_w
  // Every topic with its kMaxTopWords best words.
  std::vector<TopicSummary> topics;
  absl::flat_hash_map<std::string, UserTopics> users;
  TokenStoreMeta store_meta;

  static constexpr int kMaxTopWords = 50;

  // φ_wk = (n_wk + β)/(n_k + Vβ).
  double Phi(uint32_t word, uint32_t topic) const;
};

// Builds a view from the training state. `vocab` may hold words the table
// does not have yet; only the first snapshot.vocab_size are kept.
std::shared_ptr<const ModelView> BuildModelView(
    ModelSnapshot snapshot, const Vocabulary& vocab,
    absl::flat_hash_map<std::string, UserTopics> users,
    const TokenStoreMeta& meta, uint64_t version);

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_MODEL_VIEW_H_
