// ROC AUC / average precision and the link-prediction baselines.
#include "sampler/graph/link_eval.h"

#include <cmath>

#include "gtest/gtest.h"

namespace latentd {
namespace {

TEST(LinkEval, AucAndAveragePrecisionOfKnownRankings) {
  const std::vector<double> hi = {3, 4}, lo = {1, 2};
  EXPECT_DOUBLE_EQ(ScoreRanking(hi, lo).auc, 1.0);
  EXPECT_DOUBLE_EQ(ScoreRanking(hi, lo).average_precision, 1.0);
  EXPECT_DOUBLE_EQ(ScoreRanking(lo, hi).auc, 0.0);
  // Ranking n,p,n,p from the top: AP = (1/2 + 2/4) / 2.
  EXPECT_DOUBLE_EQ(
      ScoreRanking(std::vector<double>{3, 1}, std::vector<double>{4, 2})
          .average_precision,
      0.5);
  const std::vector<double> same = {1, 1};
  EXPECT_DOUBLE_EQ(ScoreRanking(same, same).auc, 0.5);
  // A tie counts against AP: n,n,p,p from the top, (1/3 + 2/4) / 2. (It
  // counted for it, p,p,n,n, 1.0: common neighbours, which scores most
  // pairs 0, had an AP of 0.99 at an AUC of 0.5.)
  EXPECT_DOUBLE_EQ(ScoreRanking(same, same).average_precision,
                   (1.0 / 3 + 2.0 / 4) / 2);
  EXPECT_DOUBLE_EQ(
      ScoreRanking(std::vector<double>{0, 0, 0}, std::vector<double>{0, 0, 0})
          .average_precision,
      (1.0 / 4 + 2.0 / 5 + 3.0 / 6) / 3);
  // One positive above one of two negatives.
  EXPECT_DOUBLE_EQ(
      ScoreRanking(std::vector<double>{2}, std::vector<double>{1, 3}).auc, 0.5);
}

GraphData TwoCliques(int size) {
  EdgeList list;
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < size; ++i) {
      for (int j = i + 1; j < size; ++j) {
        list.edges.push_back(
            {uint64_t(c * size + i), uint64_t(c * size + j), 1.0f});
      }
    }
  }
  list.edges.push_back({0, uint64_t(size), 1.0f});  // one bridge
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(list);
  EXPECT_TRUE(g.ok());
  return *g;
}

TEST(LinkEval, NeighborHeuristics) {
  // Path 0-1-2 and triangle 1-2-3: N(0) = {1}, N(3) = {1, 2}.
  EdgeList list;
  list.edges = {{0, 1, 1.0f}, {1, 2, 1.0f}, {1, 3, 1.0f}, {2, 3, 1.0f}};
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(list);
  ASSERT_TRUE(g.ok());
  NeighborIndex index(*g);
  const VertexId v0 = *g->Find(0), v3 = *g->Find(3), v1 = *g->Find(1);
  EXPECT_EQ(index.CommonNeighbors(v0, v3), 1.0);  // vertex 1, degree 3
  EXPECT_NEAR(index.AdamicAdar(v0, v3), 1 / std::log(3.0), 1e-12);
  EXPECT_EQ(index.CommonNeighbors(v1, v0), 0.0);
}

TEST(LinkEval, TruncatedSvdFindsTheLeadingEigenpairs) {
  // K_6 alone: the top eigenvalue is 5, the eigenvector constant.
  EdgeList list;
  for (uint64_t i = 0; i < 6; ++i)
    for (uint64_t j = i + 1; j < 6; ++j) list.edges.push_back({i, j, 1.0f});
  list.edges.push_back({6, 7, 1.0f});  // a separate edge: eigenvalues ±1
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(list);
  ASSERT_TRUE(g.ok());
  absl::StatusOr<SpectralEmbedding> svd = TruncatedSvd(*g, 1, 30, 1);
  ASSERT_TRUE(svd.ok()) << svd.status();
  EXPECT_NEAR(svd->values[0], 5.0, 1e-6);
  EXPECT_NEAR(svd->Score(0, 1), 1.0 * 5 / 6, 1e-6);  // 5 · (1/√6)²
  EXPECT_NEAR(svd->Score(6, 7), 0.0, 1e-6);
  // Two cliques: rank 2 separates them.
  const GraphData two = TwoCliques(8);
  absl::StatusOr<SpectralEmbedding> s2 = TruncatedSvd(two, 2, 50, 1);
  ASSERT_TRUE(s2.ok());
  EXPECT_GT(s2->Score(*two.Find(1), *two.Find(2)),
            s2->Score(*two.Find(1), *two.Find(9)) + 0.5);
  EXPECT_EQ(TruncatedSvd(two, 0, 5, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TruncatedSvd(two, 16, 5, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace latentd
