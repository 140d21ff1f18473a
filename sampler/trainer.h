// Trainer: single-node LDA training over a token store — sweeps through the
// SweepPipeline, diagnostics, α learning, snapshots and resume.
//
// The token store holds the truth about assignments; the table is derived
// from it (and rebuilt from it after a failed sweep or on resume), so a
// crash at any point leaves a store and a snapshot that training can resume
// from.
//
// Thread-safety: not thread-safe; one thread drives a Trainer (the pipeline
// spreads each sweep over its own threads).
#ifndef LATENTD_SAMPLER_TRAINER_H_
#define LATENTD_SAMPLER_TRAINER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "corpora/token_store.h"
#include "sampler/hyperparams.h"
#include "sampler/model_snapshot.h"
#include "sampler/sweep_pipeline.h"
#include "sampler/topic_table.h"

namespace latentd {

struct TrainerOptions {
  TopicId num_topics = 100;
  // Symmetric per-topic α; 0 picks 50/K. The starting point when α is
  // learned.
  double alpha = 0;
  double beta = 0.01;          // per-word β, fixed
  bool optimize_alpha = true;  // learn an asymmetric α (Minka fixed point)
  int alpha_burn_in = 50;      // sweeps before the first α update
  int alpha_interval = 10;     // sweeps between α updates
  AlphaUpdateOptions alpha_update;
  uint64_t seed = 1;
  // Compute the exact log-likelihood every this many sweeps (0: never).
  int eval_every = 1;
  PipelineOptions pipeline;
};

struct SweepReport {
  uint64_t sweep = 0;  // sweeps completed, this one included
  SweepResult result;
  bool evaluated = false;
  double log_likelihood = 0;            // joint log p(w, z), if evaluated
  double log_likelihood_per_token = 0;  // if evaluated
  bool alpha_updated = false;
  double tokens_per_second() const {
    return result.seconds > 0 ? result.tokens / result.seconds : 0;
  }
};

class Trainer {
 public:
  // Starts training over `store`, whose topics are the initial assignments
  // (the corpus builder draws them). Fails if the store is empty, damaged,
  // or its K differs from options.num_topics.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(
      const TrainerOptions& options, std::unique_ptr<TokenStore> store);

  // Continues from `snapshot` (α, β, K, seed, sweep) over `store` — the
  // store written by the same training. options.num_topics, alpha, beta and
  // seed are taken from the snapshot. Fails if the store does not match
  // the snapshot (another K or vocabulary, or an older sweep).
  static absl::StatusOr<std::unique_ptr<Trainer>> Resume(
      const ModelSnapshot& snapshot, const TrainerOptions& options,
      std::unique_ptr<TokenStore> store);

  // Runs one sweep. On failure the store keeps its previous version and the
  // table is rebuilt from it, so Sweep() may be called again.
  absl::StatusOr<SweepReport> Sweep();

  // Re-derives the table after the caller rewrote the store between sweeps
  // (appended documents, a larger vocabulary — the service's ingestion): the
  // table grows to the store's vocabulary and is rebuilt from its
  // assignments. Fails (kFailedPrecondition) if the store's K differs or its
  // vocabulary shrank, or with the store's error if it is damaged.
  // REQUIRES: no sweep running and no reader of table() meanwhile.
  absl::Status ReloadStore();

  ModelSnapshot Snapshot() const;
  uint64_t sweep() const { return sweep_; }
  const std::vector<double>& alpha() const { return alpha_; }
  double beta() const { return options_.beta; }
  const TopicTable& table() const { return *table_; }
  TokenStore* store() { return store_.get(); }
  // For a cluster member (the daemon in cluster mode): the table and the
  // pipeline its synchronizer plugs into (a count-updater hook and the
  // quiesce mutex, sampler/synced_table.h). A member's table also holds
  // the other nodes' counts, so it must not call ReloadStore() (which
  // rebuilds the table from this store alone) and must stop sampling once a
  // sweep fails (Sweep then rebuilds it the same way).
  // REQUIRES: no sweep running.
  TopicTable* mutable_table() { return table_.get(); }
  SweepPipeline* pipeline() { return &pipeline_; }
  const TrainerOptions& options() const { return options_; }

 private:
  Trainer(const TrainerOptions& options, std::unique_ptr<TokenStore> store);

  TrainerOptions options_;
  std::unique_ptr<TokenStore> store_;
  std::unique_ptr<TopicTable> table_;
  SweepPipeline pipeline_;
  std::vector<double> alpha_;
  uint64_t sweep_ = 0;
};

}  // namespace latentd

#endif  // LATENTD_SAMPLER_TRAINER_H_
