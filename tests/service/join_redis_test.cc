// JoinRedis (service/cluster/internal/join_redis.h): the Redis connection a
// joining node rides a brief outage out on. Against a redis-server on a
// Unix socket, and a socket nobody listens on.
#include "service/cluster/internal/join_redis.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/sync/unix_redis.h"

namespace latentd::internal {
namespace {

using sync::RedisClient;

// A JoinRedis on `url` whose log lines land in *warnings and *infos.
JoinRedis Make(const std::string& url, std::vector<std::string>* warnings,
               std::vector<std::string>* infos,
               absl::Duration give_up = absl::Seconds(10)) {
  JoinRedisOptions o;
  o.url = url;
  o.cluster = "c1";
  o.give_up_after = give_up;
  o.min_backoff = absl::Milliseconds(10);
  o.max_backoff = absl::Milliseconds(40);
  o.log = [warnings](std::string_view l) { warnings->emplace_back(l); };
  o.info = [infos](std::string_view l) { infos->emplace_back(l); };
  return JoinRedis(std::move(o));
}

TEST(IsTransientRedisError, UnavailableAndBusyRepliesOnly) {
  EXPECT_TRUE(IsTransientRedisError(absl::UnavailableError("redis: reset")));
  EXPECT_TRUE(IsTransientRedisError(absl::FailedPreconditionError(
      "redis: LOADING Redis is loading the dataset in memory")));
  EXPECT_TRUE(IsTransientRedisError(
      absl::FailedPreconditionError("redis: BUSY Redis is busy running")));
  EXPECT_FALSE(IsTransientRedisError(absl::OkStatus()));
  EXPECT_FALSE(IsTransientRedisError(
      absl::FailedPreconditionError("node 'a' is not down in cluster 'c'")));
  EXPECT_FALSE(IsTransientRedisError(
      absl::PermissionDeniedError("redis: WRONGPASS invalid password")));
  EXPECT_FALSE(IsTransientRedisError(absl::DeadlineExceededError("late")));
  EXPECT_FALSE(IsTransientRedisError(absl::AbortedError("concurrent")));
}

class JoinRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    redis_ = sync::UnixRedis::Start();
    ASSERT_NE(redis_, nullptr) << "redis-server did not start";
  }
  std::unique_ptr<sync::UnixRedis> redis_;
  std::vector<std::string> warnings_, infos_;
};

// Two transient failures (the connection dropped each time), then the
// step goes through on a new connection: one warning, one info, the
// result.
TEST_F(JoinRedisTest, RetriesATransientFailureAndLogsTheOutageOnce) {
  JoinRedis j = Make(redis_->url(), &warnings_, &infos_);
  int tries = 0;
  absl::StatusOr<int64_t> r =
      j.Run<int64_t>([&](RedisClient* c) -> absl::StatusOr<int64_t> {
        if (++tries <= 2) return absl::UnavailableError("redis: reset");
        absl::StatusOr<sync::RedisReply> n = c->Command({"INCR", "k"});
        if (!n.ok()) return n.status();
        return n->integer;
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 1);
  EXPECT_EQ(tries, 3);
  EXPECT_TRUE(j.lost_reply());
  EXPECT_EQ(j.outages(), 1);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("Redis unreachable while joining: retrying "
                              "every 10ms to 40ms for up to 10s"),
            std::string::npos)
      << warnings_[0];
  EXPECT_NE(warnings_[0].find("redis: reset"), std::string::npos);
  ASSERT_EQ(infos_.size(), 1u);
  EXPECT_NE(infos_[0].find("Redis back after"), std::string::npos);
  EXPECT_NE(infos_[0].find("joining cluster c1 goes on"), std::string::npos);

  // The next step, without an outage: no line, nothing lost.
  EXPECT_TRUE(
      j.Run([](RedisClient* c) { return c->Command({"PING"}).status(); }).ok());
  EXPECT_FALSE(j.lost_reply());
  EXPECT_EQ(warnings_.size(), 1u);
  EXPECT_EQ(j.outages(), 1);
}

// A refusal is final at once: one try, no line.
TEST_F(JoinRedisTest, ARefusalFailsAtOnce) {
  JoinRedis j = Make(redis_->url(), &warnings_, &infos_);
  int tries = 0;
  absl::Status s = j.Run([&](RedisClient* c) {
    ++tries;
    // A Redis error reply (kFailedPrecondition): WRONGTYPE.
    EXPECT_TRUE(c->Command({"SET", "s", "x"}).ok());
    return c->Command({"HGET", "s", "f"}).status();
  });
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_EQ(tries, 1);
  EXPECT_FALSE(j.lost_reply());
  EXPECT_TRUE(warnings_.empty());
  EXPECT_TRUE(infos_.empty());
}

// A wrong Redis password is a refusal too: at once, the step not run, no
// retry line.
TEST(JoinRedis, AWrongPasswordFailsAtOnce) {
  std::unique_ptr<sync::UnixRedis> redis = sync::UnixRedis::Start("right");
  ASSERT_NE(redis, nullptr) << "redis-server --requirepass did not start";
  std::vector<std::string> warnings, infos;
  JoinRedis j = Make("unix://:wrong@" + redis->socket(), &warnings, &infos);
  int tries = 0;
  const absl::Time start = absl::Now();
  absl::Status s = j.Run([&](RedisClient*) {
    ++tries;
    return absl::OkStatus();
  });
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_EQ(tries, 0);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_TRUE(warnings.empty());
}

// Nobody listens: the step never runs, and the outage ends the join after
// give_up_after with an error that says so.
TEST(JoinRedis, GivesUpAfterTheJoinTimeout) {
  std::vector<std::string> warnings, infos;
  JoinRedis j = Make("unix:/nonexistent/latentd-join-redis.sock", &warnings,
                     &infos, absl::Milliseconds(300));
  int tries = 0;
  const absl::Time start = absl::Now();
  absl::Status s = j.Run([&](RedisClient*) {
    ++tries;
    return absl::OkStatus();
  });
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_NE(s.message().find("Redis unreachable while joining cluster c1 for "
                             "300ms (--join-timeout); gave up"),
            std::string::npos)
      << s;
  EXPECT_EQ(tries, 0);
  EXPECT_FALSE(j.lost_reply());
  EXPECT_GE(took, absl::Milliseconds(300));
  EXPECT_LT(took, absl::Seconds(3));
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(infos.empty());
}

}  // namespace
}  // namespace latentd::internal
