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
    : options_(options), queries_(options.max_top, options.max_pairs) {}

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
  return GraphTrainer::Create(std::move(full), options_.trainer,
                              std::move(initial), start_epoch);
}

absl::Status GraphService::JoinCluster(ClusterLinkOptions link) {
  if (started_ || link_ != nullptr) {
    return absl::FailedPreconditionError(
        "GraphService::JoinCluster must come once, before Start()");
  }
  const bool dual = options_.consensus == ConsensusMode::kDual;
  if (dual && !(options_.trainer.mu > 0)) {
    return absl::InvalidArgumentError(
        "the dual graph consensus needs graph-mu > 0");
  }
  absl::MutexLock lock(&train_mu_);
  const bool admitted = link.join;
  auto factory =
      [this, admitted](const hashring::RingConfig& config,
                       const hashring::Ring& ring, uint32_t self)
          ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::StatusOr<LinkedTable> {
    // Held by JoinCluster's caller: the factory runs inside Create.
    shard_ = OwnedVertices(config, ring, config.members[self].id);
    shard_ring_epoch_ = config.version;
    LATENTD_RETURN_IF_ERROR(Rebuild(nullptr));
    if (trainer_->graph().num_edges() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph: the ring gives node ", config.members[self].id,
          " no edge of ", options_.edges_path, " (too few edges for ",
          config.members.size(), " nodes)"));
    }
    synced_ = std::make_unique<SyncedEmbeddings>(
        trainer_.get(), options_.consensus, options_.max_step_scale);
    // An admitted node's copies know nothing yet: they take z̄ first.
    if (admitted) synced_->MakePending();
    InstallUpdaterHook(trainer_.get());
    Log(absl::StrCat("graph: this node trains on ",
                     trainer_->graph().num_edges(), " edges (",
                     synced_->num_keys(), " vertices held), its share of ",
                     config.members.size(), " members'"));
    LinkedTable t;
    t.table = synced_.get();
    t.apply_pending = [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      synced_->ApplyPending();  // the writer's side (see the link)
      return absl::OkStatus();
    };
    return t;
  };
  link.log = [](std::string_view line) { Log(std::string(line)); };
  link.info = link.log;
  Log(absl::StrCat("graph: joining cluster '", link.cluster, "' as ",
                   link.node_id, " (", link.expected_members, " members, ",
                   link.consistency.ToString(), ", ",
                   dual ? "dual decomposition" : "naive shared Z", ")"));
  absl::StatusOr<std::unique_ptr<ClusterLink>> created = ClusterLink::Create(
      std::move(link), options_.trainer.dim + SyncedEmbeddings::kExtra,
      std::move(factory));
  if (!created.ok()) return created.status();
  link_ = std::move(*created);
  if (link_->sweep() > trainer_->epoch()) {
    // Joining a running cluster (admitted, or restarted behind it): start
    // at its epoch (its learning rate, and under bsp/ssp nobody waits for
    // this node to catch up), the copies pending until they know z̄.
    Log(absl::StrCat("graph: the cluster is at epoch ", link_->sweep(),
                     ", this node at ", trainer_->epoch(),
                     ": starting at the cluster's, each copy taking the "
                     "cluster's consensus"));
    epoch_floor_ = link_->sweep();
    LATENTD_RETURN_IF_ERROR(Rebuild(nullptr));
    synced_->MakePending();
    (void)link_->DrainPass();
  }
  // A node resumed from a checkpoint has done its epochs: says so, or
  // under bsp/ssp it would wait for the others to reach its epoch while
  // they wait for it to reach theirs.
  if (trainer_->epoch() > 0) link_->AnnounceSweep(trainer_->epoch());
  cluster_ = true;
  ingest_->SetCluster(link_.get());
  if (dual) synced_->RefreshConsensus(/*reset=*/true);
  {
    absl::MutexLock m(&model_mu_);
    status_.set_consensus(dual ? "dual" : "naive");
  }
  Publish();
  return absl::OkStatus();
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

absl::flat_hash_set<VertexKey> GraphService::OwnedVertices(
    const hashring::RingConfig& config, const hashring::Ring& ring,
    std::string_view self) const {
  absl::flat_hash_set<VertexKey> owned;
  for (VertexKey key : trainer_->graph().keys()) {
    const uint32_t owner = ring.Owner(VertexSyncKey(key));
    if (owner < config.members.size() && config.members[owner].id == self) {
      owned.insert(key);
    }
  }
  return owned;
}

absl::Status GraphService::FollowRing() {
  if (link_->declared_down()) {
    LogWarning(absl::StrCat(
        "graph: this node was declared down and failed over; it stops "
        "training",
        options_.on_declared_down
            ? " and restarts itself to return to the cluster"
            : " (restart it from its data directory to return)"));
    if (options_.on_declared_down) options_.on_declared_down();
    return absl::FailedPreconditionError(
        "this node was declared down and failed over: the others train its "
        "edges now (restart it from its data directory to return)");
  }
  if (link_->ring_changing()) return absl::OkStatus();
  const uint64_t ring_epoch = link_->epoch();
  hashring::RingConfig config = link_->ring_config();
  std::shared_ptr<const hashring::Ring> ring = link_->ring();
  if (config.version != ring_epoch || ring == nullptr) {
    return absl::OkStatus();  // changed meanwhile: the next epoch follows
  }
  // A member being removed: its edges are shared out now, while its
  // copies still count (see the header).
  absl::flat_hash_set<std::string> leaving;
  for (const std::string& id : link_->not_backups()) {
    if (id == link_->node_id()) continue;
    for (const hashring::Member& m : config.members) {
      if (m.id == id) leaving.insert(id);
    }
  }
  if (ring_epoch == shard_ring_epoch_ && leaving == shard_leaving_) {
    return absl::OkStatus();
  }
  // The copies change (here or elsewhere): the duals start again, on every
  // member, so that they sum to zero (SyncedEmbeddings::ResetDuals).
  synced_->ResetDuals();
  if (!leaving.empty()) {
    std::erase_if(config.members, [&leaving](const hashring::Member& m) {
      return leaving.contains(m.id);
    });
    LATENTD_ASSIGN_OR_RETURN(ring, hashring::Ring::Build(config));
  }
  absl::flat_hash_set<VertexKey> owned =
      OwnedVertices(config, *ring, link_->node_id());
  if (owned == *shard_) {
    shard_ring_epoch_ = ring_epoch;
    shard_leaving_ = std::move(leaving);
    return absl::OkStatus();
  }
  if (owned.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "graph: the ring of epoch ", ring_epoch, " gives this node no vertex"));
  }
  const size_t edges_before = trainer_->graph().num_edges();
  shard_ = std::move(owned);
  LATENTD_RETURN_IF_ERROR(Rebuild(nullptr));
  shard_ring_epoch_ = ring_epoch;
  shard_leaving_ = std::move(leaving);
  // The vertices newly held learn z̄ before the epoch's refresh.
  (void)link_->DrainPass();
  const SyncedEmbeddings::StateCounts c = synced_->state_counts();
  Log(absl::StrCat(
      "graph: ring epoch ", ring_epoch, " (", config.members.size(), " members",
      shard_leaving_.empty() ? "" : " staying", "): this node trains on ",
      trainer_->graph().num_edges(), " edges (", edges_before,
      " before); vertices held ", c.active, ", newly held ", c.pending,
      ", given up ", c.releasing));
  return absl::OkStatus();
}

bool GraphService::LeaveDue() const {
  return link_ != nullptr && !left_cluster_ && !link_->ring_changing() &&
         link_->LeaveRequested().has_value();
}

absl::Status GraphService::LeaveCluster() {
  const sync::RemoveMode mode = *link_->LeaveRequested();
  if (mode != sync::RemoveMode::kDrop && mode != sync::RemoveMode::kHandoff) {
    return absl::InvalidArgumentError(
        absl::StrCat("a live node is not removed as ",
                     sync::RemoveModeName(mode), " (only drop or handoff)"));
  }
  // The edges acknowledged here, the queued ones too.
  LATENTD_RETURN_IF_ERROR(TakePending().status());
  sync::MoveCounters counters;
  if (mode == sync::RemoveMode::kHandoff && !trained_ingested_.empty()) {
    hashring::RingConfig without = link_->ring_config();
    std::erase_if(without.members, [this](const hashring::Member& m) {
      return m.id == link_->node_id();
    });
    absl::Status shipped = ingest_->HandOff(trained_ingested_, without);
    if (!shipped.ok()) {
      // Nothing taken out yet: this node trains on, and a retried removal
      // ships again (a receiver finds what it took duplicates).
      absl::Status failed = link_->FailLeave(std::string(shipped.message()));
      if (!failed.ok()) LogWarning(std::string(failed.message()));
      return shipped;
    }
    counters.documents = trained_ingested_.size();
    Log(absl::StrCat("graph: handed the ", trained_ingested_.size(),
                     " edges acknowledged here to their owners"));
  } else if (!trained_ingested_.empty()) {
    Log(absl::StrCat("graph: leaving (drop): the ", trained_ingested_.size(),
                     " edges acknowledged here leave the model (they stay in ",
                     options_.dir, "/ingested_edges.log)"));
  }
  // From here on this node trains no more. The others take its share of
  // the edge list over; once they have done two epochs their copies of
  // the vertices they took count, and this node's can go.
  left_cluster_ = true;
  cluster_finished_ = true;
  link_->Finish();
  const uint64_t until = trainer_->epoch() + 2;
  if (!link_->WaitPeersPast(until, link_->join_timeout())) {
    LogWarning(absl::StrCat(
        "graph: the other members did not reach epoch ", until,
        " in time; leaving anyway (vertices only this node held start "
        "again from the others' rows)"));
  }
  synced_->ReleaseAll();
  Log(absl::StrCat("graph: leaving the cluster (", sync::RemoveModeName(mode),
                   "): this node's copies leave the consensus"));
  LATENTD_RETURN_IF_ERROR(link_->Leave(counters));
  Log("graph: left the cluster");
  return absl::OkStatus();
}

absl::Status GraphService::EpochOnce() {
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
  LATENTD_ASSIGN_OR_RETURN(EpochResult r, trainer_->RunEpoch());
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

void GraphService::FinishCluster() {
  cluster_finished_ = true;
  // This node's last push acknowledged by every owner before it says it is
  // finished (a round that timed out is sent again).
  for (int pass = 0; pass < 50; ++pass) {
    if (link_->DrainPass().unavailable.empty()) break;
  }
  link_->Finish();
  if (!link_->WaitAllFinished(absl::Minutes(10))) {
    log::Warning("latentd",
                 "graph: not every node finished in 10 minutes; "
                 "taking the consensus as it is");
  }
  for (const std::string& peer : link_->UnavailablePeers()) {
    log::Warning("latentd",
                 absl::StrCat("graph: taking the final consensus without ",
                              peer, " (unreachable)"));
  }
  // Two quiet passes in a row that reached every owner: every node's last
  // push has been heard.
  for (int quiet = 0, pass = 0; quiet < 2 && pass < 50; ++pass) {
    const sync::Synchronizer::PassResult r = link_->DrainPass();
    quiet = r.quiet && r.unavailable.empty() ? quiet + 1 : 0;
  }
  if (options_.consensus == ConsensusMode::kDual) {
    const double d = synced_->RefreshConsensus(/*reset=*/true);
    absl::MutexLock lock(&model_mu_);
    Log(absl::StrFormat(
        "graph: final consensus taken (copies were %.4g from it; %.4g "
        "before the first epoch)",
        d, status_.first_consensus_distance()));
    status_.set_consensus_distance(d);
  }
  const ObjectiveEvaluator::Value objective = trainer_->Objective();
  {
    absl::MutexLock lock(&model_mu_);
    status_.set_objective(objective.total());
  }
  m_.objective->Set(objective.total());
  Publish();
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
