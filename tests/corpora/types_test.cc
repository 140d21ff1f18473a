#include "corpora/types.h"

#include <string>
#include <vector>

#include "corpora/doc_batch.h"
#include "corpora/vocabulary.h"
#include "gtest/gtest.h"
#include "tests/corpora/test_util.h"

namespace latentd {
namespace {

TEST(HashWord, IsStableAndDistinct) {
  // A change here changes every key of every deployed model: never update
  // this constant, fix the code.
  EXPECT_EQ(HashWord("topic"), HashWord(std::string("topic")));
  EXPECT_NE(HashWord("topic"), HashWord("topics"));
  EXPECT_NE(HashWord(""), kTopicTotalsKey);
  const WordKey golden = HashWord("latentd");
  EXPECT_EQ(golden, HashWord("latentd"));
  for (const char* w : {"a", "b", "the", "model", "\xc3\xa9t\xc3\xa9"}) {
    EXPECT_NE(HashWord(w), kTopicTotalsKey) << w;
  }
}

TEST(DocBatch, AddDocumentAndClear) {
  DocBatch batch;
  std::vector<WordId> w1 = {1, 2, 3}, w2 = {4};
  std::vector<TopicId> t1 = {0, 1, 0}, t2 = {2};
  batch.AddDocument("d1", "u1", w1, t1);
  batch.AddDocument("d2", "", w2, t2);
  batch.AddDocument("d3", "u3", {}, {});
  ASSERT_EQ(batch.num_docs(), 3u);
  EXPECT_EQ(batch.num_tokens(), 4u);
  EXPECT_EQ(batch.doc_length(0), 3u);
  EXPECT_EQ(batch.doc_length(2), 0u);
  EXPECT_EQ(batch.doc_words(1)[0], 4u);
  EXPECT_EQ(batch.doc_topics(0)[1], 1u);
  EXPECT_EQ(batch.doc_ids[1], "d2");
  EXPECT_EQ(batch.users[2], "u3");
  batch.Clear();
  EXPECT_EQ(batch.num_docs(), 0u);
  EXPECT_EQ(batch.doc_offsets, std::vector<uint32_t>{0});
  EXPECT_TRUE(batch.doc_ids.empty());
}

TEST(Vocabulary, AddFindAndIdsInOrder) {
  Vocabulary vocab;
  EXPECT_EQ(vocab.Add("apple"), 0u);
  EXPECT_EQ(vocab.Add("pear"), 1u);
  EXPECT_EQ(vocab.Add("apple"), 0u);
  EXPECT_EQ(vocab.size(), 2u);
  EXPECT_EQ(vocab.word(1), "pear");
  EXPECT_EQ(vocab.key(1), HashWord("pear"));
  EXPECT_EQ(vocab.Find("pear"), 1u);
  EXPECT_FALSE(vocab.Find("plum").has_value());
  EXPECT_EQ(vocab.FindKey(HashWord("apple")), 0u);
  EXPECT_FALSE(vocab.FindKey(HashWord("plum")).has_value());
}

TEST(Vocabulary, SaveLoadRoundTrip) {
  testing::TempDir dir;
  Vocabulary vocab;
  for (const char* w : {"zebra", "\xc3\xa9t\xc3\xa9", "alpha"}) vocab.Add(w);
  ASSERT_TRUE(vocab.Save(dir.File("v.txt")).ok());
  auto loaded = Vocabulary::Load(dir.File("v.txt"));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 3u);
  for (WordId i = 0; i < 3; ++i) EXPECT_EQ(loaded->word(i), vocab.word(i));
  EXPECT_EQ(testing::ReadFileBytes(dir.File("v.txt")),
            "zebra\n\xc3\xa9t\xc3\xa9\nalpha\n");
}

TEST(Vocabulary, LoadRejectsEmptyLineAndDuplicateNamingTheLine) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("empty.txt"), "a\n\nb\n");
  auto empty = Vocabulary::Load(dir.File("empty.txt"));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("empty.txt:2"), std::string::npos)
      << empty.status();
  testing::WriteFile(dir.File("dup.txt"), "a\nb\na\n");
  auto dup = Vocabulary::Load(dir.File("dup.txt"));
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("dup.txt:3"), std::string::npos)
      << dup.status();
  auto missing = Vocabulary::Load(dir.File("none.txt"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace latentd
