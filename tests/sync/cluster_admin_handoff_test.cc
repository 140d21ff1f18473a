// The two-phase hand-off's decision (sync/control/cluster_admin.h,
// CommitHandoff, RollBackHandoff, ReadHandoffOutcome) against a private
// redis-server on a Unix socket: one outcome per attempt, never both, and
// a rollback that puts the ring back with the node active.
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hashring/ring_config.h"
#include "sync/control/cluster_admin.h"
#include "sync/control/membership.h"
#include "tests/sync/unix_redis.h"

namespace latentd::sync {
namespace {

using ::testing::HasSubstr;

class HandoffDecisionTest : public UnixRedisTest {
 protected:
  void SetUp() override {
    UnixRedisTest::SetUp();
    if (HasFatalFailure()) return;
    // Ring epoch 1 of a, b, c; then b's removal with hand-off: drain
    // epoch 2.
    hashring::RingConfig ring;
    for (const char* id : {"a", "b", "c"}) {
      ring.members.push_back(
          {id, absl::StrCat("127.0.0.1:", 7000 + ring.members.size()), 1});
    }
    ring.virtual_points_per_weight = 16;
    ring.replication = 2;
    ring.version = 1;
    ASSERT_TRUE(redis_
                    ->Command({"SET", RingKey(cluster_),
                               hashring::SerializeRingConfig(ring)})
                    .ok());
    auto leave = RemoveNode(redis_.get(), cluster_, "b", RemoveMode::kHandoff);
    ASSERT_TRUE(leave.ok()) << leave.status();
    ASSERT_EQ(leave->version, 2u);
  }
  HandoffOutcome Outcome(const std::string& id, uint64_t epoch) {
    auto o = ReadHandoffOutcome(redis_.get(), cluster_, id, epoch);
    EXPECT_TRUE(o.ok()) << o.status();
    return o.ok() ? *o : HandoffOutcome::kUndecided;
  }
  ClusterStatus Status() {
    auto s = ReadClusterStatus(redis_.get(), cluster_);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : ClusterStatus{};
  }
};

TEST_F(HandoffDecisionTest, UndecidedWhileTheMoveRuns) {
  EXPECT_EQ(Outcome("b", 2), HandoffOutcome::kUndecided);
  // Another attempt's, or another node's: nothing runs for it and
  // nothing is recorded.
  EXPECT_EQ(Outcome("b", 7), HandoffOutcome::kUnknown);
  EXPECT_EQ(Outcome("a", 2), HandoffOutcome::kUnknown);
}

TEST_F(HandoffDecisionTest, ACommittedHandoffCannotBeRolledBack) {
  ASSERT_TRUE(CommitHandoff(redis_.get(), cluster_, "b", 2).ok());
  ASSERT_TRUE(CommitHandoff(redis_.get(), cluster_, "b", 2).ok());  // again
  EXPECT_EQ(Outcome("b", 2), HandoffOutcome::kCommitted);
  auto back = RollBackHandoff(redis_.get(), cluster_, "b", 2, "too late");
  EXPECT_EQ(back.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(back.status().message(), HasSubstr("was committed"));
  // Nor marked failed (an operator's abort-move).
  const absl::Status fail = FailMove(redis_.get(), cluster_, 2, "operator");
  EXPECT_EQ(fail.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(fail.message(), HasSubstr("only completes forward"));
  // The move goes on: its drain phase ends as usual, and the outcome
  // stays once a later move replaced the record.
  auto done = FinishMove(redis_.get(), cluster_, 2, {});
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(FinishMove(redis_.get(), cluster_, 3, {}).ok());
  ASSERT_TRUE(RemoveNode(redis_.get(), cluster_, "c", RemoveMode::kDrop).ok());
  EXPECT_EQ(Outcome("b", 2), HandoffOutcome::kCommitted);
}

TEST_F(HandoffDecisionTest, ARollbackPutsTheNodeBackActive) {
  const ClusterStatus before = Status();
  ASSERT_TRUE(before.ring.has_value());
  auto back = RollBackHandoff(redis_.get(), cluster_, "b", 2,
                              "b could not leave: c did not answer");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->version, 3u);
  EXPECT_EQ(back->members.size(), 3u);
  const ClusterStatus after = Status();
  ASSERT_TRUE(after.ring.has_value());
  EXPECT_EQ(after.epoch, 3u);
  for (const MemberStatus& m : after.members) {
    EXPECT_EQ(m.state, MemberState::kActive) << m.id;
  }
  ASSERT_TRUE(after.move.has_value());
  EXPECT_EQ(after.move->status, MoveStatus::kRolledBack);
  EXPECT_EQ(after.move->to_epoch, 3u);
  EXPECT_THAT(after.move->error, HasSubstr("c did not answer"));
  EXPECT_EQ(Outcome("b", 2), HandoffOutcome::kRolledBack);
  // Neither a commit of it nor a second rollback.
  EXPECT_EQ(CommitHandoff(redis_.get(), cluster_, "b", 2).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      RollBackHandoff(redis_.get(), cluster_, "b", 2, "again").status().code(),
      absl::StatusCode::kFailedPrecondition);
  auto wait = WaitForMove(redis_.get(), cluster_, 2, absl::Seconds(1));
  EXPECT_EQ(wait.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(wait.status().message(), HasSubstr("rolled back"));
  // b can be removed again: a new attempt, undecided.
  auto retry = RemoveNode(redis_.get(), cluster_, "b", RemoveMode::kHandoff);
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_EQ(Outcome("b", 4), HandoffOutcome::kUndecided);
  EXPECT_EQ(Outcome("b", 2), HandoffOutcome::kRolledBack);
}

TEST_F(HandoffDecisionTest, AnAbortedMoveDecidesRolledBack) {
  ASSERT_TRUE(FailMove(redis_.get(), cluster_, 2, "operator").ok());
  EXPECT_EQ(Outcome("b", 2), HandoffOutcome::kRolledBack);
  // Recorded: it stays so once a later move replaced the record.
  ASSERT_TRUE(RemoveNode(redis_.get(), cluster_, "c", RemoveMode::kDrop).ok());
  EXPECT_EQ(Outcome("b", 2), HandoffOutcome::kRolledBack);
  EXPECT_EQ(CommitHandoff(redis_.get(), cluster_, "b", 2).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(HandoffDecisionTest, OnlyTheRunningHandoffIsDecided) {
  // a is not leaving; a drop is no hand-off.
  EXPECT_EQ(CommitHandoff(redis_.get(), cluster_, "a", 2).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CommitHandoff(redis_.get(), cluster_, "b", 5).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(RollBackHandoff(redis_.get(), cluster_, "b", 2, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Outcome("b", 2), HandoffOutcome::kUndecided);
}

}  // namespace
}  // namespace latentd::sync
