#include "service/latentd_service.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "sampler/model_dir.h"
#include "service/cluster_members_response.h"

namespace latentd::service {

void LatentdService::Log(const std::string& line) {
  log::Info("latentd", line);
}

void LatentdService::LogWarning(const std::string& line) {
  log::Warning("latentd", line);
}

LatentdService::LatentdService(const ServiceOptions& options,
                               MetricsRegistry* metrics)
    : options_(options),
      m_(Metrics::Register(metrics)),
      start_time_(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch())),
      router_({.cluster_mode = options.cluster_mode,
               .peer_token = options.peer_token,
               .peer_tls = options.peer_tls,
               .forwarded = m_.forwarded}),
      ingest_({.data_dir = options.data_dir,
               .cluster_mode = options.cluster_mode,
               .replicas = options.replicas,
               .refuse_ingest_loss = options.refuse_ingest_loss,
               .keep_sources = options.keep_sources,
               .metrics = {.pending = m_.pending,
                           .ingested = m_.ingested,
                           .duplicates = m_.duplicates,
                           .replicated = m_.replicated,
                           .under_replicated = m_.under_replicated,
                           .replicas_adopted = m_.replicas_adopted,
                           .log_damage = m_.log_damage,
                           .lost = m_.lost}},
              &router_),
      cluster_({.data_dir = options.data_dir,
                .replicas = options.replicas,
                .max_documents_per_ingest = options.max_documents_per_ingest,
                .on_left_cluster = options.on_left_cluster,
                .on_declared_down = options.on_declared_down,
                .on_removal_rolled_back = options.on_removal_rolled_back,
                .words_adopted = m_.words_adopted},
               &router_),
      training_(options,
                {.ingest = &ingest_,
                 .router = &router_,
                 .cluster = &cluster_,
                 .metrics = &m_},
                metrics),
      checker_(options, &training_),
      queries_(options, &training_, &checker_, &router_, &ingest_),
      documents_(&training_, &router_, &queries_) {}

LatentdService::~LatentdService() { (void)Stop(); }

absl::StatusOr<std::unique_ptr<LatentdService>> LatentdService::Open(
    const ServiceOptions& options, MetricsRegistry* metrics) {
  if (options.data_dir.empty()) {
    return absl::InvalidArgumentError("a data directory is needed");
  }
  std::unique_ptr<LatentdService> s(new LatentdService(options, metrics));
  LATENTD_RETURN_IF_ERROR(s->Init(metrics));
  return s;
}

absl::Status LatentdService::Init(MetricsRegistry* metrics) {
  RegisterCollectors(metrics);
  const std::string& dir = options_.data_dir;
  absl::Status made = FileSystem::Default()->CreateDirectory(dir);
  if (!made.ok() && !absl::IsAlreadyExists(made)) {
    return absl::InvalidArgumentError(
        absl::StrCat("data directory ", dir, ": ", made.message()));
  }
  LATENTD_ASSIGN_OR_RETURN(dir_lock_, DirectoryLock::Acquire(dir));
  if (!PathExists(ModelPaths(dir).tokens()) && options_.corpus.path.empty() &&
      !options_.graph.edges_path.empty()) {
    // A graph-only node: no topic model at all (in cluster mode, a member
    // of a graph cluster: JoinCluster).
    topics_ = false;
    Log("no corpus and no topic model: serving the graph only");
    return OpenGraph(metrics);
  }
  LATENTD_RETURN_IF_ERROR(training_.Open());
  similarity_ = std::make_unique<SimilarityService>(
      options_.similarity, [this](const api::InferDocumentRequest& r) {
        return queries_.InferDocument(r);
      });
  documents_.SetSimilarity(similarity_.get());
  LATENTD_RETURN_IF_ERROR(training_.PublishFirst(similarity_.get()));
  return OpenGraph(metrics);
}

absl::Status LatentdService::OpenGraph(MetricsRegistry* metrics) {
  if (options_.graph.edges_path.empty()) return absl::OkStatus();
  GraphServiceOptions graph = options_.graph;
  graph.dir = options_.data_dir + "/graph";
  graph.on_left_cluster = options_.on_left_cluster;
  graph.on_declared_down = options_.on_declared_down;
  LATENTD_ASSIGN_OR_RETURN(graph_, GraphService::Open(graph, metrics));
  graph_->SetEdgeForwarder(
      [this](const std::string& owner, const api::IngestEdgesRequest& r) {
        return router_.ForwardEdges(owner, r);
      });
  return absl::OkStatus();
}

absl::Status LatentdService::CheckTopics(std::string_view call) const {
  if (topics_) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      absl::string_view(call.data(), call.size()),
      ": this node serves no topic model (it was started with --graph-edges "
      "and no corpus)"));
}

void LatentdService::Start() {
  if (started_) return;
  started_ = true;
  if (topics_) training_.Start();
  ingest_.Start();
  if (graph_ != nullptr) graph_->Start();
}

absl::Status LatentdService::Stop() {
  if (stopped_) return absl::OkStatus();
  stopped_ = true;
  if (ClusterLink* link = router_.link()) link->BeginStop();
  ingest_.BeginStop();
  training_.Join();
  ingest_.Stop();
  absl::Status graph_stopped =
      graph_ != nullptr ? graph_->Stop() : absl::OkStatus();
  if (!graph_stopped.ok()) LogWarning(std::string(graph_stopped.message()));
  absl::Status s = topics_ ? training_.Finish() : absl::OkStatus();
  return s.ok() ? graph_stopped : s;
}

absl::Status LatentdService::Reconfigure(const ServiceOptions& next) {
  return training_.Reconfigure(next);
}

std::shared_ptr<const ModelView> LatentdService::view() const {
  return training_.view();
}

absl::StatusOr<api::CheckpointResponse> LatentdService::Checkpoint(
    const api::CheckpointRequest&) {
  LATENTD_ASSIGN_OR_RETURN(uint64_t sweep, training_.Checkpoint());
  api::CheckpointResponse resp;
  resp.set_sweep(sweep);
  resp.set_path(ModelPaths(options_.data_dir).snapshot());
  return resp;
}

absl::StatusOr<api::StatusResponse> LatentdService::Status(
    const api::StatusRequest& request) const {
  std::shared_ptr<const ModelView> v = view();
  api::StatusResponse resp;
  if (v == nullptr) {  // a graph-only node
    resp.set_uptime_seconds(
        absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()) - start_time_);
    if (graph_ != nullptr) {
      *resp.mutable_graph() = graph_->Status(request.history());
      resp.set_training(resp.graph().training());
      AddClusterMembers(graph_->cluster_link(), &resp);
    }
    return resp;
  }
  *resp.mutable_version() = TopicQueries::Version(*v);
  resp.set_topics(v->snapshot.num_topics);
  resp.set_documents(v->store_meta.num_docs);
  resp.set_tokens(v->store_meta.num_tokens);
  resp.set_vocabulary(v->snapshot.vocab_size);
  resp.set_users(v->users.size());
  resp.set_ingested(ingest_.ingested());
  resp.set_pending(ingest_.pending());
  resp.set_staged_handoff_documents(ingest_.staged_handoff_documents());
  resp.set_uptime_seconds(
      absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()) - start_time_);
  training_.AddStatus(request.history(), &resp);
  if (graph_ != nullptr) {
    *resp.mutable_graph() = graph_->Status(request.history());
  }
  AddClusterMembers(router_.link(), &resp);
  return resp;
}

void LatentdService::AddClusterMembers(const ClusterLink* link,
                                       api::StatusResponse* resp) {
  if (link == nullptr) return;
  resp->set_node_id(link->node_id());
  resp->set_ring_epoch(link->epoch());
  const hashring::RingConfig config = link->ring_config();
  for (const hashring::Member& m : config.members) {
    resp->add_cluster_members(m.id);
  }
  for (std::string& id : link->UnavailablePeers()) {
    resp->add_unavailable_peers(std::move(id));
  }
}

absl::Status LatentdService::JoinCluster(ClusterLinkOptions options) {
  if (started_ || cluster_.joined() || !options_.cluster_mode) {
    return absl::FailedPreconditionError(
        "JoinCluster must come once, before Start(), with cluster_mode set");
  }
  if (options.node_id.empty()) {
    return absl::InvalidArgumentError(
        "cluster mode needs the node's API TCP address as its id (--listen)");
  }
  if (!topics_) {
    // A graph-only node: its graph model is what the cluster synchronizes.
    if (graph_ == nullptr) {
      return absl::FailedPreconditionError(
          "cluster mode needs a topic model (--corpus) or a graph "
          "(--graph-edges)");
    }
    if (options_.consistency_auto) {
      // A graph cluster's consensus needs each epoch's round (bsp).
      options.consistency = sync::Consistency{.bounded = true, .staleness = 0};
    }
    return graph_->JoinCluster(std::move(options));
  }
  ingest_.SetCluster(options.redis_url, options.cluster);
  return training_.JoinCluster(std::move(options));
}

absl::StatusOr<api::ClusterMembersResponse> LatentdService::ClusterMembers(
    const api::ClusterMembersRequest&) const {
  if (!options_.cluster_mode) {
    return absl::FailedPreconditionError(
        "ClusterMembers: this node is not a training cluster's member (a "
        "graph cluster's members: latentctl cluster status)");
  }
  const ClusterLink* link = router_.link();
  if (link == nullptr) {
    return absl::UnavailableError("ClusterMembers: still joining");
  }
  return ReadClusterMembers(*link);
}

}  // namespace latentd::service
