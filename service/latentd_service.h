// LatentdService: one latentd node. A façade over the parts that each own
// their state and lock: TrainingLoop (the Trainer, its token store and
// vocabulary in the data directory, the training thread, checkpoints and
// the published ModelView; service/training_loop.h says what the data
// directory holds and how a node starts), IngestPath (ingest log, pending
// queue, deduplication, replica copies), ClusterRouter (owners,
// forwarding, replica placement), ClusterMember (link and synchronized
// table), SimilarityService and the GraphService. This class opens them in
// order, runs their life cycle and answers the API (service/api.proto)
// from the latest published view.
//
// Acknowledged documents (Ingest, IngestRecords) are durable in the ingest
// log before the call returns; the training thread merges them at sweep
// boundaries. A damaged ingest record is skipped and reported at start-up
// (options.refuse_ingest_loss).
//
// Cluster mode (JoinCluster): the node is a member of a training cluster
// (docs/design.md, "Many nodes") over its own token store. Its table is
// kept in step with the cluster's global counts by a ClusterLink
// (ClusterMember); a user's events and profile live on the user's owner by
// the ring, and the other nodes forward them there over the API
// (ClusterRouter). The vocabulary grows cluster-wide
// (ClusterMember::AdoptWords): a word ingested on any node reaches every
// node's table, vocabulary and views. Members join a running cluster
// (ClusterLinkOptions::join, admitted by an operator) and leave it when an
// operator removes them (drop or handoff: ClusterMember::Leave); a node
// that crashed or stopped rejoins when started again from its data
// directory (the owners replace its previous counts with its store's).
//
// Thread-safety: the API methods may be called from any number of threads
// at once, also while training runs. Start() and Stop() from one thread.
#ifndef LATENTD_SERVICE_LATENTD_SERVICE_H_
#define LATENTD_SERVICE_LATENTD_SERVICE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/dir_lock.h"
#include "corpora/tokenizer.h"
#include "sampler/trainer.h"
#include "service/api.pb.h"
#include "service/cluster/cluster_link.h"
#include "service/cluster_member.h"
#include "service/cluster_router.h"
#include "service/document_checker.h"
#include "service/document_queries.h"
#include "service/document_topics.h"
#include "service/graph_service.h"
#include "service/ingest_path.h"
#include "service/internal/node_metrics.h"
#include "service/metrics.h"
#include "service/model_view.h"
#include "service/service_options.h"
#include "service/similarity_service.h"
#include "service/store_merge.h"
#include "service/topic_queries.h"
#include "service/training_loop.h"

namespace latentd::service {

class LatentdService {
 public:
  // Opens or creates the node's state in options.data_dir (see above) and
  // publishes the first view. Registers its metrics in *metrics, which must
  // outlive the service. Fails with the error of the file or corpus at
  // fault; no thread is running then.
  static absl::StatusOr<std::unique_ptr<LatentdService>> Open(
      const ServiceOptions& options, MetricsRegistry* metrics);
  ~LatentdService();  // Stop()

  // Starts the training thread (and the graph model's).
  void Start();
  // Stops the training thread after its current sweep and writes a final
  // checkpoint (the graph model's too). Idempotent; returns the first
  // checkpoint error.
  absl::Status Stop();
  // Applies the settings that may change at runtime (the daemon's SIGHUP):
  // max_sweeps, sweep_interval_ms, checkpoint_every, checkpoint_seconds,
  // publish_interval_ms, progress_seconds, coherence_seconds,
  // coherence_top_words and compact_log_bytes of `next`; the other fields
  // are ignored. Waits for the current sweep to end. A new max_sweeps past the
  // current sweep resumes sampling, except on a cluster node that has already
  // finished (its peers no longer wait for it): then max_sweeps is kept and the
  // call fails with kFailedPrecondition, the other fields still applied.
  absl::Status Reconfigure(const ServiceOptions& next);
  // Replaces the token this node's calls to its cluster peers carry
  // (ServiceOptions::peer_token; the daemon's SIGHUP after the tokens file
  // changed): calls from here on carry `token`, those running carry the
  // old or the new one. Thread-safe.
  void SetPeerToken(std::string token) {
    router_.SetPeerToken(std::move(token));
  }

  // ---- The API (service/api.proto). The read calls are TopicQueries' and
  // DocumentQueries' (their headers say what each answers and how a
  // cluster node gathers them); the others' errors: kInvalidArgument for a bad
  // request, kUnavailable if the ingest log cannot be written. ----
  absl::StatusOr<api::ListTopicsResponse> ListTopics(
      const api::ListTopicsRequest& request) const {
    return queries_.ListTopics(request);
  }
  absl::StatusOr<api::GetTopicResponse> GetTopic(
      const api::GetTopicRequest& request) const {
    return queries_.GetTopic(request);
  }
  absl::StatusOr<api::WordTopicsResponse> WordTopics(
      const api::WordTopicsRequest& request) const {
    return queries_.WordTopics(request);
  }
  absl::StatusOr<api::InferDocumentResponse> InferDocument(
      const api::InferDocumentRequest& request) const {
    return queries_.InferDocument(request);
  }
  absl::StatusOr<api::GetUserProfileResponse> GetUserProfile(
      const api::GetUserProfileRequest& request) const {
    return queries_.GetUserProfile(request);
  }
  absl::StatusOr<api::ExportModelResponse> ExportModel(
      const api::ExportModelRequest& request) const {
    return queries_.ExportModel(request);
  }
  absl::StatusOr<api::GetDocumentTopicsResponse> GetDocumentTopics(
      const api::GetDocumentTopicsRequest& request) const {
    return documents_.GetDocumentTopics(request);
  }
  absl::StatusOr<api::TopicDocumentsResponse> TopicDocuments(
      const api::TopicDocumentsRequest& request) const {
    return documents_.TopicDocuments(request);
  }
  absl::StatusOr<api::SimilarDocumentsResponse> SimilarDocuments(
      const api::SimilarDocumentsRequest& request) const {
    return documents_.SimilarDocuments(request);
  }
  absl::StatusOr<api::SimilarUsersResponse> SimilarUsers(
      const api::SimilarUsersRequest& request) const {
    return documents_.SimilarUsers(request);
  }
  // Returns once every document is durable; all or nothing.
  absl::StatusOr<api::IngestResponse> Ingest(const api::IngestRequest& request);
  absl::StatusOr<api::StatusResponse> Status(
      const api::StatusRequest& request) const;
  // Waits for the current sweep to end, then writes model.bin.
  absl::StatusOr<api::CheckpointResponse> Checkpoint(
      const api::CheckpointRequest& request);
  // The cluster's members as its Redis records them, read from Redis now
  // (ReadClusterMembers): kFailedPrecondition unless this node is a
  // training cluster's member, kUnavailable while it joins or when Redis
  // cannot be read.
  absl::StatusOr<api::ClusterMembersResponse> ClusterMembers(
      const api::ClusterMembersRequest& request) const;

  // ---- For the stream and directory ingesters. ----
  // DocumentChecker::TokenizeDocument; kFailedPrecondition on a graph-only
  // node.
  absl::StatusOr<std::vector<std::string>> TokenizeDocument(
      std::string_view text) const;
  // Appends records (their words already tokenized) durably, then queues
  // them for the next merge. Records whose source was already ingested are
  // dropped (returned count excludes them).
  // *appended (if given) receives the log sequences of the first and last
  // record this call appended here ({0, 0} if none).
  // In cluster mode, users' records owned by another node are first
  // forwarded to it (unless `route` is false: the caller is the forwarding
  // node); a forward that fails fails the call (records forwarded before it
  // stay accepted by their owners, which drop them if sent again with the
  // same source). With options.replicas > 1 the records kept here are first
  // copied to their backups (kUnavailable, nothing appended here, if one
  // cannot take them; docs/design.md "Replicated ingestion").
  using LogRange = IngestPath::LogRange;
  absl::StatusOr<uint64_t> IngestRecords(std::vector<IngestRecord> records,
                                         LogRange* appended = nullptr,
                                         bool route = true);
  // DocumentChecker::CheckLimits.
  absl::Status CheckDocumentLimits(const IngestRecord& r) const;
  // The largest text a document may have (ServiceOptions::max_text_bytes).
  size_t max_text_bytes() const { return checker_.max_text_bytes(); }
  // True if a record with this non-empty source is in the ingest log.
  bool SourceIngested(const std::string& source) const;
  // Cluster mode with replicas > 1: the replica copies this node holds of
  // other nodes' documents; nullptr otherwise.
  ReplicaLogs* replica_logs() const { return ingest_.replica_logs(); }

  std::shared_ptr<const ModelView> view() const;
  // The node's graph model, nullptr unless options.graph.edges_path is set.
  // Lives as long as the service.
  GraphService* graph() const { return graph_.get(); }
  // SimilarDocuments and SimilarUsers; nullptr on a graph-only node. Lives
  // as long as the service.
  SimilarityService* similarity() const { return similarity_.get(); }
  // Ready for traffic (GET /readyz): OK when a model is loaded, Stop() has
  // not begun, the node has joined its cluster (cluster mode) and still
  // samples, and the ingest log and data directory are writable; else
  // kUnavailable saying why. Cheap (two access(2) calls); any thread.
  absl::Status Readiness() const;  // service_health.cc
  // Why this node samples no more while it still answers queries from the
  // model of its last sweep ("--max-sweeps N reached", "it left its
  // cluster"); "" while it samples, or before the training thread has
  // looked (a failed cluster node is not ready at all: Readiness says
  // why). /readyz adds it to its body. Any thread.
  std::string SamplingStoppedReason() const;  // service_health.cc
  const std::string& data_dir() const { return options_.data_dir; }
  // False on a graph-only node (no corpus and no topic model in the data
  // directory, options.graph set): the topic calls (ListTopics, GetTopic,
  // WordTopics, InferDocument, GetUserProfile, Ingest, Checkpoint,
  // ExportModel) then answer kFailedPrecondition, Status carries the graph
  // only, and no sampling thread runs.
  bool serves_topics() const { return topics_; }
  // OK, or on a graph-only node kFailedPrecondition naming `call`.
  absl::Status CheckTopics(std::string_view call) const;

  // ---- Cluster mode (see the top of this file). ----
  // Joins the cluster through a ClusterLink built from `options`, whose
  // node_id must be this node's API TCP address (peers forward to it).
  // Blocks until every member has joined and pushed its counts; the table
  // then holds the global counts. Fails (no cluster mode) if the cluster
  // cannot be joined. On a graph-only node the graph model joins instead
  // (GraphService::JoinCluster: a graph cluster). REQUIRES: Start() not
  // yet called; at most once.
  absl::Status JoinCluster(ClusterLinkOptions options);
  bool cluster_mode() const { return options_.cluster_mode; }
  // The id (API address) of the node owning `user` by the ring; "" when
  // this node does (and always in single-node mode).
  std::string UserOwner(std::string_view user) const {
    return router_.UserOwner(user);
  }

 private:
  LatentdService(const ServiceOptions& options, MetricsRegistry* metrics);
  absl::Status Init(MetricsRegistry* metrics);
  // Opens the graph model if options.graph names an edge list.
  absl::Status OpenGraph(MetricsRegistry* metrics);
  using Metrics = internal::NodeMetrics;
  // What the metrics read at every scrape: the replica records, the
  // similarity index and, in cluster mode, the cluster's
  // (service/cluster_metrics.h).
  void RegisterCollectors(MetricsRegistry* metrics);
  void RegisterSimilarityMetrics(MetricsRegistry* metrics);
  // Status's cluster fields (node id, ring epoch, members, unreachable
  // peers) from `link`; nothing if it is null.
  static void AddClusterMembers(const ClusterLink* link,
                                api::StatusResponse* resp);
  // Info and warning lines of component "latentd" (base/log.h).
  static void Log(const std::string& line);
  static void LogWarning(const std::string& line);
  // The documents of an Ingest request as records (DocumentChecker);
  // kFailedPrecondition on a graph-only node.
  absl::StatusOr<std::vector<IngestRecord>> RecordsOf(
      const api::IngestRequest& request) const;
  // A peer's Ingest with replica_of set: appends the copies to the replica
  // log of their origin (kFailedPrecondition if this node keeps none).
  absl::StatusOr<api::IngestResponse> IngestReplica(
      const api::IngestRequest& request);

  const ServiceOptions options_;
  const Metrics m_;
  // Held from Init until the service is destroyed: one process a data
  // directory (a second one would reuse ingest sequences).
  std::optional<DirectoryLock> dir_lock_;
  const double start_time_;

  // Users' owners, forwarding to peers, the placement of replica copies
  // and why sampling stopped in a cluster (its own locks).
  ClusterRouter router_;
  // The ingest log, the queue of acknowledged records not merged yet,
  // deduplication and replica copies (its own locks; uses router_).
  IngestPath ingest_;
  // Cluster mode: the link and the synchronized table over trainer_'s,
  // joined by JoinCluster before Start(); the training thread's (API
  // threads see the link only through router_.link(), set once joined).
  ClusterMember cluster_;
  // The topic model and its training thread (its own locks; uses the parts
  // above, declared before it).
  TrainingLoop training_;
  // The read calls (no state of their own but InferDocument's slots).
  const DocumentChecker checker_;  // of the training loop's tokenizer
  TopicQueries queries_;
  DocumentQueries documents_;

  bool started_ = false;
  bool stopped_ = false;
  std::unique_ptr<GraphService> graph_;  // trains in its own thread
  // Fed by the training loop's publications; its own thread refreshes the
  // index.
  std::unique_ptr<SimilarityService> similarity_;
  bool topics_ = true;  // set by Init only: see serves_topics()
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_LATENTD_SERVICE_H_
