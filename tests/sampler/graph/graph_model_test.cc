// The graph model file: round trip, damage detection, score and nearest.
#include "sampler/graph/graph_model.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/corpora/test_util.h"

namespace latentd {
namespace {

GraphModel Small(uint32_t negative_dims = 0) {
  GraphModel::Header h;
  h.dim = 2;
  h.negative_dims = negative_dims;
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

uint32_t FormatVersion(const std::string& bytes) {
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, 4);  // after the magic
  return version;
}

TEST(GraphModel, SignatureRoundTripsAndScoresWithTheSign) {
  testing::TempDir dir;
  // Without a signature the file is version 1, as before, for old readers.
  EXPECT_EQ(FormatVersion(Small().Serialize()), 1u);
  const GraphModel m = Small(/*negative_dims=*/1);
  EXPECT_EQ(FormatVersion(m.Serialize()), 2u);
  ASSERT_TRUE(m.Save(dir.File("graph.bin")).ok());
  absl::StatusOr<GraphModel> back = GraphModel::Load(dir.File("graph.bin"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->negative_dims(), 1u);
  EXPECT_EQ(back->vectors(), m.vectors());
  // z_20 = (0.9, 0.1), z_max = (0, 2): plain 0.2, second coordinate
  // negative −0.2; z_10 = (1, 0), z_20: 0.9 either way.
  EXPECT_NEAR(*Small().Score(20, 18446744073709551615ULL), 0.2, 1e-6);
  EXPECT_NEAR(*back->Score(20, 18446744073709551615ULL), -0.2, 1e-6);
  EXPECT_NEAR(*back->Score(10, 20), 0.9, 1e-6);
  // Similar vertices stay by the plain inner product.
  auto near = back->Nearest(20, 3);
  ASSERT_TRUE(near.ok());
  EXPECT_EQ((*near)[0].first, 10u);
  EXPECT_EQ((*near)[1].first, 18446744073709551615ULL);
  EXPECT_NEAR((*near)[1].second, 0.2, 1e-6);
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
