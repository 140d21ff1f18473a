#include "service/graph_service.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "sampler/graph/link_eval.h"
#include "sampler/model_dir.h"
#include "service/internal/daemon_log.h"

namespace latentd::service {

using internal::Log;
using internal::LogWarning;

GraphService::GraphService(const GraphServiceOptions& options)
    : options_(options), queries_(options.max_top, options.max_pairs) {
  trainer_options_ = options.trainer;
  trainer_options_.undo_diverged_epoch = options.divergence_retries > 0;
  divergence_retries_left_ = std::max(options.divergence_retries, 0);
}

GraphService::~GraphService() { (void)Stop(); }

absl::StatusOr<std::unique_ptr<GraphService>> GraphService::Open(
    const GraphServiceOptions& options, MetricsRegistry* metrics) {
  LATENTD_RETURN_IF_ERROR(options.trainer.Validate());
  if (!(options.holdout >= 0 && options.holdout <= 0.5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph holdout ", options.holdout, " is not in 0..0.5"));
  }
  std::unique_ptr<GraphService> s(new GraphService(options));
  LATENTD_RETURN_IF_ERROR(s->Init(metrics));
  return s;
}

void GraphService::RegisterMetrics(MetricsRegistry* metrics) {
  MetricsRegistry& r = *metrics;
  m_.epoch = r.AddGauge("latentd_graph_epoch", "Graph model epochs completed");
  m_.vertices =
      r.AddGauge("latentd_graph_vertices", "Vertices in the training graph");
  m_.edges = r.AddGauge("latentd_graph_edges", "Edges in the training graph");
  m_.objective = r.AddGauge("latentd_graph_objective",
                            "Graph objective on the training edges");
  m_.heldout_auc = r.AddGauge(
      "latentd_graph_heldout_auc",
      "Held-out link-prediction ROC AUC, last epoch (0: no held-out set)");
  m_.ingested = r.AddCounter("latentd_graph_edges_ingested_total",
                             "Edges acknowledged by IngestEdges");
  m_.epoch_errors = r.AddCounter("latentd_graph_epoch_errors_total",
                                 "Graph epochs that failed");
  m_.forwarded = r.AddCounter(
      "latentd_graph_edges_forwarded_total",
      "Graph cluster: ingested edges forwarded to their first endpoint's "
      "owner node");
}

absl::Status GraphService::Init(MetricsRegistry* metrics) {
  RegisterMetrics(metrics);
  LATENTD_RETURN_IF_ERROR(MakeModelDirectory(options_.dir));
  LATENTD_ASSIGN_OR_RETURN(EdgeList list, ReadEdgeList(options_.edges_path));
  Log(absl::StrCat("graph ", options_.edges_path, ": ", list.stats.Summary()));
  if (list.edges.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        options_.edges_path,
        ": the graph has no edges (after dropping self-loops and duplicates)"));
  }
  absl::MutexLock train(&train_mu_);
  file_edges_ = std::move(list.edges);
  LATENTD_ASSIGN_OR_RETURN(
      ingest_, GraphIngest::Open({.dir = options_.dir,
                                  .max_ingest_edges = options_.max_ingest_edges,
                                  .ingested = m_.ingested,
                                  .forwarded = m_.forwarded},
                                 file_edges_, &trained_ingested_));
  if (options_.holdout > 0) {
    EdgeList file_list;
    file_list.edges = file_edges_;
    LATENTD_ASSIGN_OR_RETURN(GraphData file_graph,
                             GraphData::FromEdgeList(file_list));
    LATENTD_ASSIGN_OR_RETURN(
        LinkSplit split,
        SplitHeldout(file_graph, options_.holdout, options_.trainer.seed));
    split.train = GraphData();  // Rebuild() makes the training graph
    split_ = std::move(split);
    Log(absl::StrFormat("graph: held out %d edges and %d non-edges",
                        split_->positives.size(), split_->negatives.size()));
  }
  std::vector<std::string> refused;
  absl::StatusOr<GraphModel> saved =
      LoadNewestGraphModel(options_.dir, &refused);
  for (const std::string& r : refused) log::Warning("latentd", r);
  if (!saved.ok() && saved.status().code() != absl::StatusCode::kNotFound) {
    return saved.status();
  }
  if (saved.ok() && saved->dim() != options_.trainer.dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        options_.dir, " holds a graph model of dim ", saved->dim(),
        ", graph-dim says ", options_.trainer.dim,
        ": start with that dim, or move the directory aside to start over"));
  }
  if (saved.ok() && saved->negative_dims() != options_.trainer.negative_dims) {
    return absl::InvalidArgumentError(absl::StrCat(
        options_.dir, " holds a graph model with ", saved->negative_dims(),
        " negative dims, graph-negative-dims says ",
        options_.trainer.negative_dims,
        ": start with that signature, or move the directory aside to start "
        "over"));
  }
  LATENTD_RETURN_IF_ERROR(Rebuild(saved.ok() ? &*saved : nullptr));
  if (saved.ok()) {
    checkpoint_epoch_ = saved->header().epoch;
    Log(absl::StrCat("graph: resumed from the checkpoint at epoch ",
                     checkpoint_epoch_));
  }
  Publish();
  return absl::OkStatus();
}

absl::Status GraphService::Rebuild(const GraphModel* previous) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<GraphTrainer> next,
                           BuildTrainer(previous));
  if (synced_ != nullptr) {
    // A cluster member: the synchronized table moves onto the new trainer
    // (its new vertices become keys) while no round runs.
    LATENTD_RETURN_IF_ERROR(link_->GrowKeys([this, t = next.get()]()
                                                ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                                  // Held by Rebuild's caller:
                                                  // train_mu_.
                                                  return synced_->Rebind(t);
                                                }));
    InstallUpdaterHook(next.get());
  }
  trainer_ = std::move(next);
  return absl::OkStatus();
}

void GraphService::InstallUpdaterHook(GraphTrainer* trainer) {
  trainer->SetUpdaterHook(
      [this](std::span<const VertexId> vertices, std::span<const float> steps)
          ABSL_NO_THREAD_SAFETY_ANALYSIS {
            // The updater, the vectors' single writer, during an epoch.
            synced_->MarkApplied(vertices, steps);
            return link_->AfterWrite();
          });
}

absl::StatusOr<std::unique_ptr<GraphTrainer>> GraphService::BuildTrainer(
    const GraphModel* previous) {
  EdgeList all;
  all.edges.reserve(file_edges_.size() + trained_ingested_.size());
  all.edges = file_edges_;
  all.edges.insert(all.edges.end(), trained_ingested_.begin(),
                   trained_ingested_.end());
  // The edge list's edges come first, so its vertices keep the ids the
  // held-out split was drawn with.
  LATENTD_ASSIGN_OR_RETURN(GraphData full, GraphData::FromEdgeList(all));
  if (split_) {
    absl::flat_hash_set<std::pair<VertexId, VertexId>> held;
    for (const VertexPair& p : split_->positives) {
      held.insert(std::minmax(p.first, p.second));
    }
    std::vector<GraphEdge> train;
    train.reserve(full.num_edges());
    for (const GraphEdge& e : full.edges()) {
      if (!held.contains(std::minmax(e.src, e.dst))) train.push_back(e);
    }
    full = full.WithEdges(std::move(train));
  }
  if (shard_) {
    // The edge list's edges whose first endpoint the ring gives this node,
    // and every edge this node acknowledged (IngestEdges routes an edge to
    // that owner; one acknowledged here stays here, whatever the ring).
    absl::flat_hash_set<std::pair<VertexKey, VertexKey>> ingested;
    for (const Edge& e : trained_ingested_) {
      ingested.insert(UndirectedPair(e.src, e.dst));
    }
    std::vector<GraphEdge> mine;
    for (const GraphEdge& e : full.edges()) {
      const VertexKey a = full.keys()[e.src], b = full.keys()[e.dst];
      if (shard_->contains(a) || ingested.contains(UndirectedPair(a, b))) {
        mine.push_back(e);
      }
    }
    full = full.WithEdges(std::move(mine));
  }
  uint64_t start_epoch = previous != nullptr ? previous->header().epoch : 0;
  std::optional<GraphModel> live;
  if (trainer_ != nullptr) {
    live = ToGraphModel(*trainer_);
    previous = &*live;
    start_epoch = trainer_->epoch();
  }
  start_epoch = std::max(start_epoch, epoch_floor_);
  // Keep the vectors known (by key), exactly; the others start at random.
  const uint32_t d = options_.trainer.dim;
  std::vector<float> initial(full.num_vertices() * d);
  for (size_t v = 0; v < full.num_vertices(); ++v) {
    const VertexKey key = full.keys()[v];
    std::optional<uint32_t> i =
        previous != nullptr ? previous->Find(key) : std::nullopt;
    if (i) {
      std::copy_n(&previous->vectors()[size_t{*i} * d], d, &initial[v * d]);
    } else {
      GraphTrainer::InitialRow(options_.trainer, key, &initial[v * d]);
    }
  }
  return GraphTrainer::Create(std::move(full), trainer_options_,
                              std::move(initial), start_epoch);
}

void GraphService::Start() {
  if (started_) return;
  started_ = true;
  training_ = true;
  thread_ = std::thread([this] { TrainLoop(); });
}

absl::Status GraphService::Stop() {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  if (link_ != nullptr) link_->BeginStop();
  if (ingest_ != nullptr) ingest_->BeginStop();
  if (thread_.joinable()) thread_.join();
  training_ = false;
  if (link_ != nullptr) link_->Stop();
  absl::MutexLock lock(&train_mu_);
  absl::Status s = trainer_ != nullptr ? WriteCheckpoint() : absl::OkStatus();
  if (ingest_ != nullptr) {
    absl::Status closed = ingest_->Close();
    if (s.ok()) s = closed;
  }
  return s;
}

void GraphService::TrainLoop() {
  for (;;) {
    // Past max_epochs only new edges (or Stop) wake the thread.
    if (!ingest_->WaitForWork(training_.load())) return;
    absl::MutexLock lock(&train_mu_);
    absl::StatusOr<bool> took = TakePending();
    if (!took.ok()) {
      log::Error("latentd", absl::StrCat("graph: adding ingested edges: ",
                                         took.status().message()));
      m_.epoch_errors->Add();
    }
    if (LeaveDue()) {
      absl::Status left = LeaveCluster();
      if (left.ok()) {
        training_ = false;
        if (options_.on_left_cluster) options_.on_left_cluster();
        continue;
      }
      log::Error("latentd",
                 absl::StrCat("graph: leaving the cluster: ", left.message()));
      if (left_cluster_) {
        // Past the point of no return: this node trains no more.
        absl::MutexLock m(&model_mu_);
        status_.set_error(std::string(left.message()));
        training_ = false;
        continue;
      }
    }
    if (left_cluster_) {
      training_ = false;
      continue;
    }
    const bool due = options_.max_epochs == 0 ||
                     trainer_->epoch() < options_.max_epochs ||
                     (took.ok() && *took);
    if (!due) {
      training_ = false;
      continue;
    }
    absl::Status s = EpochOnce();
    if (!s.ok() && epoch_diverged_ && trainer_options_.undo_diverged_epoch &&
        divergence_retries_left_ > 0) {
      // Undone (GraphTrainer::RunEpoch): the same epoch again, slower.
      --divergence_retries_left_;
      const double eta = trainer_options_.learning_rate / 2;
      trainer_options_.learning_rate = eta;
      trainer_->SetLearningRate(eta);
      LogWarning(absl::StrCat("graph: ", s.message(),
                              "; training it again at learning rate ", eta,
                              " (", divergence_retries_left_,
                              " more retries before training stops)"));
      m_.epoch_errors->Add();
      continue;
    }
    if (!s.ok()) {
      // A diverged epoch would diverge again: training stops, serving goes
      // on with the last published model.
      log::Error("latentd", absl::StrCat("graph: epoch failed, training "
                                         "stops: ",
                                         s.message()));
      m_.epoch_errors->Add();
      {
        absl::MutexLock m(&model_mu_);
        status_.set_error(std::string(s.message()));
      }
      // A cluster member that stops says so: the others do not wait (one
      // declared down is out of the ring already).
      if (link_ != nullptr && !cluster_finished_ && !link_->declared_down()) {
        cluster_finished_ = true;
        link_->Finish();
      }
      training_ = false;
    } else if (options_.max_epochs > 0 &&
               trainer_->epoch() >= options_.max_epochs) {
      if (link_ != nullptr && !cluster_finished_) FinishCluster();
      // Done until new edges come: the model on disk is the one served.
      if (checkpoint_epoch_ != trainer_->epoch()) {
        absl::Status c = WriteCheckpoint();
        if (!c.ok()) {
          log::Error("latentd",
                     absl::StrCat("graph checkpoint: ", c.message()));
        }
      }
      training_ = false;
    }
  }
}

absl::StatusOr<bool> GraphService::TakePending() {
  const std::vector<Edge> taken = ingest_->TakePending();
  if (taken.empty()) return false;
  trained_ingested_.insert(trained_ingested_.end(), taken.begin(), taken.end());
  unpublished_ += taken.size();
  LATENTD_RETURN_IF_ERROR(Rebuild(nullptr));
  Publish();  // the new vertices are known from now on
  Log(absl::StrCat("graph: ", taken.size(), " ingested edges added (",
                   trainer_->graph().num_vertices(), " vertices, ",
                   trainer_->graph().num_edges(), " training edges)"));
  return true;
}

absl::Status GraphService::EpochOnce() {
  epoch_diverged_ = false;
  if (link_ != nullptr) {
    LATENTD_RETURN_IF_ERROR(FollowRing());
    LATENTD_RETURN_IF_ERROR(link_->BeforeSweep(trainer_->epoch() + 1));
    if (options_.consensus == ConsensusMode::kDual) {
      const double d = synced_->RefreshConsensus(/*reset=*/true);
      absl::MutexLock lock(&model_mu_);
      status_.set_consensus_distance(d);
      // The copies start equal: the first disagreement is the first
      // epoch's.
      if (trainer_->epoch() == 1) status_.set_first_consensus_distance(d);
    }
  }
  absl::StatusOr<EpochResult> epoch = trainer_->RunEpoch();
  if (!epoch.ok()) {
    epoch_diverged_ = trainer_->last_epoch_diverged();
    return epoch.status();
  }
  const EpochResult& r = *epoch;
  if (link_ != nullptr) {
    const uint64_t b = options_.trainer.batch_edges;
    link_->EndSweep((r.edges + b - 1) / b);
    link_->AnnounceSweep(r.epoch);
  }
  const ObjectiveEvaluator::Value objective = trainer_->Objective();
  LinkScores scores;
  // A cluster node holds a share of the vertices: the held-out pairs are
  // scored on the whole model, by whoever collects it.
  if (split_ && !split_->positives.empty() && link_ == nullptr) {
    const GraphTrainer* t = trainer_.get();
    scores = EvaluateLinks(
        *split_, [t](VertexId a, VertexId b) { return t->Score(a, b); });
  }
  {
    absl::MutexLock lock(&model_mu_);
    status_.set_objective(objective.total());
    status_.set_edges_per_second(r.seconds > 0 ? r.edges / r.seconds : 0);
    status_.set_heldout_auc(scores.auc);
    status_.set_heldout_average_precision(scores.average_precision);
  }
  m_.objective->Set(objective.total());
  m_.heldout_auc->Set(scores.auc);
  history_.Add(
      {r.epoch, objective.total(), r.seconds > 0 ? r.edges / r.seconds : 0});
  if (r.epoch == 1 || r.epoch % 10 == 0) {
    Log(absl::StrFormat(
        "graph epoch %d: objective %.6g, %.0f edges/s%s", r.epoch,
        objective.total(), r.seconds > 0 ? r.edges / r.seconds : 0.0,
        split_ ? absl::StrFormat(", held-out AUC %.4f AP %.4f", scores.auc,
                                 scores.average_precision)
               : ""));
  }
  Publish();
  if (options_.checkpoint_every > 0 &&
      r.epoch % static_cast<uint64_t>(options_.checkpoint_every) == 0) {
    absl::Status s = WriteCheckpoint();
    if (!s.ok()) {
      log::Error("latentd", absl::StrCat("graph checkpoint: ", s.message()));
    }
  }
  return absl::OkStatus();
}

GraphModel GraphService::CurrentModel() const {
  GraphModel all = ToGraphModel(*trainer_);
  if (synced_ == nullptr) return all;
  const std::vector<uint32_t> degree = trainer_->graph().Degrees();
  const uint32_t d = all.dim();
  std::vector<VertexKey> keys;
  std::vector<float> vectors;
  for (size_t v = 0; v < degree.size(); ++v) {
    if (degree[v] == 0) continue;
    keys.push_back(all.keys()[v]);
    vectors.insert(vectors.end(), &all.vectors()[v * d],
                   &all.vectors()[v * d] + d);
  }
  return GraphModel(all.header(), std::move(keys), std::move(vectors));
}

void GraphService::Publish() {
  auto model = std::make_shared<const GraphModel>(CurrentModel());
  const GraphData& g = trainer_->graph();
  {
    absl::MutexLock lock(&model_mu_);
    model_ = std::move(model);
    status_.set_epoch(trainer_->epoch());
    status_.set_vertices(g.num_vertices());
    status_.set_edges(g.num_edges());
    status_.set_dim(options_.trainer.dim);
    status_.set_heldout_pairs(
        split_ ? split_->positives.size() + split_->negatives.size() : 0);
    status_.set_checkpoint_epoch(checkpoint_epoch_);
  }
  m_.epoch->Set(static_cast<double>(trainer_->epoch()));
  m_.vertices->Set(static_cast<double>(g.num_vertices()));
  m_.edges->Set(static_cast<double>(g.num_edges()));
  if (unpublished_ > 0) {
    ingest_->MarkPublished(unpublished_);
    unpublished_ = 0;
  }
}

absl::Status GraphService::WriteCheckpoint() {
  LATENTD_RETURN_IF_ERROR(SaveGraphCheckpoint(CurrentModel(), options_.dir));
  checkpoint_epoch_ = trainer_->epoch();
  absl::MutexLock lock(&model_mu_);
  status_.set_checkpoint_epoch(checkpoint_epoch_);
  return absl::OkStatus();
}

std::shared_ptr<const GraphModel> GraphService::model() const {
  absl::MutexLock lock(&model_mu_);
  return model_;
}

api::GraphStatus GraphService::Status(size_t history_points) const {
  api::GraphStatus s;
  {
    absl::MutexLock lock(&model_mu_);
    s = status_;
  }
  for (const SweepPoint& p : history_.Points(history_points)) {
    api::GraphEpochPoint* out = s.add_history();
    out->set_epoch(p.sweep);
    out->set_objective(p.log_likelihood_per_token);
    out->set_edges_per_second(p.tokens_per_second);
  }
  const GraphIngest::Counts counts = ingest_->counts();
  s.set_ingested_edges(counts.ingested);
  s.set_pending_edges(counts.pending);
  s.set_training(training_.load());
  return s;
}

}  // namespace latentd::service
