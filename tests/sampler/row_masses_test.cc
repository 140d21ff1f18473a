#include "sampler/internal/row_masses.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <utility>
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

// A row's `size` slots, then kGuard slots that a walk must not read: each
// has a count, so a walk that reads one keeps it.
constexpr uint32_t kGuard = 8;
struct Row {
  std::vector<std::atomic<TopicTable::RawEntry>> slots;
  uint32_t size = 0;
};

Walk WalkRow(RowMassesFn fn, const Row& row, const std::vector<double>& coef,
             TopicId excluded) {
  const size_t room = row.size + kRowMassesSlack;
  Walk w{0, -1, std::vector<TopicId>(room), std::vector<double>(room),
         std::vector<Count>(room)};
  w.n = fn(row.slots.data(), row.size, coef.data(), excluded,
           {w.topics.data(), w.running.data(), w.counts.data()}, &w.tokens);
  return w;
}

// A sparse row as the table lays it out: distinct topics in any order,
// some slots holes (count 0, possibly repeating a topic that has a count).
Row RandomRow(uint32_t size, TopicId K, Rng& rng) {
  Row row{std::vector<std::atomic<TopicTable::RawEntry>>(size + kGuard), size};
  std::vector<TopicId> order(K);
  for (TopicId k = 0; k < K; ++k) order[k] = k;
  for (TopicId k = K; k > 1; --k) {
    std::swap(order[k - 1], order[rng.UniformInt(k)]);
  }
  for (uint32_t i = 0; i < size; ++i) {
    const bool hole = rng.UniformInt(4) == 0;
    const TopicId k = hole ? order[rng.UniformInt(K)] : order[i];
    // Small counts, larger ones, and now and then the largest a sparse
    // slot holds (a lane's token sum must not wrap).
    const uint32_t kind = static_cast<uint32_t>(rng.UniformInt(16));
    const Count c =
        hole ? 0
        : kind == 0
            ? TopicTable::kMaxSparseCount
            : static_cast<Count>(1 + rng.UniformInt(kind % 2 ? 3 : 900));
    row.slots[i].store(TopicTable::RawPack(c, k));
  }
  for (uint32_t i = size; i < size + kGuard; ++i) {
    row.slots[i].store(TopicTable::RawPack(5, order[0]));
  }
  return row;
}

// A test row: RandomRow with, by variant, the excluded topic present with
// count 1 (kept, no mass) (0), present with its count (1), absent (2), or
// every slot a hole (3, excluded absent).
struct Case {
  Row row;
  TopicId excluded = kNoExcludedTopic;
};
constexpr int kVariants = 4;
Case MakeCase(uint32_t size, int variant, TopicId K, Rng& rng) {
  Case c{RandomRow(size, K, rng)};
  if (variant == 3) {
    for (uint32_t i = 0; i < size; ++i) {
      c.row.slots[i].store(TopicTable::RawTopic(c.row.slots[i].load()));
    }
  } else if (variant < 2 && size > 0) {
    const uint32_t at = static_cast<uint32_t>(rng.UniformInt(size));
    c.excluded = TopicTable::RawTopic(c.row.slots[at].load());
    if (variant == 0) c.row.slots[at].store(TopicTable::RawPack(1, c.excluded));
  }
  return c;
}

// The walk by its definition, one slot at a time in slot order.
Walk Definition(const Case& c, const std::vector<double>& coef) {
  Walk w;
  double q = 0;
  for (uint32_t i = 0; i < c.row.size; ++i) {
    const TopicTable::RawEntry e = c.row.slots[i].load();
    const TopicId k = TopicTable::RawTopic(e);
    const Count count = TopicTable::RawCount(e);
    w.tokens += count;
    q += std::max(count - (k == c.excluded ? 1 : 0), 0) * coef[k];
    if (count > 0) {
      w.topics.push_back(k);
      w.counts.push_back(count);
      w.running.push_back(q);
      ++w.n;
    }
  }
  return w;
}

// `got` against `want`: the same slots, topics, counts and token sum,
// running sums equal to a relative 1e-12 and ascending, and a slot without
// mass (the excluded topic's only token) adding exactly nothing, so that it
// can never be drawn.
void ExpectSameWalk(const Walk& want, const Walk& got, TopicId excluded) {
  ASSERT_EQ(got.n, want.n);
  EXPECT_EQ(got.tokens, want.tokens);
  for (uint32_t i = 0; i < got.n; ++i) {
    ASSERT_EQ(got.topics[i], want.topics[i]) << "slot " << i;
    ASSERT_EQ(got.counts[i], want.counts[i]) << "slot " << i;
    ASSERT_NEAR(got.running[i], want.running[i],
                1e-12 * (1 + std::abs(want.running[i])))
        << "slot " << i;
    const double before = i > 0 ? got.running[i - 1] : 0.0;
    ASSERT_LE(before, got.running[i]) << "slot " << i;
    if (want.topics[i] == excluded && want.counts[i] == 1) {
      ASSERT_EQ(got.running[i], before) << "slot " << i;
    }
  }
}

// Every implementation the CPU has against the definition, at every length
// up to 200 slots (every tail of the 8-slot steps).
TEST(RowMasses, KeepsPositiveSlotsWithTheirRunningMass) {
  const TopicId K = 400;
  Rng rng(11);
  std::vector<double> coef(K);
  for (double& c : coef) c = 1e-3 + rng.Uniform();
  std::vector<std::pair<const char*, RowMassesFn>> fns = {
      {"scalar", &RowMassesScalar}};
  if (RowMassesAvx512 != nullptr) fns.emplace_back("avx512", RowMassesAvx512);
  if (RowMassesAvx2 != nullptr) fns.emplace_back("avx2", RowMassesAvx2);
  for (uint32_t size = 0; size <= 200; ++size) {
    for (int variant = 0; variant < kVariants; ++variant) {
      const Case c = MakeCase(size, variant, K, rng);
      const Walk want = Definition(c, coef);
      for (const auto& [name, fn] : fns) {
        SCOPED_TRACE(testing::Message()
                     << name << " size " << size << " variant " << variant);
        ExpectSameWalk(want, WalkRow(fn, c.row, coef, c.excluded), c.excluded);
      }
    }
  }
}

// The AVX2 walk against the scalar one on random rows of 0 to 300 slots
// (K = 1000, so rows of news20's lengths), 20 rows per length and variant.
TEST(RowMasses, Avx2MatchesScalar) {
  if (RowMassesAvx2 == nullptr) GTEST_SKIP() << "this CPU has no AVX2";
  const TopicId K = 1000;
  Rng rng(23);
  std::vector<double> coef(K);
  for (double& c : coef) c = rng.Uniform() < 0.1 ? 0.0 : 1e-6 + rng.Uniform();
  for (uint32_t size = 0; size <= 300; ++size) {
    for (int rep = 0; rep < 20; ++rep) {
      const int variant = rep % kVariants;
      const Case c = MakeCase(size, variant, K, rng);
      SCOPED_TRACE(testing::Message() << "size " << size << " variant "
                                      << variant << " rep " << rep);
      const Walk scalar = WalkRow(&RowMassesScalar, c.row, coef, c.excluded);
      const Walk avx2 = WalkRow(RowMassesAvx2, c.row, coef, c.excluded);
      ExpectSameWalk(scalar, avx2, c.excluded);
      // A slot whose coefficient is 0 adds exactly nothing either.
      for (uint32_t i = 0; i < avx2.n; ++i) {
        if (coef[avx2.topics[i]] == 0.0) {
          ASSERT_EQ(avx2.running[i], i > 0 ? avx2.running[i - 1] : 0.0);
        }
      }
    }
  }
}

// LATENTD_CPU chooses the path: scalar; AVX2 where the CPU has it; by
// default (unset or avx512) AVX-512 where the CPU has it, else AVX2 only if
// kRowMassesAvx2ByDefault; an unknown value gives the scalar path.
TEST(RowMasses, CpuVariableChoosesThePath) {
  const RowMassesPath scalar = ChooseRowMassesPath("scalar");
  EXPECT_TRUE(scalar.fn == nullptr);
  EXPECT_STREQ(scalar.name, "scalar");
  EXPECT_TRUE(ChooseRowMassesPath("sse9").fn == nullptr);
  const RowMassesPath avx2 = ChooseRowMassesPath("avx2");
  EXPECT_EQ(avx2.fn, RowMassesAvx2);
  EXPECT_STREQ(avx2.name, RowMassesAvx2 != nullptr ? "avx2" : "scalar");
  const RowMassesFn by_default = RowMassesAvx512 != nullptr ? RowMassesAvx512
                                 : kRowMassesAvx2ByDefault  ? RowMassesAvx2
                                                            : nullptr;
  EXPECT_EQ(ChooseRowMassesPath(nullptr).fn, by_default);
  EXPECT_EQ(ChooseRowMassesPath("avx512").fn, by_default);
  for (const char* cap : {"scalar", "avx2", "avx512"}) {
    const RowMassesPath p = ChooseRowMassesPath(cap);
    // A vector path's threshold, scalar's never reached.
    EXPECT_GE(p.min_slots, p.fn != nullptr ? 8u : ~0u) << cap;
  }
  // The process's own path is one of these.
  const char* env = std::getenv("LATENTD_CPU");
  EXPECT_EQ(kRowMassesPath.fn, ChooseRowMassesPath(env).fn);
}

// Without a counts array only topics and masses are written.
TEST(RowMasses, CountsAreOptional) {
  Rng rng(5);
  const Row row = RandomRow(77, 100, rng);
  std::vector<double> coef(100, 0.5);
  std::vector<TopicId> topics(77 + kRowMassesSlack);
  std::vector<double> running(77 + kRowMassesSlack);
  int64_t tokens = 0;
  const uint32_t n =
      RowMasses(row.slots.data(), 77, coef.data(), kNoExcludedTopic,
                {topics.data(), running.data(), nullptr}, &tokens);
  const Walk with = WalkRow(&RowMassesScalar, row, coef, kNoExcludedTopic);
  ASSERT_EQ(n, with.n);
  EXPECT_EQ(tokens, with.tokens);
  EXPECT_NEAR(running[n - 1], 0.5 * static_cast<double>(tokens), 1e-9);
}

}  // namespace
}  // namespace latentd::internal
