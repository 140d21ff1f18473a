// LatentdService's held-out score (DIR/heldout.lts): perplexity by
// document completion against the training table, between sweeps.
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "sampler/fold_in.h"
#include "service/latentd_service.h"

namespace latentd::service {

void LatentdService::MaybeScoreHeldOut() {
  if (heldout_ == nullptr) return;
  const uint64_t sweep = trainer_->sweep();
  if (heldout_scored_sweep_ == sweep) return;
  const bool stopped = SamplingStopped();
  const bool due =
      options_.heldout_every > 0 &&
      (!heldout_scored_sweep_.has_value()
           ? sweep > 0
           : sweep >= *heldout_scored_sweep_ +
                          static_cast<uint64_t>(options_.heldout_every));
  if (!stopped && !due) return;
  heldout_scored_sweep_ = sweep;
  const absl::Time start = absl::Now();
  // The table changes only in a sweep, which this thread runs: it is
  // frozen while the fold-in reads it.
  FoldIn fold_in(trainer_->table(), trainer_->alpha(), trainer_->beta());
  absl::StatusOr<PerplexityResult> p =
      DocumentCompletionPerplexity(&fold_in, heldout_.get(), options_.infer);
  if (!p.ok()) {
    LogWarning(absl::StrCat("held-out scoring at sweep ", sweep,
                            " failed: ", p.status().message()));
    return;
  }
  api::HeldOut score;
  score.set_sweep(sweep);
  score.set_perplexity(p->perplexity);
  score.set_log_likelihood_per_token(
      p->scored_tokens > 0
          ? p->log_likelihood / static_cast<double>(p->scored_tokens)
          : 0);
  score.set_documents(p->documents);
  score.set_scored_tokens(p->scored_tokens);
  score.set_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  m_.heldout_perplexity->Set(p->perplexity);
  Log(absl::StrFormat(
      "held-out perplexity %.2f at sweep %d (document completion, %d "
      "documents, %d tokens scored, %.2f s)",
      p->perplexity, sweep, p->documents, p->scored_tokens, score.seconds()));
  absl::MutexLock lock(&heldout_mu_);
  heldout_score_ = std::move(score);
}

}  // namespace latentd::service
