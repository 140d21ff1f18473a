// The cluster control plane (sync/control/cluster_admin.h) against a private
// redis-server on a Unix socket in a temporary directory (no TCP port at
// all), started once for the suite; each test uses its own cluster name.
// Every refused change is checked to leave all of the cluster's keys
// byte-identical (Redis DUMP of each key before and after).
#include "sync/control/cluster_admin.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hashring/ring_config.h"
#include "sync/control/drain.h"
#include "sync/control/membership.h"
#include "tests/sync/unix_redis.h"

namespace latentd::sync {
namespace {

using ::testing::HasSubstr;

class ClusterAdminTest : public UnixRedisTest {
 protected:
  // Writes the ring JoinCluster would write (version 1) for `ids`.
  void WriteRing(const std::vector<std::string>& ids, uint32_t k = 1) {
    hashring::RingConfig ring;
    for (size_t i = 0; i < ids.size(); ++i) {
      ring.members.push_back({ids[i], absl::StrCat("127.0.0.1:", 7000 + i), 1});
    }
    ring.virtual_points_per_weight = 16;
    ring.replication = k;
    ring.version = 1;
    ASSERT_TRUE(
        Cmd({"SET", RingKey(cluster_), hashring::SerializeRingConfig(ring)})
            .ok());
  }
  absl::StatusOr<RedisReply> Cmd(const std::vector<std::string>& args) {
    return redis_->Command(args);
  }
  hashring::RingConfig StoredRing() {
    auto r = Cmd({"GET", RingKey(cluster_)});
    EXPECT_TRUE(r.ok());
    auto ring = hashring::ParseRingConfig(r->str);
    EXPECT_TRUE(ring.ok()) << ring.status();
    return ring.ok() ? *ring : hashring::RingConfig{};
  }
  // DUMP of every key of the cluster: equal before and after means nothing
  // was written.
  std::vector<std::string> Dump() {
    const ClusterKeys k(cluster_);
    std::vector<std::string> out;
    for (const std::string& key : {k.members, k.ring, k.pending, k.states,
                                   k.move, k.epochs, k.heartbeats}) {
      auto r = Cmd({"DUMP", key});
      EXPECT_TRUE(r.ok());
      out.push_back(absl::StrCat(key, "=", r.ok() ? r->str : "?"));
    }
    return out;
  }
  // The history stream as "epoch change node" lines.
  std::vector<std::string> History() {
    auto r = Cmd({"XRANGE", ClusterKeys(cluster_).epochs, "-", "+"});
    EXPECT_TRUE(r.ok());
    std::vector<std::string> out;
    for (const RedisReply& e : r->elements) {
      const auto& f = e.elements[1].elements;  // field, value, ...
      std::string line;
      for (size_t i = 0; i + 1 < f.size(); i += 2) {
        if (f[i].str == "epoch" || f[i].str == "change" || f[i].str == "node") {
          absl::StrAppend(&line, line.empty() ? "" : " ", f[i + 1].str);
        }
      }
      out.push_back(line);
    }
    return out;
  }
  std::vector<std::string> RingIds() {
    std::vector<std::string> ids;
    for (const auto& m : StoredRing().members) ids.push_back(m.id);
    return ids;
  }
  MemberStatus Member(const ClusterStatus& s, const std::string& id) {
    for (const auto& m : s.members) {
      if (m.id == id) return m;
    }
    ADD_FAILURE() << id << " not in the status";
    return {};
  }
};

TEST_F(ClusterAdminTest, AdmitsAPendingNode) {
  // The first epoch as today's JoinCluster writes it.
  MembershipOptions join;
  join.cluster = cluster_;
  join.node_id = "a";
  join.address = "127.0.0.1:7000";
  join.virtual_points = 32;
  auto first = JoinCluster(redis_.get(), join);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->version, 1u);

  ASSERT_TRUE(
      RegisterPending(redis_.get(), cluster_, "b", "127.0.0.1:7001").ok());
  auto status = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->epoch, 1u);
  EXPECT_EQ(Member(*status, "b").state, MemberState::kPending);
  EXPECT_FALSE(status->move.has_value());

  auto ring = AdmitNode(redis_.get(), cluster_, "b");
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_EQ(ring->version, 2u);
  EXPECT_EQ(StoredRing(), *ring);
  ASSERT_EQ(ring->members.size(), 2u);
  EXPECT_EQ(ring->members[1], (hashring::Member{"b", "127.0.0.1:7001", 1}));
  EXPECT_EQ(ring->virtual_points_per_weight, 32u);
  EXPECT_EQ(ring->replication, first->replication);

  status = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->epoch, 2u);
  ASSERT_EQ(status->members.size(), 2u);
  EXPECT_EQ(Member(*status, "a").state, MemberState::kActive);
  const MemberStatus b = Member(*status, "b");
  EXPECT_EQ(b.state, MemberState::kActive);
  EXPECT_TRUE(b.in_ring);
  EXPECT_EQ(b.address, "127.0.0.1:7001");
  EXPECT_EQ(Cmd({"HLEN", ClusterKeys(cluster_).pending})->integer, 0);
  EXPECT_EQ(Cmd({"HGET", MembersKey(cluster_), "b"})->str, "127.0.0.1:7001");
  ASSERT_TRUE(status->move.has_value());
  const MoveRecord& m = *status->move;
  EXPECT_EQ(m.kind, MoveKind::kAdd);
  EXPECT_EQ(m.node, "b");
  EXPECT_EQ(m.phase, MovePhase::kKeys);
  EXPECT_EQ(m.from_epoch, 1u);
  EXPECT_EQ(m.to_epoch, 2u);
  EXPECT_EQ(m.status, MoveStatus::kRunning);
  EXPECT_GT(m.started_ms, 1600000000000);
  EXPECT_LE(m.started_ms, status->now_ms);
  EXPECT_EQ(History(), std::vector<std::string>{"2 add b"});
}

// Two operators admit two different pending nodes at once, each on its own
// connection: exactly one wins; the other is told why and changes nothing.
TEST_F(ClusterAdminTest, RacingAdmitsOneWins) {
  int aborted = 0;
  for (int round = 0; round < 20; ++round) {
    SetUp();
    WriteRing({"a"});
    ASSERT_TRUE(RegisterPending(redis_.get(), cluster_, "b", "h:1").ok());
    ASSERT_TRUE(RegisterPending(redis_.get(), cluster_, "c", "h:2").ok());
    std::barrier start(2);
    absl::StatusOr<hashring::RingConfig> result[2] = {absl::UnknownError(""),
                                                      absl::UnknownError("")};
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i) {
      threads.emplace_back([&, i] {
        auto conn = redis_server_->Connect();
        start.arrive_and_wait();
        if (conn == nullptr) return;
        result[i] = AdmitNode(conn.get(), cluster_, i == 0 ? "b" : "c");
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_NE(result[0].ok(), result[1].ok())
        << result[0].status() << " / " << result[1].status();
    const int winner = result[0].ok() ? 0 : 1;
    const absl::Status& lost = result[1 - winner].status();
    if (lost.code() == absl::StatusCode::kAborted) {
      ++aborted;
      EXPECT_THAT(lost.message(),
                  HasSubstr("the ring changed concurrently: epoch 2; "
                            "nothing was changed"));
    } else {
      EXPECT_EQ(lost.code(), absl::StatusCode::kFailedPrecondition) << lost;
      EXPECT_THAT(lost.message(), HasSubstr("a move is already running"));
    }
    const std::string won = winner == 0 ? "b" : "c";
    const std::string other = winner == 0 ? "c" : "b";
    EXPECT_EQ(RingIds(), (std::vector<std::string>{"a", won}));
    EXPECT_EQ(StoredRing().version, 2u);
    EXPECT_EQ(Cmd({"HEXISTS", ClusterKeys(cluster_).pending, other})->integer,
              1);
    EXPECT_EQ(History().size(), 1u);
  }
  std::printf(
      "20 races: %d lost at the compare-and-set, %d at 'move running'\n",
      aborted, 20 - aborted);
}

// The same race made deterministic: the second admit lands between the
// first one's read and its compare-and-set.
TEST_F(ClusterAdminTest, ConcurrentChangeAbortsTheLoser) {
  WriteRing({"a"});
  ASSERT_TRUE(RegisterPending(redis_.get(), cluster_, "b", "h:1").ok());
  ASSERT_TRUE(RegisterPending(redis_.get(), cluster_, "c", "h:2").ok());
  auto other = redis_server_->Connect();
  std::vector<std::string> after_winner;
  ClusterAdminOptions options;
  options.before_commit = [&] {
    auto won = AdmitNode(other.get(), cluster_, "c");
    ASSERT_TRUE(won.ok()) << won.status();
    after_winner = Dump();
  };
  auto lost = AdmitNode(redis_.get(), cluster_, "b", options);
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(lost.status().message(),
            "the ring changed concurrently: epoch 2; nothing was changed");
  EXPECT_EQ(Dump(), after_winner);
  EXPECT_EQ(RingIds(), (std::vector<std::string>{"a", "c"}));
}

TEST_F(ClusterAdminTest, RemovingTheLastNodeIsRefused) {
  WriteRing({"a"});
  const auto before = Dump();
  auto r = RemoveNode(redis_.get(), cluster_, "a", RemoveMode::kHandoff);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("last active member"));
  EXPECT_EQ(Dump(), before);
}

TEST_F(ClusterAdminTest, RemovingAnUnknownNodeIsRefused) {
  WriteRing({"a", "b"});
  const auto before = Dump();
  auto r = RemoveNode(redis_.get(), cluster_, "zz", RemoveMode::kDrop);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("'zz' is not a member"));
  EXPECT_EQ(Dump(), before);
  // A pending node is not in the ring either.
  ASSERT_TRUE(RegisterPending(redis_.get(), cluster_, "p", "h:3").ok());
  const auto with_pending = Dump();
  r = RemoveNode(redis_.get(), cluster_, "p", RemoveMode::kDrop);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Dump(), with_pending);
}

TEST_F(ClusterAdminTest, AdmittingANodeThatIsNotPendingIsRefused) {
  WriteRing({"a", "b"});
  const auto before = Dump();
  auto r = AdmitNode(redis_.get(), cluster_, "b");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(),
              HasSubstr("node 'b' is not pending: it is active in epoch 1"));
  r = AdmitNode(redis_.get(), cluster_, "nobody");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("not registered"));
  EXPECT_EQ(Dump(), before);
  // A ring member cannot register as pending.
  EXPECT_EQ(RegisterPending(redis_.get(), cluster_, "a", "h:9").code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Dump(), before);
}

TEST_F(ClusterAdminTest, ARunningMoveBlocksTheNextUntilFinished) {
  WriteRing({"a"});
  for (const char* id : {"b", "c"}) {
    ASSERT_TRUE(RegisterPending(redis_.get(), cluster_, id, "h:1").ok());
  }
  ASSERT_TRUE(AdmitNode(redis_.get(), cluster_, "b").ok());
  const auto running = Dump();
  auto r = AdmitNode(redis_.get(), cluster_, "c");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(),
              HasSubstr("a move is already running: add b, epoch 1 -> 2"));
  r = RemoveNode(redis_.get(), cluster_, "a", RemoveMode::kHandoff);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Dump(), running);
  // Finishing a move that is not the running one changes nothing.
  EXPECT_EQ(FinishMove(redis_.get(), cluster_, 3, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Dump(), running);

  ASSERT_TRUE(
      ReportMoveProgress(redis_.get(), cluster_, 2, {10, 1000, 0}).ok());
  auto done = FinishMove(redis_.get(), cluster_, 2, {5, 24, 0});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->status, MoveStatus::kDone);
  EXPECT_EQ(done->counters.keys, 15u);
  EXPECT_EQ(done->counters.bytes, 1024u);
  EXPECT_GE(done->finished_ms, done->started_ms);
  auto waited = WaitForMove(redis_.get(), cluster_, 2, absl::Seconds(1));
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_EQ(waited->counters.keys, 15u);

  auto next = AdmitNode(redis_.get(), cluster_, "c");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->version, 3u);
  EXPECT_EQ(History(),
            (std::vector<std::string>{"2 add b", "2 done b", "3 add c"}));
}

// Remove with hand-off: epoch 2 keeps the placement and marks b leaving;
// the end of the drain writes epoch 3 without b; the end of the key
// hand-off forgets it.
TEST_F(ClusterAdminTest, RemoveTakesTwoEpochs) {
  WriteRing({"a", "b", "c"}, /*k=*/3);
  ASSERT_TRUE(WriteHeartbeat(redis_.get(), cluster_, "b", {0, 4, 100, 9}).ok());
  auto leave = RemoveNode(redis_.get(), cluster_, "b", RemoveMode::kHandoff);
  ASSERT_TRUE(leave.ok()) << leave.status();
  EXPECT_EQ(leave->version, 2u);
  hashring::RingConfig same = StoredRing();
  same.version = 1;
  hashring::RingConfig first = *leave;
  first.version = 1;
  EXPECT_EQ(same, first);  // the same placement
  auto s = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(Member(*s, "b").state, MemberState::kLeaving);
  EXPECT_TRUE(Member(*s, "b").in_ring);
  EXPECT_EQ(s->move->phase, MovePhase::kDrain);
  EXPECT_EQ(s->move->mode, RemoveMode::kHandoff);

  ASSERT_TRUE(ReportMoveProgress(redis_.get(), cluster_, 2, {0, 500, 7}).ok());
  auto keys = FinishMove(redis_.get(), cluster_, 2, {0, 0, 3});
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->status, MoveStatus::kRunning);
  EXPECT_EQ(keys->phase, MovePhase::kKeys);
  EXPECT_EQ(keys->from_epoch, 1u);
  EXPECT_EQ(keys->to_epoch, 3u);
  const hashring::RingConfig without = StoredRing();
  EXPECT_EQ(without.version, 3u);
  EXPECT_EQ(RingIds(), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(without.replication, 2u);  // k capped at the members left
  s = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(Member(*s, "b").state, MemberState::kLeaving);
  EXPECT_FALSE(Member(*s, "b").in_ring);
  EXPECT_EQ(Member(*s, "b").address, "127.0.0.1:7001");
  // Waiting times out while the keys move.
  auto wait = WaitForMove(redis_.get(), cluster_, 2, absl::Milliseconds(100));
  EXPECT_EQ(wait.status().code(), absl::StatusCode::kDeadlineExceeded);

  std::thread finisher([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto conn = redis_server_->Connect();
    auto done = FinishMove(conn.get(), cluster_, 3, {42, 1000, 0});
    EXPECT_TRUE(done.ok()) << done.status();
  });
  wait = WaitForMove(redis_.get(), cluster_, 2, absl::Seconds(10));
  finisher.join();
  ASSERT_TRUE(wait.ok()) << wait.status();
  EXPECT_EQ(wait->status, MoveStatus::kDone);
  EXPECT_EQ(wait->counters.keys, 42u);
  EXPECT_EQ(wait->counters.bytes, 1500u);
  EXPECT_EQ(wait->counters.documents, 10u);
  s = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->members.size(), 2u);
  EXPECT_EQ(Cmd({"HEXISTS", ClusterKeys(cluster_).heartbeats, "b"})->integer,
            0);
  EXPECT_EQ(History(),
            (std::vector<std::string>{"2 leave b", "3 remove b", "3 done b"}));
  // Finishing again is refused.
  EXPECT_EQ(FinishMove(redis_.get(), cluster_, 3, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(ClusterAdminTest, AFailedDrainCanBeRetried) {
  WriteRing({"a", "b"});
  ASSERT_TRUE(RemoveNode(redis_.get(), cluster_, "b", RemoveMode::kDrop).ok());
  ASSERT_TRUE(FailMove(redis_.get(), cluster_, 2, "b did not answer").ok());
  auto wait = WaitForMove(redis_.get(), cluster_, 2, absl::Seconds(1));
  EXPECT_EQ(wait.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(wait.status().message(), HasSubstr("b did not answer"));
  // b is still leaving, a the only active member: a cannot go.
  const auto failed = Dump();
  EXPECT_EQ(RemoveNode(redis_.get(), cluster_, "a", RemoveMode::kDrop)
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Dump(), failed);
  auto retry = RemoveNode(redis_.get(), cluster_, "b", RemoveMode::kDrop);
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_EQ(retry->version, 3u);
  EXPECT_EQ(History(),
            (std::vector<std::string>{"2 leave b", "2 failed b", "3 leave b"}));
}

TEST_F(ClusterAdminTest, StatusShowsStatesAndHeartbeats) {
  auto empty = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_FALSE(empty->ring.has_value());
  EXPECT_TRUE(empty->members.empty());

  WriteRing({"a", "b"});
  ASSERT_TRUE(RegisterPending(redis_.get(), cluster_, "c", "10.0.0.3:7").ok());
  ASSERT_TRUE(RemoveNode(redis_.get(), cluster_, "b", RemoveMode::kDrop).ok());
  ASSERT_TRUE(
      WriteHeartbeat(redis_.get(), cluster_, "a",
                     {.unix_ms = 0,
                      .sweep = 12,
                      .keys = 3456,
                      .documents = 100,
                      .epoch = 7,
                      .senders_retracted = 1,
                      .reseed_refused = 2,
                      .stale_refused = 3,
                      .under_replicated = 4,
                      .failovers = 5,
                      .last_failover_ms = 1234,
                      .log_likelihood = LogLikelihoodPart{.sweep = 10,
                                                          .tokens = 900,
                                                          .doc = -1234.5,
                                                          .owned_word = -0.1}})
          .ok());
  auto s = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->members.size(), 3u);
  EXPECT_EQ(s->members[0].id, "a");
  EXPECT_EQ(s->members[0].state, MemberState::kActive);
  EXPECT_EQ(s->members[0].address, "127.0.0.1:7000");
  ASSERT_TRUE(s->members[0].heartbeat.has_value());
  EXPECT_EQ(s->members[0].heartbeat->sweep, 12u);
  EXPECT_EQ(s->members[0].heartbeat->keys, 3456u);
  EXPECT_EQ(s->members[0].heartbeat->documents, 100u);
  EXPECT_TRUE(s->members[0].heartbeat->has_counters);
  EXPECT_EQ(s->members[0].heartbeat->epoch, 7u);
  EXPECT_EQ(s->members[0].heartbeat->senders_retracted, 1u);
  EXPECT_EQ(s->members[0].heartbeat->reseed_refused, 2u);
  EXPECT_EQ(s->members[0].heartbeat->stale_refused, 3u);
  EXPECT_TRUE(s->members[0].heartbeat->has_replication);
  EXPECT_EQ(s->members[0].heartbeat->under_replicated, 4u);
  EXPECT_EQ(s->members[0].heartbeat->failovers, 5u);
  EXPECT_EQ(s->members[0].heartbeat->last_failover_ms, 1234);
  ASSERT_TRUE(s->members[0].heartbeat->log_likelihood.has_value());
  EXPECT_EQ(s->members[0].heartbeat->log_likelihood->sweep, 10u);
  EXPECT_EQ(s->members[0].heartbeat->log_likelihood->tokens, 900u);
  EXPECT_EQ(s->members[0].heartbeat->log_likelihood->doc, -1234.5);
  EXPECT_EQ(s->members[0].heartbeat->log_likelihood->owned_word, -0.1);
  EXPECT_LE(s->members[0].heartbeat->unix_ms, s->now_ms);
  EXPECT_GT(s->members[0].heartbeat->unix_ms, s->now_ms - 5000);
  EXPECT_EQ(s->members[1].state, MemberState::kLeaving);
  EXPECT_FALSE(s->members[1].heartbeat.has_value());
  EXPECT_EQ(s->members[2].state, MemberState::kPending);
  EXPECT_EQ(s->members[2].address, "10.0.0.3:7");
  EXPECT_FALSE(s->members[2].in_ring);
  EXPECT_EQ(s->move->mode, RemoveMode::kDrop);
}

// A drain request reads back in the status; each ring member's settled
// checksum rides in its heartbeat, and the cluster is settled only when
// every ring member reports the same one.
TEST_F(ClusterAdminTest, DrainIsSettledWhenEveryMemberHasOneChecksum) {
  WriteRing({"a", "b"});
  ASSERT_TRUE(SetDrain(redis_.get(), cluster_, true).ok());
  auto beat = [&](const std::string& id, uint64_t checksum) {
    ASSERT_TRUE(WriteHeartbeat(redis_.get(), cluster_, id,
                               {.sweep = 3, .settled_checksum = checksum})
                    .ok());
  };
  beat("a", 0xabc);
  beat("b", 0);
  auto s = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->drain_requested);
  EXPECT_EQ(s->members[0].heartbeat->settled_checksum, 0xabcu);
  EXPECT_EQ(s->members[1].heartbeat->settled_checksum, 0u);
  Settlement st = ReadSettlement(*s);
  EXPECT_FALSE(st.settled);
  ASSERT_EQ(st.waiting.size(), 1u);
  EXPECT_EQ(st.waiting[0], "b: still draining (changes to send or receive)");
  beat("b", 0xabd);
  st = ReadSettlement(*ReadClusterStatus(redis_.get(), cluster_));
  EXPECT_FALSE(st.settled);
  EXPECT_EQ(st.waiting.size(), 2u);
  beat("b", 0xabc);
  st = ReadSettlement(*ReadClusterStatus(redis_.get(), cluster_));
  EXPECT_TRUE(st.settled);
  EXPECT_EQ(st.checksum, 0xabcu);
  ASSERT_TRUE(SetDrain(redis_.get(), cluster_, false).ok());
  auto after = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->drain_requested);
}

// A member that stopped sampling after a failure says so in its heartbeat
// (f=1), and the drain waits on it by name, whatever checksum it had.
TEST_F(ClusterAdminTest, DrainNamesAMemberStoppedAfterAFailure) {
  WriteRing({"a", "b"});
  ASSERT_TRUE(SetDrain(redis_.get(), cluster_, true).ok());
  ASSERT_TRUE(
      WriteHeartbeat(redis_.get(), cluster_, "a", {.settled_checksum = 0xabc})
          .ok());
  ASSERT_TRUE(
      WriteHeartbeat(redis_.get(), cluster_, "b",
                     {.settled_checksum = 0xabc, .stopped_failed = true})
          .ok());
  auto s = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->members[0].heartbeat->stopped_failed);
  EXPECT_TRUE(s->members[1].heartbeat->stopped_failed);
  const Settlement st = ReadSettlement(*s);
  EXPECT_FALSE(st.settled);
  ASSERT_EQ(st.waiting.size(), 1u);
  EXPECT_TRUE(
      absl::StartsWith(st.waiting[0],
                       "b: stopped sampling after a failure, its table is not "
                       "the cluster's"))
      << st.waiting[0];
  // Read back from the line as written, and a bad tag is corrupt.
  const std::string hb = ClusterKeys(cluster_).heartbeats;
  ASSERT_TRUE(Cmd({"HSET", hb, "b", "1000 13 7 8 f=2"}).ok());
  EXPECT_EQ(ReadClusterStatus(redis_.get(), cluster_).status().code(),
            absl::StatusCode::kDataLoss);
}

// A rolling upgrade: a newer node's heartbeat, with positional fields past
// the known ones and tagged fields besides s= and r= (the copies a member
// keeps of each key: 0 from an older node), reads by the fields known
// here. A line short of a known shape, or a bad s= or r=, is still corrupt.
TEST_F(ClusterAdminTest, HeartbeatsOfANewerNodeReadByTheirKnownFields) {
  WriteRing({"a", "b"});
  const std::string hb = ClusterKeys(cluster_).heartbeats;
  ASSERT_TRUE(Cmd({"HSET", hb, "a",
                   "1000 12 3456 100 7 1 2 3 4 5 1234 10 900 -1234.5 -0.1 "
                   "99 98 s=abc r=2 zz=1"})
                  .ok());
  ASSERT_TRUE(Cmd({"HSET", hb, "b", "1000 13 7 8 q=2"}).ok());
  auto s = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->members[0].heartbeat.has_value());
  const Heartbeat& a = *s->members[0].heartbeat;
  EXPECT_EQ(a.sweep, 12u);
  EXPECT_EQ(a.last_failover_ms, 1234);
  ASSERT_TRUE(a.log_likelihood.has_value());
  EXPECT_EQ(a.log_likelihood->owned_word, -0.1);
  EXPECT_EQ(a.settled_checksum, 0xabcu);
  EXPECT_EQ(a.key_copies, 2u);
  ASSERT_TRUE(s->members[1].heartbeat.has_value());
  EXPECT_EQ(s->members[1].heartbeat->sweep, 13u);
  EXPECT_FALSE(s->members[1].heartbeat->has_counters);
  EXPECT_EQ(s->members[1].heartbeat->key_copies, 0u);
  // What a node writes reads back.
  ASSERT_TRUE(
      WriteHeartbeat(redis_.get(), cluster_, "b", {.key_copies = 3}).ok());
  s = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->members[1].heartbeat->key_copies, 3u);
  for (const char* bad : {"1000 12 3456", "1000 12 3456 100 7",
                          "1000 12 3456 100 s=0", "1000 12 3456 100 s=xyz",
                          "1000 12 3456 100 r=0", "1000 12 3456 100 r=x"}) {
    ASSERT_TRUE(Cmd({"HSET", hb, "b", bad}).ok());
    EXPECT_EQ(ReadClusterStatus(redis_.get(), cluster_).status().code(),
              absl::StatusCode::kDataLoss)
        << bad;
  }
}

// What Redis holds is checked: garbage gives kDataLoss naming the key, and
// nothing is written over it.
TEST_F(ClusterAdminTest, MalformedContentsAreDataLoss) {
  const ClusterKeys k(cluster_);
  ASSERT_TRUE(Cmd({"SET", k.ring, "not a ring config \xff"}).ok());
  ASSERT_TRUE(RegisterPending(redis_.get(), cluster_, "b", "h:1").code() ==
              absl::StatusCode::kDataLoss);
  const auto before = Dump();
  for (const absl::Status& st :
       {ReadClusterStatus(redis_.get(), cluster_).status(),
        AdmitNode(redis_.get(), cluster_, "b").status(),
        RemoveNode(redis_.get(), cluster_, "a", RemoveMode::kDrop).status()}) {
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
    EXPECT_THAT(st.message(), HasSubstr(k.ring));
  }
  EXPECT_EQ(Dump(), before);

  // A key of the wrong type.
  ASSERT_TRUE(Cmd({"DEL", k.ring}).ok());
  ASSERT_TRUE(Cmd({"HSET", k.ring, "x", "y"}).ok());
  auto st = ReadClusterStatus(redis_.get(), cluster_).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr(k.ring));
  ASSERT_TRUE(Cmd({"DEL", k.ring}).ok());

  // A bad heartbeat, move record and member state.
  WriteRing({"a", "b"});
  const std::vector<std::pair<std::string, std::vector<std::string>>> bad = {
      {k.heartbeats, {"HSET", k.heartbeats, "a", "yesterday"}},
      {k.move, {"HSET", k.move, "kind", "teleport"}},
      {k.states, {"HSET", k.states, "a", "sleeping"}},
  };
  for (const auto& [key, write] : bad) {
    ASSERT_TRUE(Cmd(write).ok());
    const auto corrupt = Dump();
    for (const absl::Status& s :
         {ReadClusterStatus(redis_.get(), cluster_).status(),
          RemoveNode(redis_.get(), cluster_, "b", RemoveMode::kDrop)
              .status()}) {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
      EXPECT_THAT(s.message(), HasSubstr(key));
    }
    EXPECT_EQ(Dump(), corrupt);
    ASSERT_TRUE(Cmd({"DEL", key}).ok());
  }
}

TEST_F(ClusterAdminTest, BadArgumentsChangeNothing) {
  WriteRing({"a"});
  ASSERT_TRUE(RegisterPending(redis_.get(), cluster_, "b", "h:1").ok());
  const auto before = Dump();
  const std::string long_id(hashring::kMaxMemberIdBytes + 1, 'x');
  for (const absl::Status& s : {
           RegisterPending(redis_.get(), cluster_, "", "h:1"),
           RegisterPending(redis_.get(), cluster_, long_id, "h:1"),
           RegisterPending(redis_.get(), cluster_, "bad\xff", "h:1"),
           RegisterPending(redis_.get(), cluster_, "c", "no-port"),
           RegisterPending(redis_.get(), cluster_, "c", "h:0"),
           RegisterPending(redis_.get(), cluster_, "c", ""),
           RegisterPending(redis_.get(), "", "c", "h:1"),
           AdmitNode(redis_.get(), cluster_, long_id).status(),
           AdmitNode(redis_.get(), std::string(300, 'n'), "b").status(),
           RemoveNode(redis_.get(), cluster_, "", RemoveMode::kDrop).status(),
           ReportMoveProgress(redis_.get(), cluster_, 0, {}),
           ReportMoveProgress(redis_.get(), cluster_, 2,
                              {kMaxCounterIncrement + 1, 0, 0}),
           FailMove(redis_.get(), cluster_, 2, ""),
           WriteHeartbeat(redis_.get(), cluster_, "", {}),
       }) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
  EXPECT_EQ(Dump(), before);
  // Reports for no running move.
  EXPECT_EQ(ReportMoveProgress(redis_.get(), cluster_, 2, {1, 1, 1}).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(FailMove(redis_.get(), cluster_, 2, "x").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      WaitForMove(redis_.get(), cluster_, 2, absl::Seconds(1)).status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(Dump(), before);
}

TEST_F(ClusterAdminTest, CounterOverflowIsRefused) {
  WriteRing({"a"});
  ASSERT_TRUE(RegisterPending(redis_.get(), cluster_, "b", "h:1").ok());
  ASSERT_TRUE(AdmitNode(redis_.get(), cluster_, "b").ok());
  ASSERT_TRUE(
      Cmd({"HSET", ClusterKeys(cluster_).move, "bytes", "8999999999999999999"})
          .ok());
  const auto before = Dump();
  EXPECT_EQ(ReportMoveProgress(redis_.get(), cluster_, 2,
                               {1, kMaxCounterIncrement, 1})
                .code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Dump(), before);  // keys was not incremented either
}

TEST_F(ClusterAdminTest, RedisDownIsUnavailable) {
  // hiredis writes with write(2): a closed socket raises SIGPIPE, which
  // processes using RedisClient ignore (as latentd does).
  ::signal(SIGPIPE, SIG_IGN);
  auto other = UnixRedis::Start();
  ASSERT_NE(other, nullptr);
  auto conn = other->Connect();
  other.reset();  // stops that server
  EXPECT_EQ(ReadClusterStatus(conn.get(), cluster_).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(AdmitNode(conn.get(), cluster_, "b").status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace latentd::sync

namespace latentd::sync {
namespace {

// Failure detection (issue 13): a member whose alive key has expired and
// whose heartbeat is old is declared down by exactly one of the members
// racing to; it returns at the address it had.
TEST_F(ClusterAdminTest, ASilentMemberIsDeclaredDownOnceAndReturns) {
  WriteRing({"a", "b", "c"});
  const absl::Duration timeout = absl::Milliseconds(300);
  for (const char* id : {"a", "b", "c"}) {
    ASSERT_TRUE(WriteHeartbeat(redis_.get(), cluster_, id, {}, timeout).ok());
  }
  const std::vector<std::string> before = Dump();
  auto alive = DeclareDown(redis_.get(), cluster_, "c", timeout);
  EXPECT_EQ(alive.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(alive.status().message(), HasSubstr("is alive"));
  EXPECT_EQ(Dump(), before);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  ASSERT_TRUE(WriteHeartbeat(redis_.get(), cluster_, "a", {}, timeout).ok());
  ASSERT_TRUE(WriteHeartbeat(redis_.get(), cluster_, "b", {}, timeout).ok());
  std::barrier start(2);
  absl::StatusOr<hashring::RingConfig> result[2] = {absl::UnknownError(""),
                                                    absl::UnknownError("")};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      auto conn = redis_server_->Connect();
      start.arrive_and_wait();
      if (conn != nullptr)
        result[i] = DeclareDown(conn.get(), cluster_, "c", timeout);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_NE(result[0].ok(), result[1].ok())
      << result[0].status() << " / " << result[1].status();
  EXPECT_EQ(RingIds(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(StoredRing().version, 2u);
  auto st = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(Member(*st, "c").state, MemberState::kDown);
  EXPECT_FALSE(Member(*st, "c").in_ring);
  ASSERT_TRUE(st->move.has_value());
  EXPECT_EQ(st->move->kind, MoveKind::kFailover);
  // One change at a time: b is not judged while the failover runs.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(DeclareDown(redis_.get(), cluster_, "b", timeout).status().code(),
            absl::StatusCode::kFailedPrecondition);
  auto done = FinishMove(redis_.get(), cluster_, 2, {});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->status, MoveStatus::kDone);
  // Still down once the failover is done; back only at its own address.
  const std::vector<std::string> down = Dump();
  auto moved = ReturnNode(redis_.get(), cluster_, "c", "127.0.0.1:9999");
  EXPECT_EQ(moved.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(moved.status().message(), HasSubstr("was at"));
  EXPECT_EQ(Dump(), down);
  auto back = ReturnNode(redis_.get(), cluster_, "c", "127.0.0.1:7002");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->version, 3u);
  EXPECT_EQ(RingIds(), (std::vector<std::string>{"a", "b", "c"}));
  st = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(Member(*st, "c").state, MemberState::kActive);
  EXPECT_EQ(st->move->kind, MoveKind::kAdd);
  EXPECT_EQ(History(),
            (std::vector<std::string>{"2 down c", "2 done c", "3 return c"}));
  // Not down any more: a second return changes nothing.
  EXPECT_EQ(
      ReturnNode(redis_.get(), cluster_, "c", "127.0.0.1:7002").status().code(),
      absl::StatusCode::kFailedPrecondition);
}

// A down node that will not return: only --lost removes it, and then it
// cannot return.
TEST_F(ClusterAdminTest, ADownMemberIsRemovedForGoodOnlyAsLost) {
  WriteRing({"a", "b", "c"});
  const absl::Duration timeout = absl::Milliseconds(100);
  ASSERT_TRUE(WriteHeartbeat(redis_.get(), cluster_, "c", {}, timeout).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(DeclareDown(redis_.get(), cluster_, "c", timeout).ok());
  ASSERT_TRUE(FinishMove(redis_.get(), cluster_, 2, {}).ok());
  const std::vector<std::string> down = Dump();
  auto drop = RemoveNode(redis_.get(), cluster_, "c", RemoveMode::kDrop);
  EXPECT_EQ(drop.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(drop.status().message(), HasSubstr("is down"));
  EXPECT_EQ(Dump(), down);
  auto lost = RemoveNode(redis_.get(), cluster_, "c", RemoveMode::kLost);
  ASSERT_TRUE(lost.ok()) << lost.status();
  EXPECT_EQ(lost->version, 3u);
  EXPECT_EQ(RingIds(), (std::vector<std::string>{"a", "b"}));
  auto done = FinishMove(redis_.get(), cluster_, 3, {});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->status, MoveStatus::kDone);
  auto st = ReadClusterStatus(redis_.get(), cluster_);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->members.size(), 2u);
  EXPECT_EQ(
      ReturnNode(redis_.get(), cluster_, "c", "127.0.0.1:7002").status().code(),
      absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace latentd::sync
