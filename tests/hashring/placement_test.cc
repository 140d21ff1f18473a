// Properties every Placement must have, checked for Ring and for Rendezvous
// (the reference) alike over 10^6 random keys.
#include "hashring/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hashring/rendezvous.h"
#include "hashring/ring.h"
#include "hashring/ring_config.h"
#include "tests/hashring/test_util.h"

namespace latentd::hashring {
namespace {

using test_util::CountOwners;
using test_util::MakeConfig;
using test_util::MustBuild;
using test_util::RandomKeys;
using test_util::ReplicaIds;

constexpr size_t kKeys = 1'000'000;
// V for the statistical checks: the 10% bands are 4.5 standard
// deviations of a member's share at V = 2048 (see ring_test.cc for V = 256).
constexpr uint32_t kStatV = 2048;

enum class Kind { kRing, kRendezvous };

class PlacementTest : public ::testing::TestWithParam<Kind> {
 protected:
  std::shared_ptr<const Placement> Build(const RingConfig& config) const {
    if (GetParam() == Kind::kRing) return MustBuild<Ring>(config);
    return MustBuild<Rendezvous>(config);
  }
};

TEST_P(PlacementTest, ReplicasAreKDistinctMembersOwnerFirst) {
  for (uint32_t k : {1u, 3u, 8u}) {
    const auto placement = Build(MakeConfig(16, 256, k));
    for (Key key : RandomKeys(k == 3 ? kKeys : kKeys / 10, 1)) {
      const ReplicaList replicas = placement->Replicas(key);
      ASSERT_EQ(replicas.size(), k);
      ASSERT_EQ(replicas.owner(), placement->Owner(key));
      std::set<MemberIndex> distinct(replicas.begin(), replicas.end());
      ASSERT_EQ(distinct.size(), k) << "key " << key;
      ASSERT_LT(*distinct.rbegin(), 16u);
    }
  }
}

TEST_P(PlacementTest, EveryMemberIsAReplicaWhenKEqualsMembers) {
  const auto placement = Build(MakeConfig(4, 16, 4));
  for (Key key : RandomKeys(kKeys / 10, 2)) {
    const ReplicaList replicas = placement->Replicas(key);
    std::vector<MemberIndex> sorted(replicas.begin(), replicas.end());
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, (std::vector<MemberIndex>{0, 1, 2, 3}));
  }
}

// Removing a member X: each key's new list is its old one without X, with
// one new member appended; when X owned the key its first replica takes
// over and the rest shift up. Keys X did not hold keep their lists.
TEST_P(PlacementTest, RemovingAMemberPromotesTheNextReplicas) {
  const RingConfig config = MakeConfig(16, 256, 3);
  RingConfig smaller = config;
  const std::string removed = "node-5";
  smaller.members.erase(smaller.members.begin() + 5);
  const auto before = Build(config);
  const auto after = Build(smaller);

  size_t owned = 0;
  for (Key key : RandomKeys(kKeys, 3)) {
    const std::vector<std::string> old_ids = ReplicaIds(*before, key);
    const std::vector<std::string> new_ids = ReplicaIds(*after, key);
    auto it = std::find(old_ids.begin(), old_ids.end(), removed);
    if (it == old_ids.end()) {
      ASSERT_EQ(new_ids, old_ids) << "key " << key;
      continue;
    }
    owned += it == old_ids.begin();
    std::vector<std::string> expected = old_ids;
    expected.erase(expected.begin() + (it - old_ids.begin()));
    ASSERT_EQ(std::vector<std::string>(new_ids.begin(), new_ids.end() - 1),
              expected)
        << "key " << key;
    ASSERT_EQ(std::count(old_ids.begin(), old_ids.end(), new_ids.back()), 0);
  }
  EXPECT_GT(owned, kKeys / 32);  // node-5 owned about 1/16 of the keys
}

// Adding member m+1: every key whose owner changes moves to the new member,
// and the moved share is 1/(m+1) within 10%.
TEST_P(PlacementTest, AddingAMemberMovesItsShareAndOnlyToIt) {
  const std::vector<Key> keys = RandomKeys(kKeys, 4);
  for (int m : {4, 16, 64}) {
    const auto before = Build(MakeConfig(m, kStatV, 1));
    const auto after = Build(MakeConfig(m + 1, kStatV, 1));
    const std::string added = absl::StrCat("node-", m);
    size_t moved = 0;
    for (Key key : keys) {
      const std::string& old_owner = before->member(before->Owner(key)).id;
      const std::string& new_owner = after->member(after->Owner(key)).id;
      if (old_owner == new_owner) continue;
      ++moved;
      ASSERT_EQ(new_owner, added) << "key " << key;
    }
    const double share = static_cast<double>(moved) / keys.size();
    std::printf("%d -> %d members: moved %.4f of keys = %.3f/(m+1)\n", m, m + 1,
                share, share * (m + 1));
    EXPECT_GE(share, 0.9 / (m + 1)) << m << " members";
    EXPECT_LE(share, 1.1 / (m + 1)) << m << " members";
  }
}

// Removing a member moves exactly the keys it owned.
TEST_P(PlacementTest, RemovingAMemberMovesOnlyItsKeys) {
  const RingConfig config = MakeConfig(16, 256, 1);
  RingConfig smaller = config;
  smaller.members.erase(smaller.members.begin() + 9);  // node-9
  const auto before = Build(config);
  const auto after = Build(smaller);
  size_t moved = 0;
  for (Key key : RandomKeys(kKeys, 5)) {
    const std::string& old_owner = before->member(before->Owner(key)).id;
    const std::string& new_owner = after->member(after->Owner(key)).id;
    ASSERT_EQ(old_owner != new_owner, old_owner == "node-9") << "key " << key;
    moved += old_owner != new_owner;
  }
  EXPECT_GT(moved, 0u);
}

TEST_P(PlacementTest, WeightTwoOwnsTwiceTheKeysOfWeightOne) {
  RingConfig config = MakeConfig(8, kStatV, 1);
  config.members[3].weight = 2;
  const std::vector<uint64_t> counts =
      CountOwners(*Build(config), RandomKeys(kKeys, 6));
  double others = 0;
  for (size_t i = 0; i < counts.size(); ++i) others += i == 3 ? 0 : counts[i];
  const double ratio = counts[3] / (others / 7);
  std::printf("weight 2 owns %.3fx the keys of a weight-1 member\n", ratio);
  EXPECT_NEAR(ratio, 2.0, 0.2);
}

INSTANTIATE_TEST_SUITE_P(Kinds, PlacementTest,
                         ::testing::Values(Kind::kRing, Kind::kRendezvous),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return info.param == Kind::kRing ? "Ring"
                                                            : "Rendezvous";
                         });

}  // namespace
}  // namespace latentd::hashring
