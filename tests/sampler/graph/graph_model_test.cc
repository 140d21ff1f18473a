// The graph model file: round trip, damage detection, score and nearest.
#include "sampler/graph/graph_model.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/corpora/test_util.h"

namespace latentd {
namespace {

GraphModel Small() {
  GraphModel::Header h;
  h.dim = 2;
  h.epoch = 7;
  h.seed = 3;
  h.negatives = 5;
  h.lambda = 0.5;
  return GraphModel(h, {10, 20, 30, 18446744073709551615ULL},
                    {1, 0, 0.9f, 0.1f, -1, 0, 0, 2});
}

TEST(GraphModel, SavesAndLoadsExactly) {
  testing::TempDir dir;
  const GraphModel m = Small();
  ASSERT_TRUE(m.Save(dir.File("graph.bin")).ok());
  absl::StatusOr<GraphModel> back = GraphModel::Load(dir.File("graph.bin"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->keys(), m.keys());
  EXPECT_EQ(back->vectors(), m.vectors());
  EXPECT_EQ(back->header().epoch, 7u);
  EXPECT_EQ(back->header().negatives, 5);
  EXPECT_EQ(back->header().lambda, 0.5);
}

TEST(GraphModel, DamagedFilesAreErrorsNamingThePath) {
  testing::TempDir dir;
  const std::string good = Small().Serialize();
  std::string flipped = good;
  flipped[40] ^= 1;
  const std::string path = dir.File("graph.bin");
  struct Case {
    std::string bytes;
    absl::StatusCode code;
    std::string what;
  } cases[] = {
      {flipped, absl::StatusCode::kDataLoss, "checksum mismatch"},
      {good.substr(0, good.size() - 3), absl::StatusCode::kDataLoss,
       "checksum mismatch"},
      {"LTDMODEL" + good.substr(8), absl::StatusCode::kInvalidArgument,
       "not a latentd graph model"},
      {"", absl::StatusCode::kInvalidArgument, "bad magic"},
  };
  for (const Case& c : cases) {
    testing::WriteFile(path, c.bytes);
    absl::StatusOr<GraphModel> m = GraphModel::Load(path);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), c.code) << m.status();
    EXPECT_NE(m.status().message().find(c.what), std::string::npos)
        << m.status();
    EXPECT_NE(m.status().message().find(path), std::string::npos) << m.status();
  }
  EXPECT_EQ(GraphModel::Load(dir.File("none")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(GraphModel, ScoresAndNearestByInnerProduct) {
  const GraphModel m = Small();
  absl::StatusOr<double> s = m.Score(10, 20);
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(*s, 0.9, 1e-6);
  absl::StatusOr<double> unknown = m.Score(10, 11);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("unknown vertex 11"),
            std::string::npos);
  auto near = m.Nearest(10, 2);
  ASSERT_TRUE(near.ok());
  ASSERT_EQ(near->size(), 2u);
  EXPECT_EQ((*near)[0].first, 20u);
  EXPECT_EQ((*near)[1].first, 18446744073709551615ULL);  // score 0 > -1
  EXPECT_EQ(m.Nearest(10, 100)->size(), 3u);
  EXPECT_EQ(m.Nearest(99, 1).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace latentd
