// GraphService's edge ingestion (IngestEdges): validation, deduplication,
// forwarding to each edge's owner in a cluster, and the durable append to
// DIR/graph/ingested.edges before the answer.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "service/graph_service.h"

namespace latentd::service {

absl::StatusOr<api::IngestEdgesResponse> GraphService::IngestEdges(
    const api::IngestEdgesRequest& request) {
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
    const auto [lo, hi] = PairOf(e.src(), e.dst());
    edges.push_back({lo, hi, w});
  }
  api::IngestEdgesResponse resp;
  if (cluster_.load() && !request.local()) {
    LATENTD_RETURN_IF_ERROR(ForwardToOwners(&edges, &resp));
    if (edges.empty()) {
      absl::MutexLock lock(&ingest_mu_);
      resp.set_pending(pending_count_);
      return resp;
    }
  }
  absl::MutexLock lock(&ingest_mu_);
  if (stopping_ || ingest_file_ == nullptr) {
    return absl::UnavailableError("IngestEdges: the node is shutting down");
  }
  std::vector<Edge> fresh;
  absl::flat_hash_set<std::pair<VertexKey, VertexKey>> in_call;
  for (const Edge& e : edges) {
    const auto key = PairOf(e.src, e.dst);
    if (pairs_.contains(key) || !in_call.insert(key).second) continue;
    fresh.push_back(e);
  }
  if (!fresh.empty()) {
    LATENTD_RETURN_IF_ERROR(AppendDurably(fresh));
    for (const Edge& e : fresh) pairs_.insert(PairOf(e.src, e.dst));
    pending_.insert(pending_.end(), fresh.begin(), fresh.end());
    pending_count_ += fresh.size();
    ingested_total_ += fresh.size();
    m_.ingested->Add(fresh.size());
  }
  resp.set_accepted(resp.accepted() + fresh.size());
  resp.set_duplicates(resp.duplicates() + edges.size() - fresh.size());
  resp.set_pending(pending_count_);
  return resp;
}

absl::Status GraphService::ForwardToOwners(std::vector<Edge>* edges,
                                           api::IngestEdgesResponse* resp) {
  // One copy of the ring: it may move to a new epoch meanwhile.
  const hashring::RingConfig config = link_->ring_config();
  const std::shared_ptr<const hashring::Ring> ring = link_->ring();
  std::vector<Edge> mine;
  // By owner, in the order the owners first appear (deterministic).
  std::vector<std::pair<std::string, api::IngestEdgesRequest>> others;
  for (const Edge& e : *edges) {
    const std::string& owner =
        config.members[ring->Owner(VertexSyncKey(e.src))].id;
    if (owner == link_->node_id()) {
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
    m_.forwarded->Add(request.edges_size());
  }
  *edges = std::move(mine);
  return absl::OkStatus();
}

absl::Status GraphService::AppendDurably(const std::vector<Edge>& edges) {
  const std::string& path = ingest_file_->path();
  if (ingest_dirty_tail_) {
    // A failed append's bytes may still follow ingest_size_: cut them off
    // before anything after them is acknowledged.
    absl::Status cut = ingest_file_->Truncate(ingest_size_);
    if (!cut.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "IngestEdges: a failed append to ", path,
          " is still there: ", cut.message(), " (nothing acknowledged)"));
    }
    ingest_dirty_tail_ = false;
  }
  std::string text;
  for (const Edge& e : edges) {
    absl::StrAppendFormat(&text, "%d %d %.9g\n", e.src, e.dst, e.weight);
  }
  absl::Status status = ingest_file_->WriteAt(ingest_size_, text);
  if (status.ok()) status = ingest_file_->DataSync();
  if (!status.ok()) {
    // Take back what part was written, so the file stays whole lines; if
    // that fails too, the next append cuts first.
    absl::Status cut = ingest_file_->Truncate(ingest_size_);
    if (cut.ok()) cut = ingest_file_->DataSync();
    ingest_dirty_tail_ = !cut.ok();
    return absl::UnavailableError(absl::StrCat("IngestEdges: cannot append to ",
                                               path, ": ", status.message(),
                                               " (nothing acknowledged)"));
  }
  ingest_size_ += text.size();
  return absl::OkStatus();
}

}  // namespace latentd::service
