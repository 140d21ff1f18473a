#include "similarity/vector_metric.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace latentd {
namespace {

// Sixteen independent partial sums, so that the compiler vectorizes the
// loops without reassociating one float sum (which -O2 does not do).
constexpr uint32_t kLanes = 16;

float SquaredL2(const float* a, const float* b, uint32_t dim) {
  float acc[kLanes] = {};
  uint32_t i = 0;
  for (; i + kLanes <= dim; i += kLanes) {
    for (uint32_t l = 0; l < kLanes; ++l) {
      const float d = a[i + l] - b[i + l];
      acc[l] += d * d;
    }
  }
  float sum = 0;
  for (; i < dim; ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
  for (float x : acc) sum += x;
  return sum;
}

float Dot(const float* a, const float* b, uint32_t dim) {
  float acc[kLanes] = {};
  uint32_t i = 0;
  for (; i + kLanes <= dim; i += kLanes) {
    for (uint32_t l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  }
  float sum = 0;
  for (; i < dim; ++i) sum += a[i] * b[i];
  for (float x : acc) sum += x;
  return sum;
}

}  // namespace

std::string_view MetricName(Metric metric) {
  switch (metric) {
    case Metric::kHellinger:
      return "hellinger";
    case Metric::kInnerProduct:
      return "inner_product";
    case Metric::kCosine:
      return "cosine";
  }
  return "unknown";
}

absl::StatusOr<Metric> ParseMetric(std::string_view name) {
  for (Metric m :
       {Metric::kHellinger, Metric::kInnerProduct, Metric::kCosine}) {
    if (name == MetricName(m)) return m;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown metric '", std::string(name),
                   "' (hellinger, inner_product, cosine)"));
}

absl::Status PrepareVector(Metric metric, uint32_t dim,
                           std::span<const float> in, float* out) {
  if (in.size() != dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("vector has ", in.size(), " components, the index ", dim));
  }
  double sum = 0;     // Hellinger: the mass
  double sum_sq = 0;  // cosine: the squared norm
  for (uint32_t i = 0; i < dim; ++i) {
    const float x = in[i];
    if (!std::isfinite(x)) {
      return absl::InvalidArgumentError(
          absl::StrCat("component ", i, " is ", x, ", not finite"));
    }
    if (metric == Metric::kHellinger && x < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "component ", i, " is ", x, ": a topic mixture is non-negative"));
    }
    sum += x;
    sum_sq += static_cast<double>(x) * x;
  }
  switch (metric) {
    case Metric::kHellinger:
      if (!(sum > 0)) {
        return absl::InvalidArgumentError("topic mixture sums to 0");
      }
      for (uint32_t i = 0; i < dim; ++i) {
        out[i] = static_cast<float>(std::sqrt(in[i] / sum));
      }
      break;
    case Metric::kCosine: {
      if (!(sum_sq > 0) || !std::isfinite(sum_sq)) {
        return absl::InvalidArgumentError(
            "vector has no direction (norm 0 or overflowing)");
      }
      const double inv_norm = 1 / std::sqrt(sum_sq);
      for (uint32_t i = 0; i < dim; ++i) {
        out[i] = static_cast<float>(in[i] * inv_norm);
      }
      break;
    }
    case Metric::kInnerProduct:
      for (uint32_t i = 0; i < dim; ++i) out[i] = in[i];
      break;
  }
  return absl::OkStatus();
}

absl::Status PrepareVector(Metric metric, uint32_t dim,
                           std::span<const double> in, float* out) {
  std::vector<float> floats(in.begin(), in.end());
  return PrepareVector(metric, dim, std::span<const float>(floats), out);
}

float RawDistance(Metric metric, const float* a, const float* b, uint32_t dim) {
  return IsEuclidean(metric) ? SquaredL2(a, b, dim) : 1.0f - Dot(a, b, dim);
}

float ReportedDistance(Metric metric, float raw) {
  if (metric == Metric::kHellinger) {
    // Rounding can make ‖√p − √q‖² a hair negative or above 2.
    return std::min(1.0f, std::sqrt(std::max(0.0f, raw) * 0.5f));
  }
  return raw;
}

}  // namespace latentd
