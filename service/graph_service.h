// GraphService: the graph model a latentd node serves next to its topic
// model (latentd --graph-edges; docs/operations.md "Graph nodes"). It trains
// vertex embeddings by graph factorization (sampler/graph/graph_trainer.h)
// in a background thread, one epoch after another, and answers the graph
// calls of service/api.proto from the model published after each epoch.
//
// Data (under options.dir, DIR/graph of the daemon's data directory):
//   graph.bin, graph.prev.bin  checkpoints (sampler/graph/graph_model.h),
//                  written every checkpoint_every epochs, when training
//                  reaches max_epochs, and at Stop()
//   ingested_edges.log  edges acknowledged by IngestEdges, checksummed
//                  records appended and fdatasynced before the call returns
//                  (service/edge_journal.h; a plain-text ingested.edges of
//                  an older version is taken into it at start-up)
//
// Start-up: the training graph is the edge list at options.edges_path
// (read as `latentctl graph train` reads it) plus the journal's; with
// holdout > 0 the held-out split (graph_data.h) is drawn from the edge
// list's edges with options.trainer.seed, so a restart draws the same one.
// Vectors start from the newest checkpoint that loads (a vertex it lacks,
// e.g. one of an edge ingested after it, starts at random), else at random.
//
// Ingestion (GraphIngest, service/graph_ingest.h): IngestEdges appends
// durably, then queues the edges; the training thread adds them at the next
// epoch boundary (vertices keep their ids and vectors; new vertices start at
// random) and publishes the model at once, so new vertices are known before
// that epoch ends.
//
// Cluster mode (JoinCluster, before Start; docs/design.md "Graph
// consensus"): every node is given the same edge
// list; once the ring is fixed the node keeps the edges whose first
// endpoint's vertex key the ring gives it, and its vectors become local
// copies synchronized through a ClusterLink (SyncedEmbeddings: dual
// decomposition, or the naive shared Z). Each epoch: BeforeSweep (under
// bsp: every node has pushed the previous epoch; the others' sums pulled),
// then (dual) every copy is set to the consensus z̄ it now knows and pulled
// towards it by μ during the epoch, then EndSweep (push) and AnnounceSweep.
// At max_epochs the node finishes, waits for every node to, drains, and
// (dual) sets its copies to the final z̄. It serves and checkpoints the
// vertices it holds only.
//
// Ring changes (add-node, failover, a member's return): before each epoch
// the node compares the ring epoch in effect with the one its edges were
// chosen by; once a change is complete it keeps the edge list's edges by
// the new ring and moves the synchronized table onto the rebuilt trainer
// (SyncedEmbeddings::Rebind: vertices it no longer holds leave the owners'
// sums, those it newly holds take z̄ before they count), then runs one
// sync pass so that those learn z̄. A node that joins a running cluster
// (admitted, or restarted behind the cluster's clock) starts at the
// cluster's epoch with every copy pending. A node declared down stops
// training (a restart brings it back).
//
// Leaving (latentctl cluster remove-node, drop or handoff): while the ring
// lists a member as leaving, the others choose their edges as if it were
// gone and take its share over (their copies pending, learning z̄ while
// its copies still count). The leaving node hands the edges it
// acknowledged to their owners by the ring without it (handoff; with drop
// they leave the model), stops counting for the clocks, waits until the
// others have done two epochs (their copies active), takes its copies out
// of the owners' sums, and leaves (ClusterLink::Leave).
//
// Ingestion in cluster mode (docs/design.md, "Graph consensus"): an edge
// goes to the ring owner of its first endpoint; GraphIngest forwards the
// others' edges (through the forwarder LatentdService sets) and appends its
// own as above. An edge acknowledged by a node is trained by that node from
// then on, also after a restart into another ring; at the epoch boundary
// that takes it, the trainer is rebuilt and the synchronized table moved
// onto it inside ClusterLink::GrowKeys, the vertices it newly holds
// becoming new keys.
//
// Thread-safety: the API methods and FillStatus may be called from any
// number of threads at once, also while training runs. Start() and Stop()
// from one thread.
#ifndef LATENTD_SERVICE_GRAPH_SERVICE_H_
#define LATENTD_SERVICE_GRAPH_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "corpora/edge_list.h"
#include "sampler/graph/graph_model.h"
#include "sampler/graph/graph_trainer.h"
#include "sampler/graph/synced_embeddings.h"
#include "service/api.pb.h"
#include "service/cluster/cluster_link.h"
#include "service/graph_ingest.h"
#include "service/graph_queries.h"
#include "service/metrics.h"
#include "service/sweep_history.h"

namespace latentd::service {

struct GraphServiceOptions {
  std::string edges_path;  // the edge list; "" = the node serves no graph
  std::string dir;         // where checkpoints and ingested_edges.log go
  // dim, negatives, λ, learning rate, seed, threads of the trainer.
  GraphTrainerOptions trainer;
  // Share of the edge list's edges held out to score link prediction
  // after every epoch (GraphStatus.heldout_auc); 0 = none. In [0, 0.5].
  double holdout = 0;
  // Stop training after this many epochs in all (0 = train forever);
  // ingested edges past it are trained on for one more epoch each batch.
  uint64_t max_epochs = 0;
  int checkpoint_every = 10;  // epochs between checkpoints; 0 = only at Stop
  uint32_t max_top = 1000;    // NearestVertices' largest `top`
  size_t max_pairs = 100000;  // ScorePairs' most pairs per call
  size_t max_ingest_edges = 100000;  // IngestEdges' most edges per call
  // Cluster mode only: dual decomposition (trainer.mu > 0 needed) or the
  // naive shared Z, kept to compare with.
  ConsensusMode consensus = ConsensusMode::kDual;
  // Dual: the cap on a copy's step scale (SyncedEmbeddings::StepScale).
  double max_step_scale = SyncedEmbeddings::kDefaultMaxStepScale;
  // A diverged epoch (GraphTrainer::RunEpoch) is undone and trained again
  // at half the learning rate, this many times in all; 0, or a cluster
  // member (graph_service_cluster.cc says why): training stops at the
  // first.
  int divergence_retries = 4;
  // Cluster mode, called on the training thread: once this node has left
  // the cluster (an operator removed it), and once it was declared down
  // while alive (ServiceOptions says what the daemon does then).
  std::function<void()> on_left_cluster;
  std::function<void()> on_declared_down;
};

class GraphService {
 public:
  // Reads the edge list and the ingested edges' journal, builds the trainer
  // (from the newest checkpoint if one loads) and publishes the first model.
  // Fails with the error of the file at fault (an edge list without edges, a
  // malformed line: "PATH:LINE: what"; a damaged journal: kDataLoss) or of
  // bad trainer options. Metrics go to *metrics, which must outlive the
  // service. No thread runs yet.
  static absl::StatusOr<std::unique_ptr<GraphService>> Open(
      const GraphServiceOptions& options, MetricsRegistry* metrics);
  ~GraphService();  // Stop()

  // Makes this node a member of a graph cluster (see above): joins through
  // a ClusterLink built from `link` (blocks until the ring is fixed and
  // every member pushed its initial copies), keeps the ring's share of the
  // edges. kInvalidArgument for the dual consensus without trainer.mu > 0,
  // or a share without edges; the link's errors otherwise. REQUIRES:
  // before Start(), at most once.
  absl::Status JoinCluster(ClusterLinkOptions link);

  // True once JoinCluster has succeeded. Any thread.
  bool joined() const { return cluster_.load(); }
  // The cluster link once JoinCluster has succeeded, else nullptr (for
  // Status's members and ring epoch). Any thread; valid until Stop().
  const ClusterLink* cluster_link() const {
    return cluster_.load() ? link_.get() : nullptr;
  }

  // Sets how IngestEdges forwards in cluster mode (GraphIngest).
  // REQUIRES: before JoinCluster.
  void SetEdgeForwarder(EdgeForwarder forwarder) {
    ingest_->SetForwarder(std::move(forwarder));
  }

  // Starts the training thread.
  void Start();
  // Stops it after the current epoch and writes a checkpoint. Idempotent;
  // returns the checkpoint's status.
  absl::Status Stop();

  // ---- The API. kNotFound names an unknown vertex; kInvalidArgument a bad
  // request (what and where); kUnavailable if the journal cannot be
  // written (nothing acknowledged then). ----
  // The read calls answer from the model published last (GraphQueries).
  absl::StatusOr<api::GetEmbeddingResponse> GetEmbedding(
      const api::GetEmbeddingRequest& request) const {
    return queries_.GetEmbedding(*model(), request);
  }
  absl::StatusOr<api::ScorePairsResponse> ScorePairs(
      const api::ScorePairsRequest& request) const {
    return queries_.ScorePairs(*model(), request);
  }
  absl::StatusOr<api::NearestVerticesResponse> NearestVertices(
      const api::NearestVerticesRequest& request) const {
    return queries_.NearestVertices(*model(), request);
  }
  // Returns once the accepted edges are durable (api.proto says what the
  // answer guarantees; GraphIngest::IngestEdges).
  absl::StatusOr<api::IngestEdgesResponse> IngestEdges(
      const api::IngestEdgesRequest& request) {
    return ingest_->IngestEdges(request);
  }
  // The training progress, for the Status call, with at most
  // `history_points` epochs of GraphStatus.history.
  api::GraphStatus Status(size_t history_points = 0) const;

 private:
  explicit GraphService(const GraphServiceOptions& options);
  absl::Status Init(MetricsRegistry* metrics);
  void RegisterMetrics(MetricsRegistry* metrics);
  // Builds the trainer over the edge list and the ingested edges, keeping
  // the vectors of `previous` (by vertex key) where it has them.
  absl::Status Rebuild(const GraphModel* previous)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // Rebuild's trainer, not yet installed.
  absl::StatusOr<std::unique_ptr<GraphTrainer>> BuildTrainer(
      const GraphModel* previous) ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // Cluster mode: the updater hook that marks the synced table's changes.
  void InstallUpdaterHook(GraphTrainer* trainer)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  void TrainLoop();
  // Moves the pending edges into the graph; false if there were none.
  absl::StatusOr<bool> TakePending() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // One epoch, then scores, publishes and checkpoints as due.
  absl::Status EpochOnce() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // Cluster mode, before an epoch: follows a completed ring change (see
  // above). kFailedPrecondition once this node was declared down.
  absl::Status FollowRing() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // Cluster mode: whether an operator's removal of this node is due, and
  // the leaving itself (see above). On failure the removal is marked
  // failed (ClusterLink::FailLeave) where nothing was taken out yet.
  bool LeaveDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  absl::Status LeaveCluster() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // The vertex keys of the training graph whose sync key `ring` gives
  // member `self` of `config`.
  absl::flat_hash_set<VertexKey> OwnedVertices(
      const hashring::RingConfig& config, const hashring::Ring& ring,
      std::string_view self) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  void Publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // The trainer's vectors; in cluster mode of the vertices held only.
  GraphModel CurrentModel() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  // Cluster mode, at max_epochs: finish, wait for the others, drain, and
  // (dual) take the final consensus.
  void FinishCluster() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  absl::Status WriteCheckpoint() ABSL_EXCLUSIVE_LOCKS_REQUIRED(train_mu_);
  std::shared_ptr<const GraphModel> model() const;

  const GraphServiceOptions options_;
  // options_.trainer as trainers are built now: the learning rate halves
  // at each divergence retry, and the undo is off in a cluster.
  GraphTrainerOptions trainer_options_ ABSL_GUARDED_BY(train_mu_);
  const GraphQueries queries_;

  // Training state: the training thread, or a caller holding train_mu_.
  absl::Mutex train_mu_;
  std::vector<Edge> file_edges_ ABSL_GUARDED_BY(train_mu_);
  std::vector<Edge> trained_ingested_ ABSL_GUARDED_BY(train_mu_);
  std::optional<LinkSplit> split_ ABSL_GUARDED_BY(train_mu_);
  std::unique_ptr<GraphTrainer> trainer_ ABSL_GUARDED_BY(train_mu_);
  uint64_t checkpoint_epoch_ ABSL_GUARDED_BY(train_mu_) = 0;
  uint64_t unpublished_ ABSL_GUARDED_BY(train_mu_) = 0;
  // Cluster mode: the vertex keys whose edges (by first endpoint) this
  // node trains on, its synchronized copies and its link; the first and
  // the latest copy-to-consensus distance (dual, before each reset).
  std::optional<absl::flat_hash_set<VertexKey>> shard_
      ABSL_GUARDED_BY(train_mu_);
  // The ring epoch shard_ was chosen by; the least epoch a rebuilt trainer
  // starts at (the cluster's clock when this node joined).
  uint64_t shard_ring_epoch_ ABSL_GUARDED_BY(train_mu_) = 0;
  uint64_t epoch_floor_ ABSL_GUARDED_BY(train_mu_) = 0;
  std::unique_ptr<SyncedEmbeddings> synced_ ABSL_GUARDED_BY(train_mu_);
  std::unique_ptr<ClusterLink> link_;  // set before Start()
  std::atomic<bool> cluster_{false};
  bool cluster_finished_ ABSL_GUARDED_BY(train_mu_) = false;
  bool left_cluster_ ABSL_GUARDED_BY(train_mu_) = false;
  // Whether the last EpochOnce failed because the epoch diverged, and the
  // retries left (options_.divergence_retries).
  bool epoch_diverged_ ABSL_GUARDED_BY(train_mu_) = false;
  int divergence_retries_left_ ABSL_GUARDED_BY(train_mu_) = 0;
  // The members the ring of shard_ring_epoch_ lists as leaving (their
  // edges are shared out already).
  absl::flat_hash_set<std::string> shard_leaving_ ABSL_GUARDED_BY(train_mu_);

  // The ingestion: its queue, deduplication and journal (its own lock).
  // Set by Init, never null after it.
  std::unique_ptr<GraphIngest> ingest_;

  // The published model and what Status reports of it.
  mutable absl::Mutex model_mu_;
  std::shared_ptr<const GraphModel> model_ ABSL_GUARDED_BY(model_mu_);
  api::GraphStatus status_ ABSL_GUARDED_BY(model_mu_);

  // The epochs trained since start (SweepPoint's log-likelihood field holds
  // the objective, its tokens/s the edges/s).
  SweepHistory history_;

  std::atomic<bool> training_{false};
  std::thread thread_;
  bool started_ = false;
  bool stopped_ = false;

  struct Metrics {
    Gauge* epoch;
    Gauge* vertices;
    Gauge* edges;
    Gauge* objective;
    Gauge* heldout_auc;
    Counter* ingested;
    Counter* epoch_errors;
    Counter* forwarded;
  } m_{};
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_GRAPH_SERVICE_H_
