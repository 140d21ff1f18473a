#include "sampler/topic_table.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace latentd {
namespace {

TEST(TopicTable, AppliesDeltasAndKeepsTotals) {
  TopicTable table(4, 10);
  std::vector<WordTopicDelta> deltas = {{0, 3, 5}, {0, 7, 2}, {2, 3, 1}};
  ASSERT_TRUE(table.Apply(deltas).ok());
  EXPECT_EQ(table.Get(0, 3), 5);
  EXPECT_EQ(table.Get(0, 7), 2);
  EXPECT_EQ(table.Get(0, 1), 0);
  EXPECT_EQ(table.Get(2, 3), 1);
  EXPECT_EQ(table.TopicTotal(3), 6);
  EXPECT_EQ(table.TotalTokens(), 8);
  EXPECT_EQ(table.RowNonZeros(0), 2u);

  std::vector<WordTopicDelta> more = {{0, 3, -5}, {0, 1, 4}};
  ASSERT_TRUE(table.Apply(more).ok());
  EXPECT_EQ(table.Get(0, 3), 0);
  EXPECT_EQ(table.Get(0, 1), 4);
  EXPECT_EQ(table.RowNonZeros(0), 2u);
  EXPECT_EQ(table.TopicTotal(3), 1);
}

TEST(TopicTable, RejectsNegativeCountsAndLeavesTableUnchanged) {
  TopicTable table(2, 4);
  std::vector<WordTopicDelta> init = {{1, 2, 3}};
  ASSERT_TRUE(table.Apply(init).ok());
  std::vector<WordTopicDelta> bad = {{1, 0, 1}, {1, 2, -4}};
  absl::Status s = table.Apply(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(table.Get(1, 0), 0);
  EXPECT_EQ(table.Get(1, 2), 3);
  EXPECT_EQ(table.TotalTokens(), 3);
  std::vector<WordTopicDelta> out_of_range = {{5, 0, 1}};
  EXPECT_FALSE(table.Apply(out_of_range).ok());
  std::vector<WordTopicDelta> bad_topic = {{0, 4, 1}};
  EXPECT_FALSE(table.Apply(bad_topic).ok());
}

// Apply looks a few word groups ahead to prefetch their rows: a word or
// topic out of range further on is still refused by name, and the groups
// before it, dense rows among them, are left unchanged.
TEST(TopicTable, RejectsAnOutOfRangeGroupAfterValidOnes) {
  const TopicId K = 8;
  TopicTable table(20, K);
  std::vector<WordTopicDelta> init;
  for (WordId w = 0; w < 20; ++w) {
    for (TopicId k = 0; k < (w % 2 == 0 ? K : 2); ++k)
      init.push_back({w, k, 1});
  }
  ASSERT_TRUE(table.Apply(init).ok());
  ASSERT_TRUE(table.RowIsDense(0));
  const int64_t tokens = table.TotalTokens();
  for (const WordTopicDelta& last :
       {WordTopicDelta{1000000, 0, 1}, WordTopicDelta{19, 1000000, 1}}) {
    std::vector<WordTopicDelta> deltas;
    for (WordId w = 0; w < 12; ++w) deltas.push_back({w, 1, 1});
    deltas.push_back(last);
    absl::Status s = table.Apply(deltas);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(s.message().find("outside the table"), std::string::npos)
        << s.message();
    EXPECT_EQ(table.TotalTokens(), tokens);
    for (WordId w = 0; w < 12; ++w) EXPECT_EQ(table.Get(w, 1), 1);
  }
}

TEST(TopicTable, RowsGrowThenTurnDenseWithoutLosingCounts) {
  const TopicId K = 200;
  TopicTable table(1, K);
  for (TopicId k = 0; k < K; ++k) {
    std::vector<WordTopicDelta> d = {{0, k, static_cast<int32_t>(k + 1)}};
    ASSERT_TRUE(table.Apply(d).ok());
    if (k == 20) {
      EXPECT_FALSE(table.RowIsDense(0));
    }
  }
  EXPECT_TRUE(table.RowIsDense(0));
  for (TopicId k = 0; k < K; ++k) EXPECT_EQ(table.Get(0, k), int(k + 1));
  EXPECT_EQ(table.RowNonZeros(0), K);
  table.Quiesce();
  EXPECT_EQ(table.Get(0, 199), 200);
}

// ReserveRows allocates each row once: topics added up to the block's
// room (the reserved number and half as much again, as Quiesce lays rows
// out) land in the same block (no regrow, so no copy kept until
// Quiesce), a reservation past half of K is a dense row, a row already
// that large is left alone, and the counts are kept throughout.
TEST(TopicTable, ReservedRowsTakeTheirTopicsWithoutARegrow) {
  const TopicId K = 100;
  TopicTable table(4, K);
  ASSERT_TRUE(table.Apply(std::vector<WordTopicDelta>{{2, 7, 3}}).ok());
  const std::vector<uint32_t> reserve = {30, 51, 41, 0};
  table.ReserveRows(reserve);
  EXPECT_EQ(table.Get(2, 7), 3);
  EXPECT_FALSE(table.RowIsDense(0));
  EXPECT_TRUE(table.RowIsDense(1));
  EXPECT_EQ(table.Raw(3).size, 0u);  // nothing reserved, nothing allocated
  EXPECT_EQ(table.Raw(3).entries, nullptr);
  const auto* row0 = table.Raw(0).entries;
  const auto* row2 = table.Raw(2).entries;
  // Row 0, reserved for 30, has Quiesce's room for half as many again.
  for (TopicId k = 0; k < 45; ++k) {
    std::vector<WordTopicDelta> d = {{0, k, 1}, {2, k + 10, 2}};
    if (k >= 40) d.pop_back();  // row 2: 41 topics
    ASSERT_TRUE(table.Apply(d).ok());
    EXPECT_EQ(table.Raw(0).entries, row0) << k;
    EXPECT_EQ(table.Raw(2).entries, row2) << k;
  }
  EXPECT_EQ(table.RowNonZeros(0), 45u);
  EXPECT_EQ(table.RowNonZeros(2), 41u);
  EXPECT_EQ(table.Get(2, 7), 3);
  EXPECT_EQ(table.Get(2, 49), 2);
  // Smaller reservations leave rows as they are.
  table.ReserveRows(std::vector<uint32_t>{1, 1, 1, 0});
  EXPECT_EQ(table.Raw(2).entries, row2);
  EXPECT_TRUE(table.RowIsDense(1));
  // A topic past the reservation regrows the row, counts kept.
  ASSERT_TRUE(table.Apply(std::vector<WordTopicDelta>{{0, 90, 4}}).ok());
  EXPECT_NE(table.Raw(0).entries, row0);
  EXPECT_EQ(table.RowNonZeros(0), 46u);
  EXPECT_EQ(table.Get(0, 90), 4);
  EXPECT_EQ(table.TotalTokens(), 3 + 45 + 80 + 4);
}

// A reservation with room for later topics (the progressive start's two
// stages): the second reservation lays each row out again in its own
// block, sparse or dense, counts and their order kept, and the arena does
// not grow.
TEST(TopicTable, ARowReservedForLaterIsLaidOutInPlace) {
  const TopicId K = 100;
  TopicTable table(3, K);
  const std::vector<uint32_t> first = {10, 10, 5};
  const std::vector<uint32_t> later = {30, 80, 5};
  table.ReserveRows(first, later);
  // Topics in the order a pass adds them, not ascending.
  const TopicId order[] = {9, 3, 7, 1};
  for (WordId w = 0; w < 3; ++w) {
    for (TopicId k : order) {
      ASSERT_TRUE(table
                      .Apply(std::vector<WordTopicDelta>{
                          {w, k, static_cast<int32_t>(k + w + 1)}})
                      .ok());
    }
  }
  const size_t arena = table.ArenaBytes();
  const void* blocks[3];
  for (WordId w = 0; w < 3; ++w) blocks[w] = table.Raw(w).entries;
  table.ReleaseRetired();
  table.ReserveRows(later);
  // Row 0: sparse with room for 30 topics, in its block; row 1: past K/2,
  // dense in its block; row 2: as it was.
  EXPECT_EQ(table.Raw(0).entries, blocks[0]);
  EXPECT_FALSE(table.RowIsDense(0));
  ASSERT_TRUE(table.RowIsDense(1));
  EXPECT_EQ(static_cast<const void*>(table.Raw(1).counts), blocks[1]);
  EXPECT_EQ(table.Raw(2).entries, blocks[2]);
  if (arena != 0) {  // 0: blocks from operator new (AddressSanitizer)
    EXPECT_EQ(table.ArenaBytes(), arena);
  }
  const TopicTable::RawRow row0 = table.Raw(0);
  ASSERT_EQ(row0.size, 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(TopicTable::RawTopic(row0.entries[i].load()), order[i]);
  }
  for (WordId w = 0; w < 3; ++w) {
    for (TopicId k : order) {
      EXPECT_EQ(table.Get(w, k), static_cast<Count>(k + w + 1))
          << "word " << w << " topic " << k;
    }
    EXPECT_EQ(table.RowNonZeros(w), 4u);
  }
  // Room for 30: 26 more topics take no new block.
  for (TopicId k = 40; k < 66; ++k) {
    ASSERT_TRUE(table.Apply(std::vector<WordTopicDelta>{{0, k, 1}}).ok());
  }
  EXPECT_EQ(table.Raw(0).entries, blocks[0]);
}

// Rows that shrink leave the arena's chunks mostly free; Quiesce then moves
// the rows to fresh chunks and gives the old ones back, counts unchanged,
// and the table goes on growing and shrinking from there.
TEST(TopicTable, QuiesceGivesBackChunksThatShrunkRowsLeft) {
  const TopicId K = 100;
  const WordId V = 30000;  // dense rows of 416 bytes: 13 MB of chunks
  TopicTable table(V, K);
  auto apply_all = [&](TopicId from, TopicId to, int32_t delta) {
    std::vector<WordTopicDelta> deltas;
    for (WordId w = 0; w < V; ++w) {
      for (TopicId k = from; k < to; ++k) deltas.push_back({w, k, delta});
      if (deltas.size() >= 100000 || w + 1 == V) {
        ASSERT_TRUE(table.Apply(deltas).ok());
        deltas.clear();
      }
    }
  };
  apply_all(0, K, 2);
  table.Quiesce();
  const size_t full = table.ArenaBytes();
  if (full == 0) GTEST_SKIP() << "AddressSanitizer build: no arena chunks";
  EXPECT_GE(full, size_t{12} << 20);
  table.Quiesce();  // the rows fill their chunks: nothing moves
  EXPECT_EQ(table.ArenaBytes(), full);

  apply_all(3, K, -2);  // three topics a word left
  table.Quiesce();
  EXPECT_LT(table.ArenaBytes(), full / 4);
  EXPECT_EQ(table.TotalTokens(), int64_t{V} * 3 * 2);
  for (WordId w = 0; w < V; w += 97) {
    EXPECT_FALSE(table.RowIsDense(w));
    EXPECT_EQ(table.RowNonZeros(w), 3u) << w;
    for (TopicId k = 0; k < K; ++k) {
      ASSERT_EQ(table.Get(w, k), k < 3 ? 2 : 0) << w << " " << k;
    }
  }
  apply_all(0, K, 1);
  table.Quiesce();
  EXPECT_EQ(table.TotalTokens(), int64_t{V} * (3 * 2 + K));
  for (WordId w = 0; w < V; w += 97) {
    EXPECT_TRUE(table.RowIsDense(w));
    for (TopicId k = 0; k < K; ++k) {
      ASSERT_EQ(table.Get(w, k), k < 3 ? 3 : 1) << w << " " << k;
    }
  }
  EXPECT_LE(table.ArenaBytes(), full + (size_t{2} << 20));
}

TEST(TopicTable, ExpectedTopicsOfUniformDraws) {
  EXPECT_EQ(ExpectedTopicsOfUniformDraws(0, 100), 0u);
  EXPECT_EQ(ExpectedTopicsOfUniformDraws(1, 100), 1u);
  EXPECT_EQ(ExpectedTopicsOfUniformDraws(7, 1), 1u);
  EXPECT_EQ(ExpectedTopicsOfUniformDraws(2, 2), 2u);  // 1.5, rounded up
  // 100 (1 - 0.99^100) = 63.4.
  EXPECT_EQ(ExpectedTopicsOfUniformDraws(100, 100), 64u);
  EXPECT_EQ(ExpectedTopicsOfUniformDraws(1u << 30, 100), 100u);
}

// Raw() is what the vector walks read: a dense row as K 32-bit counts, a
// sparse one as packed entries, and Quiesce moves a row between the two.
TEST(TopicTable, RawRowsShowDenseCountsAndSparseEntries) {
  const TopicId K = 8;
  TopicTable table(2, K);
  std::vector<WordTopicDelta> fill;
  for (TopicId k = 0; k < K; k += 2) fill.push_back({0, k, int32_t(k + 3)});
  fill.push_back({0, 1, 7});  // word 0: 5 of 8 topics, past K/2: dense
  fill.push_back({1, 5, 9});  // word 1: one topic, sparse
  ASSERT_TRUE(table.Apply(fill).ok());

  TopicTable::RawRow dense = table.Raw(0);
  ASSERT_TRUE(dense.dense);
  ASSERT_NE(dense.counts, nullptr);
  EXPECT_EQ(dense.entries, nullptr);
  ASSERT_EQ(dense.size, K);
  for (TopicId k = 0; k < K; ++k) {
    EXPECT_EQ(dense.counts[k].load(), table.Get(0, k)) << "topic " << k;
  }
  EXPECT_EQ(dense.counts[1].load(), 7);
  EXPECT_EQ(dense.counts[3].load(), 0);

  const TopicTable::RawRow sparse = table.Raw(1);
  ASSERT_FALSE(sparse.dense);
  ASSERT_NE(sparse.entries, nullptr);
  EXPECT_EQ(sparse.counts, nullptr);
  ASSERT_EQ(sparse.size, 1u);
  EXPECT_EQ(TopicTable::RawTopic(sparse.entries[0].load()), 5u);
  EXPECT_EQ(TopicTable::RawCount(sparse.entries[0].load()), 9);

  // In place: a dense row's slot changes, a new topic lands in its slot.
  std::vector<WordTopicDelta> change = {{0, 1, -7}, {0, 3, 4}, {0, 6, -9}};
  ASSERT_TRUE(table.Apply(change).ok());
  dense = table.Raw(0);
  ASSERT_TRUE(dense.dense);
  EXPECT_EQ(dense.counts[1].load(), 0);
  EXPECT_EQ(dense.counts[3].load(), 4);
  EXPECT_EQ(dense.counts[6].load(), 0);
  EXPECT_EQ(table.RowNonZeros(0), 4u);  // topics 0, 2, 3, 4

  // Four of eight is not past K/2: Quiesce lays the row out sparse,
  // topics ascending, with the same counts.
  table.Quiesce();
  const TopicTable::RawRow after = table.Raw(0);
  ASSERT_FALSE(after.dense);
  ASSERT_EQ(after.size, 4u);
  const TopicId topics[] = {0, 2, 3, 4};
  const Count counts[] = {3, 5, 4, 7};
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(TopicTable::RawTopic(after.entries[i].load()), topics[i]);
    EXPECT_EQ(TopicTable::RawCount(after.entries[i].load()), counts[i]);
  }
}

// A sparse entry holds counts up to kMaxSparseCount (16 bits): a count
// that would pass it, in place, as a new topic or in a new row, turns the
// row dense with every count kept, and Quiesce keeps such a row dense
// until the count falls back.
TEST(TopicTable, ACountPastTheSparseLimitTurnsTheRowDense) {
  const TopicId K = 1000;
  constexpr Count kMax = TopicTable::kMaxSparseCount;
  TopicTable table(3, K);
  std::vector<WordTopicDelta> fill = {
      {0, 7, kMax}, {0, 9, 2}, {1, 3, 5}, {2, 4, kMax + 1}};
  ASSERT_TRUE(table.Apply(fill).ok());
  EXPECT_FALSE(table.RowIsDense(0));  // at the limit: still sparse
  EXPECT_FALSE(table.RowIsDense(1));
  EXPECT_TRUE(table.RowIsDense(2));  // a new row past it
  EXPECT_EQ(table.Get(2, 4), kMax + 1);

  // In place, and as a new topic of a sparse row.
  std::vector<WordTopicDelta> more = {{0, 7, 1}, {0, 11, 3}, {1, 8, kMax + 9}};
  ASSERT_TRUE(table.Apply(more).ok());
  for (WordId w : {0u, 1u}) EXPECT_TRUE(table.RowIsDense(w)) << "word " << w;
  EXPECT_EQ(table.Get(0, 7), kMax + 1);
  EXPECT_EQ(table.Get(0, 9), 2);
  EXPECT_EQ(table.Get(0, 11), 3);
  EXPECT_EQ(table.Get(1, 3), 5);
  EXPECT_EQ(table.Get(1, 8), kMax + 9);
  EXPECT_EQ(table.RowNonZeros(0), 3u);
  EXPECT_EQ(table.TopicTotal(7), kMax + 1);
  EXPECT_EQ(table.TopicTotal(8), kMax + 9);

  // Three topics of 1000 would be sparse, but for the large count.
  table.Quiesce();
  EXPECT_TRUE(table.RowIsDense(0));
  EXPECT_EQ(table.Get(0, 7), kMax + 1);
  // Back at the limit, the row is sparse again after Quiesce.
  std::vector<WordTopicDelta> less = {{0, 7, -1}};
  ASSERT_TRUE(table.Apply(less).ok());
  table.Quiesce();
  EXPECT_FALSE(table.RowIsDense(0));
  EXPECT_EQ(table.Get(0, 7), kMax);
  EXPECT_EQ(table.Get(0, 11), 3);
  int64_t sum = 0;
  table.ForEachNonZero(0, [&sum](TopicId, Count c) { sum += c; });
  EXPECT_EQ(sum, kMax + 2 + 3);
}

TEST(TopicTable, HolesAreReusedAndSqueezedOut) {
  TopicTable table(1, 1000);
  Rng rng(7);
  std::vector<Count> truth(1000, 0);
  for (int round = 0; round < 2000; ++round) {
    const TopicId k = static_cast<TopicId>(rng.UniformInt(300));
    int32_t delta = truth[k] > 0 && rng.UniformInt(2) == 0 ? -truth[k] : 1;
    std::vector<WordTopicDelta> d = {{0, k, delta}};
    ASSERT_TRUE(table.Apply(d).ok());
    truth[k] += delta;
    if (round % 500 == 0) table.Quiesce();
  }
  size_t nonzeros = 0;
  for (TopicId k = 0; k < 1000; ++k) {
    ASSERT_EQ(table.Get(0, k), truth[k]) << "topic " << k;
    nonzeros += truth[k] > 0;
  }
  EXPECT_EQ(table.RowNonZeros(0), nonzeros);
}

// Groups of one to eight deltas in sparse rows of 64 slots and more, where
// the count updater searches the row for each delta's slot and for the
// holes its new topics take (internal/row_search.h) instead of mapping it:
// raising, zeroing and adding topics in one group leaves the counts a
// map would. ctest also runs this binary with LATENTD_CPU=avx2 and
// =scalar, so each search this CPU has, and the map, are checked here.
TEST(TopicTable, FewDeltasInLongSparseRowsLandOnTheirTopics) {
  const TopicId K = 1000;  // rows stay sparse up to K/2 topics
  const WordId V = 6;
  TopicTable table(V, K);
  Rng rng(17);
  std::vector<std::vector<Count>> truth(V, std::vector<Count>(K, 0));
  // Rows of 70 to 220 topics, then groups that touch a few of them (at
  // most 470 topics a row in all: they stay sparse).
  std::vector<WordTopicDelta> init;
  for (WordId w = 0; w < V; ++w) {
    const TopicId width = static_cast<TopicId>(70 + 30 * w);
    for (TopicId k = 0; k < width; ++k) {
      const TopicId topic = static_cast<TopicId>((k * 7 + w) % K);
      init.push_back({w, topic, 1 + static_cast<int32_t>(rng.UniformInt(5))});
    }
  }
  std::sort(init.begin(), init.end(), [](const auto& a, const auto& b) {
    return a.word != b.word ? a.word < b.word : a.topic < b.topic;
  });
  ASSERT_TRUE(table.Apply(init).ok());
  for (const WordTopicDelta& d : init) truth[d.word][d.topic] += d.delta;
  for (int round = 0; round < 400; ++round) {
    std::vector<WordTopicDelta> group;
    for (WordId w = 0; w < V; ++w) {
      const size_t n = 1 + rng.UniformInt(8);
      std::vector<TopicId> topics;
      while (topics.size() < n) {
        const TopicId k = static_cast<TopicId>(rng.UniformInt(250));
        if (std::find(topics.begin(), topics.end(), k) == topics.end()) {
          topics.push_back(k);
        }
      }
      std::sort(topics.begin(), topics.end());
      for (TopicId k : topics) {
        const Count c = truth[w][k];
        // Zero a counted topic, lower or raise it, or add a new one.
        const uint64_t pick = rng.UniformInt(3);
        const int32_t delta = c > 0 && pick == 0   ? -static_cast<int32_t>(c)
                              : c > 1 && pick == 1 ? -1
                                                   : 2;
        group.push_back({w, k, delta});
      }
    }
    ASSERT_TRUE(table.Apply(group).ok()) << "round " << round;
    for (const WordTopicDelta& d : group) truth[d.word][d.topic] += d.delta;
    if (round % 100 == 99) table.Quiesce();
  }
  for (WordId w = 0; w < V; ++w) {
    size_t nonzeros = 0;
    for (TopicId k = 0; k < K; ++k) {
      ASSERT_EQ(table.Get(w, k), truth[w][k]) << "word " << w << " topic " << k;
      nonzeros += truth[w][k] > 0;
    }
    EXPECT_EQ(table.RowNonZeros(w), nonzeros) << "word " << w;
    EXPECT_FALSE(table.Raw(w).dense) << "word " << w;
  }
}

// Readers running against the single writer never see a negative count, an
// out-of-range topic, or a row sum above the topic totals' sum.
TEST(TopicTable, ConcurrentReadersSeeNoTornOrNegativeValues) {
  const TopicId K = 64;
  const WordId V = 16;
  TopicTable table(V, K);
  std::vector<std::vector<Count>> truth(V, std::vector<Count>(K, 0));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> bad{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        for (WordId w = 0; w < V; ++w) {
          table.ForEachNonZero(w, [&](TopicId k, Count c) {
            if (k >= K || c <= 0) bad.fetch_add(1);
          });
        }
      }
    });
  }
  Rng rng(11);
  for (int round = 0; round < 20000; ++round) {
    std::vector<WordTopicDelta> deltas;
    for (WordId w = 0; w < V; ++w) {
      const TopicId k = static_cast<TopicId>(rng.UniformInt(K));
      int32_t delta = (truth[w][k] > 0 && rng.UniformInt(2) == 1) ? -1 : 1;
      truth[w][k] += delta;
      deltas.push_back({w, k, delta});
    }
    ASSERT_TRUE(table.Apply(deltas).ok());
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  table.Quiesce();
  for (WordId w = 0; w < V; ++w) {
    for (TopicId k = 0; k < K; ++k) ASSERT_EQ(table.Get(w, k), truth[w][k]);
  }
}

}  // namespace
}  // namespace latentd
