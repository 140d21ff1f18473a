#include "hashring/ring.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hashring/rendezvous.h"
#include "hashring/ring_config.h"
#include "hashring/ring_position.h"
#include "tests/hashring/test_util.h"

namespace latentd::hashring {
namespace {

using test_util::CountOwners;
using test_util::MakeConfig;
using test_util::MaxOverMean;
using test_util::MustBuild;
using test_util::RandomKeys;
using test_util::ReplicaIds;

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// With V points per unit of weight a member's share of the ring is the sum
// of V random arcs, so it strays from its mean by about 1/sqrt(V) (6.25% at
// V = 256). Ring statistics at V are held to 4/sqrt(V), four standard
// deviations; the 10% is held at V = 2048, where it is 4.5 of them.
double FourSigma(uint32_t virtual_points) {
  return 4.0 / std::sqrt(static_cast<double>(virtual_points));
}

TEST(RingPosition, MatchesSplitMix64) {
  // SplitMix64 seeded with 0 outputs these first: its published vectors.
  EXPECT_EQ(RingPosition(0), 0xE220A8397B1DCDAFu);
  EXPECT_EQ(RingPosition(0x9E3779B97F4A7C15u), 0x6E789E6AA1B965F4u);
}

TEST(RingPosition, SpreadsSequentialKeysLikeRandomOnes) {
  const auto ring = MustBuild<Ring>(MakeConfig(16, 2048, 1));
  std::vector<Key> sequential(1'000'000);
  for (size_t i = 0; i < sequential.size(); ++i) sequential[i] = i;

  const double mixed = MaxOverMean(CountOwners(*ring, sequential));
  std::set<MemberIndex> raw_owners;  // where unmixed keys would land
  for (Key key : sequential) raw_owners.insert(ring->OwnerAt(key));
  std::printf("keys 0..10^6: max/mean %.3f remixed; %zu of 16 members raw\n",
              mixed, raw_owners.size());
  EXPECT_LE(mixed, 1.10);
  EXPECT_LE(raw_owners.size(), 2u);

  std::vector<uint64_t> positions;
  for (Key key : sequential) positions.push_back(RingPosition(key));
  std::sort(positions.begin(), positions.end());
  EXPECT_EQ(std::unique(positions.begin(), positions.end()), positions.end());
}

TEST(PositionRange, ContainsFollowsTheClockwiseArc) {
  const PositionRange plain{.begin = 10, .end = 20};
  EXPECT_FALSE(plain.Contains(9));
  EXPECT_TRUE(plain.Contains(10));
  EXPECT_TRUE(plain.Contains(19));
  EXPECT_FALSE(plain.Contains(20));

  const PositionRange wrapping{.begin = kMax - 4, .end = 3};
  EXPECT_FALSE(wrapping.Contains(kMax - 5));
  EXPECT_TRUE(wrapping.Contains(kMax));
  EXPECT_TRUE(wrapping.Contains(0));
  EXPECT_TRUE(wrapping.Contains(2));
  EXPECT_FALSE(wrapping.Contains(3));
  EXPECT_DOUBLE_EQ(wrapping.Fraction(), 8 * 0x1p-64);

  const PositionRange to_top{.begin = 1ull << 63, .end = 0};
  EXPECT_FALSE(to_top.Contains((1ull << 63) - 1));
  EXPECT_TRUE(to_top.Contains(kMax));
  EXPECT_FALSE(to_top.Contains(0));
  EXPECT_DOUBLE_EQ(to_top.Fraction(), 0.5);

  const PositionRange full{.begin = 5, .end = 5};
  EXPECT_TRUE(full.Contains(0));
  EXPECT_TRUE(full.Contains(kMax));
  EXPECT_DOUBLE_EQ(full.Fraction(), 1.0);
}

// An independent implementation of the placement documented in ring.h and
// internal/point_hash.h, straight from the formula.
class ReferenceRing {
 public:
  explicit ReferenceRing(const RingConfig& config) : k_(config.replication) {
    for (const Member& m : config.members) {
      for (uint32_t i = 0; i < m.weight * config.virtual_points_per_weight;
           ++i) {
        std::string bytes = m.id;
        for (int b = 0; b < 4; ++b) bytes.push_back(char(i >> (8 * b)));
        points_.emplace_back(
            XXH3_64bits_withSeed(bytes.data(), bytes.size(),
                                 0x6C6174656E746421u),  // "latentd!"
            m.id, i);
      }
    }
    std::sort(points_.begin(), points_.end());
  }

  // The first point strictly clockwise of `position`, then distinct ids.
  std::vector<std::string> ReplicasAt(uint64_t position) const {
    size_t p = 0;
    while (p < points_.size() && std::get<0>(points_[p]) <= position) ++p;
    std::vector<std::string> ids;
    for (size_t step = 0; ids.size() < k_; ++step) {
      const std::string& id = std::get<1>(points_[(p + step) % points_.size()]);
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    return ids;
  }

  const std::vector<std::tuple<uint64_t, std::string, uint32_t>>& points()
      const {
    return points_;
  }

 private:
  size_t k_;
  std::vector<std::tuple<uint64_t, std::string, uint32_t>> points_;
};

TEST(Ring, OwnerAndReplicasFollowTheDocumentedClockwiseWalk) {
  RingConfig config = MakeConfig(5, 8, 3);
  config.members[1].weight = 2;
  config.members[3].weight = 3;
  const auto ring = MustBuild<Ring>(config);
  const ReferenceRing reference(config);
  ASSERT_EQ(ring->point_positions().size(), reference.points().size());

  std::vector<uint64_t> probes = {0, 1, kMax - 1, kMax};
  for (const auto& point : reference.points()) {
    const uint64_t x = std::get<0>(point);
    probes.insert(probes.end(), {x - 1, x, x + 1});
  }
  std::mt19937_64 rng(3);
  for (int i = 0; i < 10'000; ++i) probes.push_back(rng());

  for (uint64_t position : probes) {
    std::vector<std::string> got;
    for (MemberIndex m : ring->ReplicasAt(position)) {
      got.push_back(ring->member(m).id);
    }
    ASSERT_EQ(got, reference.ReplicasAt(position)) << "position " << position;
    ASSERT_EQ(ring->member(ring->OwnerAt(position)).id, got.front());
  }
}

TEST(Ring, OwnersAreDeterministicAcrossProcesses) {
  const RingConfig config = MakeConfig(64, 256, 3);
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/hashring_config_", getpid(), ".pb");
  {
    std::ofstream out(path, std::ios::binary);
    out << SerializeRingConfig(config);
    ASSERT_TRUE(out.good()) << path;
  }
  constexpr size_t kKeys = 1'000'000;
  const std::string command = absl::StrCat("'", HASHRING_OWNER_DIGEST_BINARY,
                                           "' '", path, "' ", kKeys, " 11");
  std::vector<std::string> digests;
  for (int run = 0; run < 2; ++run) {
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr) << command;
    char line[64] = {};
    const bool read = std::fgets(line, sizeof(line), pipe) != nullptr;
    ASSERT_EQ(pclose(pipe), 0) << command;
    ASSERT_TRUE(read) << command;
    digests.push_back(line);
  }
  std::remove(path.c_str());

  const std::string in_process = absl::StrCat(
      absl::Hex(test_util::PlacementDigest(*MustBuild<Ring>(config), kKeys, 11),
                absl::kZeroPad16),
      "\n");
  EXPECT_EQ(digests[0], digests[1]);
  EXPECT_EQ(digests[0], in_process);
}

// If this fails the placement itself changed: every running cluster would
// move most of its keys on upgrade. Change these values only together with a
// migration plan.
TEST(Ring, PlacementIsPinned) {
  const auto ring = MustBuild<Ring>(MakeConfig(16, 256, 3));
  EXPECT_EQ(ReplicaIds(*ring, 0),
            (std::vector<std::string>{"node-3", "node-1", "node-7"}));
  EXPECT_EQ(ReplicaIds(*ring, 42),
            (std::vector<std::string>{"node-2", "node-4", "node-9"}));
  EXPECT_EQ(test_util::PlacementDigest(*ring, 100'000, 7), 0x59093DBF378DDB1Eu);
}

TEST(Ring, PlacementIgnoresMemberOrder) {
  RingConfig config = MakeConfig(16, 64, 3);
  RingConfig shuffled = config;
  std::shuffle(shuffled.members.begin(), shuffled.members.end(),
               std::mt19937_64(5));
  ASSERT_NE(shuffled.members, config.members);
  const auto a = MustBuild<Ring>(config);
  const auto b = MustBuild<Ring>(shuffled);
  for (Key key : RandomKeys(100'000, 2)) {
    ASSERT_EQ(ReplicaIds(*a, key), ReplicaIds(*b, key)) << "key " << key;
  }
}

TEST(Ring, VirtualPointsBalanceKeys) {
  const std::vector<Key> keys = RandomKeys(1'000'000, 1);
  for (int members : {4, 16, 64}) {
    const double v1 = MaxOverMean(
        CountOwners(*MustBuild<Ring>(MakeConfig(members, 1, 1)), keys));
    const double v256 = MaxOverMean(
        CountOwners(*MustBuild<Ring>(MakeConfig(members, 256, 1)), keys));
    const double v2048 = MaxOverMean(
        CountOwners(*MustBuild<Ring>(MakeConfig(members, 2048, 1)), keys));
    const double rendezvous = MaxOverMean(
        CountOwners(*MustBuild<Rendezvous>(MakeConfig(members, 1, 1)), keys));
    std::printf(
        "%2d members, max/mean keys per member: V=1 %.3f  V=256 %.3f  "
        "V=2048 %.3f  rendezvous %.3f\n",
        members, v1, v256, v2048, rendezvous);
    EXPECT_LE(v256, 1 + FourSigma(256)) << members << " members";
    EXPECT_LE(v2048, 1.10) << members << " members";
    EXPECT_GE(v1, 1.5) << members << " members";
    EXPECT_GT(v1 - 1, 4 * (v256 - 1)) << members << " members";
    EXPECT_LE(rendezvous, 1.05) << members << " members";
  }
}

TEST(Ring, AddingMemberAtDefaultVirtualPointsMovesAboutItsShare) {
  const std::vector<Key> keys = RandomKeys(1'000'000, 4);
  for (int members : {4, 16, 64}) {
    const auto before = MustBuild<Ring>(MakeConfig(members, 256, 1));
    const auto after = MustBuild<Ring>(MakeConfig(members + 1, 256, 1));
    size_t moved = 0;
    for (Key key : keys) moved += before->Owner(key) != after->Owner(key);
    const double relative =
        static_cast<double>(moved) * (members + 1) / keys.size();
    std::printf("V=256, %d -> %d members: moved %.4f of keys = %.3f/(m+1)\n",
                members, members + 1, double(moved) / keys.size(), relative);
    EXPECT_NEAR(relative, 1.0, FourSigma(256)) << members << " members";
  }
}

TEST(Ring, WeightTwoAtDefaultVirtualPointsOwnsAboutTwice) {
  RingConfig config = MakeConfig(8, 256, 1);
  config.members[3].weight = 2;
  const std::vector<uint64_t> counts =
      CountOwners(*MustBuild<Ring>(config), RandomKeys(1'000'000, 6));
  double others = 0;
  for (size_t i = 0; i < counts.size(); ++i) others += i == 3 ? 0 : counts[i];
  const double ratio = counts[3] / (others / 7);
  std::printf("V=256: weight 2 owns %.3fx a weight-1 member\n", ratio);
  EXPECT_NEAR(ratio, 2.0, 2.0 * FourSigma(256));
}

}  // namespace
}  // namespace latentd::hashring
