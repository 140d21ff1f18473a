// SparseMixtureIndex: its distances and rankings against the Hellinger
// distance computed directly on the densified, smoothed mixtures; updates,
// removals and versions; bad input.
#include "similarity/sparse_mixture_index.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace latentd {
namespace {

using Counts = std::vector<SparseMixtureIndex::TopicCount>;

struct Doc {
  Counts counts;
  uint64_t total = 0;
};

// A document of `length` tokens drawn from a few of `k` topics.
Doc RandomDoc(uint32_t k, std::mt19937_64* rng) {
  std::uniform_int_distribution<uint32_t> topic(0, k - 1);
  std::uniform_int_distribution<int> spread(1, 12), length(1, 300);
  std::vector<uint32_t> topics(spread(*rng));
  for (uint32_t& t : topics) t = topic(*rng);
  std::vector<uint64_t> dense(k);
  Doc d;
  d.total = length(*rng);
  for (uint64_t i = 0; i < d.total; ++i) {
    ++dense[topics[(*rng)() % topics.size()]];
  }
  for (uint32_t t = 0; t < k; ++t) {
    if (dense[t] > 0) d.counts.emplace_back(t, dense[t]);
  }
  std::shuffle(d.counts.begin(), d.counts.end(), *rng);  // any order
  return d;
}

std::vector<double> Smoothed(const Doc& d, const std::vector<double>& alpha) {
  double a = 0;
  for (double x : alpha) a += x;
  std::vector<double> theta(alpha.size());
  for (size_t k = 0; k < alpha.size(); ++k) {
    theta[k] = alpha[k] / (d.total + a);
  }
  for (const auto& [t, n] : d.counts) {
    theta[t] = (n + alpha[t]) / (d.total + a);
  }
  return theta;
}

double Hellinger(const std::vector<double>& p, const std::vector<double>& q) {
  double bc = 0;
  for (size_t k = 0; k < p.size(); ++k) bc += std::sqrt(p[k] * q[k]);
  return std::sqrt(std::max(0.0, 1.0 - bc));
}

TEST(SparseMixtureIndex, RanksByHellingerOfTheSmoothedMixtures) {
  constexpr uint32_t kTopics = 2000;
  std::mt19937_64 rng(7);
  std::vector<double> alpha(kTopics);
  std::uniform_real_distribution<double> a(0.001, 0.2);
  for (double& x : alpha) x = a(rng);  // asymmetric, as a learned α is
  auto index = SparseMixtureIndex::Create(alpha);
  ASSERT_TRUE(index.ok()) << index.status();
  std::vector<Doc> docs;
  for (uint64_t id = 0; id < 500; ++id) {
    docs.push_back(RandomDoc(kTopics, &rng));
    ASSERT_TRUE((*index)
                    ->Upsert(id, docs.back().counts, docs.back().total, id + 1)
                    .ok());
  }
  ASSERT_EQ((*index)->size(), 500u);
  for (uint64_t query : {0, 17, 499}) {
    const std::vector<double> p = Smoothed(docs[query], alpha);
    std::vector<std::pair<double, uint64_t>> truth;
    for (uint64_t id = 0; id < docs.size(); ++id) {
      if (id != query)
        truth.emplace_back(Hellinger(p, Smoothed(docs[id], alpha)), id);
    }
    std::sort(truth.begin(), truth.end());
    auto by_id = (*index)->QueryById(query, 20);
    ASSERT_TRUE(by_id.ok()) << by_id.status();
    std::vector<float> theta(p.begin(), p.end());
    auto by_theta = (*index)->Query(theta, 21);
    ASSERT_TRUE(by_theta.ok());
    ASSERT_EQ(by_id->items.size(), 20u);
    EXPECT_TRUE(by_id->exact);
    // By mixture the item itself comes first, at distance 0.
    EXPECT_EQ(by_theta->items[0].id, query);
    EXPECT_NEAR(by_theta->items[0].distance, 0, 2e-3);
    for (size_t i = 0; i < 20; ++i) {
      EXPECT_NEAR(by_id->items[i].distance, truth[i].first, 1e-4) << i;
      EXPECT_NEAR(by_theta->items[i + 1].distance, truth[i].first, 1e-4);
      // The same items, up to ties within float rounding.
      if (i + 1 < truth.size() && truth[i + 1].first - truth[i].first > 1e-4 &&
          (i == 0 || truth[i].first - truth[i - 1].first > 1e-4)) {
        EXPECT_EQ(by_id->items[i].id, truth[i].second) << i;
      }
      if (i > 0) {
        EXPECT_LE(by_id->items[i - 1].distance, by_id->items[i].distance);
      }
    }
    EXPECT_EQ(by_id->index_min_version, 1u);
    EXPECT_EQ(by_id->index_max_version, 500u);
  }
}

TEST(SparseMixtureIndex, UpdatesRemovalsAndVersions) {
  const std::vector<double> alpha(50, 0.1);
  auto index = SparseMixtureIndex::Create(alpha);
  ASSERT_TRUE(index.ok());
  SparseMixtureIndex& x = **index;
  ASSERT_TRUE(x.Upsert(1, Counts{{3, 10}}, 10, 1).ok());
  ASSERT_TRUE(x.Upsert(2, Counts{{4, 10}}, 10, 1).ok());
  ASSERT_TRUE(x.Upsert(3, Counts{{3, 9}, {4, 1}}, 10, 2).ok());
  auto near1 = x.QueryById(1, 2);
  ASSERT_TRUE(near1.ok());
  EXPECT_EQ(near1->items[0].id, 3u);
  EXPECT_EQ(near1->items[0].version, 2u);
  // 3 moves to topic 4: now 2's neighbour, and the oldest version moves.
  ASSERT_TRUE(x.Upsert(3, Counts{{4, 9}, {3, 1}}, 10, 5).ok());
  near1 = x.QueryById(2, 1);
  ASSERT_TRUE(near1.ok());
  EXPECT_EQ(near1->items[0].id, 3u);
  EXPECT_EQ(near1->index_max_version, 5u);
  EXPECT_EQ(x.size(), 3u);
  ASSERT_TRUE(x.Remove(3).ok());
  EXPECT_EQ(x.size(), 2u);
  EXPECT_EQ(x.QueryById(3, 1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(x.Remove(3).code(), absl::StatusCode::kNotFound);
  near1 = x.QueryById(2, 5);
  ASSERT_TRUE(near1.ok());
  ASSERT_EQ(near1->items.size(), 1u);
  EXPECT_EQ(near1->items[0].id, 1u);
  // Many rewrites: the entries are compacted and answers stay the same.
  for (int round = 0; round < 3000; ++round) {
    ASSERT_TRUE(x.Upsert(1, Counts{{3, 10}}, 10, round).ok());
  }
  auto again = x.QueryById(2, 5);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->items[0].id, 1u);
  EXPECT_FLOAT_EQ(again->items[0].distance, near1->items[0].distance);
  EXPECT_LT(x.bytes(), 64u * 1024);
}

TEST(SparseMixtureIndex, RefusesBadInputSayingWhat) {
  EXPECT_FALSE(SparseMixtureIndex::Create(std::vector<double>{}).ok());
  auto bad_alpha = SparseMixtureIndex::Create(std::vector<double>{0.1, 0.0});
  ASSERT_FALSE(bad_alpha.ok());
  EXPECT_NE(bad_alpha.status().message().find("topic 1"), std::string::npos);
  auto index = SparseMixtureIndex::Create(std::vector<double>(10, 0.5));
  ASSERT_TRUE(index.ok());
  SparseMixtureIndex& x = **index;
  absl::Status s = x.Upsert(1, Counts{{1000000000, 1}}, 1, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("topic 1000000000"), std::string::npos) << s;
  EXPECT_FALSE(x.Upsert(1, Counts{{1, 5}}, 4, 1).ok());          // total
  EXPECT_FALSE(x.Upsert(1, Counts{{1, 2}, {1, 2}}, 4, 1).ok());  // twice
  EXPECT_EQ(x.size(), 0u);
  ASSERT_TRUE(x.Upsert(1, Counts{}, 0, 1).ok());  // an empty item: α alone
  EXPECT_FALSE(x.Query(std::vector<float>(9, 0.1f), 1).ok());   // size
  EXPECT_FALSE(x.Query(std::vector<float>(10, 0.0f), 1).ok());  // zero
  std::vector<float> negative(10, 0.1f);
  negative[3] = -1;
  EXPECT_FALSE(x.Query(negative, 1).ok());
  EXPECT_FALSE(x.Query(std::vector<float>(10, 0.1f), 0).ok());  // n
  auto uniform = x.Query(std::vector<float>(10, 0.1f), 1);
  ASSERT_TRUE(uniform.ok());
  EXPECT_NEAR(uniform->items[0].distance, 0, 2e-3);  // α uniform too
}

}  // namespace
}  // namespace latentd
