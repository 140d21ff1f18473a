// Topic coherence in the daemon: computed on the training thread between
// sweeps over the node's token store for the published view's topics, at
// the cadence ServiceOptions::coherence_seconds sets (a read of the whole
// store per computation: cheaper than a sweep, but not per request), and
// published to ListTopics, GetTopic, Status and /metrics.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "service/latentd_service.h"

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

std::shared_ptr<const LatentdService::CoherenceState>
LatentdService::coherence() const {
  absl::MutexLock lock(&coherence_mu_);
  return coherence_;
}

void LatentdService::MaybeComputeCoherence() {
  if (options_.coherence_seconds <= 0 || options_.coherence_top_words < 2) {
    return;
  }
  std::shared_ptr<const ModelView> v = view();
  if (v->version == coherence_view_) return;  // this model is scored
  // Due by time, or the first view since sampling stopped (the final
  // model gets its values without waiting).
  const bool due = absl::Now() - coherence_at_ >=
                       absl::Seconds(options_.coherence_seconds) ||
                   (!training_ && v->sweep != coherence_sweep_);
  if (!due) return;
  const absl::Time start = absl::Now();
  coherence_at_ = start;
  CoherenceOptions o;
  o.top_words = options_.coherence_top_words;
  o.convention = options_.coherence_convention;
  absl::StatusOr<CoherenceReport> report =
      StoreCoherence(v->snapshot, trainer_->store(), o);
  if (!report.ok()) {
    LogWarning(
        absl::StrCat("coherence not computed: ", report.status().message()));
    return;
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  coherence_view_ = v->version;
  coherence_sweep_ = v->sweep;
  // The gauges: per topic (registered as topics first appear), the means.
  for (size_t k = topic_coherence_gauges_.size(); k < report->topics.size();
       ++k) {
    const std::string help =
        "Coherence of a topic's top words (sampler/coherence.h), NaN where "
        "undefined";
    topic_coherence_gauges_.emplace_back(
        metrics_->AddGauge(
            "latentd_topic_coherence", help,
            absl::StrFormat("measure=\"umass\",topic=\"%d\"", k)),
        metrics_->AddGauge(
            "latentd_topic_coherence", help,
            absl::StrFormat("measure=\"npmi\",topic=\"%d\"", k)));
  }
  for (size_t k = 0; k < report->topics.size(); ++k) {
    topic_coherence_gauges_[k].first->Set(OrNaN(report->topics[k].umass));
    topic_coherence_gauges_[k].second->Set(OrNaN(report->topics[k].npmi));
  }
  m_.coherence_umass->Set(OrNaN(report->mean_umass));
  m_.coherence_npmi->Set(OrNaN(report->mean_npmi));
  m_.coherence_sweep->Set(static_cast<double>(v->sweep));
  m_.coherence_seconds->Set(seconds);
  Log(absl::StrFormat(
      "coherence at sweep %d (top %d words, %d documents, %.2f s): UMass %s "
      "NPMI %s",
      v->sweep, report->top_words, report->documents, seconds,
      report->mean_umass ? absl::StrFormat("%.4f", *report->mean_umass) : "n/a",
      report->mean_npmi ? absl::StrFormat("%.4f", *report->mean_npmi) : "n/a"));
  auto state = std::make_shared<CoherenceState>();
  state->report = *std::move(report);
  state->sweep = v->sweep;
  state->view = v->version;
  absl::MutexLock lock(&coherence_mu_);
  coherence_ = std::move(state);
}

void LatentdService::AddCoherence(api::Topic* topic) const {
  std::shared_ptr<const CoherenceState> c = coherence();
  if (c != nullptr) SetTopic(c->report, topic);
}

void LatentdService::AddCoherence(api::ListTopicsResponse* response) const {
  std::shared_ptr<const CoherenceState> c = coherence();
  if (c == nullptr) return;
  for (api::Topic& t : *response->mutable_topics()) SetTopic(c->report, &t);
}

void LatentdService::AddCoherence(api::StatusResponse* response) const {
  std::shared_ptr<const CoherenceState> c = coherence();
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

}  // namespace latentd::service
