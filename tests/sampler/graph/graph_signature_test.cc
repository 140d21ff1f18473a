// The signature (negative coordinates) on a bipartite block model: two
// users of one block are never linked, but their vectors are alike, so a
// plain inner product scores them like a user and an item of the block;
// with half the coordinates negative the trainer learns to score them low.
#include <vector>

#include "gtest/gtest.h"
#include "sampler/graph/graph_trainer.h"
#include "sampler/graph/link_eval.h"
#include "tests/sampler/graph/graph_test_util.h"

namespace latentd {
namespace {

constexpr uint32_t kUsers = 600, kItems = 300, kBlocks = 6;

// The held-out edges against same-side pairs of one block (user–user or
// item–item), the non-edges a Gram matrix cannot tell from edges.
LinkSplit SameSideSplit(const LinkSplit& split) {
  LinkSplit out;
  out.positives = split.positives;
  const std::vector<VertexKey>& keys = split.train.keys();
  std::vector<VertexId> users, items;
  for (VertexId v = 0; v < keys.size(); ++v) {
    (keys[v] < kUsers ? users : items).push_back(v);
  }
  auto block = [&](VertexId v) {
    return keys[v] < kUsers ? keys[v] % kBlocks
                            : (keys[v] - kUsers) / (kItems / kBlocks);
  };
  for (const std::vector<VertexId>* side : {&users, &items}) {
    for (size_t i = 0; i < side->size(); i += 7) {
      for (size_t j = i + 1; j < side->size(); j += 13) {
        const VertexId a = (*side)[i], b = (*side)[j];
        if (block(a) == block(b)) out.negatives.push_back({a, b});
      }
    }
  }
  return out;
}

double SameSideAuc(const LinkSplit& split, const LinkSplit& same_side,
                   uint32_t negative_dims) {
  GraphTrainerOptions o;
  o.dim = 8;
  o.negative_dims = negative_dims;
  o.learning_rate = 0.3;
  auto trainer = GraphTrainer::Create(split.train, o);
  EXPECT_TRUE(trainer.ok()) << trainer.status();
  for (int e = 0; e < 40; ++e) EXPECT_TRUE((*trainer)->RunEpoch().ok());
  const double auc = EvaluateEmbedding(same_side, (*trainer)->embeddings(),
                                       o.dim, negative_dims)
                         .auc;
  const double all =
      EvaluateEmbedding(split, (*trainer)->embeddings(), o.dim, negative_dims)
          .auc;
  std::printf("negative dims %u: AUC %.3f, against same-side pairs %.3f\n",
              negative_dims, all, auc);
  return auc;
}

TEST(GraphSignature, BeatsThePlainProductOnSameSidePairs) {
  absl::StatusOr<GraphData> g = GraphData::FromEdgeList(
      testing::BipartiteBlocks(kUsers, kItems, kBlocks, 6, 3));
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<LinkSplit> split = SplitHeldout(*g, 0.1, 1);
  ASSERT_TRUE(split.ok()) << split.status();
  const LinkSplit same_side = SameSideSplit(*split);
  ASSERT_GT(same_side.negatives.size(), 300u);
  const double plain = SameSideAuc(*split, same_side, 0);
  const double signed_auc = SameSideAuc(*split, same_side, 4);
  EXPECT_GT(signed_auc, plain + 0.1);
  EXPECT_GT(signed_auc, 0.8);
}

}  // namespace
}  // namespace latentd
