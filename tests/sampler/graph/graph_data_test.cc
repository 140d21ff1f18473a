// Vertex numbering and the held-out split protocol.
#include "sampler/graph/graph_data.h"

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"

namespace latentd {
namespace {

GraphData Ring(uint64_t n, uint64_t chord) {
  EdgeList list;
  for (uint64_t i = 0; i < n; ++i) {
    list.edges.push_back({i * 1000, ((i + 1) % n) * 1000, 1.0f});
    list.edges.push_back({i * 1000, ((i + chord) % n) * 1000, 1.0f});
  }
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(list);
  EXPECT_TRUE(g.ok());
  return *g;
}

TEST(GraphData, NumbersVerticesInOrderOfFirstAppearance) {
  EdgeList list;
  list.edges = {{900, 5, 1.0f}, {5, 18446744073709551615ULL, 3.0f}};
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(list);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->keys(),
            (std::vector<VertexKey>{900, 5, 18446744073709551615ULL}));
  EXPECT_EQ(g->Find(5), 1u);
  EXPECT_FALSE(g->Find(6).has_value());
  EXPECT_TRUE(g->HasEdge(2, 1));
  EXPECT_FALSE(g->HasEdge(0, 2));
  EXPECT_EQ(g->Degrees(), (std::vector<uint32_t>{1, 2, 1}));
  EXPECT_EQ(g->edges()[1].weight, 3.0f);
}

TEST(GraphData, EmptyGraphIsAnError) {
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(EdgeList{});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("no edges"), std::string::npos);
}

TEST(GraphData, SplitHoldsOutPositivesAndNonEdgeNegatives) {
  const GraphData g = Ring(200, 7);
  absl::StatusOr<LinkSplit> split = SplitHeldout(g, 0.1, 3);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->positives.size(), 40u);
  EXPECT_EQ(split->negatives.size(), 40u);
  EXPECT_EQ(split->train.num_edges() + 40, g.num_edges());
  EXPECT_EQ(split->train.num_vertices(), g.num_vertices());
  // Every vertex keeps a training edge; held-out pairs are not trained on.
  for (uint32_t d : split->train.Degrees()) EXPECT_GE(d, 1u);
  for (const VertexPair& p : split->positives) {
    EXPECT_TRUE(g.HasEdge(p.first, p.second));
    EXPECT_FALSE(split->train.HasEdge(p.first, p.second));
  }
  absl::flat_hash_set<std::pair<VertexId, VertexId>> seen;
  for (const VertexPair& p : split->negatives) {
    EXPECT_NE(p.first, p.second);
    EXPECT_FALSE(g.HasEdge(p.first, p.second));
    EXPECT_TRUE(seen.insert(p).second);
  }
  // Seeded: the same split again.
  absl::StatusOr<LinkSplit> again = SplitHeldout(g, 0.1, 3);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->positives, split->positives);
  EXPECT_EQ(again->negatives, split->negatives);
}

TEST(GraphData, SplitNeverStrandsAVertex) {
  // A star: removing any edge strands a leaf, so nothing is held out.
  EdgeList list;
  for (uint64_t i = 1; i <= 30; ++i) list.edges.push_back({0, i, 1.0f});
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(list);
  ASSERT_TRUE(g.ok());
  absl::StatusOr<LinkSplit> split = SplitHeldout(*g, 0.2, 1);
  ASSERT_TRUE(split.ok());
  EXPECT_TRUE(split->positives.empty());
  EXPECT_EQ(split->train.num_edges(), 30u);
}

// Regression: with a directed list that has both (a, b) and (b, a), the
// count of non-edges subtracted edges instead of distinct pairs and wrapped
// around, so a graph with no non-edge left passed the check and the
// negatives' draw never ended.
TEST(GraphData, SplitCountsDirectedPairsOnceRegression) {
  EdgeList list;  // the complete directed graph on 4 vertices: 12 edges
  for (uint64_t a = 0; a < 4; ++a) {
    for (uint64_t b = 0; b < 4; ++b) {
      if (a != b) list.edges.push_back({a, b, 1.0f});
    }
  }
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(list);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->num_edges(), 12u);
  EXPECT_EQ(g->num_pairs(), 6u);
  absl::StatusOr<LinkSplit> split = SplitHeldout(*g, 0.25, 1);
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(split.status().message().find("too few non-edges (0)"),
            std::string::npos)
      << split.status();

  // With non-edges left, the negatives are drawn from them only.
  list.edges.push_back({4, 5, 1.0f});
  list.edges.push_back({5, 4, 1.0f});
  list.edges.push_back({0, 4, 1.0f});
  g = GraphData::FromEdgeList(list);
  ASSERT_TRUE(g.ok());
  split = SplitHeldout(*g, 0.2, 2);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->negatives.size(), split->positives.size());
  for (const VertexPair& p : split->negatives) {
    EXPECT_FALSE(g->HasEdge(p.first, p.second));
  }
}

TEST(GraphData, SplitRejectsBadFractions) {
  const GraphData g = Ring(20, 3);
  for (double f : {0.0, 1.0, -0.1, 2.0}) {
    EXPECT_EQ(SplitHeldout(g, f, 1).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace latentd
