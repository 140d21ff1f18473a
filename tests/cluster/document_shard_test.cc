// DocumentShard: how the nodes of a cluster split one corpus file.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/cluster/cluster_node.h"

namespace latentd {
namespace {

TEST(DocumentShard, ByIndexIsThePositionModuloShards) {
  for (uint64_t i = 0; i < 20; ++i) {
    EXPECT_EQ(DocumentShard(ShardBy::kIndex, i, "ignored", 3), i % 3);
  }
}

TEST(DocumentShard, ByIdFollowsTheIdNotThePosition) {
  // The same id lands on the same shard wherever it is in the file.
  for (int d = 0; d < 100; ++d) {
    const std::string id = absl::StrCat("doc-", d);
    const uint32_t s = DocumentShard(ShardBy::kId, 0, id, 5);
    for (uint64_t i : {1u, 17u, 1000u}) {
      EXPECT_EQ(DocumentShard(ShardBy::kId, i, id, 5), s) << id;
    }
  }
  // And it is not the position in disguise: consecutive line numbers do not
  // cycle through the shards.
  int cyclic = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    cyclic += DocumentShard(ShardBy::kId, i, absl::StrCat(i + 1), 3) ==
              DocumentShard(ShardBy::kIndex, i, "", 3);
  }
  EXPECT_LT(cyclic, 200);
}

TEST(DocumentShard, ByIdIsBalanced) {
  constexpr uint32_t kShards = 7;
  constexpr int kDocs = 70000;
  std::vector<int> per_shard(kShards, 0);
  for (int d = 1; d <= kDocs; ++d) {
    const uint32_t s = DocumentShard(ShardBy::kId, 0, absl::StrCat(d), kShards);
    ASSERT_LT(s, kShards);
    ++per_shard[s];
  }
  // 10,000 expected per shard; the standard deviation is about 93.
  for (uint32_t s = 0; s < kShards; ++s) {
    EXPECT_NEAR(per_shard[s], kDocs / kShards, 600) << "shard " << s;
  }
}

TEST(DocumentShard, OneShardTakesEverything) {
  EXPECT_EQ(DocumentShard(ShardBy::kId, 5, "x", 1), 0u);
  EXPECT_EQ(DocumentShard(ShardBy::kIndex, 5, "x", 1), 0u);
}

}  // namespace
}  // namespace latentd
