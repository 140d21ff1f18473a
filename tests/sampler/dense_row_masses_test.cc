#include "sampler/internal/dense_row_masses.h"

#include <atomic>
#include <cstdint>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace latentd::internal {
namespace {

// A dense row of `size` topics (slot k is topic k; some counts 0, a few
// large), then guard slots a walk must not read into its masses.
constexpr uint32_t kGuard = 8;
std::vector<std::atomic<Count>> DenseRow(uint32_t size, Rng& rng) {
  std::vector<std::atomic<Count>> row(size + kGuard);
  for (uint32_t k = 0; k < size + kGuard; ++k) {
    const uint64_t c = k >= size                ? 7
                       : rng.UniformInt(3) == 0 ? 0
                       : rng.UniformInt(8) == 0 ? 1'000'000 + rng.UniformInt(9)
                                                : 1 + rng.UniformInt(40);
    row[k].store(static_cast<Count>(c));
  }
  return row;
}

struct Result {
  int64_t tokens = 0;
  std::vector<double> mass;
};

Result Walk(DenseRowMassesFn fn, const std::vector<std::atomic<Count>>& row,
            uint32_t size, const std::vector<double>& coef, TopicId excluded) {
  // The masses past `size` must stay as they were (-1).
  Result r{0, std::vector<double>(size + kGuard, -1.0)};
  r.tokens = fn(row.data(), size, coef.data(), excluded, r.mass.data());
  return r;
}

std::vector<std::pair<const char*, DenseRowMassesFn>> VectorPaths() {
  std::vector<std::pair<const char*, DenseRowMassesFn>> paths;
  if (DenseRowMassesAvx512 != nullptr) {
    paths.push_back({"avx512", DenseRowMassesAvx512});
  }
  if (DenseRowMassesAvx2 != nullptr) {
    paths.push_back({"avx2", DenseRowMassesAvx2});
  }
  return paths;
}

TEST(DenseRowMassesTest, ScalarComputesTheExcludedConditionalMasses) {
  std::vector<std::atomic<Count>> row(4);
  const Count counts[] = {3, 0, 1, 5};
  for (uint32_t k = 0; k < 4; ++k) row[k].store(counts[k]);
  const std::vector<double> coef = {0.5, 2.0, 4.0, 0.25};
  // Topic 2 excluded: its count 1 becomes 0.
  const Result r = Walk(&DenseRowMassesScalar, row, 4, coef, 2);
  EXPECT_EQ(r.tokens, 9);
  EXPECT_EQ(r.mass[0], 1.5);
  EXPECT_EQ(r.mass[1], 0.0);
  EXPECT_EQ(r.mass[2], 0.0);
  EXPECT_EQ(r.mass[3], 1.25);
  // Topic 1 excluded: count 0 stays at 0, never negative.
  EXPECT_EQ(Walk(&DenseRowMassesScalar, row, 4, coef, 1).mass[1], 0.0);
}

TEST(DenseRowMassesTest, VectorPathsMatchScalarBitForBit) {
  const auto paths = VectorPaths();
  if (paths.empty()) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512";
  Rng rng(42);
  for (uint32_t size = 1; size <= 70; ++size) {
    for (int variant = 0; variant < 3; ++variant) {
      auto row = DenseRow(size, rng);
      std::vector<double> coef(size + kGuard);
      for (double& c : coef) c = 1e-6 + rng.Uniform();
      // Excluded: a topic with a count, one with count 0 or 1, or none.
      TopicId excluded = static_cast<TopicId>(rng.UniformInt(size));
      if (variant == 1) {
        row[excluded].store(static_cast<Count>(rng.UniformInt(2)));
      } else if (variant == 2) {
        excluded = ~TopicId{0};
      }
      const Result want =
          Walk(&DenseRowMassesScalar, row, size, coef, excluded);
      for (const auto& [name, fn] : paths) {
        const Result got = Walk(fn, row, size, coef, excluded);
        EXPECT_EQ(got.tokens, want.tokens) << name << " size " << size;
        for (uint32_t k = 0; k < size + kGuard; ++k) {
          ASSERT_EQ(got.mass[k], want.mass[k])
              << name << " size " << size << " topic " << k << " excluded "
              << excluded;
        }
      }
    }
  }
}

TEST(DenseRowMassesTest, ChoosesByCapAndCpu) {
  EXPECT_STREQ(ChooseDenseRowMassesPath("scalar").name, "scalar");
  EXPECT_EQ(ChooseDenseRowMassesPath("scalar").fn, &DenseRowMassesScalar);
  EXPECT_STREQ(ChooseDenseRowMassesPath("bogus").name, "scalar");
  const DenseRowMassesPath capped = ChooseDenseRowMassesPath("avx2");
  EXPECT_STREQ(capped.name, DenseRowMassesAvx2 != nullptr ? "avx2" : "scalar");
  const DenseRowMassesPath best = ChooseDenseRowMassesPath(nullptr);
  EXPECT_STREQ(best.name, DenseRowMassesAvx512 != nullptr ? "avx512"
                          : DenseRowMassesAvx2 != nullptr ? "avx2"
                                                          : "scalar");
}

}  // namespace
}  // namespace latentd::internal
