#include "sampler/internal/delta_combiner.h"

#include <map>
#include <utility>

#include "base/random.h"
#include "gtest/gtest.h"

namespace latentd::internal {
namespace {

std::vector<WordTopicDelta> Reference(const std::vector<TopicChange>& changes) {
  std::map<std::pair<WordId, TopicId>, int32_t> net;
  for (const TopicChange& c : changes) {
    --net[{c.word, c.old_topic}];
    ++net[{c.word, c.new_topic}];
  }
  std::vector<WordTopicDelta> out;
  for (const auto& [key, delta] : net) {
    if (delta != 0) out.push_back({key.first, key.second, delta});
  }
  return out;
}

void ExpectSame(const std::vector<WordTopicDelta>& got,
                const std::vector<WordTopicDelta>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].word, want[i].word) << i;
    EXPECT_EQ(got[i].topic, want[i].topic) << i;
    EXPECT_EQ(got[i].delta, want[i].delta) << i;
  }
}

TEST(DeltaCombiner, MatchesAMapOverManyShapes) {
  DeltaCombiner combiner;
  std::vector<WordTopicDelta> deltas;
  Rng rng(7);
  // (vocabulary, topics): key widths from 2 bits to 37 (several passes).
  const std::pair<uint32_t, uint32_t> shapes[] = {
      {1, 1}, {3, 2}, {100, 10}, {60000, 100}, {5, 65536}, {1u << 20, 1000}};
  for (const auto& [vocab, topics] : shapes) {
    for (size_t n : {0, 1, 2, 50, 20000}) {
      std::vector<TopicChange> changes;
      for (size_t i = 0; i < n; ++i) {
        // Few distinct words so that pairs cancel and repeat.
        const WordId w =
            static_cast<WordId>(rng.UniformInt(std::min(vocab, 64u)) *
                                (vocab / std::min(vocab, 64u)));
        changes.push_back({w, static_cast<TopicId>(rng.UniformInt(topics)),
                           static_cast<TopicId>(rng.UniformInt(topics))});
      }
      combiner.Combine(changes, &deltas);
      ExpectSame(deltas, Reference(changes));
    }
  }
}

TEST(DeltaCombiner, ChangesThatCancelLeaveNothing) {
  DeltaCombiner combiner;
  std::vector<WordTopicDelta> deltas = {{1, 1, 1}};
  combiner.Combine({{5, 2, 3}, {5, 3, 2}, {9, 4, 4}}, &deltas);
  EXPECT_TRUE(deltas.empty());
}

}  // namespace
}  // namespace latentd::internal
