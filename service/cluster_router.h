// ClusterRouter: where a cluster-mode latentd node sends what is not its
// own (docs/design.md, "Many nodes"). It knows the ring through the node's
// ClusterLink once joined, says which member owns a user (UserOwner),
// forwards users' events, profile queries and graph edges to their owners
// over the API (ApiClient per peer, created on first use), asks every
// other member the same query at once (Scatter), builds the ring that
// places replica copies (ReplicaRing), and remembers whether the node
// stopped sampling (MarkFailed, with why, for /readyz) or is leaving
// (MarkLeft).
//
// It owns its peer clients and its placement ring; the ClusterLink is the
// service's (SetLink: it must outlive the router). In single-node mode
// (no link) every user is this node's and nothing is forwarded.
//
// Thread-safety: every method may be called from any thread at once.
// SetLink publishes the link (release) once it is complete; link() reads it
// (acquire). Locks: peers_mu_ (peer clients and their token) and
// placement_mu_ (the placement ring) are leaves: nothing else is taken
// while they are held, except that PeerClient connects under peers_mu_.
#ifndef LATENTD_SERVICE_CLUSTER_ROUTER_H_
#define LATENTD_SERVICE_CLUSTER_ROUTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "hashring/ring.h"
#include "service/api.pb.h"
#include "service/cluster/cluster_link.h"
#include "service/ingest_log.h"
#include "service/metrics.h"
#include "sync/transport/tls.h"

namespace latentd::service {

class ApiClient;               // service/api_client.h
enum class Method : uint32_t;  // service/api_dispatch.h

struct ClusterRouterOptions {
  // The node runs in cluster mode: until SetLink, CheckJoined fails.
  bool cluster_mode = false;
  // The bearer token of calls to peers ("" = none), until SetPeerToken.
  std::string peer_token;
  // TLS towards the peers' TCP APIs.
  sync::ClientTls peer_tls;
  // Counts the users' events forwarded to their owners; may be null.
  Counter* forwarded = nullptr;
  // How long Scatter waits for each member's answer (connecting included).
  absl::Duration scatter_timeout = absl::Seconds(5);
  // ... and for a member the link reports unavailable (no heartbeat): it
  // may be back already (a heal is seen a beat later), or cut off.
  absl::Duration scatter_suspect_timeout = absl::Milliseconds(300);
};

class ClusterRouter {
 public:
  explicit ClusterRouter(ClusterRouterOptions options);
  ~ClusterRouter();
  ClusterRouter(const ClusterRouter&) = delete;
  ClusterRouter& operator=(const ClusterRouter&) = delete;

  // The ring key of a user: its owner keeps its events and profile.
  static sync::Key UserKey(std::string_view user);

  // Routes by `link` from here on. REQUIRES: at most once; `link` complete
  // (joined) and outliving the router.
  void SetLink(ClusterLink* link);
  // The link once SetLink has run, else nullptr.
  ClusterLink* link() const { return link_.load(std::memory_order_acquire); }
  // kUnavailable while a cluster-mode node has not joined yet.
  absl::Status CheckJoined() const;

  // The id (API address) of the node owning `user` by the ring; "" when
  // this node does (and always before joining or in single-node mode).
  std::string UserOwner(std::string_view user) const;
  // The API client of peer `id` (its API address), created on first use;
  // it lives as long as the router. The error of creating it otherwise.
  absl::StatusOr<ApiClient*> PeerClient(const std::string& id) const;
  // Calls from here on carry `token`; those running carry the old or the
  // new one.
  void SetPeerToken(std::string token);

  // Forwards the records of users owned elsewhere (removing them from
  // *records) as local Ingest calls to their owners; adds the number their
  // owners accepted to *accepted. The error of the first forward that
  // fails (those before it stay accepted).
  absl::Status ForwardToOwners(std::vector<IngestRecord>* records,
                               uint64_t* accepted);
  // A graph cluster's edges for node `owner` (GraphService's forwarder).
  absl::StatusOr<api::IngestEdgesResponse> ForwardEdges(
      const std::string& owner, const api::IngestEdgesRequest& request) const;
  // `request` answered by `owner` (with local set); its error names the
  // user and the owner.
  absl::StatusOr<api::GetUserProfileResponse> ForwardProfile(
      const std::string& owner,
      const api::GetUserProfileRequest& request) const;
  // One member's answer to Scatter: OK and its response, or the error of
  // the call (kUnavailable, kDeadlineExceeded past scatter_timeout, or the
  // member's own).
  struct PeerAnswer {
    std::string member;  // its id (API address)
    absl::Status status;
    std::unique_ptr<google::protobuf::Message> response;  // prototype's type
  };
  // Sends `request` as `method` to every member of the ring but this node,
  // all at once, each call bounded by options.scatter_timeout (by
  // scatter_suspect_timeout for a member the link reports unavailable, so
  // that a cut-off member does not hold every answer back); returns
  // their answers in ring order once all have come or timed out (none
  // before joining or in single-node mode). One thread per member, all
  // joined before it returns. REQUIRES: `request` already says `local`,
  // so that the members do not scatter it again.
  std::vector<PeerAnswer> Scatter(
      Method method, const google::protobuf::Message& request,
      const google::protobuf::Message& prototype) const;

  // `r` as a document of a request to a peer: its words and topics (a
  // hand-off's, taken only with the request's local set), else its words
  // joined by spaces.
  static void AddDocument(const IngestRecord& r, api::IngestRequest* request);

  // The ring of `config` whose replica lists name every member (up to
  // hashring::kMaxReplication) in order of preference, for choosing
  // backups past those that may not hold copies: rebuilt when
  // config.version changes. The error of building it.
  absl::StatusOr<std::shared_ptr<const hashring::Ring>> ReplicaRing(
      const hashring::RingConfig& config) const;

  // Marks the node as no longer sampling because of `why` (the first
  // reason is kept).
  void MarkFailed(std::string_view why);
  bool failed() const { return failed_.load(); }
  // The first reason given to MarkFailed ("" if none).
  std::string failure() const;
  // Marks the node as leaving the cluster (an operator removes it): it
  // samples no more and adopts no replica copies.
  void MarkLeft() { left_ = true; }
  bool left() const { return left_.load(); }

 private:
  const ClusterRouterOptions options_;
  std::atomic<ClusterLink*> link_{nullptr};

  // API clients of the peers, and what they carry.
  mutable absl::Mutex peers_mu_;
  mutable absl::flat_hash_map<std::string, std::unique_ptr<ApiClient>>
      peer_clients_ ABSL_GUARDED_BY(peers_mu_);
  // The same with scatter_timeout and scatter_suspect_timeout, for Scatter.
  mutable absl::flat_hash_map<std::string, std::unique_ptr<ApiClient>>
      scatter_clients_ ABSL_GUARDED_BY(peers_mu_);
  mutable absl::flat_hash_map<std::string, std::unique_ptr<ApiClient>>
      suspect_clients_ ABSL_GUARDED_BY(peers_mu_);
  std::string peer_token_ ABSL_GUARDED_BY(peers_mu_);

  // The placement ring and the ring version it was built for.
  mutable absl::Mutex placement_mu_;
  mutable uint64_t placement_version_ ABSL_GUARDED_BY(placement_mu_) = 0;
  mutable std::shared_ptr<const hashring::Ring> placement_
      ABSL_GUARDED_BY(placement_mu_);

  // Set by MarkFailed: the node samples no more.
  std::atomic<bool> failed_{false};
  mutable absl::Mutex failure_mu_;
  std::string failure_ ABSL_GUARDED_BY(failure_mu_);
  std::atomic<bool> left_{false};

  // The client of peer `id` in `clients` (one of the maps above), created
  // with `timeout` on first use.
  absl::StatusOr<ApiClient*> Client(
      absl::flat_hash_map<std::string, std::unique_ptr<ApiClient>>* clients,
      const std::string& id, absl::Duration timeout) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(peers_mu_);
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_CLUSTER_ROUTER_H_
