#include "sampler/internal/row_masses.h"

#include <atomic>
#include <cmath>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"
#include "sampler/topic_table.h"

namespace latentd::internal {
namespace {

struct Walk {
  uint32_t n = 0;
  int64_t tokens = 0;
  std::vector<TopicId> topics;
  std::vector<double> running;
  std::vector<Count> counts;
};

Walk WalkRow(RowMassesFn fn, const std::vector<std::atomic<uint64_t>>& row,
             const std::vector<double>& coef, TopicId excluded) {
  const size_t room = row.size() + kRowMassesSlack;
  Walk w{0, -1, std::vector<TopicId>(room), std::vector<double>(room),
         std::vector<Count>(room)};
  w.n = fn(row.data(), static_cast<uint32_t>(row.size()), coef.data(), excluded,
           {w.topics.data(), w.running.data(), w.counts.data()}, &w.tokens);
  return w;
}

// A sparse row as the table lays it out: distinct topics in any order,
// some slots holes (count 0, possibly repeating a topic that has a count).
std::vector<std::atomic<uint64_t>> RandomRow(uint32_t size, TopicId K,
                                             Rng& rng) {
  std::vector<std::atomic<uint64_t>> row(size);
  std::vector<TopicId> order(K);
  for (TopicId k = 0; k < K; ++k) order[k] = k;
  for (TopicId k = K; k > 1; --k) {
    std::swap(order[k - 1], order[rng.UniformInt(k)]);
  }
  for (uint32_t i = 0; i < size; ++i) {
    const bool hole = rng.UniformInt(4) == 0;
    const TopicId k = hole ? order[rng.UniformInt(K)] : order[i];
    const uint64_t c =
        hole ? 0 : 1 + rng.UniformInt(rng.UniformInt(2) ? 3 : 900);
    row[i].store(c << 32 | k);
  }
  return row;
}

// The walk against its definition, for both implementations (the AVX-512
// one where the CPU has it), at every length up to 200 slots (every tail of
// the 8-slot steps), with the excluded topic present (with count 1: kept,
// no mass), present with its count, and absent: the same slots, topics,
// counts and token sum, running sums equal to 1e-12 and ascending.
TEST(RowMasses, KeepsPositiveSlotsWithTheirRunningMass) {
  const TopicId K = 400;
  Rng rng(11);
  std::vector<double> coef(K);
  for (double& c : coef) c = 1e-3 + rng.Uniform();
  std::vector<RowMassesFn> fns = {&RowMassesScalar};
  if (RowMassesAvx512 != nullptr) fns.push_back(RowMassesAvx512);
  for (uint32_t size = 0; size <= 200; ++size) {
    for (int variant = 0; variant < 3; ++variant) {
      std::vector<std::atomic<uint64_t>> row = RandomRow(size, K, rng);
      TopicId excluded = kNoExcludedTopic;
      if (variant < 2 && size > 0) {
        const uint32_t at = static_cast<uint32_t>(rng.UniformInt(size));
        excluded = TopicTable::RawTopic(row[at].load());
        if (variant == 0) row[at].store(uint64_t{1} << 32 | excluded);
      }
      // The definition.
      std::vector<TopicId> topics;
      std::vector<Count> counts;
      std::vector<double> running;
      int64_t tokens = 0;
      double q = 0;
      for (const auto& slot : row) {
        const uint64_t e = slot.load();
        const TopicId k = TopicTable::RawTopic(e);
        const Count c = TopicTable::RawCount(e);
        tokens += c;
        q += std::max(c - (k == excluded ? 1 : 0), 0) * coef[k];
        if (c > 0) {
          topics.push_back(k);
          counts.push_back(c);
          running.push_back(q);
        }
      }
      for (RowMassesFn fn : fns) {
        const char* name = fn == &RowMassesScalar ? "scalar" : "avx512";
        SCOPED_TRACE(testing::Message()
                     << name << " size " << size << " variant " << variant);
        const Walk w = WalkRow(fn, row, coef, excluded);
        ASSERT_EQ(w.n, topics.size());
        EXPECT_EQ(w.tokens, tokens);
        for (uint32_t i = 0; i < w.n; ++i) {
          ASSERT_EQ(w.topics[i], topics[i]) << "slot " << i;
          ASSERT_EQ(w.counts[i], counts[i]) << "slot " << i;
          ASSERT_NEAR(w.running[i], running[i], 1e-12 * (1 + running[i]))
              << "slot " << i;
          const double before = i > 0 ? w.running[i - 1] : 0.0;
          ASSERT_LE(before, w.running[i]) << "slot " << i;
          // A slot without mass (the excluded topic's only token) can
          // never be drawn: its interval is exactly empty.
          if (topics[i] == excluded && counts[i] == 1) {
            ASSERT_EQ(w.running[i], before) << "slot " << i;
          }
        }
      }
    }
  }
}

// Without a counts array only topics and masses are written.
TEST(RowMasses, CountsAreOptional) {
  Rng rng(5);
  std::vector<std::atomic<uint64_t>> row = RandomRow(77, 100, rng);
  std::vector<double> coef(100, 0.5);
  std::vector<TopicId> topics(77 + kRowMassesSlack);
  std::vector<double> running(77 + kRowMassesSlack);
  int64_t tokens = 0;
  const uint32_t n =
      RowMasses(row.data(), 77, coef.data(), kNoExcludedTopic,
                {topics.data(), running.data(), nullptr}, &tokens);
  const Walk with = WalkRow(&RowMassesScalar, row, coef, kNoExcludedTopic);
  ASSERT_EQ(n, with.n);
  EXPECT_EQ(tokens, with.tokens);
  EXPECT_NEAR(running[n - 1], 0.5 * static_cast<double>(tokens), 1e-9);
}

}  // namespace
}  // namespace latentd::internal
