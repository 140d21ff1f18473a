// TrainingLoop: the topic model's side of a node. It owns the Trainer and
// its token store in the data directory, the vocabulary, the training
// thread and what that thread publishes for the API: the ModelView, the
// document table, the model's measures (coherence, held-out perplexity,
// the sweep history) and why sampling stopped.
//
// Data directory (sampler/model_dir.h names):
//   model.bin     checkpoint: the ModelSnapshot training resumes from
//   model.prev.bin  the checkpoint before it, the fallback if model.bin
//                 does not verify (sampler/checkpoint_files.h)
//   vocab.txt     the vocabulary; saved before any store version that uses
//                 a new word commits, so it always covers the store
//   settings.txt  tokenizer and training settings of the first start
//   tokens.lts    the token store, committed after every sweep and merge
//
// Open: with a snapshot, resume from the newest that verifies (the store
// may be ahead: its assignments are the truth); else with tokens.lts,
// start from it; else build the store from options.corpus
// (service/topic_model_files.h). Then the ingest log is replayed
// (IngestPath::Open) and merged.
//
// The thread's turn: merge the acknowledged records the IngestPath queued
// (words first, so vocab.txt covers the store), adopt the cluster's new
// words, leave the cluster when an operator asked, sweep (unless
// max_sweeps is reached or the cluster failed), publish at most every
// publish_interval_ms, checkpoint every checkpoint_every sweeps or
// checkpoint_seconds, and score the model. Records merged while sampling
// has stopped are folded in against the model (FoldIn::Assign), so their
// topics are what InferDocument would say and the counts stay exact.
//
// Thread-safety: train_mu_ guards the trainer and everything the thread
// changes; API threads take it only to checkpoint, reconfigure or join a
// cluster, which then wait for the current sweep. The published state has
// its own lock (view_mu_) and atomics: the readers below never wait for a
// sweep. Open, Start, Join and Finish from one thread, in that order.
#ifndef LATENTD_SERVICE_TRAINING_LOOP_H_
#define LATENTD_SERVICE_TRAINING_LOOP_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "corpora/tokenizer.h"
#include "sampler/trainer.h"
#include "service/api.pb.h"
#include "service/cluster_member.h"
#include "service/cluster_router.h"
#include "service/document_topics.h"
#include "service/ingest_path.h"
#include "service/internal/node_metrics.h"
#include "service/metrics.h"
#include "service/model_quality.h"
#include "service/model_view.h"
#include "service/service_options.h"
#include "service/similarity_service.h"
#include "service/store_merge.h"
#include "service/sweep_history.h"

namespace latentd::service {

class TrainingLoop {
 public:
  // The node's other parts the loop works with; not owned, they outlive
  // the loop.
  struct Parts {
    IngestPath* ingest;
    ClusterRouter* router;
    ClusterMember* cluster;
    const internal::NodeMetrics* metrics;
  };
  // Registers the coherence gauges' collectors in *registry.
  TrainingLoop(const ServiceOptions& options, Parts parts,
               MetricsRegistry* registry);
  ~TrainingLoop();  // joins the thread, if Join() was not called

  // Opens or creates the model in options.data_dir (see above), replays
  // the ingest log and merges it. Fails with the error of the file or
  // corpus at fault.
  absl::Status Open();
  // The first publication; from here on every publication also goes to
  // *similarity (not owned; outlives the loop). REQUIRES: Open() succeeded,
  // Start() not yet called.
  absl::Status PublishFirst(SimilarityService* similarity);
  // Joins the cluster through `options` (ClusterMember::Join over the
  // trainer's table) and publishes the global counts. REQUIRES: before
  // Start().
  absl::Status JoinCluster(ClusterLinkOptions options);
  // Starts the training thread; it runs until the IngestPath is stopping.
  void Start();
  // Waits for the thread to return. REQUIRES: IngestPath::BeginStop().
  void Join();
  // After Join(): in a cluster, pushes what is left and leaves; writes the
  // last checkpoint. Returns the checkpoint's error.
  absl::Status Finish();
  // The settings that may change at runtime (LatentdService::Reconfigure
  // says which). Waits for the current sweep.
  absl::Status Reconfigure(const ServiceOptions& next);
  // Waits for the current sweep, then writes model.bin; returns its sweep.
  absl::StatusOr<uint64_t> Checkpoint();

  // ---- Readers: any thread, never waiting for a sweep. ----
  // The latest published view; null before PublishFirst.
  std::shared_ptr<const ModelView> view() const;
  // The document table of the latest view it was read for; kUnavailable
  // before the first.
  absl::StatusOr<std::shared_ptr<const DocumentTopics>> Documents() const;
  // The corpus's tokenizer (settings.txt). REQUIRES: Open() succeeded.
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const CoherenceMonitor& coherence() const { return coherence_; }
  // Why sampling stopped ("--max-sweeps N reached", "it left its
  // cluster"); "" while it samples or before the thread has looked.
  std::string SamplingStoppedReason() const;
  // Status's training fields: throughput, log-likelihood, merged
  // sequence, checkpoint sweep, training, coherence, held-out score and
  // the last `history` evaluated sweeps.
  void AddStatus(uint32_t history, api::StatusResponse* resp) const;

 private:
  void Run();
  // Waits until `turn_start` plus the sweep interval, ingested work or a
  // stop; reads the interval every 100 ms, so a reload applies to a wait
  // already under way.
  void WaitOutInterval(absl::Time turn_start) ABSL_LOCKS_EXCLUDED(train_mu_);
  // One turn of Run() under train_mu_; true if it swept, *backoff when a
  // step failed (the caller waits before the next turn).
  bool Turn(bool* backoff) ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // Sets training_ and the reason sampling stopped; a cluster node that
  // stopped keeps its view in step with the globals.
  void UpdateSamplingState() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  absl::Status MergePending() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // True once this node samples no more (max_sweeps reached, or a failed
  // cluster sweep, or it left its cluster).
  bool SamplingStopped() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // One sweep; false if it failed (logged and counted). True with nothing
  // swept when a drain or Stop cut the wait for the cluster short.
  bool SweepOnce() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  void RecordSweep(const SweepReport& r)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // Cluster mode, an evaluated sweep: this node's part of the cluster's
  // log-likelihood, for Status and the link's heartbeat.
  void RecordLogLikelihoodPart(const SweepReport& r)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // A progress line at most every ServiceOptions::progress_seconds.
  void LogProgress(const SweepReport& r)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  absl::Status MaybePublish(bool swept)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  absl::Status Publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  absl::Status WriteCheckpoint() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // Re-reads the document table from the store for `view` when it is due
  // (none yet, sampling stopped, or similarity.refresh_seconds passed);
  // keeps the old table on a store error, which it returns.
  absl::Status MaybeCollectDocuments(const ModelView& view)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);

  const Parts parts_;
  const internal::NodeMetrics& m_;
  Tokenizer tokenizer_;  // set by Open, then read-only

  // The training thread's state, or a caller's holding train_mu_.
  absl::Mutex train_mu_;
  // The reconfigurable fields change under train_mu_ (Reconfigure).
  ServiceOptions options_ ABSL_GUARDED_BY(train_mu_);
  std::unique_ptr<Trainer> trainer_ ABSL_GUARDED_BY(train_mu_);
  Vocabulary vocab_ ABSL_GUARDED_BY(train_mu_);
  // Words of vocab_ that vocab.txt holds: a failed save is retried by the
  // next merge, before the store may use the new words.
  size_t vocab_saved_ ABSL_GUARDED_BY(train_mu_) = 0;
  StoreScan scan_ ABSL_GUARDED_BY(train_mu_);
  bool has_users_ ABSL_GUARDED_BY(train_mu_) = false;
  uint64_t checkpoint_sweep_ ABSL_GUARDED_BY(train_mu_) = 0;
  bool pending_merged_ ABSL_GUARDED_BY(train_mu_) = false;  // to publish
  uint64_t published_sweep_ ABSL_GUARDED_BY(train_mu_) = 0;
  absl::Time published_at_ ABSL_GUARDED_BY(train_mu_);
  absl::Time checkpoint_at_ ABSL_GUARDED_BY(train_mu_);
  absl::Time documents_at_ ABSL_GUARDED_BY(train_mu_) = absl::InfinitePast();
  SimilarityService* similarity_ ABSL_GUARDED_BY(train_mu_) = nullptr;
  // Since the last progress line: when it was, and what was sampled since.
  struct Progress {
    absl::Time logged_at;
    uint64_t sweeps = 0;
    uint64_t tokens = 0;
    double seconds = 0;
  } progress_ ABSL_GUARDED_BY(train_mu_);

  // Published for the readers.
  mutable absl::Mutex view_mu_;
  std::shared_ptr<const ModelView> view_ ABSL_GUARDED_BY(view_mu_);
  uint64_t view_version_ ABSL_GUARDED_BY(view_mu_) = 0;
  std::shared_ptr<const DocumentTopics> documents_ ABSL_GUARDED_BY(view_mu_);
  std::string stopped_reason_ ABSL_GUARDED_BY(view_mu_);
  // Cluster mode: this node's part of the cluster's log-likelihood at its
  // latest evaluated sweep.
  std::optional<sync::LogLikelihoodPart> ll_part_ ABSL_GUARDED_BY(view_mu_);
  // Written by the training thread, read by Status (relaxed: independent).
  std::atomic<double> tokens_per_second_{0};
  std::atomic<double> loglik_per_token_{0};
  std::atomic<uint64_t> checkpoint_sweep_seen_{0};
  std::atomic<uint64_t> merged_sequence_{0};
  std::atomic<bool> training_{false};
  // The model's measures, computed by the thread between sweeps (their own
  // locks for what API threads read).
  CoherenceMonitor coherence_;
  HeldOutScorer heldout_;
  SweepHistory history_;  // the evaluated sweeps since start-up

  std::thread thread_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_TRAINING_LOOP_H_
