// RedisClient (sync/control/membership.h) against a redis-server on a Unix
// socket: a reply over the client's own bound is refused, says why and leaves
// the connection dead; a command timeout set above a blocking read's block lets
// XREADGROUP ... BLOCK time out empty, one below it fails the command.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sync/control/membership.h"
#include "tests/sync/unix_redis.h"

namespace latentd::sync {
namespace {

using ::testing::HasSubstr;

class RedisClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    redis_ = UnixRedis::Start();
    ASSERT_NE(redis_, nullptr) << "redis-server did not start";
  }
  std::unique_ptr<RedisClient> Connect(const RedisReplyLimits& limits = {}) {
    absl::StatusOr<std::unique_ptr<RedisClient>> c =
        RedisClient::Connect(redis_->url(), absl::Seconds(2), limits);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }
  std::unique_ptr<UnixRedis> redis_;
};

TEST_F(RedisClientTest, AReplyOverItsBoundIsRefusedAndTheConnectionDead) {
  RedisReplyLimits limits;
  limits.max_elements = 4;
  std::unique_ptr<RedisClient> c = Connect(limits);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Command({"RPUSH", "l", "a", "b", "c", "d"}).ok());
  absl::StatusOr<RedisReply> within = c->Command({"LRANGE", "l", "0", "-1"});
  ASSERT_TRUE(within.ok()) << within.status();
  EXPECT_EQ(within->elements.size(), 4u);
  EXPECT_EQ(c->refusal(), "");

  ASSERT_TRUE(c->Command({"RPUSH", "l", "e"}).ok());
  absl::StatusOr<RedisReply> over = c->Command({"LRANGE", "l", "0", "-1"});
  EXPECT_EQ(over.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(c->refusal(), HasSubstr("over the bound of 4"));
  EXPECT_THAT(over.status().message(), HasSubstr(c->refusal()));
  EXPECT_EQ(c->Command({"PING"}).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(RedisClientTest, ABlockingReadNeedsACommandTimeoutAboveItsBlock) {
  std::unique_ptr<RedisClient> c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Command({"XGROUP", "CREATE", "s", "g", "0", "MKSTREAM"}).ok());
  EXPECT_EQ(c->SetCommandTimeout(absl::ZeroDuration()).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(c->SetCommandTimeout(absl::Seconds(5)).ok());
  const std::vector<std::string> read = {"XREADGROUP", "GROUP", "g",     "c",
                                         "COUNT",      "10",    "BLOCK", "300",
                                         "STREAMS",    "s",     ">"};
  absl::StatusOr<RedisReply> empty = c->Command(read);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->type, RedisReply::Type::kNil);

  ASSERT_TRUE(c->Command({"XADD", "s", "*", "text", "oil"}).ok());
  absl::StatusOr<RedisReply> one = c->Command(read);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->type, RedisReply::Type::kArray);
  ASSERT_EQ(one->elements.size(), 1u);  // [[s, [[id, [text, oil]]]]]
  EXPECT_EQ(one->elements[0].elements[0].str, "s");

  ASSERT_TRUE(c->SetCommandTimeout(absl::Milliseconds(50)).ok());
  absl::StatusOr<RedisReply> timed_out = c->Command(read);
  EXPECT_EQ(timed_out.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(c->refusal(), "");
}

}  // namespace
}  // namespace latentd::sync
