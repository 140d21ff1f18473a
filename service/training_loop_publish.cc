// TrainingLoop's output: the published view and document table, the
// checkpoints, and what Status reads of the training.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "sampler/checkpoint_files.h"
#include "sampler/model_dir.h"
#include "service/training_loop.h"

namespace latentd::service {

absl::Status TrainingLoop::PublishFirst(SimilarityService* similarity) {
  absl::MutexLock lock(&train_mu_);
  similarity_ = similarity;
  return Publish();
}

absl::Status TrainingLoop::MaybePublish(bool swept) {
  // A merge at once; sweeps at most every publish_interval_ms; and the last
  // sweep before training pauses.
  const bool sweep_due =
      trainer_->sweep() != published_sweep_ &&
      (!swept ||
       absl::Now() - published_at_ >=
           absl::Milliseconds(options_.publish_interval_ms) ||
       (options_.max_sweeps > 0 && trainer_->sweep() >= options_.max_sweeps));
  if (!pending_merged_ && !sweep_due) return absl::OkStatus();
  pending_merged_ = false;
  return Publish();
}

absl::Status TrainingLoop::Publish() {
  absl::flat_hash_map<std::string, UserTopics> users;
  if (has_users_) {
    LATENTD_ASSIGN_OR_RETURN(users, CollectUsers(trainer_->store()));
  }
  const TokenStoreMeta& meta = trainer_->store()->meta();
  m_.documents->Set(static_cast<double>(meta.num_docs));
  if (parts_.cluster->joined()) {
    parts_.cluster->link()->set_documents(meta.num_docs);
  }
  m_.tokens->Set(static_cast<double>(meta.num_tokens));
  m_.vocabulary->Set(static_cast<double>(meta.vocab_size));
  uint64_t version;
  {
    absl::MutexLock lock(&view_mu_);
    version = ++view_version_;
  }
  published_sweep_ = trainer_->sweep();
  published_at_ = absl::Now();
  std::shared_ptr<const ModelView> view = BuildModelView(
      trainer_->Snapshot(), vocab_, std::move(users), meta, version);
  {
    absl::MutexLock lock(&view_mu_);
    view_ = view;
  }
  if (similarity_ != nullptr) {
    absl::Status s =
        similarity_->OnPublish(*view, trainer_->store(), !SamplingStopped());
    if (!s.ok()) {
      log::Warning("latentd", absl::StrCat("similarity index not refreshed: ",
                                           s.message()));
    }
  }
  if (absl::Status s = MaybeCollectDocuments(*view); !s.ok()) {
    log::Warning("latentd",
                 absl::StrCat("document table not refreshed: ", s.message()));
  }
  // Merged records are visible now: they leave the queue.
  parts_.ingest->Published(scan_.merged_sequence);
  return absl::OkStatus();
}

absl::Status TrainingLoop::MaybeCollectDocuments(const ModelView& view) {
  const absl::Time now = absl::Now();
  bool have;
  {
    absl::MutexLock lock(&view_mu_);
    have = documents_ != nullptr;
  }
  const bool due =
      !have || SamplingStopped() ||
      now - documents_at_ >= absl::Seconds(options_.similarity.refresh_seconds);
  if (!due) return absl::OkStatus();
  LATENTD_ASSIGN_OR_RETURN(
      std::shared_ptr<const DocumentTopics> table,
      DocumentTopics::Collect(trainer_->store(), view.sweep, view.version));
  documents_at_ = now;
  absl::MutexLock lock(&view_mu_);
  documents_ = std::move(table);
  return absl::OkStatus();
}

absl::Status TrainingLoop::WriteCheckpoint() {
  // The store's version of this sweep must be on disk first (sweeps commit
  // it in the background): a snapshot newer than it would not resume.
  LATENTD_RETURN_IF_ERROR(trainer_->store()->WaitDurable());
  ModelPaths paths(options_.data_dir);
  std::string warning;
  ModelSnapshot snapshot = trainer_->Snapshot();
  // A cluster node's table also holds words its store does not use (other
  // nodes'): a checkpoint covers the store's words, so that it fits the
  // store on a restart (the others come back from their owners).
  const uint32_t store_words = trainer_->store()->meta().vocab_size;
  if (snapshot.vocab_size > store_words) {
    snapshot.vocab_size = store_words;
    snapshot.word_offsets.resize(store_words + 1);
    snapshot.entries.resize(snapshot.word_offsets.back());
  }
  LATENTD_RETURN_IF_ERROR(SaveCheckpoint(snapshot, paths, &warning));
  if (!warning.empty()) log::Warning("latentd", warning);
  checkpoint_sweep_ = trainer_->sweep();
  checkpoint_sweep_seen_ = checkpoint_sweep_;
  checkpoint_at_ = absl::Now();
  m_.checkpoints->Add();
  return absl::OkStatus();
}

std::shared_ptr<const ModelView> TrainingLoop::view() const {
  absl::MutexLock lock(&view_mu_);
  return view_;
}

absl::StatusOr<std::shared_ptr<const DocumentTopics>> TrainingLoop::Documents()
    const {
  absl::MutexLock lock(&view_mu_);
  if (documents_ == nullptr) {
    return absl::UnavailableError("the document table is not read yet");
  }
  return documents_;
}

std::string TrainingLoop::SamplingStoppedReason() const {
  absl::MutexLock lock(&view_mu_);
  return stopped_reason_;
}

void TrainingLoop::AddStatus(uint32_t history,
                             api::StatusResponse* resp) const {
  resp->set_tokens_per_second(tokens_per_second_.load());
  resp->set_log_likelihood_per_token(loglik_per_token_.load());
  resp->set_merged_sequence(merged_sequence_.load());
  resp->set_checkpoint_sweep(checkpoint_sweep_seen_.load());
  resp->set_training(training_.load());
  {
    absl::MutexLock lock(&view_mu_);
    if (ll_part_.has_value()) {
      api::LogLikelihoodPart* p = resp->mutable_log_likelihood_part();
      p->set_sweep(ll_part_->sweep);
      p->set_tokens(ll_part_->tokens);
      p->set_doc_log_likelihood(ll_part_->doc);
      p->set_owned_word_log_likelihood(ll_part_->owned_word);
    }
  }
  coherence_.AddTo(resp);
  if (std::optional<api::HeldOut> heldout = heldout_.latest()) {
    *resp->mutable_heldout() = *std::move(heldout);
  }
  for (const SweepPoint& p : history_.Points(history)) {
    api::SweepPoint* out = resp->add_history();
    out->set_sweep(p.sweep);
    out->set_log_likelihood_per_token(p.log_likelihood_per_token);
    out->set_tokens_per_second(p.tokens_per_second);
  }
}

}  // namespace latentd::service
