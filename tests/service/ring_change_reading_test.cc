// ReadRingChange (service/cluster/internal/ring_change_reading.h): what a
// member reads from the cluster's status as it begins following an epoch.
#include "service/cluster/internal/ring_change_reading.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace latentd::internal {
namespace {

hashring::RingConfig Ring(uint64_t version, std::vector<std::string> ids) {
  hashring::RingConfig ring;
  ring.version = version;
  for (const std::string& id : ids) {
    hashring::Member m;
    m.id = id;
    m.address = id;
    m.weight = 1;
    ring.members.push_back(m);
  }
  return ring;
}

sync::MoveRecord Move(sync::MoveKind kind, const std::string& node,
                      sync::RemoveMode mode = sync::RemoveMode::kHandoff) {
  sync::MoveRecord m;
  m.kind = kind;
  m.node = node;
  m.mode = mode;
  return m;
}

sync::ClusterStatus WithMove(const sync::MoveRecord& move) {
  sync::ClusterStatus st;
  st.now_ms = 10'000;
  st.move = move;
  return st;
}

TEST(RingChangeReading, ARunningFailoverIsALostMemberWithItsAge) {
  sync::MoveRecord m = Move(sync::MoveKind::kFailover, "c");
  m.started_ms = 7'500;
  const RingChangeReading r =
      ReadRingChange(WithMove(m), Ring(5, {"a", "b"}), "a", /*listed=*/true);
  EXPECT_EQ(r.lost, std::vector<std::string>{"c"});
  EXPECT_TRUE(r.failover);
  EXPECT_EQ(r.detected_age_ms, 2'500);
  EXPECT_FALSE(r.leave.has_value());
}

TEST(RingChangeReading, OnlyTheRemovedNodeLeavesAndOnlyAtItsDrainEpoch) {
  sync::MoveRecord drain = Move(sync::MoveKind::kRemove, "a");
  drain.phase = sync::MovePhase::kDrain;
  drain.to_epoch = 5;
  const hashring::RingConfig next = Ring(5, {"a", "b"});
  EXPECT_EQ(ReadRingChange(WithMove(drain), next, "a", true).leave,
            sync::RemoveMode::kHandoff);
  EXPECT_FALSE(ReadRingChange(WithMove(drain), next, "b", true).leave);
  EXPECT_FALSE(
      ReadRingChange(WithMove(drain), Ring(6, {"b"}), "a", false).leave);
}

TEST(RingChangeReading, ALostRemovalEndedAtOnceIsStillLost) {
  sync::MoveRecord m =
      Move(sync::MoveKind::kRemove, "c", sync::RemoveMode::kLost);
  m.to_epoch = 5;
  m.status = sync::MoveStatus::kDone;
  const RingChangeReading r =
      ReadRingChange(WithMove(m), Ring(5, {"a", "b"}), "a", true);
  EXPECT_EQ(r.lost, std::vector<std::string>{"c"});
  EXPECT_FALSE(r.failover);
}

TEST(RingChangeReading, LeavingAndDownMembersHoldNoCopies) {
  sync::ClusterStatus st;
  for (const auto& [id, state] :
       std::vector<std::pair<std::string, sync::MemberState>>{
           {"a", sync::MemberState::kActive},
           {"b", sync::MemberState::kLeaving},
           {"c", sync::MemberState::kDown}}) {
    sync::MemberStatus m;
    m.id = id;
    m.state = state;
    st.members.push_back(m);
  }
  const RingChangeReading r =
      ReadRingChange(st, Ring(5, {"a", "b"}), "a", true);
  EXPECT_EQ(r.not_backups, (absl::flat_hash_set<std::string>{"b", "c"}));
  EXPECT_FALSE(r.self_down);
  EXPECT_TRUE(ReadRingChange(st, Ring(5, {"a", "b"}), "c", false).self_down);
  st.move = Move(sync::MoveKind::kAdd, "c");
  EXPECT_EQ(ReadRingChange(st, Ring(6, {"a", "b", "c"}), "a", true).added, "c");
}

}  // namespace
}  // namespace latentd::internal
