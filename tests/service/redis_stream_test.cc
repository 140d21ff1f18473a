// ParseStreamEntries (service/internal/redis_stream.h) on XREADGROUP replies
// as hiredis parses them from RESP bytes and sync::RedisClient flattens
// them (FlattenRedisReply): the shape Redis sends, the
// deleted-pending-entry form [id, nil], and replies of other shapes, which
// give fewer entries or empty fields instead of a crash.
#include "service/internal/redis_stream.h"

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace latentd::service::internal {
namespace {

// The entries of the first reply in `resp` (RESP2 bytes).
std::vector<RedisStreamEntry> Parse(const std::string& resp) {
  std::unique_ptr<redisReader, decltype(&redisReaderFree)> reader(
      redisReaderCreate(), &redisReaderFree);
  EXPECT_EQ(redisReaderFeed(reader.get(), resp.data(), resp.size()), REDIS_OK);
  void* reply = nullptr;
  EXPECT_EQ(redisReaderGetReply(reader.get(), &reply), REDIS_OK);
  EXPECT_NE(reply, nullptr) << "incomplete RESP: " << resp;
  if (reply == nullptr) return {};
  std::vector<RedisStreamEntry> entries = ParseStreamEntries(
      sync::FlattenRedisReply(*static_cast<redisReply*>(reply)));
  freeReplyObject(reply);
  return entries;
}

// [[stream, [entry...]]] around the RESP of `n` entries.
std::string Reply(int n, const std::string& entries) {
  return "*1\r\n*2\r\n$6\r\ningest\r\n*" + std::to_string(n) + "\r\n" + entries;
}

TEST(RedisStream, ParsesEntriesAndTheirFields) {
  const std::vector<RedisStreamEntry> e =
      Parse(Reply(2,
                  "*2\r\n$3\r\n1-0\r\n*6\r\n$4\r\ntext\r\n$9\r\noil price\r\n"
                  "$4\r\nuser\r\n$3\r\nann\r\n$2\r\nid\r\n$2\r\nd7\r\n"
                  "*2\r\n$3\r\n2-0\r\n*4\r\n$5\r\nother\r\n$1\r\nx\r\n"
                  "$4\r\ntext\r\n$3\r\nyen\r\n"));
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].id, "1-0");
  EXPECT_EQ(e[0].text, "oil price");
  EXPECT_EQ(e[0].user, "ann");
  EXPECT_EQ(e[0].doc_id, "d7");
  EXPECT_EQ(e[1].id, "2-0");
  EXPECT_EQ(e[1].text, "yen");
  EXPECT_EQ(e[1].user, "");
}

TEST(RedisStream, DeletedPendingEntryIsKeptWithoutText) {
  // XREADGROUP from ID 0 returns a pending entry deleted from the stream as
  // [id, nil]: kept, so that it is acknowledged (rejected for no text).
  const std::vector<RedisStreamEntry> e =
      Parse(Reply(1, "*2\r\n$3\r\n5-1\r\n*-1\r\n"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].id, "5-1");
  EXPECT_EQ(e[0].text, "");
}

TEST(RedisStream, OtherShapesGiveNoEntryOrEmptyFieldsRegression) {
  // An id that is not a string (before: an entry with an empty id, which
  // no XACK can acknowledge) is skipped; a value that is not a
  // string is left empty; a field without a value is ignored.
  const std::vector<RedisStreamEntry> e =
      Parse(Reply(3,
                  ":42\r\n"
                  "*2\r\n:7\r\n*2\r\n$4\r\ntext\r\n$1\r\na\r\n"
                  "*2\r\n$3\r\n9-0\r\n*5\r\n$4\r\ntext\r\n*1\r\n$1\r\nb\r\n"
                  "$4\r\nuser\r\n$1\r\nu\r\n$2\r\nid\r\n"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].id, "9-0");
  EXPECT_EQ(e[0].text, "");
  EXPECT_EQ(e[0].user, "u");
  EXPECT_EQ(e[0].doc_id, "");
  // Not the shape of a stream reply at all.
  EXPECT_TRUE(Parse("$-1\r\n").empty());
  EXPECT_TRUE(Parse("*0\r\n").empty());
  EXPECT_TRUE(Parse("*1\r\n:1\r\n").empty());
  EXPECT_TRUE(Parse("*1\r\n*2\r\n$1\r\ns\r\n$3\r\nabc\r\n").empty());
  EXPECT_TRUE(Parse("*1\r\n*2\r\n$1\r\ns\r\n*-1\r\n").empty());
  EXPECT_TRUE(ParseStreamEntries(sync::RedisReply{}).empty());
}

}  // namespace
}  // namespace latentd::service::internal
