// Gradient check: the trainer's kernels (ObjectiveGradient uses them) give
// the gradient of the objective, with and without the consensus term and
// with and without a signature (negative coordinates), that
// central finite differences of an independently written objective give.
#include "sampler/graph/graph_objective.h"

#include <cmath>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace latentd {
namespace {

// F written out directly, in double; coordinates k >= d − negative_dims
// count negatively in the pair score.
double Objective(const std::vector<PairTerm>& pairs,
                 const std::vector<float>& z, uint32_t d,
                 uint32_t negative_dims, double lambda, double mu,
                 const std::vector<float>& t) {
  double f = 0;
  for (const PairTerm& p : pairs) {
    double dot = 0;
    for (uint32_t k = 0; k < d; ++k) {
      const double sign = k < d - negative_dims ? 1.0 : -1.0;
      dot += sign * z[p.a * d + k] * z[p.b * d + k];
    }
    f += 0.5 * p.w * (p.y - dot) * (p.y - dot);
  }
  for (size_t i = 0; i < z.size(); ++i) {
    f += 0.5 * lambda * double{z[i]} * z[i];
    if (!t.empty()) f += 0.5 * mu * double{z[i] - t[i]} * (z[i] - t[i]);
  }
  return f;
}

void CheckGradient(double mu, bool with_target, uint32_t negative_dims = 0) {
  constexpr uint32_t kN = 12, kD = 4;
  Rng rng(42);
  std::vector<PairTerm> pairs;
  for (int e = 0; e < 30; ++e) {
    VertexId a = rng.UniformInt(kN), b = rng.UniformInt(kN);
    if (a == b) continue;
    const bool edge = e % 3 != 0;
    pairs.push_back({a, b, edge ? 1.0f : 0.0f,
                     edge ? static_cast<float>(0.5 + rng.Uniform()) : 1.0f});
  }
  std::vector<float> z(kN * kD), t;
  for (float& x : z) x = static_cast<float>(0.5 * rng.Normal());
  if (with_target) {
    t.resize(z.size());
    for (float& x : t) x = static_cast<float>(0.5 * rng.Normal());
  }
  const double lambda = 0.3;
  std::vector<float> grad;
  const double f =
      ObjectiveGradient(pairs, z, kD, negative_dims, lambda, mu, t, &grad);
  EXPECT_NEAR(f, Objective(pairs, z, kD, negative_dims, lambda, mu, t),
              1e-4 * std::abs(f));
  ASSERT_EQ(grad.size(), z.size());
  double max_error = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    std::vector<float> plus = z, minus = z;
    plus[i] += 1e-2f;
    minus[i] -= 1e-2f;
    const double numeric =
        (Objective(pairs, plus, kD, negative_dims, lambda, mu, t) -
         Objective(pairs, minus, kD, negative_dims, lambda, mu, t)) /
        (double{plus[i]} - minus[i]);
    const double error =
        std::abs(numeric - grad[i]) / std::max(1.0, std::abs(numeric));
    max_error = std::max(max_error, error);
    EXPECT_LT(error, 2e-3) << "coordinate " << i << ": analytic " << grad[i]
                           << ", finite difference " << numeric;
  }
  std::printf(
      "gradient check (mu=%.2f, target=%d, negative dims %u): max relative "
      "error %.2e\n",
      mu, with_target, negative_dims, max_error);
}

TEST(GraphObjective, GradientMatchesFiniteDifferences) {
  CheckGradient(0, false);
}

TEST(GraphObjective, ConsensusGradientMatchesFiniteDifferences) {
  CheckGradient(0.8, true);
}

TEST(GraphObjective, SignedGradientMatchesFiniteDifferences) {
  CheckGradient(0, false, /*negative_dims=*/2);
  CheckGradient(0.8, true, /*negative_dims=*/3);
}

TEST(GraphObjective, EvaluatorUsesTheSignature) {
  EdgeList list;
  list.edges.push_back({1, 2, 1.0f});
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(list);
  ASSERT_TRUE(g.ok());
  ObjectiveEvaluator eval(*g, 0, 7);
  // One edge, no negatives, λ = 0: the loss is ½(1 − score)², the score
  // z_1·z_2 plain or with the second coordinate counted negatively.
  std::vector<float> z = {1.0f, 0.5f, 1.0f, 0.5f};
  EXPECT_DOUBLE_EQ(eval.Evaluate(z, 2, 0, 0.0).loss, 0.5 * 0.25 * 0.25);
  z = {1.0f, 1.0f, 1.0f, 1.0f};
  EXPECT_DOUBLE_EQ(eval.Evaluate(z, 2, 0, 0.0).loss, 0.5);
  EXPECT_DOUBLE_EQ(eval.Evaluate(z, 2, 1, 0.0).loss, 0.5);
  z = {2.0f, 1.0f, 1.0f, 1.0f};  // plain 3, signed 1
  EXPECT_DOUBLE_EQ(eval.Evaluate(z, 2, 0, 0.0).loss, 2.0);
  EXPECT_DOUBLE_EQ(eval.Evaluate(z, 2, 1, 0.0).loss, 0.0);
}

TEST(GraphObjective, EvaluatorCountsEdgesAndNegatives) {
  EdgeList list;
  for (uint64_t i = 0; i < 20; ++i) list.edges.push_back({i, i + 1, 2.0f});
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(list);
  ASSERT_TRUE(g.ok());
  ObjectiveEvaluator eval(*g, 3, 7);
  size_t positives = 0;
  for (const PairTerm& p : eval.pairs()) {
    positives += p.y == 1;
    EXPECT_NE(p.a, p.b);
  }
  EXPECT_EQ(positives, 20u);
  EXPECT_GT(eval.pairs().size(), 20u + 40u);  // few draws hit an endpoint
  // All-zero vectors: every edge term is (w/2)·1², negatives 0.
  std::vector<float> z(g->num_vertices() * 2, 0.0f);
  ObjectiveEvaluator::Value v = eval.Evaluate(z, 2, 0, 1.0);
  EXPECT_DOUBLE_EQ(v.loss, 20.0);
  EXPECT_DOUBLE_EQ(v.regularization, 0.0);
}

}  // namespace
}  // namespace latentd
