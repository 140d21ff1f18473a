#include "service/graph_queries.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace latentd::service {
namespace {

absl::Status UnknownVertex(VertexKey v) {
  return absl::NotFoundError(
      absl::StrCat("vertex ", v, " is not in the graph"));
}

}  // namespace

absl::StatusOr<api::GetEmbeddingResponse> GraphQueries::GetEmbedding(
    const GraphModel& model, const api::GetEmbeddingRequest& request) const {
  std::optional<uint32_t> i = model.Find(request.vertex());
  if (!i) return UnknownVertex(request.vertex());
  api::GetEmbeddingResponse resp;
  resp.set_vertex(request.vertex());
  resp.set_epoch(model.header().epoch);
  const float* row = &model.vectors()[size_t{*i} * model.dim()];
  resp.mutable_vector()->Add(row, row + model.dim());
  return resp;
}

absl::StatusOr<api::ScorePairsResponse> GraphQueries::ScorePairs(
    const GraphModel& model, const api::ScorePairsRequest& request) const {
  if (request.pairs().empty()) {
    return absl::InvalidArgumentError("ScorePairs: no pairs given");
  }
  if (static_cast<size_t>(request.pairs_size()) > max_pairs_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ScorePairs: ", request.pairs_size(),
        " pairs are more than graph-max-pairs (", max_pairs_, ")"));
  }
  api::ScorePairsResponse resp;
  resp.set_epoch(model.header().epoch);
  for (int i = 0; i < request.pairs_size(); ++i) {
    const api::VertexPair& p = request.pairs(i);
    api::PairScore* out = resp.add_scores();
    out->set_a(p.a());
    out->set_b(p.b());
    absl::StatusOr<double> score = model.Score(p.a(), p.b());
    if (score.ok()) {
      out->set_score(*score);
      continue;
    }
    const VertexKey unknown = model.Find(p.a()) ? p.b() : p.a();
    const std::string why =
        absl::StrCat("pair ", i, ": vertex ", unknown, " is not in the graph");
    if (!request.skip_unknown()) return absl::NotFoundError(why);
    out->set_error(why);
  }
  return resp;
}

absl::StatusOr<api::NearestVerticesResponse> GraphQueries::NearestVertices(
    const GraphModel& model, const api::NearestVerticesRequest& request) const {
  const uint32_t top = request.top() == 0 ? 10 : request.top();
  if (top > max_top_) {
    return absl::InvalidArgumentError(
        absl::StrCat("NearestVertices: top ", top,
                     " is more than graph-max-top (", max_top_, ")"));
  }
  if (!model.Find(request.vertex())) return UnknownVertex(request.vertex());
  LATENTD_ASSIGN_OR_RETURN(auto nearest, model.Nearest(request.vertex(), top));
  api::NearestVerticesResponse resp;
  resp.set_vertex(request.vertex());
  resp.set_epoch(model.header().epoch);
  for (const auto& [vertex, score] : nearest) {
    api::VertexScore* n = resp.add_neighbors();
    n->set_vertex(vertex);
    n->set_score(score);
  }
  return resp;
}

}  // namespace latentd::service
