// The sources of handed-off documents (service/handoff_source.h): what a
// receiver stages by, and what it must not mistake for a hand-off.
#include "service/handoff_source.h"

#include "gtest/gtest.h"

namespace latentd::service {
namespace {

TEST(HandoffSource, NamesTheNodeAndTheAttempt) {
  const std::string source = HandoffSource("127.0.0.1:9", 12, 345);
  EXPECT_EQ(source, "handoff:127.0.0.1:9/12/345");
  std::optional<HandoffAttempt> a = ParseHandoffSource(source);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, "127.0.0.1:9");
  EXPECT_EQ(a->epoch, 12u);
  EXPECT_EQ(a->key(), "127.0.0.1:9/12");
  std::optional<HandoffAttempt> k = ParseHandoffKey(a->key());
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->node, a->node);
  EXPECT_EQ(k->epoch, a->epoch);
  // A node id with a slash of its own still parses from the right.
  a = ParseHandoffSource(HandoffSource("host/x", 3, 0));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node, "host/x");
  EXPECT_EQ(a->epoch, 3u);
}

TEST(HandoffSource, AnythingElseIsNoAttempt) {
  for (const char* s :
       {"", "handoff:", "handoff:n/7",  // an older node's: no epoch
        "handoff:n/x/7", "handoff:n/0/7", "handoff:/3/7", "handoff:n/3/",
        "redis:stream/1-0", "file:a.txt", "n/3/7"}) {
    EXPECT_FALSE(ParseHandoffSource(s).has_value()) << s;
  }
  for (const char* k : {"", "n", "n/", "/3", "n/x", "n/0", "n/-1"}) {
    EXPECT_FALSE(ParseHandoffKey(k).has_value()) << k;
  }
}

}  // namespace
}  // namespace latentd::service
