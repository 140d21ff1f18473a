// GraphIngest: the edge ingestion of a graph node (GraphService), the
// IngestEdges call: validation, deduplication against every edge the node
// knows, forwarding in a cluster, the durable append to the EdgeJournal
// (DIR/graph/ingested_edges.log) before the answer, and the queue of
// acknowledged edges the training thread takes at an epoch boundary.
//
// Cluster mode (SetCluster): an edge goes to the ring owner of its first
// endpoint (the smaller key); IngestEdges forwards the others' edges to
// their owners through the EdgeForwarder (request.local set, so the owner
// takes them) and appends its own.
//
// Thread-safety: IngestEdges, counts() and the training thread's calls
// (WaitForWork, TakePending, MarkPublished) may run at once from any
// threads; ingest_mu_ serializes them, also across the journal's append.
// SetForwarder, SetCluster, BeginStop and Close from the owner's thread.
#ifndef LATENTD_SERVICE_GRAPH_INGEST_H_
#define LATENTD_SERVICE_GRAPH_INGEST_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "corpora/edge_list.h"
#include "hashring/ring.h"
#include "hashring/ring_config.h"
#include "service/api.pb.h"
#include "service/cluster/cluster_link.h"
#include "service/edge_journal.h"
#include "service/metrics.h"

namespace latentd::service {

// Sends edges to another member: the IngestEdges call at node `owner` (its
// API address, the member id). Returns that node's answer.
using EdgeForwarder = std::function<absl::StatusOr<api::IngestEdgesResponse>(
    const std::string& owner, const api::IngestEdgesRequest& request)>;

// {a, b} in order: the key of an undirected pair.
inline std::pair<VertexKey, VertexKey> UndirectedPair(VertexKey a,
                                                      VertexKey b) {
  return a <= b ? std::make_pair(a, b) : std::make_pair(b, a);
}

struct GraphIngestOptions {
  std::string dir;                   // where the journal goes
  size_t max_ingest_edges = 100000;  // IngestEdges' most edges per call
  Counter* ingested = nullptr;       // edges acknowledged here (required)
  Counter* forwarded = nullptr;      // edges forwarded to owners (required)
};

class GraphIngest {
 public:
  // Opens the journal under options.dir (EdgeJournal::Open: its errors).
  // Edges count as known, for deduplication, if they are in `known` (the
  // edge list's) or the journal; *fresh gets the journal's edges that are
  // not in `known`, each once, in order: those the training graph adds.
  static absl::StatusOr<std::unique_ptr<GraphIngest>> Open(
      const GraphIngestOptions& options, const std::vector<Edge>& known,
      std::vector<Edge>* fresh);

  // How IngestEdges forwards in cluster mode. REQUIRES: before SetCluster.
  void SetForwarder(EdgeForwarder forwarder) {
    forwarder_ = std::move(forwarder);
  }
  // Cluster mode from now on, with `link`'s ring (it must outlive this).
  void SetCluster(const ClusterLink* link) { link_.store(link); }

  // The IngestEdges call: kInvalidArgument for a bad request (what and
  // where), kUnavailable if the journal cannot be written or the node is
  // stopping (nothing acknowledged then), a failed forward's error naming
  // the owner. Returns once the accepted edges are durable.
  absl::StatusOr<api::IngestEdgesResponse> IngestEdges(
      const api::IngestEdgesRequest& request);

  // A member leaving the cluster (remove-node --handoff): forwards `edges`
  // (acknowledged here) to the owners of their first endpoints by `config`,
  // a ring this node is not in, as IngestEdges forwards (each durable there
  // before it answers; a retry finds them duplicates). The first forward
  // that fails is the error.
  absl::Status HandOff(const std::vector<Edge>& edges,
                       const hashring::RingConfig& config);

  // While not accepting (a member leaving the cluster, between taking its
  // acknowledged edges to hand off and its exit), IngestEdges acknowledges
  // no edge here: those this node would append are refused (kUnavailable,
  // nothing kept), so that none is acknowledged after the hand-off took
  // the others. Accepting from the start. Any thread.
  void SetAccepting(bool accepting);

  // The training thread: blocks until edges are pending or BeginStop() was
  // called, or not at all if `busy`; false once stopping.
  bool WaitForWork(bool busy);
  // The pending edges, moved out of the queue; they stay counted as
  // pending until MarkPublished.
  std::vector<Edge> TakePending();
  // `n` taken edges are in the published model now.
  void MarkPublished(uint64_t n);

  struct Counts {
    uint64_t ingested = 0;  // acknowledged here since the journal began
    uint64_t pending = 0;   // acknowledged, not yet in the published model
  };
  Counts counts() const;

  // IngestEdges refuses from now on and WaitForWork returns false.
  void BeginStop();
  // Closes the journal (BeginStop first); returns the close's status.
  absl::Status Close();

 private:
  explicit GraphIngest(const GraphIngestOptions& options) : options_(options) {}
  // The request's edges, as (smaller key, larger key, weight); the weight
  // 0 read as 1.
  absl::StatusOr<std::vector<Edge>> Validate(
      const api::IngestEdgesRequest& request) const;
  // Forwards the edges another member owns (by first endpoint) to it,
  // adding its answer to *resp, and leaves this node's in *edges. The
  // first forward that fails fails the call.
  absl::Status ForwardToOwners(const ClusterLink& link,
                               std::vector<Edge>* edges,
                               api::IngestEdgesResponse* resp);
  // The same by `config` and its `ring`, this node being member `self`
  // ("" if it is none).
  absl::Status ForwardByRing(const hashring::RingConfig& config,
                             const hashring::Ring& ring, std::string_view self,
                             std::vector<Edge>* edges,
                             api::IngestEdgesResponse* resp);

  const GraphIngestOptions options_;
  EdgeForwarder forwarder_;                        // set before SetCluster
  std::atomic<const ClusterLink*> link_{nullptr};  // null: not a cluster

  // The acknowledged edges not yet trained on, the pairs ever seen (min
  // key, max key) for deduplication, and the journal.
  mutable absl::Mutex ingest_mu_;
  std::vector<Edge> pending_ ABSL_GUARDED_BY(ingest_mu_);
  // Acknowledged edges not yet in the published model: pending_ and those
  // the training thread took but has not published (MarkPublished).
  uint64_t pending_count_ ABSL_GUARDED_BY(ingest_mu_) = 0;
  uint64_t ingested_total_ ABSL_GUARDED_BY(ingest_mu_) = 0;
  absl::flat_hash_set<std::pair<VertexKey, VertexKey>> pairs_
      ABSL_GUARDED_BY(ingest_mu_);
  std::unique_ptr<EdgeJournal> journal_ ABSL_GUARDED_BY(ingest_mu_);
  bool stopping_ ABSL_GUARDED_BY(ingest_mu_) = false;
  bool accepting_ ABSL_GUARDED_BY(ingest_mu_) = true;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_GRAPH_INGEST_H_
