#include "sampler/internal/upper_bound.h"

#include <algorithm>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace latentd::internal {
namespace {

// Every path (counting, 8-slot blocks, bisection) agrees with
// std::upper_bound clamped to n − 1, zero-mass slots and ties included.
TEST(UpperBound, MatchesStdUpperBoundForEveryLength) {
  Rng rng(3);
  for (uint32_t n = 1; n <= 600; ++n) {
    std::vector<double> cum(n);
    double sum = 0;
    for (uint32_t i = 0; i < n; ++i) {
      // A third of the slots carry no mass, as zero-count slots do.
      sum += rng.UniformInt(3) == 0 ? 0.0 : rng.Uniform();
      cum[i] = sum;
    }
    for (int t = 0; t < 50; ++t) {
      const double u = t == 0 ? 0.0 : rng.Uniform() * sum;
      const uint32_t want = std::min<uint32_t>(
          std::upper_bound(cum.begin(), cum.end(), u) - cum.begin(), n - 1);
      ASSERT_EQ(UpperBound(cum.data(), n, u), want) << "n=" << n << " u=" << u;
    }
    // On a slot's exact end the draw belongs to the next slot with mass.
    const uint32_t at = static_cast<uint32_t>(rng.UniformInt(n));
    const uint32_t want = std::min<uint32_t>(
        std::upper_bound(cum.begin(), cum.end(), cum[at]) - cum.begin(), n - 1);
    ASSERT_EQ(UpperBound(cum.data(), n, cum[at]), want) << "n=" << n;
  }
}

}  // namespace
}  // namespace latentd::internal
