#include "sampler/internal/row_search.h"

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"
#include "sampler/internal/dense_row_masses.h"
#include "sampler/internal/row_masses.h"
#include "sampler/sampling_kernel.h"
#include "sampler/topic_table.h"

namespace latentd::internal {
namespace {

// Each vector search this CPU has, by name; kFind* is one of them or the
// definition.
std::vector<std::pair<const char*, FindSlotFn>> SlotSearches() {
  std::vector<std::pair<const char*, FindSlotFn>> searches;
  if (FindSlotAvx512 != nullptr) searches.push_back({"avx512", FindSlotAvx512});
  if (FindSlotAvx2 != nullptr) searches.push_back({"avx2", FindSlotAvx2});
  return searches;
}
std::vector<std::pair<const char*, NextHoleFn>> HoleSearches() {
  std::vector<std::pair<const char*, NextHoleFn>> searches;
  if (NextHoleAvx512 != nullptr) {
    searches.push_back({"avx512", NextHoleAvx512});
  }
  if (NextHoleAvx2 != nullptr) searches.push_back({"avx2", NextHoleAvx2});
  return searches;
}

TEST(RowSearch, TheChosenSearchesAreTheCpusOrNone) {
  EXPECT_TRUE(kFindSlot == nullptr || kFindSlot == FindSlotAvx512 ||
              kFindSlot == FindSlotAvx2);
  EXPECT_TRUE(kNextHole == nullptr || kNextHole == NextHoleAvx512 ||
              kNextHole == NextHoleAvx2);
}

// Rows of every length up to a few vector steps, with holes (count 0) that
// repeat a counted topic before its slot, and slots past the row that hold
// the topic searched for (a search must not read them): each vector search
// finds what the definition finds, present or absent.
TEST(RowSearch, EachFindSlotFindsTheFirstCountedSlotAsTheDefinitionDoes) {
  const auto searches = SlotSearches();
  if (searches.empty()) GTEST_SKIP() << "this CPU has no AVX2 or AVX-512";
  Rng rng(11);
  constexpr uint32_t kGuard = 16;
  for (uint32_t size = 0; size <= 80; ++size) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<std::atomic<TopicTable::RawEntry>> row(size + kGuard);
      for (uint32_t i = 0; i < size; ++i) {
        const TopicId k = static_cast<TopicId>(rng.UniformInt(40));
        const Count c =
            rng.UniformInt(3) == 0
                ? 0
                : static_cast<Count>(
                      1 + rng.UniformInt(TopicTable::kMaxSparseCount));
        row[i].store(TopicTable::RawPack(c, k));
      }
      const TopicId wanted = static_cast<TopicId>(rng.UniformInt(41));
      for (uint32_t i = size; i < size + kGuard; ++i) {
        row[i].store(TopicTable::RawPack(1, wanted));
      }
      const int32_t expected = FindSlotScalar(row.data(), size, wanted);
      for (const auto& [name, find] : searches) {
        ASSERT_EQ(find(row.data(), size, wanted), expected)
            << name << ": size " << size << " topic " << wanted;
      }
      if (expected >= 0) {
        const TopicTable::RawEntry e = row[expected].load();
        EXPECT_EQ(TopicTable::RawTopic(e), wanted);
        EXPECT_GT(TopicTable::RawCount(e), 0);
      }
    }
  }
}

// The next hole from every starting slot, in rows of every length up to
// a few vector steps, with guard slots past the row that are holes (a
// search must not read them).
TEST(RowSearch, EachNextHoleFindsTheNextHoleAsTheDefinitionDoes) {
  const auto searches = HoleSearches();
  if (searches.empty()) GTEST_SKIP() << "this CPU has no AVX2 or AVX-512";
  Rng rng(12);
  constexpr uint32_t kGuard = 16;
  for (uint32_t size = 0; size <= 80; ++size) {
    for (int trial = 0; trial < 10; ++trial) {
      std::vector<std::atomic<TopicTable::RawEntry>> row(size + kGuard);
      // Rows from full (no hole) to mostly holes.
      const uint64_t hole_odds = 1 + rng.UniformInt(12);
      for (uint32_t i = 0; i < size; ++i) {
        const TopicId k = static_cast<TopicId>(rng.UniformInt(0x10000));
        const bool hole = trial > 0 && rng.UniformInt(hole_odds) == 0;
        row[i].store(TopicTable::RawPack(
            hole ? 0 : TopicTable::kMaxSparseCount - (i % 3), k));
      }
      for (uint32_t i = size; i < size + kGuard; ++i) {
        row[i].store(TopicTable::RawPack(0, 7));
      }
      for (uint32_t from = 0; from <= size + 1; ++from) {
        for (const auto& [name, next_hole] : searches) {
          ASSERT_EQ(next_hole(row.data(), size, from),
                    NextHoleScalar(row.data(), size, from))
              << name << ": size " << size << " from " << from;
        }
      }
    }
  }
}

// The top topic id and a count of 1 (the smallest entry with a count).
TEST(RowSearch, FindsTheLargestTopicAndACountOfOne) {
  std::vector<std::atomic<TopicTable::RawEntry>> row(70);
  for (uint32_t i = 0; i < 70; ++i)
    row[i].store(TopicTable::RawPack(0, 0xffff));
  row[69].store(TopicTable::RawPack(1, 0xffff));
  EXPECT_EQ(FindSlotScalar(row.data(), 70, 0xffff), 69);
  EXPECT_EQ(FindSlotScalar(row.data(), 69, 0xffff), -1);
  for (const auto& [name, find] : SlotSearches()) {
    EXPECT_EQ(find(row.data(), 70, 0xffff), 69) << name;
    EXPECT_EQ(find(row.data(), 69, 0xffff), -1) << name;
  }
}

// Topic arrays of every length up to a few vector steps, with repeated
// topics (the first is found) and guard entries past the array that hold
// the topic searched for (a search must not read them): each vector search
// this CPU has finds what the definition finds, and kFindTopic is one of
// them or the definition.
TEST(RowSearch, EachFindTopicFindsTheFirstMatchAsTheDefinitionDoes) {
  std::vector<std::pair<const char*, FindTopicFn>> searches = {
      {"kFindTopic", kFindTopic}};
  if (FindTopicAvx512 != nullptr) {
    searches.push_back({"avx512", FindTopicAvx512});
  }
  if (FindTopicAvx2 != nullptr) searches.push_back({"avx2", FindTopicAvx2});
  EXPECT_TRUE(kFindTopic == FindTopicAvx512 || kFindTopic == FindTopicAvx2 ||
              kFindTopic == &FindTopicScalar);
  Rng rng(13);
  constexpr uint32_t kGuard = 16;
  for (uint32_t size = 0; size <= 80; ++size) {
    for (int trial = 0; trial < 20; ++trial) {
      const TopicId range = trial % 2 == 0 ? 30 : 10'000;
      std::vector<TopicId> topics(size + kGuard);
      for (uint32_t i = 0; i < size; ++i) {
        topics[i] = static_cast<TopicId>(rng.UniformInt(range));
      }
      const TopicId wanted = static_cast<TopicId>(rng.UniformInt(range + 1));
      for (uint32_t i = size; i < size + kGuard; ++i) topics[i] = wanted;
      const int32_t expected = FindTopicScalar(topics.data(), size, wanted);
      if (expected >= 0) {
        ASSERT_EQ(topics[expected], wanted);
      }
      for (const auto& [name, find] : searches) {
        ASSERT_EQ(find(topics.data(), size, wanted), expected)
            << name << ": size " << size << " topic " << wanted;
      }
    }
  }
}

// The description the daemon logs names the path each part runs.
TEST(RowSearch, CpuPathsDescriptionNamesThePathsInUse) {
  const std::string paths = CpuPathsDescription();
  EXPECT_NE(paths.find(std::string("row walk ") + kRowMassesPath.name),
            std::string::npos)
      << paths;
  EXPECT_NE(paths.find(std::string("dense rows ") + kDenseRowMassesPath.name),
            std::string::npos)
      << paths;
  const char* search = kFindSlot == nullptr          ? "scalar"
                       : kFindSlot == FindSlotAvx512 ? "avx512"
                                                     : "avx2";
  EXPECT_NE(paths.find(std::string("row searches ") + search),
            std::string::npos)
      << paths;
}

}  // namespace
}  // namespace latentd::internal
