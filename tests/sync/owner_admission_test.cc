// OwnerShard's admission (sync/owner_shard.h): a batch from outside the
// ring, from a sender process "from the future", for a key the owner does
// not own, or that would take a key below what its sender contributed is
// refused whole, counted, and takes no tracked slot; the members' batches
// go on as before. Regressions of issue 29, defect 1.
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sync/owner_shard.h"

namespace latentd::sync {
namespace {

constexpr uint32_t kK = 4;

uint64_t Incarnation() { return IncarnationAt(absl::Now(), 7); }

DeltaBatch Batch(const std::string& id, uint64_t incarnation, uint64_t sequence,
                 std::initializer_list<std::pair<Key, SparseVector>> deltas) {
  DeltaBatch b;
  b.set_node_id(id);
  b.set_incarnation(incarnation);
  b.set_sequence(sequence);
  b.set_dimension(kK);
  b.set_changes_only(true);
  b.set_epoch(1);
  for (const auto& [key, v] : deltas) {
    b.add_keys(key);
    AppendToBlock(v, b.mutable_deltas());
  }
  return b;
}

// Owner of the even keys, in a ring of "a" and "b", at epoch 1.
class OwnerAdmissionTest : public ::testing::Test {
 protected:
  OwnerAdmissionTest() : owner_(kK) {
    OwnerAdmission a;
    a.members = {"a", "b"};
    a.owns = [](Key k) { return k % 2 == 0; };
    a.max_incarnation = [] {
      return IncarnationBound(absl::Now(), kMaxClockSkew);
    };
    a.counts = true;
    owner_.SetAdmission(1, std::move(a));
    owner_.SetEpoch(1);
  }
  absl::Status Apply(const DeltaBatch& b) {
    DeltaReply reply;
    return owner_.Apply(b, &reply);
  }
  OwnerShard owner_;
  const uint64_t inc_a_ = Incarnation();
  const uint64_t inc_b_ = Incarnation() + 1;
};

TEST_F(OwnerAdmissionTest, NonMembersAreRefusedAndTakeNoSlot) {
  ASSERT_TRUE(Apply(Batch("a", inc_a_, 1, {{2, {{0, 5}}}})).ok());
  // Far more fake senders than tracked slots, with a fat delta each.
  for (int i = 0; i < 100; ++i) {
    absl::Status s =
        Apply(Batch("fake-" + std::to_string(i), 1, 1, {{2, {{0, 100000}}}}));
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  }
  EXPECT_EQ(owner_.stats().refused_not_member, 100u);
  EXPECT_EQ(owner_.Global(2), (SparseVector{{0, 5}}));
  // The real members still get slots (every sender needs one).
  EXPECT_TRUE(Apply(Batch("b", inc_b_, 1, {{4, {{1, 3}}}})).ok());
  EXPECT_TRUE(Apply(Batch("a", inc_a_, 2, {{2, {{0, 1}}}})).ok());
  EXPECT_EQ(owner_.Global(2), (SparseVector{{0, 6}}));
  EXPECT_FALSE(owner_.Admits("fake-0"));
  EXPECT_TRUE(owner_.Admits("b"));
}

TEST_F(OwnerAdmissionTest, NonMemberOfALaterEpochIsToldToWait) {
  DeltaBatch b = Batch("joiner", 1, 1, {{2, {{0, 1}}}});
  b.set_epoch(2);
  EXPECT_EQ(Apply(b).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(owner_.stats().refused_not_member, 0u);
  EXPECT_TRUE(owner_.Global(2).empty());
}

TEST_F(OwnerAdmissionTest, IncarnationFromTheFutureIsRefused) {
  ASSERT_TRUE(Apply(Batch("a", inc_a_, 1, {{2, {{0, 5}}}})).ok());
  // Claiming a's id with the largest incarnation would retract a's counts
  // and supersede a for good.
  absl::Status s =
      Apply(Batch("a", std::numeric_limits<uint64_t>::max(), 1, {}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = Apply(Batch("a", IncarnationAt(absl::Now() + absl::Hours(1), 0), 1, {}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(owner_.stats().refused_incarnation, 2u);
  EXPECT_EQ(owner_.stats().senders_retracted, 0u);
  EXPECT_EQ(owner_.Global(2), (SparseVector{{0, 5}}));
  EXPECT_TRUE(Apply(Batch("a", inc_a_, 2, {{2, {{0, 1}}}})).ok());
  // A restart within the skew still supersedes (a later process of a).
  EXPECT_TRUE(Apply(Batch("a", Incarnation() + 100, 1, {{2, {{0, 2}}}})).ok());
  EXPECT_EQ(owner_.Global(2), (SparseVector{{0, 2}}));
}

TEST_F(OwnerAdmissionTest, KeysThisOwnerDoesNotOwnAreRefusedWhole) {
  absl::Status s = Apply(Batch("a", inc_a_, 1, {{2, {{0, 1}}}, {3, {{0, 1}}}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(owner_.stats().refused_key_not_owned, 1u);
  EXPECT_EQ(owner_.num_keys(), 0u);
  // Nothing of it applied: the same sequence goes through corrected.
  EXPECT_TRUE(Apply(Batch("a", inc_a_, 1, {{2, {{0, 1}}}})).ok());
  EXPECT_EQ(owner_.Global(2), (SparseVector{{0, 1}}));
}

TEST_F(OwnerAdmissionTest, NoSenderTakesAKeyBelowItsOwnPart) {
  ASSERT_TRUE(Apply(Batch("a", inc_a_, 1, {{2, {{0, 5}, {1, 2}}}})).ok());
  ASSERT_TRUE(Apply(Batch("b", inc_b_, 1, {{2, {{0, 1}}}})).ok());
  // b contributed 1 to (2, topic 0): it may not take a's 5.
  absl::Status s = Apply(Batch("b", inc_b_, 2, {{2, {{0, -2}}}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = Apply(Batch("b", inc_b_, 2, {{2, {{0, -1000000000}}}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  // A topic b never gave to, and a key it never sent.
  s = Apply(Batch("b", inc_b_, 2, {{2, {{1, -1}}}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = Apply(Batch("b", inc_b_, 2, {{4, {{0, -1}}}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(owner_.stats().refused_negative, 4u);
  EXPECT_EQ(owner_.Global(2), (SparseVector{{0, 6}, {1, 2}}));
  // Each may take back exactly what it gave, in one step or several.
  EXPECT_TRUE(Apply(Batch("b", inc_b_, 2, {{2, {{0, -1}}}})).ok());
  EXPECT_TRUE(Apply(Batch("a", inc_a_, 2, {{2, {{0, -3}, {1, 1}}}})).ok());
  EXPECT_TRUE(Apply(Batch("a", inc_a_, 3, {{2, {{0, -2}, {1, -3}}}})).ok());
  EXPECT_TRUE(owner_.Global(2).empty());
  EXPECT_EQ(Apply(Batch("a", inc_a_, 4, {{2, {{0, -1}}}})).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(OwnerAdmissionTest, OnlyThisProcessSkipsTheKeyAndDeltaChecks) {
  // The checks that look every key up guard against peers; this node's own
  // synchronizer, in-process, is trusted as the process is.
  ASSERT_TRUE(Apply(Batch("a", inc_a_, 1, {{2, {{0, 5}}}})).ok());
  const DeltaBatch unowned = Batch("b", inc_b_, 1, {{3, {{0, 1}}}});
  DeltaReply reply;
  EXPECT_EQ(owner_.Apply(unowned, &reply).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      owner_.Apply(unowned, &reply, OwnerShard::Origin::kThisProcess).ok());
  const DeltaBatch below = Batch("b", inc_b_, 2, {{2, {{0, -2}}}});
  EXPECT_EQ(owner_.Apply(below, &reply).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      owner_.Apply(below, &reply, OwnerShard::Origin::kThisProcess).ok());
  EXPECT_EQ(owner_.Global(2), (SparseVector{{0, 3}}));
  EXPECT_EQ(owner_.stats().refused_key_not_owned, 1u);
  EXPECT_EQ(owner_.stats().refused_negative, 1u);
  // The sender checks still apply to it.
  EXPECT_EQ(owner_
                .Apply(Batch("fake", 1, 1, {{2, {{0, 1}}}}), &reply,
                       OwnerShard::Origin::kThisProcess)
                .code(),
            absl::StatusCode::kPermissionDenied);
}

TEST_F(OwnerAdmissionTest, OutOfRangeDeltasAreRefused) {
  absl::Status s = Apply(Batch("a", inc_a_, 1, {{2, {{0, int64_t{1} << 40}}}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(owner_.num_keys(), 0u);
}

TEST_F(OwnerAdmissionTest, AResendCreatesNoKey) {
  // A resend is not admitted again (its keys were when it applied), so it
  // must make no entry for a key: not even an empty one.
  ASSERT_TRUE(Apply(Batch("a", inc_a_, 1, {{2, {{0, 1}}}})).ok());
  EXPECT_TRUE(Apply(Batch("a", inc_a_, 1, {{3, {{0, 1}}}, {5, {}}})).ok());
  EXPECT_EQ(owner_.num_keys(), 1u);
}

TEST(OwnerAdmission, ValuesThatAreNotCountsMayGoNegative) {
  OwnerShard owner(kK);
  OwnerAdmission a;
  a.members = {"a"};
  owner.SetAdmission(0, std::move(a));
  DeltaReply reply;
  EXPECT_TRUE(
      owner.Apply(Batch("a", Incarnation(), 1, {{2, {{0, -7}}}}), &reply).ok());
  EXPECT_EQ(owner.Global(2), (SparseVector{{0, -7}}));
}

// A member may create at most max_new_keys_per_sender keys at an owner in
// an epoch: made-up keys would grow the owner's memory without bound.
TEST(OwnerAdmission, NewKeysPerSenderAreBoundedPerEpoch) {
  OwnerShard owner(kK);
  auto admission = [] {
    OwnerAdmission a;
    a.members = {"a", "b"};
    a.counts = true;
    a.max_new_keys_per_sender = 3;
    return a;
  };
  owner.SetAdmission(1, admission());
  owner.SetEpoch(1);
  const uint64_t inc_a = Incarnation();
  const uint64_t inc_b = Incarnation() + 1;
  DeltaReply reply;
  ASSERT_TRUE(
      owner.Apply(Batch("a", inc_a, 1, {{2, {{0, 1}}}, {4, {{0, 1}}}}), &reply)
          .ok());
  // Two new keys with one left: refused whole, nothing of it applied.
  absl::Status s = owner.Apply(
      Batch("a", inc_a, 2, {{2, {{0, 1}}}, {6, {}}, {8, {{1, 1}}}}), &reply);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("--cluster-max-new-keys"), std::string::npos);
  EXPECT_EQ(owner.stats().refused_too_many_keys, 1u);
  EXPECT_EQ(owner.num_keys(), 2u);
  EXPECT_EQ(owner.Global(2), (SparseVector{{0, 1}}));
  // Keys it has: as many as it likes; and its last new one.
  ASSERT_TRUE(
      owner
          .Apply(Batch("a", inc_a, 2, {{2, {{0, 1}}}, {4, {{0, 1}}}, {6, {}}}),
                 &reply)
          .ok());
  EXPECT_EQ(owner.Apply(Batch("a", inc_a, 3, {{8, {{0, 1}}}}), &reply).code(),
            absl::StatusCode::kResourceExhausted);
  // Another member has a bound of its own, and keys a made exist for it.
  ASSERT_TRUE(owner
                  .Apply(Batch("b", inc_b, 1,
                               {{2, {{0, 1}}}, {8, {{0, 1}}}, {10, {{0, 1}}}}),
                         &reply)
                  .ok());
  // A new epoch starts the count again.
  owner.SetAdmission(2, admission());
  owner.AdvanceEpoch(
      2, [](Key) { return std::string(); }, "self");
  DeltaBatch next = Batch("a", inc_a, 3, {{12, {{0, 1}}}});
  next.set_epoch(2);
  EXPECT_TRUE(owner.Apply(next, &reply).ok());
  EXPECT_EQ(owner.Global(12), (SparseVector{{0, 1}}));
}

TEST(OwnerAdmission, AnAdmissionForALaterEpochWaitsForIt) {
  OwnerShard owner(kK);
  owner.SetEpoch(1);
  OwnerAdmission next;
  next.members = {"a"};
  owner.SetAdmission(2, std::move(next));
  EXPECT_TRUE(owner.Admits("x"));  // epoch 1: no admission yet
  owner.AdvanceEpoch(
      2, [](Key) { return std::string(); }, "self");
  EXPECT_FALSE(owner.Admits("x"));
  EXPECT_TRUE(owner.Admits("a"));
}

// A ring member's shard takes nothing before it knows its ring: the
// batches (re-seeds of a restarted member, found by the network-fault
// test) wait, and apply once the ring is read.
TEST(OwnerAdmission, ARingMembersShardTakesNoBatchBeforeItsFirstEpoch) {
  OwnerShard owner(kK, /*awaits_ring=*/true);
  const DeltaBatch b = Batch("a", Incarnation(), 1, {{12, {{0, 2}}}});
  DeltaReply reply;
  const absl::Status early = owner.Apply(b, &reply);
  EXPECT_TRUE(absl::IsUnavailable(early)) << early;
  // (Its sender treats a refusal naming the ring epoch as a ring change's.)
  EXPECT_TRUE(absl::StrContains(early.message(), "ring epoch")) << early;
  EXPECT_TRUE(owner.Global(12).empty());
  OwnerAdmission a;
  a.members = {"a"};
  owner.SetAdmission(1, std::move(a));
  owner.SetEpoch(1);
  EXPECT_TRUE(owner.Apply(b, &reply).ok());
  EXPECT_EQ(owner.Global(12), (SparseVector{{0, 2}}));
  // A shard outside a ring (tests, tools) takes batches at once.
  OwnerShard tool(kK);
  EXPECT_TRUE(tool.Apply(b, &reply).ok());
}

}  // namespace
}  // namespace latentd::sync
