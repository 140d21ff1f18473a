// The topic model of a node's data directory, opened for training: the
// token store built from the corpus on a first start, opened (and repaired
// when a block is damaged) on later ones; the vocabulary, the tokenizer of
// the first start's settings, and a Trainer resumed from the newest
// checkpoint that verifies. The data directory's files are listed in
// service/training_loop.h.
//
// Thread-safety: a function of its arguments; the caller owns the files.
#ifndef LATENTD_SERVICE_TOPIC_MODEL_FILES_H_
#define LATENTD_SERVICE_TOPIC_MODEL_FILES_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "corpora/tokenizer.h"
#include "corpora/vocabulary.h"
#include "sampler/trainer.h"
#include "service/internal/node_metrics.h"
#include "service/service_options.h"
#include "service/store_merge.h"

namespace latentd::service {

struct OpenedTopicModel {
  Tokenizer tokenizer;
  Vocabulary vocab;
  StoreScan scan;  // of the store the trainer holds
  std::unique_ptr<Trainer> trainer;
  // The sweep of the checkpoint resumed; nullopt when the trainer was
  // created without one (the caller writes the first).
  std::optional<uint64_t> checkpoint_sweep;
  std::unique_ptr<TokenStore> heldout;  // null without a held-out set
};

// Builds the store from options.corpus when options.data_dir has none
// (kFailedPrecondition without a corpus), then opens it as above. A
// cluster node never starts progressively (options->trainer is changed
// so). Counts refused snapshots and repaired store damage in `metrics`.
// Fails with the error of the file at fault; a damaged store is repaired
// unless options.refuse_ingest_loss.
absl::StatusOr<OpenedTopicModel> OpenTopicModel(
    ServiceOptions* options, const internal::NodeMetrics& metrics);

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_TOPIC_MODEL_FILES_H_
