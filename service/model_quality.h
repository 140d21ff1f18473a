// The training loop's measures of the model, each computed on the training
// thread between sweeps and published to API threads:
//
//   CoherenceMonitor  topic coherence (UMass, NPMI of the top words;
//                     sampler/coherence.h) over the node's token store, at
//                     most every ServiceOptions::coherence_seconds: for
//                     ListTopics, GetTopic, Status and /metrics.
//   HeldOutScorer     held-out perplexity by document completion over
//                     DIR/heldout.lts, every ServiceOptions::heldout_every
//                     sweeps and once sampling stops: for Status and
//                     /metrics.
//
// Each owns the state it publishes, behind its own mutex (a leaf: nothing
// else is taken while it is held), and the cadence state of its training
// thread, which only that thread touches.
#ifndef LATENTD_SERVICE_MODEL_QUALITY_H_
#define LATENTD_SERVICE_MODEL_QUALITY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "corpora/token_store.h"
#include "sampler/coherence.h"
#include "sampler/fold_in.h"
#include "sampler/trainer.h"
#include "service/api.pb.h"
#include "service/metrics.h"
#include "service/model_view.h"

namespace latentd::service {

class CoherenceMonitor {
 public:
  struct Gauges {
    Gauge* mean_umass;
    Gauge* mean_npmi;
    Gauge* sweep;
    Gauge* seconds;
  };
  // Per-topic gauges are registered in *metrics (which must outlive this
  // object) as topics first appear; `gauges` are the means and when.
  CoherenceMonitor(MetricsRegistry* metrics, Gauges gauges)
      : metrics_(metrics), gauges_(gauges) {}

  // Training thread: computes the coherence of view `v`'s topics over
  // `store` when due (`every_seconds` since the last, or the first view
  // since sampling stopped: `training` false), unless `every_seconds` <= 0,
  // `top_words` < 2 or `v` is scored already; publishes it to the metrics
  // and the Add calls. A failure is logged.
  void MaybeCompute(const ModelView& v, TokenStore* store, bool training,
                    double every_seconds, int top_words,
                    CoherenceConvention convention);

  // The published values into a response (nothing before the first
  // computation). Any thread.
  void AddTo(api::ListTopicsResponse* response) const;
  void AddTo(api::Topic* topic) const;
  void AddTo(api::StatusResponse* response) const;

 private:
  struct State {
    CoherenceReport report;
    uint64_t sweep = 0;
    uint64_t view = 0;
  };
  std::shared_ptr<const State> latest() const;

  MetricsRegistry* const metrics_;
  const Gauges gauges_;
  // The last computed, for API threads.
  mutable absl::Mutex mu_;
  std::shared_ptr<const State> latest_ ABSL_GUARDED_BY(mu_);
  // The training thread's: when it last ran, what it scored, and the
  // (umass, npmi) gauges of topic k.
  absl::Time at_ = absl::InfinitePast();
  uint64_t view_ = 0;
  uint64_t sweep_ = ~uint64_t{0};
  std::vector<std::pair<Gauge*, Gauge*>> topic_gauges_;
};

class HeldOutScorer {
 public:
  // `perplexity` is set to each score (it must outlive this object).
  explicit HeldOutScorer(Gauge* perplexity) : perplexity_(perplexity) {}

  // Scores `store` from here on. REQUIRES: before the training thread
  // starts.
  void SetStore(std::unique_ptr<TokenStore> store) {
    store_ = std::move(store);
  }

  // Training thread: scores the held-out store against `trainer`'s table
  // if it is due (`every` sweeps since the last score, 0 = never by sweeps;
  // or sampling `stopped`), folding in with `infer`; once per sweep. A
  // failure is logged and not retried for this sweep. Nothing without a
  // store.
  void MaybeScore(const Trainer& trainer, bool stopped, int every,
                  const InferOptions& infer);

  // The latest score, if any. Any thread.
  std::optional<api::HeldOut> latest() const {
    absl::MutexLock lock(&mu_);
    return score_;
  }

 private:
  Gauge* const perplexity_;
  // The training thread's: the store and the sweep last scored.
  std::unique_ptr<TokenStore> store_;
  std::optional<uint64_t> scored_sweep_;
  mutable absl::Mutex mu_;
  std::optional<api::HeldOut> score_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_MODEL_QUALITY_H_
