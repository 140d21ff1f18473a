// RedisReplyBound (sync/control/redis_reply_bound.h) on hiredis's own RESP
// reader: an array header with an absurd count, or nested headers adding up
// past the bound, is refused before hiredis allocates for it, with a reason;
// replies within the bound come through as hiredis builds them.
#include "sync/control/redis_reply_bound.h"

#include <hiredis/hiredis.h>

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace latentd::sync {
namespace {

using ReaderPtr = std::unique_ptr<redisReader, decltype(&redisReaderFree)>;

struct Read {
  int status = REDIS_OK;
  redisReply* reply = nullptr;  // owned by the caller
  std::string error;            // the reader's errstr on REDIS_ERR
};

// Feeds `resp` to `reader` and reads one reply.
Read FeedAndRead(redisReader* reader, const std::string& resp) {
  Read out;
  EXPECT_EQ(redisReaderFeed(reader, resp.data(), resp.size()), REDIS_OK);
  void* reply = nullptr;
  out.status = redisReaderGetReply(reader, &reply);
  out.reply = static_cast<redisReply*>(reply);
  if (out.status != REDIS_OK) out.error = reader->errstr;
  return out;
}

TEST(RedisReplyBound, RefusesAnAbsurdArrayHeaderRegression) {
  // hiredis 0.14.1 alone callocs 16 GiB for these 13 bytes.
  RedisReplyBound bound;
  ReaderPtr reader(redisReaderCreate(), &redisReaderFree);
  bound.Install(reader.get());
  const Read r = FeedAndRead(reader.get(), "*2147483647\r\n");
  EXPECT_EQ(r.status, REDIS_ERR);
  EXPECT_EQ(r.reply, nullptr);
  EXPECT_EQ(bound.refusal(),
            "Redis reply declares 2147483647 array elements in all, over "
            "the bound of 1048576");
}

TEST(RedisReplyBound, CountsTheElementsOfNestedArraysTogether) {
  // Each header alone is within the bound; together they are not (each
  // costs 8 bytes an element as soon as it is read).
  RedisReplyBound bound(RedisReplyLimits{.max_elements = 1000});
  ReaderPtr reader(redisReaderCreate(), &redisReaderFree);
  bound.Install(reader.get());
  const Read r = FeedAndRead(reader.get(), "*2\r\n*1\r\n:1\r\n*999\r\n");
  EXPECT_EQ(r.status, REDIS_ERR);
  EXPECT_EQ(bound.refusal(),
            "Redis reply declares 1002 array elements in all, over the bound "
            "of 1000");
}

TEST(RedisReplyBound, OutOfRangeHeadersStayHiredisErrors) {
  // Debian's 0.14.1 refuses counts below -1 or over 2^31 - 1 itself
  // (the CVE-2021-32765 patch); the bound does not hide that.
  for (const char* resp : {"*-7\r\n", "*4294967297\r\n", "$-7\r\n"}) {
    RedisReplyBound bound;
    ReaderPtr reader(redisReaderCreate(), &redisReaderFree);
    bound.Install(reader.get());
    const Read r = FeedAndRead(reader.get(), resp);
    EXPECT_EQ(r.status, REDIS_ERR) << resp;
    EXPECT_NE(r.error, "") << resp;
  }
}

TEST(RedisReplyBound, RefusesAStringOverTheBound) {
  RedisReplyBound bound(RedisReplyLimits{.max_string_bytes = 4});
  ReaderPtr reader(redisReaderCreate(), &redisReaderFree);
  bound.Install(reader.get());
  const Read r =
      FeedAndRead(reader.get(), "*2\r\n$4\r\nabcd\r\n$5\r\nabcde\r\n");
  EXPECT_EQ(r.status, REDIS_ERR);
  EXPECT_EQ(bound.refusal(),
            "Redis reply has a string of 5 bytes, over the bound of 4");
}

TEST(RedisReplyBound, PassesRepliesWithinTheBoundAndCountsEachReplyAlone) {
  RedisReplyBound bound(RedisReplyLimits{.max_elements = 4});
  ReaderPtr reader(redisReaderCreate(), &redisReaderFree);
  bound.Install(reader.get());
  // Two replies of 4 elements each: 8 in all, but each within the bound.
  for (int i = 0; i < 2; ++i) {
    const Read r = FeedAndRead(
        reader.get(), "*2\r\n$3\r\n1-0\r\n*2\r\n$4\r\ntext\r\n:-1\r\n");
    ASSERT_EQ(r.status, REDIS_OK) << r.error;
    ASSERT_NE(r.reply, nullptr);
    EXPECT_EQ(r.reply->type, REDIS_REPLY_ARRAY);
    ASSERT_EQ(r.reply->elements, 2u);
    EXPECT_EQ(std::string(r.reply->element[0]->str), "1-0");
    EXPECT_EQ(r.reply->element[1]->element[1]->integer, -1);
    freeReplyObject(r.reply);
    EXPECT_EQ(bound.refusal(), "");
  }
  const Read nil = FeedAndRead(reader.get(), "$-1\r\n");
  ASSERT_EQ(nil.status, REDIS_OK);
  ASSERT_NE(nil.reply, nullptr);
  EXPECT_EQ(nil.reply->type, REDIS_REPLY_NIL);
  freeReplyObject(nil.reply);
}

TEST(RedisReplyBound, ARefusedReplyHalfBuiltIsFreed) {
  // The reader frees what it had built of the reply (ASan's leak check
  // in the sanitizer run sees it otherwise).
  RedisReplyBound bound(RedisReplyLimits{.max_elements = 3});
  ReaderPtr reader(redisReaderCreate(), &redisReaderFree);
  bound.Install(reader.get());
  const Read r =
      FeedAndRead(reader.get(), "*3\r\n$1\r\na\r\n+ok\r\n*5\r\n:1\r\n");
  EXPECT_EQ(r.status, REDIS_ERR);
  EXPECT_NE(bound.refusal(), "");
}

}  // namespace
}  // namespace latentd::sync
