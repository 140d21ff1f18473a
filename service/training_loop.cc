// TrainingLoop's thread: merge, sweep, publish, checkpoint (see the header
// for the order of a turn), and its life cycle.
#include "service/training_loop.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "sampler/fold_in.h"
#include "sampler/model_dir.h"
#include "service/cluster/owned_log_likelihood.h"
#include "service/topic_model_files.h"

namespace latentd::service {

TrainingLoop::TrainingLoop(const ServiceOptions& options, Parts parts,
                           MetricsRegistry* registry)
    : parts_(parts),
      m_(*parts.metrics),
      options_(options),
      coherence_(registry, {.mean_umass = m_.coherence_umass,
                            .mean_npmi = m_.coherence_npmi,
                            .sweep = m_.coherence_sweep,
                            .seconds = m_.coherence_seconds}),
      heldout_(m_.heldout_perplexity) {}

TrainingLoop::~TrainingLoop() {
  if (thread_.joinable()) thread_.join();
}

absl::Status TrainingLoop::Open() {
  absl::MutexLock lock(&train_mu_);
  LATENTD_ASSIGN_OR_RETURN(OpenedTopicModel model,
                           OpenTopicModel(&options_, m_));
  tokenizer_ = std::move(model.tokenizer);
  vocab_ = std::move(model.vocab);
  vocab_saved_ = vocab_.size();
  scan_ = std::move(model.scan);
  trainer_ = std::move(model.trainer);
  if (model.heldout != nullptr) heldout_.SetStore(std::move(model.heldout));
  if (model.checkpoint_sweep.has_value()) {
    checkpoint_sweep_ = *model.checkpoint_sweep;
    checkpoint_sweep_seen_ = checkpoint_sweep_;
  } else {
    LATENTD_RETURN_IF_ERROR(WriteCheckpoint());
  }
  // Records after the store's merged sequence are queued to merge.
  LATENTD_RETURN_IF_ERROR(parts_.ingest->Open(scan_.merged_sequence));
  merged_sequence_ = scan_.merged_sequence;
  LATENTD_RETURN_IF_ERROR(MergePending());
  LATENTD_ASSIGN_OR_RETURN(auto users, CollectUsers(trainer_->store()));
  has_users_ = !users.empty();
  return absl::OkStatus();
}

absl::Status TrainingLoop::JoinCluster(ClusterLinkOptions options) {
  absl::MutexLock lock(&train_mu_);
  LATENTD_RETURN_IF_ERROR(
      parts_.cluster->Join(std::move(options), trainer_.get(), vocab_));
  return Publish();
}

void TrainingLoop::Start() {
  training_ = true;
  thread_ = std::thread([this] { Run(); });
}

void TrainingLoop::Join() {
  if (thread_.joinable()) thread_.join();
  training_ = false;
}

absl::Status TrainingLoop::Finish() {
  absl::MutexLock lock(&train_mu_);
  if (trainer_ == nullptr) return absl::OkStatus();  // Open failed
  if (parts_.cluster->joined()) {
    // Push what is left and leave; the table keeps this node's last view.
    absl::Status applied = parts_.cluster->Stop();
    if (!applied.ok()) {
      log::Warning("latentd", std::string(applied.message()));
    }
  }
  LATENTD_RETURN_IF_ERROR(WriteCheckpoint());
  log::Info("latentd",
            absl::StrCat("checkpoint written at sweep ", trainer_->sweep()));
  return absl::OkStatus();
}

absl::Status TrainingLoop::Reconfigure(const ServiceOptions& next) {
  absl::MutexLock lock(&train_mu_);
  options_.checkpoint_every = next.checkpoint_every;
  options_.sweep_interval_ms = next.sweep_interval_ms;
  options_.checkpoint_seconds = next.checkpoint_seconds;
  options_.publish_interval_ms = next.publish_interval_ms;
  options_.progress_seconds = next.progress_seconds;
  options_.coherence_seconds = next.coherence_seconds;
  options_.coherence_top_words = next.coherence_top_words;
  options_.compact_log_bytes = next.compact_log_bytes;
  if (next.max_sweeps != options_.max_sweeps && parts_.cluster->finished()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "max-sweeps stays ", options_.max_sweeps,
        ": this cluster node has finished training (restart the cluster to "
        "train further)"));
  }
  options_.max_sweeps = next.max_sweeps;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> TrainingLoop::Checkpoint() {
  absl::MutexLock lock(&train_mu_);
  LATENTD_RETURN_IF_ERROR(WriteCheckpoint());
  return checkpoint_sweep_;
}

void TrainingLoop::Run() {
  while (!parts_.ingest->stopping()) {
    bool backoff = false;
    bool swept;
    const absl::Time turn_start = absl::Now();
    {
      absl::MutexLock lock(&train_mu_);
      swept = Turn(&backoff);
    }
    if (backoff) {
      absl::SleepFor(absl::Milliseconds(500));
    } else if (!swept) {
      // Idle (max_sweeps reached): wait for documents to merge.
      parts_.ingest->WaitForWork(absl::Milliseconds(200));
    } else {
      WaitOutInterval(turn_start);
    }
  }
}

void TrainingLoop::WaitOutInterval(absl::Time turn_start) {
  const absl::Duration kSlice = absl::Milliseconds(100);
  while (!parts_.ingest->stopping() && parts_.ingest->pending() == 0) {
    int interval_ms;
    {
      absl::MutexLock lock(&train_mu_);
      interval_ms = options_.sweep_interval_ms;
    }
    const absl::Duration left =
        turn_start + absl::Milliseconds(interval_ms) - absl::Now();
    if (left <= absl::ZeroDuration()) return;
    parts_.ingest->WaitForWork(std::min(left, kSlice));
  }
}

bool TrainingLoop::Turn(bool* backoff) {
  ClusterMember& cluster = *parts_.cluster;
  absl::Status merged = MergePending();
  if (merged.ok()) {
    absl::StatusOr<size_t> adopted =
        cluster.AdoptWords(trainer_.get(), &vocab_);
    if (!adopted.ok()) {
      merged = adopted.status();
    } else if (*adopted > 0) {
      pending_merged_ = true;  // publish the new words
    }
  }
  if (!merged.ok()) {
    m_.merge_errors->Add();
    log::Warning("latentd",
                 absl::StrCat("merge failed (will retry): ", merged.message()));
    *backoff = true;
  }
  if (cluster.LeaveDue()) {
    // An operator removes this node: refuse further ingests, merge what
    // was acknowledged (so a hand-off ships it and a drop takes it out
    // with the rest), stop sampling and leave. A failed merge is retried
    // before leaving, at the next turn.
    parts_.ingest->BeginLeave();
    absl::Status left = MergePending();
    if (left.ok()) left = cluster.Leave(trainer_.get(), vocab_);
    if (!left.ok()) {
      log::Warning("latentd", absl::StrCat("leaving the cluster failed: ",
                                           left.message()));
    }
  }
  UpdateSamplingState();
  const bool swept = training_;
  // A failing sweep (say a damaged store) is retried, but not at once.
  if (swept && !SweepOnce()) *backoff = true;
  absl::Status published = MaybePublish(swept);
  if (!published.ok()) {
    log::Warning("latentd",
                 absl::StrCat("publish failed: ", published.message()));
    *backoff = true;
  }
  heldout_.MaybeScore(*trainer_, SamplingStopped(), options_.heldout_every,
                      options_.infer);
  coherence_.MaybeCompute(
      *view(), trainer_->store(), training_, options_.coherence_seconds,
      options_.coherence_top_words, options_.coherence_convention);
  return swept;
}

void TrainingLoop::UpdateSamplingState() {
  ClusterMember& cluster = *parts_.cluster;
  ClusterRouter& router = *parts_.router;
  training_ = !SamplingStopped();
  const bool drain = cluster.drain_requested();
  std::string reason;
  if (!training_ && !router.failed()) {
    reason = router.left() ? std::string("it left its cluster")
             : drain       ? std::string(
                                 "its cluster is draining (latentctl "
                                       "cluster resume ends that)")
                     : absl::StrCat("--max-sweeps ", options_.max_sweeps,
                                    " reached");
  }
  {
    absl::MutexLock l(&view_mu_);
    stopped_reason_ = std::move(reason);
  }
  if (training_ || !cluster.joined() || router.left()) return;
  // Its table is not the cluster's: the heartbeat says so, and a drain
  // gets no checksum from it (sync/control/drain.h).
  if (router.failed()) cluster.link()->set_stopped_failed();
  if (drain && !router.failed()) {
    // Paused, not finished: push and pull until nothing is left, then
    // report the table's checksum (sync/control/drain.h).
    absl::StatusOr<bool> changed = cluster.DrainStep(trainer_.get(), vocab_);
    if (!changed.ok()) {
      log::Warning("latentd",
                   absl::StrCat("cluster drain: ", changed.status().message()));
    } else if (*changed) {
      pending_merged_ = true;  // publish
    }
    return;
  }
  // Not sampling: stop holding back SSP peers, and keep the view in step
  // with the globals the background rounds bring.
  cluster.Finish();
  if (!cluster.HasPending()) return;
  absl::Status applied = cluster.ApplyPending();
  if (!applied.ok()) {
    log::Warning("latentd", std::string(applied.message()));
    // The view can no longer take the globals (say a count would go
    // negative): it is inconsistent with the cluster's.
    router.MarkFailed(
        absl::StrCat("its topic table is inconsistent with the cluster's: ",
                     applied.message()));
  }
  pending_merged_ = true;  // publish
}

bool TrainingLoop::SamplingStopped() const {
  return (options_.max_sweeps > 0 &&
          trainer_->sweep() >= options_.max_sweeps) ||
         parts_.router->failed() || parts_.router->left() ||
         parts_.cluster->drain_requested();
}

bool TrainingLoop::SweepOnce() {
  ClusterMember& cluster = *parts_.cluster;
  uint64_t cluster_sweep = 0;
  if (cluster.joined()) {
    absl::Status ready = cluster.BeforeSweep(
        &cluster_sweep, [this] { return parts_.ingest->stopping(); });
    if (absl::IsCancelled(ready)) return true;  // draining or stopping
    if (!ready.ok()) {
      log::Warning("latentd", absl::StrCat("cluster: ", ready.message()));
      return false;
    }
  }
  absl::StatusOr<SweepReport> r = trainer_->Sweep();
  if (!r.ok()) {
    m_.sweep_errors->Add();
    log::Warning("latentd",
                 absl::StrCat("sweep failed: ", r.status().message()));
    if (cluster.joined()) {
      // The trainer rebuilt the table from this store alone: it is out of
      // step with what the owners hold, so sampling here must stop.
      parts_.router->MarkFailed(
          absl::StrCat("a sweep failed: ", r.status().message()));
      log::Warning("latentd",
                   "cluster mode: this node stops sampling (restart the "
                   "cluster); it goes on serving queries and ingesting");
    }
    return false;
  }
  if (cluster.joined()) {
    cluster.link()->EndSweep(r->result.batches);
    cluster.link()->AnnounceSweep(cluster_sweep);
  }
  RecordSweep(*r);
  if (cluster.joined() && r->evaluated) RecordLogLikelihoodPart(*r);
  const bool by_sweeps = options_.checkpoint_every > 0 &&
                         r->sweep % options_.checkpoint_every == 0;
  const bool by_time = options_.checkpoint_seconds > 0 &&
                       absl::Now() - checkpoint_at_ >=
                           absl::Seconds(options_.checkpoint_seconds);
  if (by_sweeps || by_time) {
    absl::Status c = WriteCheckpoint();
    if (!c.ok()) {
      log::Warning("latentd", absl::StrCat("checkpoint failed: ", c.message()));
    }
  }
  return true;
}

void TrainingLoop::RecordSweep(const SweepReport& r) {
  m_.sweeps->Add();
  m_.tokens_sampled->Add(r.result.tokens);
  tokens_per_second_ = r.tokens_per_second();
  m_.tokens_per_second->Set(r.tokens_per_second());
  m_.sweep->Set(static_cast<double>(r.sweep));
  if (r.evaluated) {
    loglik_per_token_ = r.log_likelihood_per_token;
    m_.loglik->Set(r.log_likelihood_per_token);
    history_.Add({.sweep = r.sweep,
                  .log_likelihood_per_token = r.log_likelihood_per_token,
                  .tokens_per_second = r.tokens_per_second()});
  }
  LogProgress(r);
}

void TrainingLoop::RecordLogLikelihoodPart(const SweepReport& r) {
  ClusterLink* link = parts_.cluster->link();
  // The table holds every word of the cluster (adopted from the owners):
  // V is the cluster's vocabulary, as the sampler's Vβ.
  const sync::LogLikelihoodPart part = {
      .sweep = r.sweep,
      .tokens = r.result.tokens,
      .doc = r.doc_log_likelihood,
      .owned_word = OwnedWordLogLikelihood(link->owner(), trainer_->beta(),
                                           trainer_->table().vocab_size())};
  link->set_log_likelihood_part(part);
  absl::MutexLock lock(&view_mu_);
  ll_part_ = part;
}

void TrainingLoop::LogProgress(const SweepReport& r) {
  Progress& p = progress_;
  ++p.sweeps;
  p.tokens += r.result.tokens;
  p.seconds += r.result.seconds;
  const absl::Time now = absl::Now();
  const bool last = options_.max_sweeps > 0 && r.sweep >= options_.max_sweeps;
  if (!last && options_.progress_seconds > 0 &&
      now - p.logged_at < absl::Seconds(options_.progress_seconds)) {
    return;
  }
  std::string line = absl::StrFormat(
      "sweep %d%s: %d sweep%s in %.1f s, %.2f M tokens/s", r.sweep,
      options_.max_sweeps > 0 ? absl::StrCat("/", options_.max_sweeps) : "",
      p.sweeps, p.sweeps == 1 ? "" : "s", p.seconds,
      p.seconds > 0 ? static_cast<double>(p.tokens) / p.seconds / 1e6 : 0.0);
  const double ll = loglik_per_token_.load(std::memory_order_relaxed);
  if (ll != 0) absl::StrAppendFormat(&line, ", log-likelihood/token %.4f", ll);
  if (last) absl::StrAppend(&line, " (max-sweeps reached: sampling stops)");
  log::Info("latentd", line);
  p = Progress{.logged_at = now};
}

absl::Status TrainingLoop::MergePending() {
  ClusterMember& cluster = *parts_.cluster;
  std::vector<IngestRecord> batch =
      parts_.ingest->PendingAfter(scan_.merged_sequence);
  if (batch.empty()) return absl::OkStatus();
  // Words first: vocab.txt must cover the store version that uses them.
  // Compared with what vocab.txt holds, not with the size before this
  // merge: after a failed save the words are in vocab_ already.
  for (const IngestRecord& r : batch) {
    for (const std::string& w : r.words) vocab_.Add(w);
  }
  ModelPaths paths(options_.data_dir);
  if (vocab_.size() != vocab_saved_) {
    LATENTD_RETURN_IF_ERROR(vocab_.Save(paths.vocab()));
    vocab_saved_ = vocab_.size();
  }
  // In a cluster the new words become keys of the synchronized table
  // before their counts go in (ClusterMember::ApplyMerge).
  if (cluster.joined()) {
    LATENTD_RETURN_IF_ERROR(cluster.GrowTable(trainer_.get(), vocab_));
  }
  // With sampling stopped no sweep would revisit a random start: new tokens
  // are folded in against the model as it is (and join it, so the counts
  // stay those of the store).
  std::optional<FoldIn> fold_in;
  TopicAssigner assign;
  if (SamplingStopped()) {
    fold_in.emplace(trainer_->table(), trainer_->alpha(), trainer_->beta());
    assign = [&](std::span<const WordId> words, uint64_t sequence) {
      return fold_in->Assign(words, options_.infer, sequence);
    };
  }
  LATENTD_ASSIGN_OR_RETURN(
      MergeResult result,
      MergeIntoStore(batch, trainer_->options().seed, trainer_->store(),
                     &vocab_, &scan_, /*count_added=*/cluster.joined(),
                     assign));
  if (cluster.joined()) {
    LATENTD_RETURN_IF_ERROR(cluster.ApplyMerge(trainer_.get(), result));
  } else {
    LATENTD_RETURN_IF_ERROR(trainer_->ReloadStore());
  }
  m_.merged->Add(result.records);
  merged_sequence_ = scan_.merged_sequence;
  for (const IngestRecord& r : batch) {
    if (!r.user.empty()) has_users_ = true;
  }
  // The records leave the queue when Publish() makes them visible.
  pending_merged_ = true;
  if (!result.not_durable.empty()) {
    // Merged, but a crash could bring back the store before it: the log
    // keeps their words (no compaction) until a later commit is durable.
    log::Warning("latentd", absl::StrCat("merge: ", result.not_durable,
                                         "; the ingest log keeps the records"));
    return absl::OkStatus();
  }
  parts_.ingest->Compact(scan_.merged_sequence, options_.compact_log_bytes);
  return absl::OkStatus();
}

}  // namespace latentd::service
