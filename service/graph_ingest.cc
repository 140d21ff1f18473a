#include "service/graph_ingest.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sampler/graph/synced_embeddings.h"

namespace latentd::service {

absl::StatusOr<std::unique_ptr<GraphIngest>> GraphIngest::Open(
    const GraphIngestOptions& options, const std::vector<Edge>& known,
    std::vector<Edge>* fresh) {
  std::unique_ptr<GraphIngest> g(new GraphIngest(options));
  std::vector<Edge> journaled;
  absl::MutexLock lock(&g->ingest_mu_);
  LATENTD_ASSIGN_OR_RETURN(g->journal_,
                           EdgeJournal::Open(options.dir, &journaled));
  for (const Edge& e : known) g->pairs_.insert(UndirectedPair(e.src, e.dst));
  fresh->clear();
  for (const Edge& e : journaled) {
    if (g->pairs_.insert(UndirectedPair(e.src, e.dst)).second) {
      fresh->push_back(e);
    }
  }
  g->ingested_total_ = fresh->size();
  return g;
}

absl::StatusOr<std::vector<Edge>> GraphIngest::Validate(
    const api::IngestEdgesRequest& request) const {
  if (request.edges().empty()) {
    return absl::InvalidArgumentError("IngestEdges: no edges given");
  }
  if (static_cast<size_t>(request.edges_size()) > options_.max_ingest_edges) {
    return absl::InvalidArgumentError(
        absl::StrCat("IngestEdges: ", request.edges_size(),
                     " edges are more than graph-max-ingest-edges (",
                     options_.max_ingest_edges, ")"));
  }
  std::vector<Edge> edges;
  edges.reserve(request.edges_size());
  for (int i = 0; i < request.edges_size(); ++i) {
    const api::GraphEdge& e = request.edges(i);
    if (e.src() == e.dst()) {
      return absl::InvalidArgumentError(
          absl::StrCat("IngestEdges: edge ", i, " (", e.src(), " ", e.dst(),
                       ") is a self-loop"));
    }
    const float w = e.weight() == 0 ? 1.0f : e.weight();
    if (!(w > 0) || !std::isfinite(w)) {
      return absl::InvalidArgumentError(
          absl::StrCat("IngestEdges: edge ", i, " has weight ", e.weight(),
                       ", not a finite number > 0"));
    }
    const auto [lo, hi] = UndirectedPair(e.src(), e.dst());
    edges.push_back({lo, hi, w});
  }
  return edges;
}

absl::StatusOr<api::IngestEdgesResponse> GraphIngest::IngestEdges(
    const api::IngestEdgesRequest& request) {
  LATENTD_ASSIGN_OR_RETURN(std::vector<Edge> edges, Validate(request));
  api::IngestEdgesResponse resp;
  const ClusterLink* link = link_.load();
  if (link != nullptr && !request.local()) {
    LATENTD_RETURN_IF_ERROR(ForwardToOwners(*link, &edges, &resp));
    if (edges.empty()) {
      absl::MutexLock lock(&ingest_mu_);
      resp.set_pending(pending_count_);
      return resp;
    }
  }
  absl::MutexLock lock(&ingest_mu_);
  if (stopping_ || journal_ == nullptr) {
    return absl::UnavailableError("IngestEdges: the node is shutting down");
  }
  if (!accepting_) {
    return absl::UnavailableError(absl::StrCat(
        "IngestEdges: this node is leaving the cluster; send the ",
        edges.size(),
        " edges it would keep to another member (edges of other owners in "
        "this call are acknowledged there; a retry finds them duplicates)"));
  }
  std::vector<Edge> fresh;
  absl::flat_hash_set<std::pair<VertexKey, VertexKey>> in_call;
  for (const Edge& e : edges) {
    const auto key = UndirectedPair(e.src, e.dst);
    if (pairs_.contains(key) || !in_call.insert(key).second) continue;
    fresh.push_back(e);
  }
  if (!fresh.empty()) {
    LATENTD_RETURN_IF_ERROR(journal_->Append(fresh));
    for (const Edge& e : fresh) pairs_.insert(UndirectedPair(e.src, e.dst));
    pending_.insert(pending_.end(), fresh.begin(), fresh.end());
    pending_count_ += fresh.size();
    ingested_total_ += fresh.size();
    options_.ingested->Add(fresh.size());
  }
  resp.set_accepted(resp.accepted() + fresh.size());
  resp.set_duplicates(resp.duplicates() + edges.size() - fresh.size());
  resp.set_pending(pending_count_);
  return resp;
}

absl::Status GraphIngest::ForwardToOwners(const ClusterLink& link,
                                          std::vector<Edge>* edges,
                                          api::IngestEdgesResponse* resp) {
  // One copy of the ring: it may move to a new epoch meanwhile.
  const hashring::RingConfig config = link.ring_config();
  const std::shared_ptr<const hashring::Ring> ring = link.ring();
  return ForwardByRing(config, *ring, link.node_id(), edges, resp);
}

absl::Status GraphIngest::HandOff(const std::vector<Edge>& edges,
                                  const hashring::RingConfig& config) {
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const hashring::Ring> ring,
                           hashring::Ring::Build(config));
  std::vector<Edge> left = edges;
  api::IngestEdgesResponse resp;
  return ForwardByRing(config, *ring, "", &left, &resp);
}

absl::Status GraphIngest::ForwardByRing(const hashring::RingConfig& config,
                                        const hashring::Ring& ring,
                                        std::string_view self,
                                        std::vector<Edge>* edges,
                                        api::IngestEdgesResponse* resp) {
  std::vector<Edge> mine;
  // By owner, in the order the owners first appear (deterministic).
  std::vector<std::pair<std::string, api::IngestEdgesRequest>> others;
  for (const Edge& e : *edges) {
    const std::string& owner =
        config.members[ring.Owner(VertexSyncKey(e.src))].id;
    if (owner == self) {
      mine.push_back(e);
      continue;
    }
    auto it =
        std::find_if(others.begin(), others.end(),
                     [&owner](const auto& o) { return o.first == owner; });
    if (it == others.end()) {
      others.emplace_back(owner, api::IngestEdgesRequest());
      it = std::prev(others.end());
      it->second.set_local(true);
    }
    api::GraphEdge* out = it->second.add_edges();
    out->set_src(e.src);
    out->set_dst(e.dst);
    out->set_weight(e.weight);
  }
  for (const auto& [owner, request] : others) {
    if (!forwarder_) {
      return absl::FailedPreconditionError(
          "IngestEdges: this node cannot forward edges to their owner "
          "(no forwarder set)");
    }
    absl::StatusOr<api::IngestEdgesResponse> r = forwarder_(owner, request);
    if (!r.ok()) {
      return absl::Status(
          r.status().code(),
          absl::StrCat("IngestEdges: forwarding ", request.edges_size(),
                       " edges to their first endpoint's owner ", owner, ": ",
                       r.status().message(),
                       " (edges forwarded to other owners before it are "
                       "acknowledged there; a retry finds them duplicates)"));
    }
    resp->set_accepted(resp->accepted() + r->accepted());
    resp->set_duplicates(resp->duplicates() + r->duplicates());
    options_.forwarded->Add(request.edges_size());
  }
  *edges = std::move(mine);
  return absl::OkStatus();
}

bool GraphIngest::WaitForWork(bool busy) {
  absl::MutexLock lock(&ingest_mu_);
  auto work = [this, busy]() ABSL_SHARED_LOCKS_REQUIRED(ingest_mu_) {
    return stopping_ || !pending_.empty() || busy;
  };
  ingest_mu_.Await(absl::Condition(&work));
  return !stopping_;
}

std::vector<Edge> GraphIngest::TakePending() {
  std::vector<Edge> taken;
  absl::MutexLock lock(&ingest_mu_);
  taken.swap(pending_);
  return taken;
}

void GraphIngest::MarkPublished(uint64_t n) {
  absl::MutexLock lock(&ingest_mu_);
  pending_count_ -= n;
}

GraphIngest::Counts GraphIngest::counts() const {
  absl::MutexLock lock(&ingest_mu_);
  return {ingested_total_, pending_count_};
}

void GraphIngest::SetAccepting(bool accepting) {
  absl::MutexLock lock(&ingest_mu_);
  accepting_ = accepting;
}

void GraphIngest::BeginStop() {
  absl::MutexLock lock(&ingest_mu_);
  stopping_ = true;
}

absl::Status GraphIngest::Close() {
  absl::MutexLock lock(&ingest_mu_);
  if (journal_ == nullptr) return absl::OkStatus();
  absl::Status closed = journal_->Close();
  journal_.reset();
  return closed;
}

}  // namespace latentd::service
