#include "service/model_quality.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/log.h"

namespace latentd::service {
namespace {

double OrNaN(const std::optional<double>& v) {
  return v.value_or(std::numeric_limits<double>::quiet_NaN());
}

void SetTopic(const CoherenceReport& r, api::Topic* topic) {
  if (topic->id() >= r.topics.size()) return;
  const TopicCoherence& t = r.topics[topic->id()];
  if (t.umass.has_value()) topic->set_coherence_umass(*t.umass);
  if (t.npmi.has_value()) topic->set_coherence_npmi(*t.npmi);
}

}  // namespace

std::shared_ptr<const CoherenceMonitor::State> CoherenceMonitor::latest()
    const {
  absl::MutexLock lock(&mu_);
  return latest_;
}

void CoherenceMonitor::MaybeCompute(const ModelView& v, TokenStore* store,
                                    bool training, double every_seconds,
                                    int top_words,
                                    CoherenceConvention convention) {
  if (every_seconds <= 0 || top_words < 2) return;
  if (v.version == view_) return;  // this model is scored
  // Due by time, or the first view since sampling stopped (the final
  // model gets its values without waiting).
  const bool due = absl::Now() - at_ >= absl::Seconds(every_seconds) ||
                   (!training && v.sweep != sweep_);
  if (!due) return;
  const absl::Time start = absl::Now();
  at_ = start;
  CoherenceOptions o;
  o.top_words = top_words;
  o.convention = convention;
  absl::StatusOr<CoherenceReport> report = StoreCoherence(v.snapshot, store, o);
  if (!report.ok()) {
    log::Warning("latentd", absl::StrCat("coherence not computed: ",
                                         report.status().message()));
    return;
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  view_ = v.version;
  sweep_ = v.sweep;
  // The gauges: per topic (registered as topics first appear), the means.
  for (size_t k = topic_gauges_.size(); k < report->topics.size(); ++k) {
    const std::string help =
        "Coherence of a topic's top words (sampler/coherence.h), NaN where "
        "undefined";
    topic_gauges_.emplace_back(
        metrics_->AddGauge(
            "latentd_topic_coherence", help,
            absl::StrFormat("measure=\"umass\",topic=\"%d\"", k)),
        metrics_->AddGauge(
            "latentd_topic_coherence", help,
            absl::StrFormat("measure=\"npmi\",topic=\"%d\"", k)));
  }
  for (size_t k = 0; k < report->topics.size(); ++k) {
    topic_gauges_[k].first->Set(OrNaN(report->topics[k].umass));
    topic_gauges_[k].second->Set(OrNaN(report->topics[k].npmi));
  }
  gauges_.mean_umass->Set(OrNaN(report->mean_umass));
  gauges_.mean_npmi->Set(OrNaN(report->mean_npmi));
  gauges_.sweep->Set(static_cast<double>(v.sweep));
  gauges_.seconds->Set(seconds);
  log::Info(
      "latentd",
      absl::StrFormat(
          "coherence at sweep %d (top %d words, %d documents, %.2f s): UMass "
          "%s NPMI %s",
          v.sweep, report->top_words, report->documents, seconds,
          report->mean_umass ? absl::StrFormat("%.4f", *report->mean_umass)
                             : "n/a",
          report->mean_npmi ? absl::StrFormat("%.4f", *report->mean_npmi)
                            : "n/a"));
  auto state = std::make_shared<State>();
  state->report = *std::move(report);
  state->sweep = v.sweep;
  state->view = v.version;
  absl::MutexLock lock(&mu_);
  latest_ = std::move(state);
}

void CoherenceMonitor::AddTo(api::Topic* topic) const {
  std::shared_ptr<const State> c = latest();
  if (c != nullptr) SetTopic(c->report, topic);
}

void CoherenceMonitor::AddTo(api::ListTopicsResponse* response) const {
  std::shared_ptr<const State> c = latest();
  if (c == nullptr) return;
  for (api::Topic& t : *response->mutable_topics()) SetTopic(c->report, &t);
}

void CoherenceMonitor::AddTo(api::StatusResponse* response) const {
  std::shared_ptr<const State> c = latest();
  if (c == nullptr) return;
  if (c->report.mean_umass.has_value()) {
    response->set_mean_coherence_umass(*c->report.mean_umass);
  }
  if (c->report.mean_npmi.has_value()) {
    response->set_mean_coherence_npmi(*c->report.mean_npmi);
  }
  response->set_coherence_sweep(c->sweep);
  response->set_coherence_view(c->view);
  response->set_coherence_top_words(c->report.top_words);
  response->set_coherence_documents(c->report.documents);
}

void HeldOutScorer::MaybeScore(const Trainer& trainer, bool stopped, int every,
                               const InferOptions& infer) {
  if (store_ == nullptr) return;
  const uint64_t sweep = trainer.sweep();
  if (scored_sweep_ == sweep) return;
  const bool due =
      every > 0 &&
      (!scored_sweep_.has_value()
           ? sweep > 0
           : sweep >= *scored_sweep_ + static_cast<uint64_t>(every));
  if (!stopped && !due) return;
  scored_sweep_ = sweep;
  const absl::Time start = absl::Now();
  // The table changes only in a sweep, which the calling thread runs: it is
  // frozen while the fold-in reads it.
  FoldIn fold_in(trainer.table(), trainer.alpha(), trainer.beta());
  absl::StatusOr<PerplexityResult> p =
      DocumentCompletionPerplexity(&fold_in, store_.get(), infer);
  if (!p.ok()) {
    log::Warning("latentd", absl::StrCat("held-out scoring at sweep ", sweep,
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
  perplexity_->Set(p->perplexity);
  log::Info("latentd",
            absl::StrFormat(
                "held-out perplexity %.2f at sweep %d (document completion, %d "
                "documents, %d tokens scored, %.2f s)",
                p->perplexity, sweep, p->documents, p->scored_tokens,
                score.seconds()));
  absl::MutexLock lock(&mu_);
  score_ = std::move(score);
}

}  // namespace latentd::service
