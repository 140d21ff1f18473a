// SweepHistory (service/sweep_history.h): bounded, spread over the whole
// run, always ending with the latest sweep.
#include "service/sweep_history.h"

#include <gtest/gtest.h>

namespace latentd::service {
namespace {

SweepPoint At(uint64_t sweep) {
  return {.sweep = sweep,
          .log_likelihood_per_token = -10.0 + 0.001 * sweep,
          .tokens_per_second = 1000.0 * sweep};
}

std::vector<uint64_t> Sweeps(const std::vector<SweepPoint>& points) {
  std::vector<uint64_t> out;
  for (const SweepPoint& p : points) out.push_back(p.sweep);
  return out;
}

TEST(SweepHistory, EmptyUntilAPointIsAddedOrWhenNoneAsked) {
  SweepHistory h(8);
  EXPECT_TRUE(h.Points(100).empty());
  h.Add(At(1));
  EXPECT_TRUE(h.Points(0).empty());
  ASSERT_EQ(h.Points(100).size(), 1u);
  EXPECT_EQ(h.Points(100)[0].sweep, 1u);
  EXPECT_DOUBLE_EQ(h.Points(100)[0].log_likelihood_per_token, -9.999);
  EXPECT_DOUBLE_EQ(h.Points(100)[0].tokens_per_second, 1000.0);
}

TEST(SweepHistory, KeepsEveryPointUpToCapacity) {
  SweepHistory h(8);
  for (uint64_t s = 1; s <= 8; ++s) h.Add(At(s));
  EXPECT_EQ(Sweeps(h.Points(100)),
            (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(SweepHistory, WhenFullHalvesAndKeepsReachingBackToTheFirstSweep) {
  SweepHistory h(8);
  for (uint64_t s = 1; s <= 9; ++s) h.Add(At(s));
  // Full when 9 comes: every other point is kept (1 3 5 7), and from then
  // on every 2nd sweep (9, 11, ...).
  EXPECT_EQ(Sweeps(h.Points(100)), (std::vector<uint64_t>{1, 3, 5, 7, 9}));
  h.Add(At(10));
  // 10 is not kept, but the latest is always returned.
  EXPECT_EQ(Sweeps(h.Points(100)), (std::vector<uint64_t>{1, 3, 5, 7, 9, 10}));
  for (uint64_t s = 11; s <= 1000; ++s) h.Add(At(s));
  const std::vector<uint64_t> all = Sweeps(h.Points(100));
  ASSERT_LE(all.size(), 9u);  // capacity + the latest
  EXPECT_EQ(all.front(), 1u);
  EXPECT_EQ(all.back(), 1000u);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1], all[i]);
}

TEST(SweepHistory, FewerPointsAskedAreSpreadEvenlyEndingWithTheLatest) {
  SweepHistory h(100);
  for (uint64_t s = 1; s <= 21; ++s) h.Add(At(s));
  EXPECT_EQ(Sweeps(h.Points(5)), (std::vector<uint64_t>{1, 6, 11, 16, 21}));
  EXPECT_EQ(Sweeps(h.Points(1)), (std::vector<uint64_t>{21}));
  EXPECT_EQ(Sweeps(h.Points(2)), (std::vector<uint64_t>{1, 21}));
}

}  // namespace
}  // namespace latentd::service
