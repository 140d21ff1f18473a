#include "hashring/move_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hashring/ring.h"
#include "hashring/ring_config.h"
#include "hashring/ring_position.h"
#include "tests/hashring/test_util.h"

namespace latentd::hashring {
namespace {

using test_util::MakeConfig;
using test_util::MustBuild;
using test_util::RandomKeys;
using test_util::ReplicaIds;

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

std::vector<std::string> IdsAt(const Ring& ring, uint64_t position) {
  std::vector<std::string> ids;
  for (MemberIndex m : ring.ReplicasAt(position)) {
    ids.push_back(ring.member(m).id);
  }
  return ids;
}

// The plan holds `position` iff the replica lists there differ, and then
// with exactly those lists.
void ExpectPlanAt(const Ring& before, const Ring& after, const MovePlan& plan,
                  uint64_t position) {
  const std::vector<std::string> b = IdsAt(before, position);
  const std::vector<std::string> a = IdsAt(after, position);
  const MoveRange* range = plan.Find(position);
  if (a == b) {
    EXPECT_EQ(range, nullptr) << "position " << position;
  } else {
    ASSERT_NE(range, nullptr) << "position " << position;
    EXPECT_EQ(range->before, b) << "position " << position;
    EXPECT_EQ(range->after, a) << "position " << position;
  }
}

// Checks the plan's shape, then checks it against brute force: `key_count`
// random keys, every range boundary and every point of both rings, +-1.
void ExpectPlanIsExact(const Ring& before, const Ring& after,
                       const MovePlan& plan, size_t key_count) {
  const std::vector<MoveRange>& ranges = plan.ranges;
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_NE(ranges[i].before, ranges[i].after);
    if (i + 1 == ranges.size()) break;
    const PositionRange& r = ranges[i].range;
    const PositionRange& next = ranges[i + 1].range;
    ASSERT_LT(r.begin, next.begin) << "ranges out of order at " << i;
    ASSERT_TRUE(r.end != 0 && r.end > r.begin && r.end <= next.begin)
        << "only the last range may wrap or reach 2^64; range " << i;
    if (r.end == next.begin) {  // neighbours must differ, else merge them
      EXPECT_TRUE(ranges[i].before != ranges[i + 1].before ||
                  ranges[i].after != ranges[i + 1].after);
    }
  }
  if (ranges.size() > 1 &&
      ranges.back().range.end <= ranges.back().range.begin) {
    ASSERT_LE(ranges.back().range.end, ranges.front().range.begin);
  }

  size_t changed = 0;
  for (Key key : RandomKeys(key_count, 9)) {
    const std::vector<std::string> b = ReplicaIds(before, key);
    const std::vector<std::string> a = ReplicaIds(after, key);
    const MoveRange* range = plan.Find(RingPosition(key));
    if (a == b) {
      ASSERT_EQ(range, nullptr) << "key " << key;
      continue;
    }
    ++changed;
    ASSERT_NE(range, nullptr) << "key " << key;
    ASSERT_EQ(range->before, b) << "key " << key;
    ASSERT_EQ(range->after, a) << "key " << key;
  }
  const double key_share = static_cast<double>(changed) / key_count;
  EXPECT_NEAR(plan.Fraction(), key_share,
              5 * std::sqrt(key_share / key_count) + 1e-9);

  std::vector<uint64_t> probes = {0, kMax};
  for (const MoveRange& r : ranges) {
    probes.insert(probes.end(), {r.range.begin - 1, r.range.begin,
                                 r.range.end - 1, r.range.end});
  }
  for (const Ring* ring : {&before, &after}) {
    for (uint64_t x : ring->point_positions()) {
      probes.insert(probes.end(), {x - 1, x, x + 1});
    }
  }
  for (uint64_t position : probes) {
    ExpectPlanAt(before, after, plan, position);
  }
}

TEST(MovePlan, AddingAMemberListsExactlyTheKeysItTakes) {
  const auto before = MustBuild<Ring>(MakeConfig(16, 256, 3));
  RingConfig bigger = MakeConfig(17, 256, 3);
  bigger.version = 2;
  const auto after = MustBuild<Ring>(bigger);
  const MovePlan plan = ComputeMovePlan(*before, *after);
  EXPECT_EQ(plan.before_version, 0u);
  EXPECT_EQ(plan.after_version, 2u);
  ASSERT_FALSE(plan.ranges.empty());
  for (const MoveRange& r : plan.ranges) {
    EXPECT_EQ(r.Gained(), std::vector<std::string>{"node-16"});
    EXPECT_EQ(r.Lost().size(), 1u);
    if (r.owner_changed()) {
      EXPECT_EQ(r.after.front(), "node-16");
    }
  }
  // The new member holds about k/(m+1) of the ring.
  EXPECT_NEAR(plan.Fraction(), 3.0 / 17, 3.0 / 17 * 0.25);
  ExpectPlanIsExact(*before, *after, plan, 1'000'000);
}

TEST(MovePlan, RemovingAMemberListsExactlyTheKeysItHeld) {
  const RingConfig config = MakeConfig(16, 256, 3);
  RingConfig smaller = config;
  smaller.members.erase(smaller.members.begin() + 7);
  const auto before = MustBuild<Ring>(config);
  const auto after = MustBuild<Ring>(smaller);
  const MovePlan plan = ComputeMovePlan(*before, *after);
  ASSERT_FALSE(plan.ranges.empty());
  for (const MoveRange& r : plan.ranges) {
    EXPECT_EQ(r.Lost(), std::vector<std::string>{"node-7"});
  }
  ExpectPlanIsExact(*before, *after, plan, 1'000'000);
}

TEST(MovePlan, IsExactWhenWeightReplicationOrVirtualPointsChange) {
  const RingConfig config = MakeConfig(12, 128, 3);
  RingConfig heavier = config;
  heavier.members[4].weight = 3;
  RingConfig fewer_copies = config;
  fewer_copies.replication = 2;
  RingConfig other_v = config;
  other_v.virtual_points_per_weight = 100;
  const auto before = MustBuild<Ring>(config);
  for (const RingConfig& changed : {heavier, fewer_copies, other_v}) {
    const auto after = MustBuild<Ring>(changed);
    ExpectPlanIsExact(*before, *after, ComputeMovePlan(*before, *after),
                      200'000);
  }
}

TEST(MovePlan, SamePlacementGivesAnEmptyPlan) {
  const RingConfig config = MakeConfig(16, 256, 3);
  RingConfig same = config;
  std::reverse(same.members.begin(), same.members.end());
  same.members[0].address = "elsewhere:1";
  same.version = 9;
  const MovePlan plan =
      ComputeMovePlan(*MustBuild<Ring>(config), *MustBuild<Ring>(same));
  EXPECT_TRUE(plan.ranges.empty());
  EXPECT_EQ(plan.Find(0), nullptr);
  EXPECT_EQ(plan.Fraction(), 0.0);
}

TEST(MovePlan, ReplacingTheOnlyMemberMovesTheWholeRing) {
  RingConfig a = MakeConfig(1, 16, 1);
  RingConfig b = a;
  b.members[0].id = "replacement";
  const MovePlan plan =
      ComputeMovePlan(*MustBuild<Ring>(a), *MustBuild<Ring>(b));
  ASSERT_EQ(plan.ranges.size(), 1u);
  EXPECT_TRUE(plan.ranges[0].range.full());
  EXPECT_EQ(plan.ranges[0].before, std::vector<std::string>{"node-0"});
  EXPECT_EQ(plan.ranges[0].after, std::vector<std::string>{"replacement"});
  EXPECT_EQ(plan.Find(0), &plan.ranges[0]);
  EXPECT_EQ(plan.Find(kMax), &plan.ranges[0]);
  EXPECT_EQ(plan.Fraction(), 1.0);
}

// A moved arc that spans position 0 is one range, kept last, that wraps.
TEST(MovePlan, ARangeAcrossZeroIsOneWrappingRange) {
  const RingConfig config = MakeConfig(8, 64, 2);
  const auto before = MustBuild<Ring>(config);
  bool found = false;
  for (int i = 0; i < 200 && !found; ++i) {
    RingConfig bigger = config;
    bigger.members.push_back(
        {.id = absl::StrCat("extra-", i), .address = "", .weight = 1});
    const auto after = MustBuild<Ring>(bigger);
    const MovePlan plan = ComputeMovePlan(*before, *after);
    const PositionRange& last = plan.ranges.back().range;
    if (last.end == 0 || last.end > last.begin) continue;  // does not wrap
    found = true;
    EXPECT_EQ(plan.Find(0), &plan.ranges.back());
    EXPECT_EQ(plan.Find(kMax), &plan.ranges.back());
    EXPECT_NE(plan.ranges.front().range.begin, 0u);
    ExpectPlanIsExact(*before, *after, plan, 100'000);
  }
  EXPECT_TRUE(found) << "no added member gave a range across 0";
}

}  // namespace
}  // namespace latentd::hashring
