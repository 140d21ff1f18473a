// GraphService in cluster mode (service/graph_service.h, "Cluster mode",
// "Ring changes", "Leaving"): joining, following the ring's changes,
// leaving, and the final consensus at max_epochs.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "service/graph_service.h"
#include "service/internal/daemon_log.h"

namespace latentd::service {

using internal::Log;
using internal::LogWarning;

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
  // No undo in a cluster (the trainer is rebuilt below): the naive
  // consensus adds the others' steps to the vectors during an epoch, which
  // an undo would drop; under dual the others have heard the diverged
  // copies by then, and a retry reset to their consensus diverged again
  // (2 daemons on the test graph at η = 4 retried down to 0.25).
  trainer_options_.undo_diverged_epoch = false;
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
  // The edges acknowledged here, the queued ones too; from now on none is
  // acknowledged here (it would miss the hand-off).
  ingest_->SetAccepting(false);
  if (absl::Status took = TakePending().status(); !took.ok()) {
    ingest_->SetAccepting(true);
    return took;
  }
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
      ingest_->SetAccepting(true);
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

}  // namespace latentd::service
