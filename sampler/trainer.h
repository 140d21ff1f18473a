// Trainer: single-node LDA training over a token store — sweeps through the
// SweepPipeline, diagnostics, α learning, snapshots and resume.
//
// The token store holds the truth about assignments; the table is derived
// from it (and rebuilt from it after a failed sweep or on resume), so a
// crash at any point leaves a store and a snapshot that training can resume
// from. One exception: while the progressive start is due (a store at sweep
// 0, TrainerOptions::progressive_start) the table is empty, as the start's
// pass redraws every token; table(), Rows() and Snapshot() then hold no
// tokens.
//
// Thread-safety: not thread-safe; one thread drives a Trainer (the pipeline
// spreads each sweep over its own threads).
#ifndef LATENTD_SAMPLER_TRAINER_H_
#define LATENTD_SAMPLER_TRAINER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "corpora/token_store.h"
#include "sampler/hyperparams.h"
#include "sampler/model_snapshot.h"
#include "sampler/sweep_pipeline.h"
#include "sampler/topic_table.h"

namespace latentd {

// How KernelKind::kAuto picks each sweep's kernel. MH runs while word rows
// are dense — the token-weighted mean of the rows' non-zero topics,
// measured from the table before each sweep, is at least
// `mh_min_row_topics` — and for at most `max_mh_sweeps` sweeps; from the
// first sweep that fails either test on, SparseLDA (exact) runs for good, so
// training always ends exact.
//
// The threshold is measured (docs/benchmarks.md, "Kernels"): on news20 the
// uniform random start has 81, 422 and 801 mean row topics at K=100, 1000
// and 4000, and at each of them an MH sweep was no faster than a SparseLDA
// sweep (3.4x slower at K=4000) and gained less log-likelihood. So the
// default sits above every state measured: auto runs MH only for rows
// denser than that, and after the sparse start (rows of one topic) never.
struct AutoKernelOptions {
  double mh_min_row_topics = 1024;
  int max_mh_sweeps = 20;
};

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
  // If > 0, a sparse start: training from a store at sweep 0 runs, before
  // its first sweep, one KernelKind::kSparseInit pass with this many topics
  // per word, so every word row starts with at most that many topics and
  // the first sweeps cost what later ones do (the uniform start makes every
  // row of a frequent word dense). 0: start from the store's topics.
  uint32_t init_row_topics = 0;
  // The progressive start: training from a store at sweep 0 clears the
  // table and runs, before its first sweep, one KernelKind::
  // kProgressiveStart pass, which draws each token given the tokens placed
  // before it (internal/progressive_start_kernel.h); until that pass the
  // table is empty (the store's draws are never counted). Ignored with
  // init_row_topics > 0. Single node only: a cluster member's table also
  // holds the other nodes' counts, which the clearing would drop.
  bool progressive_start = false;
  // The progressive pass runs in two stages: first every this many-th
  // batch of the store (0, s, 2s, ...), then the rest. The first stage
  // places a sample spread over the whole corpus, so the topics the rest
  // is drawn against are not those of the corpus's first documents alone
  // (corpora come ordered by source or time: news20 by newsgroup). news20,
  // log-likelihood after sweep 10, seeds 1-3, 16 against 1: K=100 one
  // thread −9.251..−9.270 against −9.287..−9.300, two threads −9.256..
  // −9.268 against −9.296..−9.305; K=1000 one thread −9.802..−9.808
  // against −9.805..−9.817, two threads −9.810..−9.828 against −9.815..
  // −9.834; strides 4 and 8 gain less, 32 and 64 less again (too few
  // batches in the first stage). The pass reads and writes the store once
  // a stage. 1: one stage, in store order.
  int progressive_stride = 16;
  // The progressive pass's first stage samples its first this many batches
  // one at a time, each once the one before is applied (the rest as the
  // pipeline allows, at most one a thread): it draws into an empty table,
  // where a batch sampled beside the first ones would see none of them,
  // and how many it saw depended on how soon the second thread started.
  // news20, two threads, one stage, four alternating runs each: the
  // log-likelihood after sweep 10 is −9.824..−9.834 against −9.839..
  // −9.850 at K=1000, for a pass of 0.29 s against 0.25 s. The second
  // stage draws against the first's counts and runs in parallel from its
  // start (a serial prefix there gained nothing beyond noise). One
  // thread: no effect. 0: none.
  int progressive_serial_batches = 32;
  // The second stage draws with a larger β, β' = max(β, c/max(K, 100)):
  // each word's row smoothed by c pseudo-tokens spread over the topics
  // (over 100 where K is smaller: at K=4 c/K swamped the rows, and each
  // document drew one topic of its own). Drawn against the first stage's
  // counts with β itself, each word of the rest joined the few topics its
  // sample had given it: the chain started sharp, scored a high training
  // likelihood early and generalized worse (news20, K=100, 100 sweeps:
  // held-out likelihood 0.05 per token below the uniform start's). c=75
  // scored at least as well as the uniform start on news20 and AP at K=50,
  // 100 and 1000 (docs/benchmarks.md). The sweeps after the pass use β.
  // 0: β throughout.
  double progressive_smoothing = 75;
  // pipeline.kernel may be kAuto: then auto_kernel decides per sweep.
  PipelineOptions pipeline;
  AutoKernelOptions auto_kernel;
};

struct SweepReport {
  uint64_t sweep = 0;  // sweeps completed, this one included
  SweepResult result;
  bool evaluated = false;
  double log_likelihood = 0;            // joint log p(w, z), if evaluated
  double log_likelihood_per_token = 0;  // if evaluated
  // Its document half, log p(z | α) over the store's documents (if
  // evaluated): a cluster node's share of the cluster's figure.
  double doc_log_likelihood = 0;
  bool alpha_updated = false;
  KernelKind kernel = KernelKind::kSparseLda;  // the kernel this sweep ran
  // The sweep began with the sparse start's pass, which took init_seconds
  // (included in result.seconds).
  bool sparse_start = false;
  bool progressive_start = false;  // likewise, the progressive start's
  double init_seconds = 0;
  // With kAuto: the statistic the choice was made on (else 0).
  double mean_row_topics = 0;
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

  // A copy of the model, for a reader that runs beside later sweeps.
  ModelSnapshot Snapshot() const;
  // The model read straight from the table, without a copy: valid until the
  // next sweep, ReloadStore or the trainer's end.
  ModelRows Rows() const;
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
  // Whether the next sweep begins with the progressive start's pass.
  bool ProgressiveStartDue() const;
  // The table of the store's assignments (RebuildTable); left empty while
  // the progressive start is due, as its pass redraws every token.
  absl::Status DeriveTable();
  // Derives the table again after a failed pass of sweep `sweep`; returns
  // the failure, or kDataLoss if the table could not be rebuilt.
  absl::Status Failed(uint64_t sweep, const absl::Status& failure);
  // The kernel of the next sweep (kAuto resolved); sets *mean_row_topics
  // if it measured it.
  KernelKind ChooseKernel(double* mean_row_topics);
  // The progressive start's pass into the cleared table: its two stages
  // (progressive_stride), the first with its serial batches.
  // Each row gets room for row_topics[w] topics before each stage
  // (TopicTable::ReserveRows).
  absl::StatusOr<SweepResult> RunProgressivePass(
      SweepParams params, const std::vector<uint32_t>& word_tokens);

  std::vector<double> alpha_;
  uint64_t sweep_ = 0;
  int mh_sweeps_ = 0;        // MH sweeps run by kAuto so far
  bool auto_exact_ = false;  // kAuto has switched to SparseLDA for good
};

}  // namespace latentd

#endif  // LATENTD_SAMPLER_TRAINER_H_
