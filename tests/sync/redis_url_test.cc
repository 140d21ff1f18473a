// Redis urls (sync/control/redis_url.h): the forms accepted, the errors, the
// redaction of passwords; and AUTH against a redis-server started with
// --requirepass on a Unix socket: the right password joins a cluster, a
// wrong one is kPermissionDenied at connect, none gets Redis's NOAUTH on
// the first command, and no message carries the password.
#include "sync/control/redis_url.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sync/control/membership.h"
#include "tests/sync/unix_redis.h"

namespace latentd::sync {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RedisUrl, AcceptedForms) {
  absl::StatusOr<RedisUrl> u = ParseRedisUrl("redis://10.0.0.5:6380/");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "10.0.0.5");
  EXPECT_EQ(u->port, 6380);
  EXPECT_EQ(u->password, "");
  EXPECT_EQ(u->Where(), "10.0.0.5:6380");

  u = ParseRedisUrl("localhost");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "localhost");
  EXPECT_EQ(u->port, 6379);

  u = ParseRedisUrl("redis://:s3cret@127.0.0.1:7000");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->user, "");
  EXPECT_EQ(u->password, "s3cret");
  EXPECT_EQ(u->port, 7000);

  // Percent-escapes let a password hold '@', ':' and '/'.
  u = ParseRedisUrl("redis://latentd:p%40ss%3Aw%2Fd@db:1");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->user, "latentd");
  EXPECT_EQ(u->password, "p@ss:w/d");

  u = ParseRedisUrl("unix:/run/redis/redis.sock");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->unix_path, "/run/redis/redis.sock");
  EXPECT_EQ(u->Where(), "/run/redis/redis.sock");

  u = ParseRedisUrl("unix://:pw@/tmp/r@1.sock");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->password, "pw");
  EXPECT_EQ(u->unix_path, "/tmp/r@1.sock");
}

TEST(RedisUrl, MalformedUrlsAreClearErrorsWithoutThePassword) {
  for (const char* url :
       {"redis://host:0", "redis://host:99999", "redis://host:x",
        "redis://:6379", "redis://", "unix:", "unix:relative.sock",
        "unix://:pw@relative", "redis://justapassword@host",
        "redis://user:@host", "redis://:bad%zzescape@host",
        "redis://:trunc%4@host"}) {
    absl::StatusOr<RedisUrl> u = ParseRedisUrl(url);
    EXPECT_EQ(u.status().code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(u.status().message(), HasSubstr("redis url '")) << url;
    for (const char* secret : {"justapassword", "zzescape", "trunc"}) {
      EXPECT_THAT(u.status().message(), Not(HasSubstr(secret))) << url;
    }
  }
}

TEST(RedisUrl, RedactionHidesOnlyThePassword) {
  EXPECT_EQ(RedactRedisUrl("redis://:s3cret@db:6379"), "redis://:***@db:6379");
  EXPECT_EQ(RedactRedisUrl("redis://me:s3cret@db"), "redis://me:***@db");
  EXPECT_EQ(RedactRedisUrl("unix://:s3cret@/tmp/r.sock"),
            "unix://:***@/tmp/r.sock");
  EXPECT_EQ(RedactRedisUrl("redis://db:6379"), "redis://db:6379");
  // Credentials without a colon (refused): all of them hidden.
  EXPECT_EQ(RedactRedisUrl("redis://s3cret@db"), "redis://***@db");
  EXPECT_EQ(RedactRedisUrl("unix:/tmp/a@b.sock"), "unix:/tmp/a@b.sock");
}

class RedisAuth : public ::testing::Test {
 protected:
  static constexpr char kPassword[] = "correct-horse";
  static void SetUpTestSuite() {
    redis_ = UnixRedis::Start(kPassword).release();
  }
  static void TearDownTestSuite() {
    delete redis_;
    redis_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(redis_, nullptr) << "redis-server --requirepass did not start";
  }
  static UnixRedis* redis_;
};
UnixRedis* RedisAuth::redis_ = nullptr;

TEST_F(RedisAuth, TheRightPasswordJoinsACluster) {
  absl::StatusOr<std::unique_ptr<RedisClient>> c =
      RedisClient::Connect(redis_->url());
  ASSERT_TRUE(c.ok()) << c.status();
  MembershipOptions o;
  o.cluster = "auth";
  o.node_id = "a";
  o.address = "127.0.0.1:7000";
  o.wait_timeout = absl::Seconds(5);
  absl::StatusOr<hashring::RingConfig> ring = JoinCluster(c->get(), o);
  ASSERT_TRUE(ring.ok()) << ring.status();
  ASSERT_EQ(ring->members.size(), 1u);
  EXPECT_EQ(ring->members[0].id, "a");
}

TEST_F(RedisAuth, AWrongPasswordIsRefusedAtConnectAndNotEchoed) {
  const std::string url = "unix://:wrong-horse@" + redis_->socket();
  absl::StatusOr<std::unique_ptr<RedisClient>> c = RedisClient::Connect(url);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied)
      << c.status();
  EXPECT_THAT(c.status().message(), HasSubstr(redis_->socket()));
  EXPECT_THAT(c.status().message(), HasSubstr("refused the credentials"));
  EXPECT_THAT(c.status().message(), Not(HasSubstr("wrong-horse")));
}

TEST_F(RedisAuth, NoPasswordGetsNoauthOnTheFirstCommand) {
  absl::StatusOr<std::unique_ptr<RedisClient>> c =
      RedisClient::Connect("unix:" + redis_->socket());
  ASSERT_TRUE(c.ok()) << c.status();  // Redis accepts the connection
  absl::StatusOr<RedisReply> r = (*c)->Command({"HGETALL", "latentd:x"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("NOAUTH"));
}

TEST_F(RedisAuth, OpenRedisNamesTheServerNotThePassword) {
  absl::StatusOr<redisContext*> c =
      OpenRedis("unix://:s3cret@/nonexistent/redis.sock", absl::Seconds(1));
  ASSERT_EQ(c.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(c.status().message(), HasSubstr("/nonexistent/redis.sock"));
  EXPECT_THAT(c.status().message(), Not(HasSubstr("s3cret")));
}

}  // namespace
}  // namespace latentd::sync
