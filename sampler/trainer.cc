#include "sampler/trainer.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace latentd {

namespace {

PipelineOptions WithInit(const TrainerOptions& o) {
  PipelineOptions p = o.pipeline;
  p.kernel_options.init_row_topics = std::max<uint32_t>(o.init_row_topics, 1);
  return p;
}

// The topics to reserve a row for in the progressive pass
// (TopicTable::ReserveRows), from each word's tokens n (counted up to 4K):
// at most what the word's uniform draws would hold, as the pass
// concentrates a word's topics. A dense row costs the pass a walk over all
// K topics for each token, also while the row holds few, so a word of at
// least 4K tokens, whose row is dense for most of them, starts dense, and
// the others sparse (news20, K=1000: dense for every row past K/2 made the
// time to WarpLDA's likelihood 6% longer). With `dense_past_half`, for
// the second stage at K <= kCheapDenseTopics, a row of more than K/2
// expected topics is made dense too: the second stage's larger β spreads
// such rows past K/2, and each that outgrew its sparse block mid-pass left
// it retired until the pass ended (200 M tokens, K=100: 42 MB more arena,
// a third of it). A dense walk of K=100 topics costs about what the sparse
// one does (news20, K=100: 0.98 of the time to WarpLDA's likelihood,
// 3 pairs); at K=1000 it cost 4-7% more.
constexpr TopicId kCheapDenseTopics = 256;

std::vector<uint32_t> ProgressiveRowTopics(
    const std::vector<uint32_t>& word_tokens, TopicId K, bool dense_past_half) {
  dense_past_half = dense_past_half && K <= kCheapDenseTopics;
  std::vector<uint32_t> topics(word_tokens.size());
  for (size_t w = 0; w < word_tokens.size(); ++w) {
    const uint32_t expected = ExpectedTopicsOfUniformDraws(word_tokens[w], K);
    topics[w] = word_tokens[w] >= uint64_t{4} * K ||
                        (dense_past_half && expected > K / 2)
                    ? K
                    : std::min(expected, K / 2);
  }
  return topics;
}

}  // namespace

Trainer::Trainer(const TrainerOptions& options,
                 std::unique_ptr<TokenStore> store)
    : options_(options),
      store_(std::move(store)),
      table_(std::make_unique<TopicTable>(store_->meta().vocab_size,
                                          options.num_topics)),
      pipeline_(WithInit(options), options.num_topics) {}

namespace {

absl::Status CheckOptions(const TrainerOptions& o, const TokenStoreMeta& m) {
  if (o.num_topics == 0 || o.num_topics > kMaxTopics) {
    return absl::InvalidArgumentError(absl::StrCat(
        "number of topics ", o.num_topics, " out of range 1..", kMaxTopics));
  }
  if (!(o.beta > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("beta must be positive, got ", o.beta));
  }
  if (o.alpha < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("alpha must be positive, got ", o.alpha));
  }
  if (o.pipeline.threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads must be at least 1, got ", o.pipeline.threads));
  }
  if (o.pipeline.kernel_options.mh.steps < 1 ||
      !(o.pipeline.kernel_options.mh.refresh > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("MH steps must be at least 1 and refresh positive, got ",
                     o.pipeline.kernel_options.mh.steps, " and ",
                     o.pipeline.kernel_options.mh.refresh));
  }
  if (o.progressive_stride < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "progressive stride must be at least 1, got ", o.progressive_stride));
  }
  if (!(o.progressive_smoothing >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("progressive smoothing must be at least 0, got ",
                     o.progressive_smoothing));
  }
  if (o.progressive_serial_batches < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("progressive serial batches must be at least 0, got ",
                     o.progressive_serial_batches));
  }
  if (m.num_tokens == 0) {
    return absl::InvalidArgumentError("the token store holds no tokens");
  }
  if (m.num_topics != o.num_topics) {
    return absl::InvalidArgumentError(
        absl::StrCat("token store was drawn for ", m.num_topics,
                     " topics, training asks for ", o.num_topics));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(
    const TrainerOptions& options, std::unique_ptr<TokenStore> store) {
  LATENTD_RETURN_IF_ERROR(CheckOptions(options, store->meta()));
  std::unique_ptr<Trainer> t(new Trainer(options, std::move(store)));
  const double a =
      options.alpha > 0 ? options.alpha : 50.0 / options.num_topics;
  t->alpha_.assign(options.num_topics, a);
  t->sweep_ = t->store_->meta().sweep;
  LATENTD_RETURN_IF_ERROR(t->DeriveTable());
  return t;
}

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Resume(
    const ModelSnapshot& snapshot, const TrainerOptions& options,
    std::unique_ptr<TokenStore> store) {
  TrainerOptions o = options;
  o.num_topics = snapshot.num_topics;
  o.beta = snapshot.beta;
  o.seed = snapshot.seed;
  LATENTD_RETURN_IF_ERROR(CheckOptions(o, store->meta()));
  if (store->meta().vocab_size != snapshot.vocab_size) {
    return absl::FailedPreconditionError(
        absl::StrCat("token store has ", store->meta().vocab_size,
                     " words, snapshot has ", snapshot.vocab_size));
  }
  if (store->meta().sweep < snapshot.sweep) {
    return absl::FailedPreconditionError(
        absl::StrCat("token store is at sweep ", store->meta().sweep,
                     ", older than the snapshot's ", snapshot.sweep));
  }
  std::unique_ptr<Trainer> t(new Trainer(o, std::move(store)));
  t->alpha_ = snapshot.alpha;
  // The store may be ahead of the snapshot (it commits every sweep); its
  // assignments are the truth.
  t->sweep_ = t->store_->meta().sweep;
  LATENTD_RETURN_IF_ERROR(t->DeriveTable());
  return t;
}

bool Trainer::ProgressiveStartDue() const {
  return sweep_ == 0 && options_.progressive_start &&
         options_.init_row_topics == 0;
}

absl::Status Trainer::DeriveTable() {
  if (ProgressiveStartDue()) {
    // The pass redraws every token into a cleared table: a table of the
    // store's draws would cost a pass over the store and be dropped, and
    // the arena stayed at its size (200 M tokens, K=100: every frequent
    // word's row dense; docs/benchmarks.md, "Large corpora from disk").
    table_->Clear();
    return absl::OkStatus();
  }
  return RebuildTable(store_.get(), table_.get());
}

KernelKind Trainer::ChooseKernel(double* mean_row_topics) {
  if (options_.pipeline.kernel != KernelKind::kAuto) {
    return options_.pipeline.kernel;
  }
  if (auto_exact_) return KernelKind::kSparseLda;
  if (mh_sweeps_ < options_.auto_kernel.max_mh_sweeps) {
    *mean_row_topics = table_->MeanRowTopics();
    if (*mean_row_topics >= options_.auto_kernel.mh_min_row_topics) {
      ++mh_sweeps_;
      return KernelKind::kMh;
    }
  }
  auto_exact_ = true;
  return KernelKind::kSparseLda;
}

absl::Status Trainer::Failed(uint64_t sweep, const absl::Status& failure) {
  absl::Status rebuilt = DeriveTable();
  if (!rebuilt.ok()) {
    return absl::DataLossError(absl::StrCat(
        "sweep ", sweep, " failed (", failure.message(),
        ") and the table could not be rebuilt: ", rebuilt.message()));
  }
  return failure;
}

absl::StatusOr<SweepReport> Trainer::Sweep() {
  SweepParams params;
  params.table = table_.get();
  params.alpha = alpha_;
  params.beta = options_.beta;
  params.beta_sum = options_.beta * static_cast<double>(table_->vocab_size());
  params.seed = options_.seed;
  params.sweep = sweep_;

  const uint64_t done = sweep_ + 1;
  SweepReport report;
  const bool sparse = options_.init_row_topics > 0;
  if (sweep_ == 0 && (sparse || options_.progressive_start)) {
    // The start's pass before the first sweep: the sparse start's, or the
    // progressive start's, which draws every token into the table left
    // empty (DeriveTable).
    std::vector<uint32_t> word_tokens;
    if (!sparse) {
      const TopicId K = options_.num_topics;
      absl::StatusOr<std::vector<uint32_t>> counted =
          CountWordTokens(store_.get(), table_->vocab_size(), 4 * K);
      if (!counted.ok()) return Failed(done, counted.status());
      word_tokens = *std::move(counted);
      table_->Clear();  // empty already, unless a caller wrote to it
    }
    pipeline_.SetKernel(sparse ? KernelKind::kSparseInit
                               : KernelKind::kProgressiveStart);
    // The progressive pass draws into a table that starts empty, where a
    // batch sees nothing of the batches in flight beside it: one batch a
    // sampler thread, not the sweeps' 2·threads + 1 (news20, 2 threads:
    // the log-likelihood after sweep 10 is about 0.01 nat higher, which
    // is worth a sweep at K=100, for 0.01-0.05 s more in the pass).
    const int in_flight = pipeline_.max_batches_in_flight();
    if (!sparse) {
      const int threads = std::max(options_.pipeline.threads, 1);
      pipeline_.SetMaxBatchesInFlight(
          in_flight > 0 ? std::min(in_flight, threads) : threads);
    }
    absl::StatusOr<SweepResult> init =
        sparse ? pipeline_.Run(store_.get(), table_.get(), params, nullptr)
               : RunProgressivePass(params, word_tokens);
    pipeline_.SetMaxBatchesInFlight(in_flight);
    pipeline_.SetSerialPrefixBatches(options_.pipeline.serial_prefix_batches);
    // Its kernels run once: their overlays would stay beside the sweeps'.
    pipeline_.ReleaseKernels(sparse ? KernelKind::kSparseInit
                                    : KernelKind::kProgressiveStart);
    if (!init.ok()) return Failed(done, init.status());
    (sparse ? report.sparse_start : report.progressive_start) = true;
    report.init_seconds = init->seconds;
  }
  report.kernel = ChooseKernel(&report.mean_row_topics);
  pipeline_.SetKernel(report.kernel);
  report.evaluated = options_.eval_every > 0 && done % options_.eval_every == 0;
  const bool alpha_due =
      options_.optimize_alpha &&
      done >= static_cast<uint64_t>(std::max(options_.alpha_burn_in, 1)) &&
      (done - std::max(options_.alpha_burn_in, 1)) %
              std::max(options_.alpha_interval, 1) ==
          0;
  std::optional<DocTopicStats> stats;
  if (report.evaluated || alpha_due) stats.emplace(alpha_);

  absl::StatusOr<SweepResult> result = pipeline_.Run(
      store_.get(), table_.get(), params, stats ? &*stats : nullptr);
  if (!result.ok()) return Failed(done, result.status());
  sweep_ = done;
  report.sweep = done;
  report.result = *result;
  report.result.seconds += report.init_seconds;
  if (report.evaluated) {
    report.doc_log_likelihood = stats->log_likelihood();
    report.log_likelihood =
        WordLogLikelihood(*table_, options_.beta) + report.doc_log_likelihood;
    report.log_likelihood_per_token =
        report.log_likelihood / static_cast<double>(result->tokens);
  }
  if (alpha_due) {
    alpha_ = UpdateAlpha(alpha_, *stats, options_.alpha_update);
    report.alpha_updated = true;
  }
  return report;
}

absl::StatusOr<SweepResult> Trainer::RunProgressivePass(
    SweepParams params, const std::vector<uint32_t>& word_tokens) {
  const TopicId K = options_.num_topics;
  const uint32_t stride = static_cast<uint32_t>(options_.progressive_stride);
  // The rows are reserved once, in blocks with room for the second
  // stage's layout, which the second stage's reservation then takes in
  // place; the first stage ends without a Quiesce, which would move its
  // rows (a sixteenth of the tokens) to small blocks for the second stage
  // to grow back, taking more arena than the reservations.
  const std::vector<uint32_t> second_stage_topics =
      ProgressiveRowTopics(word_tokens, K, true);
  table_->ReserveRows(ProgressiveRowTopics(word_tokens, K, false),
                      second_stage_topics);
  params.progressive_stride = stride;
  params.progressive_first_stage = true;
  // The first stage's first batches are the store's 0, s, 2s, ...: every
  // batch before the last of them waits its turn (the second stage's pass
  // through at once).
  const int64_t serial =
      int64_t{options_.progressive_serial_batches} * int64_t{stride};
  pipeline_.SetSerialPrefixBatches(static_cast<int>(
      std::min<int64_t>(serial, std::numeric_limits<int>::max())));
  pipeline_.SetRelayoutAfterRun(stride == 1);
  absl::StatusOr<SweepResult> first =
      pipeline_.Run(store_.get(), table_.get(), params, nullptr);
  pipeline_.SetRelayoutAfterRun(true);
  if (!first.ok() || stride == 1) return first;
  params.progressive_first_stage = false;
  params.beta =
      std::max(options_.beta,
               options_.progressive_smoothing /
                   std::max(static_cast<double>(options_.num_topics), 100.0));
  params.beta_sum = params.beta * table_->vocab_size();
  pipeline_.SetSerialPrefixBatches(0);
  table_->ReserveRows(second_stage_topics);
  LATENTD_ASSIGN_OR_RETURN(
      SweepResult second,
      pipeline_.Run(store_.get(), table_.get(), params, nullptr));
  second.changed += first->changed;
  second.seconds += first->seconds;
  return second;
}

absl::Status Trainer::ReloadStore() {
  const TokenStoreMeta& m = store_->meta();
  if (m.num_topics != options_.num_topics ||
      m.vocab_size < table_->vocab_size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "reloaded token store has K=", m.num_topics, " and ", m.vocab_size,
        " words; the model has K=", options_.num_topics, " and ",
        table_->vocab_size(), " words"));
  }
  if (m.vocab_size > table_->vocab_size()) table_->Resize(m.vocab_size);
  return DeriveTable();
}

ModelRows Trainer::Rows() const {
  return ModelRows(*table_, alpha_, options_.beta, sweep_, options_.seed);
}

ModelSnapshot Trainer::Snapshot() const {
  return ModelSnapshot::Capture(*table_, alpha_, options_.beta, sweep_,
                                options_.seed);
}

}  // namespace latentd
