// FailureJudge (service/cluster/failure_judge.h): whom a node may declare
// down, from the cluster's status in Redis: the quorum rule and the grace
// for members not seen beating since this node started.
#include "service/cluster/failure_judge.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace latentd {
namespace {

constexpr int64_t kNow = 1'000'000;  // Redis's clock, ms
const absl::Duration kTimeout = absl::Seconds(1);
const absl::Time kStart = absl::FromUnixSeconds(100);

// A ring of `ids`; beats[i] is member i's last heartbeat (ms before kNow,
// -1: none ever).
sync::ClusterStatus Status(const std::vector<std::string>& ids,
                           const std::vector<int64_t>& ago_ms,
                           int64_t now_ms = kNow) {
  sync::ClusterStatus st;
  st.now_ms = now_ms;
  st.epoch = 4;
  hashring::RingConfig ring;
  ring.version = 4;
  for (size_t i = 0; i < ids.size(); ++i) {
    ring.members.push_back({.id = ids[i], .address = ids[i], .weight = 1});
    sync::MemberStatus m;
    m.id = ids[i];
    m.in_ring = true;
    if (ago_ms[i] >= 0) {
      m.heartbeat = sync::Heartbeat{.unix_ms = now_ms - ago_ms[i]};
    }
    st.members.push_back(m);
  }
  st.ring = ring;
  return st;
}

TEST(FailureJudge, AMemberSeenBeatingIsDeclaredDownAfterTheTimeout) {
  FailureJudge judge("a", kTimeout, absl::Seconds(60), kStart);
  // First read: all beat (after the first read's clock: seen).
  EXPECT_EQ(judge.Judge(Status({"a", "b", "c"}, {0, 0, 0}), kStart).down, "");
  EXPECT_EQ(judge
                .Judge(Status({"a", "b", "c"}, {0, 100, 10}, kNow + 200),
                       kStart + absl::Milliseconds(200))
                .down,
            "");
  // c silent for 1.5 s, well within the grace: it was seen, so it goes.
  const FailureJudge::Verdict v =
      judge.Judge(Status({"a", "b", "c"}, {0, 100, 1500}, kNow + 1700),
                  kStart + absl::Milliseconds(1700));
  EXPECT_EQ(v.down, "c");
}

TEST(FailureJudge, WithoutAQuorumNobodyIsDeclaredDown) {
  FailureJudge judge("a", kTimeout, absl::ZeroDuration(), kStart);
  // a alone of three (b and c last beat long ago): no quorum, said once.
  FailureJudge::Verdict v =
      judge.Judge(Status({"a", "b", "c"}, {0, 60'000, 60'000}), kStart);
  EXPECT_EQ(v.down, "");
  EXPECT_NE(v.note.find("no failover quorum: 1 of the 3"), std::string::npos)
      << v.note;
  v = judge.Judge(Status({"a", "b", "c"}, {0, 61'000, 61'000}), kStart);
  EXPECT_EQ(v.down, "");
  EXPECT_EQ(v.note, "");
  // b back: two of three is a majority, and c (no grace here) goes.
  v = judge.Judge(Status({"a", "b", "c"}, {0, 0, 62'000}), kStart);
  EXPECT_EQ(v.down, "c");
  // Two members: one alive is half, Redis breaks the tie.
  FailureJudge pair("a", kTimeout, absl::ZeroDuration(), kStart);
  EXPECT_EQ(pair.Judge(Status({"a", "b"}, {0, 5000}), kStart).down, "b");
  // Four: two alive is half (allowed), one is not.
  FailureJudge four("a", kTimeout, absl::ZeroDuration(), kStart);
  EXPECT_EQ(
      four.Judge(Status({"a", "b", "c", "d"}, {0, 0, 5000, 5000}), kStart).down,
      "c");
  FailureJudge alone("a", kTimeout, absl::ZeroDuration(), kStart);
  EXPECT_EQ(
      alone.Judge(Status({"a", "b", "c", "d"}, {0, 5000, 5000, 5000}), kStart)
          .down,
      "");
}

TEST(FailureJudge, AMemberNotSeenSinceTheStartGetsTheGrace) {
  FailureJudge judge("a", kTimeout, absl::Seconds(30), kStart);
  // A whole cluster restarted: a and b back, c's heartbeat from before.
  FailureJudge::Verdict v =
      judge.Judge(Status({"a", "b", "c"}, {0, 0, 20'000}), kStart);
  EXPECT_EQ(v.down, "");
  EXPECT_NE(v.note.find("c has not beaten since this node started"),
            std::string::npos)
      << v.note;
  EXPECT_TRUE(v.note_is_info);  // expected in a restart: not a warning
  v = judge.Judge(Status({"a", "b", "c"}, {0, 0, 29'000}, kNow + 9000),
                  kStart + absl::Seconds(29));
  EXPECT_EQ(v.down, "");
  EXPECT_EQ(v.note, "");  // said once
  v = judge.Judge(Status({"a", "b", "c"}, {0, 0, 31'000}, kNow + 11'000),
                  kStart + absl::Seconds(31));
  EXPECT_EQ(v.down, "c");
}

// A member of a cluster formed together, killed before its first beat
// after this node's first read (CI saw it: killed 0.4 s in): it sent this
// process progress, so it was alive since the start and gets no grace.
TEST(FailureJudge, AMemberThatSentProgressGetsNoGrace) {
  FailureJudge judge("a", kTimeout, absl::Seconds(60), kStart,
                     [](const std::string& id) { return id == "c"; });
  EXPECT_EQ(judge.Judge(Status({"a", "b", "c"}, {0, 0, 100}), kStart).down, "");
  const FailureJudge::Verdict v =
      judge.Judge(Status({"a", "b", "c"}, {0, 0, 1500}, kNow + 1400),
                  kStart + absl::Milliseconds(1400));
  EXPECT_EQ(v.down, "c");
  // Without the predicate the same reads wait out the grace.
  FailureJudge blind("a", kTimeout, absl::Seconds(60), kStart);
  EXPECT_EQ(blind.Judge(Status({"a", "b", "c"}, {0, 0, 100}), kStart).down, "");
  EXPECT_EQ(blind
                .Judge(Status({"a", "b", "c"}, {0, 0, 1500}, kNow + 1400),
                       kStart + absl::Milliseconds(1400))
                .down,
            "");
}

TEST(FailureJudge, NothingWhileAMoveRunsOrBeforeJudging) {
  FailureJudge judge("a", kTimeout, absl::ZeroDuration(), kStart);
  sync::ClusterStatus st = Status({"a", "b", "c"}, {0, 0, 5000});
  EXPECT_EQ(judge.Judge(st, kStart, /*may_declare=*/false).down, "");
  st.move = sync::MoveRecord{};
  st.move->status = sync::MoveStatus::kRunning;
  EXPECT_EQ(judge.Judge(st, kStart).down, "");
  st.move->status = sync::MoveStatus::kDone;
  EXPECT_EQ(judge.Judge(st, kStart).down, "c");
}

}  // namespace
}  // namespace latentd
