// The distances a SimilarityIndex ranks by, and the transform that turns
// each into a search the index can run (Euclidean or inner product):
//   kHellinger: topic mixtures θ (non-negative, normalised here to sum 1).
//     Stored as √θ, so ‖√p − √q‖² = 2·H(p,q)² and a Euclidean nearest
//     neighbour is a Hellinger one. Reported distance: H(p,q) =
//     ‖√p − √q‖/√2, in [0, 1].
//   kInnerProduct: embeddings as given. Reported distance: 1 − ⟨a,b⟩
//     (smaller is nearer; negative when ⟨a,b⟩ > 1).
//   kCosine: embeddings normalised to unit length here. Reported distance:
//     1 − cos(a,b), in [0, 2].
//
// Thread-safety: pure functions.
#ifndef LATENTD_SIMILARITY_VECTOR_METRIC_H_
#define LATENTD_SIMILARITY_VECTOR_METRIC_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace latentd {

enum class Metric { kHellinger, kInnerProduct, kCosine };

std::string_view MetricName(Metric metric);
absl::StatusOr<Metric> ParseMetric(std::string_view name);

// Whether the stored vectors are compared by squared Euclidean distance
// (kHellinger) or by 1 − inner product (the other two).
inline bool IsEuclidean(Metric metric) { return metric == Metric::kHellinger; }

// Writes the stored form of `in` to out[0, dim). kInvalidArgument when
// in.size() != dim, a component is NaN or infinite, a Hellinger mixture
// has a negative component or sums to 0, or a cosine vector is all zero.
absl::Status PrepareVector(Metric metric, uint32_t dim,
                           std::span<const float> in, float* out);

// The same from doubles (fold-in's θ), converted to float first.
absl::Status PrepareVector(Metric metric, uint32_t dim,
                           std::span<const double> in, float* out);

// The search's raw score between two stored vectors: ‖a − b‖² for a
// Euclidean metric, 1 − ⟨a,b⟩ otherwise (as hnswlib's spaces compute it).
float RawDistance(Metric metric, const float* a, const float* b, uint32_t dim);

// The reported distance (header comment) from a raw score.
float ReportedDistance(Metric metric, float raw);

}  // namespace latentd

#endif  // LATENTD_SIMILARITY_VECTOR_METRIC_H_
