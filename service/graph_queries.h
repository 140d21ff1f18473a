// GraphQueries: the API's read calls on a graph model (GetEmbedding,
// ScorePairs, NearestVertices; service/api.proto). Each answers from the
// one model it is given (GraphService gives the one it published last),
// so a call never waits for an epoch.
//
// Errors: kNotFound names an unknown vertex; kInvalidArgument a bad
// request (what, and the limit it is over).
//
// Thread-safety: const methods over immutable state; any number of
// threads at once.
#ifndef LATENTD_SERVICE_GRAPH_QUERIES_H_
#define LATENTD_SERVICE_GRAPH_QUERIES_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "sampler/graph/graph_model.h"
#include "service/api.pb.h"

namespace latentd::service {

class GraphQueries {
 public:
  // The largest NearestVertices `top` (graph-max-top) and the most pairs
  // of a ScorePairs call (graph-max-pairs).
  GraphQueries(uint32_t max_top, size_t max_pairs)
      : max_top_(max_top), max_pairs_(max_pairs) {}

  absl::StatusOr<api::GetEmbeddingResponse> GetEmbedding(
      const GraphModel& model, const api::GetEmbeddingRequest& request) const;
  // With request.skip_unknown, a pair with an unknown vertex gets its
  // error in the answer instead of failing the call.
  absl::StatusOr<api::ScorePairsResponse> ScorePairs(
      const GraphModel& model, const api::ScorePairsRequest& request) const;
  // `top` 0 means 10.
  absl::StatusOr<api::NearestVerticesResponse> NearestVertices(
      const GraphModel& model,
      const api::NearestVerticesRequest& request) const;

 private:
  const uint32_t max_top_;
  const size_t max_pairs_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_GRAPH_QUERIES_H_
