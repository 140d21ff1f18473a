// DocumentTopics (service/document_topics.h): the documents' topic counts
// read from a token store, found by key, ranked for a topic.
#include "service/document_topics.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "service/store_merge.h"

namespace latentd::service {
namespace {

// A store of K = 3 topics holding `docs`: (id, user, topics of its tokens).
struct Doc {
  std::string id;
  std::string user;
  std::vector<TopicId> topics;
};
std::unique_ptr<TokenStore> Store(const std::vector<Doc>& docs) {
  TokenStoreMeta meta;
  meta.num_topics = 3;
  meta.vocab_size = 1;
  auto store = CreateInMemoryTokenStore(meta);
  auto w = store->Rewrite(meta);
  EXPECT_TRUE(w.ok());
  DocBatch b;
  for (const Doc& d : docs) {
    std::vector<WordId> words(d.topics.size(), 0);
    b.AddDocument(d.id, d.user, words, d.topics);
  }
  EXPECT_TRUE((*w)->Append(b).ok());
  EXPECT_TRUE((*w)->Commit().ok());
  return store;
}

TEST(DocumentTopics, FindsDocumentsByKeyWithTheirCounts) {
  auto store = Store({{"a", "", {0, 0, 2}},
                      {"", "u", {1, 1}},  // a user's: no key
                      {IngestDocId(7, 0, "ingested"), "", {2}},
                      {"", "", {0}},              // no id: no key
                      {"a", "", {1, 1, 1, 2}}});  // the later "a" wins
  auto t = DocumentTopics::Collect(store.get(), 12, 34);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->sweep(), 12u);
  EXPECT_EQ((*t)->view(), 34u);
  auto a = (*t)->Find("a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->tokens, 4u);
  EXPECT_EQ(std::vector<uint32_t>(a->topics.begin(), a->topics.end()),
            (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(std::vector<uint32_t>(a->counts.begin(), a->counts.end()),
            (std::vector<uint32_t>{3, 1}));
  auto ingested = (*t)->Find("ingested");
  ASSERT_TRUE(ingested.has_value());
  EXPECT_EQ(ingested->tokens, 1u);
  EXPECT_FALSE((*t)->Find("u").has_value());
  EXPECT_FALSE((*t)->Find("").has_value());
  EXPECT_FALSE((*t)->Find(IngestDocId(7, 0, "ingested")).has_value());
}

TEST(DocumentTopics, RanksDocumentsOfATopicByTheirWeight) {
  auto store = Store({{"long", "", {0, 0, 0, 0, 1, 1, 1, 1}},  // θ_0 = 4.5/9
                      {"short", "", {0}},                      // 1.5/2
                      {"none", "", {1, 1}},                    // 0.5/3
                      {"tie", "", {0, 0, 0, 0, 1, 1, 1, 1}},   // as "long"
                      {"old", "", {0, 0}},  // 2.5/3, but replaced by
                      {"old", "", {1}}});   // this one: 0.5/2
  auto t = DocumentTopics::Collect(store.get(), 0, 0);
  ASSERT_TRUE(t.ok()) << t.status();
  const std::vector<double> alpha = {0.5, 0.25, 0.25};
  auto top = (*t)->TopDocuments(0, 10, alpha);
  std::vector<std::string> keys;
  for (const auto& r : top)
    keys.push_back(std::string((*t)->At(r.document).key));
  // Ties ("long", "tie": the same θ and count) by key.
  EXPECT_EQ(keys,
            (std::vector<std::string>{"short", "long", "tie", "old", "none"}));
  EXPECT_DOUBLE_EQ(top[0].weight, 1.5 / 2);
  EXPECT_DOUBLE_EQ(top[1].weight, 4.5 / 9);
  EXPECT_DOUBLE_EQ(top[3].weight, 0.5 / 2);
  EXPECT_DOUBLE_EQ(top[4].weight, 0.5 / 3);
  EXPECT_EQ((*t)->TopDocuments(1, 2, alpha).size(), 2u);
}

}  // namespace
}  // namespace latentd::service
