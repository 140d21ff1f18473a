// train's own exports (sampler/model_export.h): doc_topics.tsv byte for
// byte, written in pieces when it is larger than one piece, and nothing
// left behind when it cannot be written.
#include "sampler/model_export.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/random.h"
#include "corpora/input_file.h"
#include "gtest/gtest.h"
#include "sampler/model_snapshot.h"
#include "sampler/topic_table.h"

namespace latentd {
namespace {

// `docs` documents in one store of K = 2: document i is words {0, 1, 0}
// with topics {0, 0, 1} and id "d<i>".
std::unique_ptr<TokenStore> Store(size_t docs) {
  TokenStoreMeta meta;
  meta.num_topics = 2;
  meta.vocab_size = 2;
  std::unique_ptr<TokenStore> store = CreateInMemoryTokenStore(meta);
  auto writer = store->Rewrite(meta);
  EXPECT_TRUE(writer.ok());
  const std::vector<WordId> words = {0, 1, 0};
  const std::vector<TopicId> topics = {0, 0, 1};
  DocBatch batch;
  for (size_t i = 0; i < docs; ++i) {
    batch.AddDocument(absl::StrCat("d", i), "", words, topics);
    if (batch.num_docs() == 1000) {
      EXPECT_TRUE((*writer)->Append(batch).ok());
      batch = DocBatch();
      batch.first_doc = i + 1;
    }
  }
  if (batch.num_docs() > 0) {
    EXPECT_TRUE((*writer)->Append(batch).ok());
  }
  EXPECT_TRUE((*writer)->Commit().ok());
  return store;
}

class ModelExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("model_export_test." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

// SummarizeTopics keeps a bounded heap a topic; the result is what sorting
// every topic's words (count descending, word id ascending) gives, ties
// included, and a top_n past a topic's words gives them all.
TEST(SummarizeTopics, MatchesAFullSortTiesIncluded) {
  const TopicId K = 7;
  const uint32_t V = 300;
  TopicTable table(V, K);
  Rng rng(5);
  std::vector<WordTopicDelta> deltas;
  for (WordId w = 0; w < V; ++w) {
    for (TopicId k = 0; k < K; ++k) {
      // Few distinct counts, so ties are many; topic 6 holds 3 words only.
      if (k == 6 ? w % 100 == 0 : rng.Uniform() < 0.6) {
        deltas.push_back({w, k, static_cast<int32_t>(1 + rng.UniformInt(4))});
      }
    }
  }
  ASSERT_TRUE(table.Apply(deltas).ok());
  const std::vector<double> alpha(K, 0.1);
  const ModelSnapshot snapshot =
      ModelSnapshot::Capture(table, alpha, 0.01, 1, 1);
  for (int top_n : {0, 1, 10, 50}) {
    for (const ModelRows& model :
         {ModelRows(snapshot), ModelRows(table, alpha, 0.01, 1, 1)}) {
      const std::vector<TopicSummary> got = SummarizeTopics(model, top_n);
      ASSERT_EQ(got.size(), K);
      for (TopicId k = 0; k < K; ++k) {
        std::vector<std::pair<Count, WordId>> all;
        for (WordId w = 0; w < V; ++w) {
          if (table.Get(w, k) > 0) all.emplace_back(-table.Get(w, k), w);
        }
        std::sort(all.begin(), all.end());
        all.resize(std::min<size_t>(all.size(), top_n));
        ASSERT_EQ(got[k].top_words.size(), all.size()) << k << " " << top_n;
        for (size_t i = 0; i < all.size(); ++i) {
          EXPECT_EQ(got[k].top_words[i].first, all[i].second) << k << " " << i;
          EXPECT_DOUBLE_EQ(
              got[k].top_words[i].second,
              (-all[i].first + 0.01) / (table.TopicTotal(k) + 0.01 * V));
        }
      }
    }
  }
}

// Training writes its model from the table (ModelRows over it) where it
// used to copy it first: the model file, the text exports and the header
// are the same bytes as from the copy, for sparse and dense rows.
TEST_F(ModelExportTest, ATablesRowsWriteWhatItsCopyWrites) {
  const TopicId K = 40;
  const uint32_t V = 120;
  TopicTable table(V, K);
  Rng rng(11);
  std::vector<WordTopicDelta> deltas;
  for (WordId w = 0; w < V; ++w) {
    // Words 0..29 use every topic (dense rows), the rest a few.
    const int topics = w < 30 ? K : 1 + rng.UniformInt(5);
    for (int i = 0; i < topics; ++i) {
      // One delta per (word, topic), as Apply asks.
      const TopicId k = w < 30 ? i : (7 * w + 13 * i) % K;
      deltas.push_back({w, k, static_cast<int32_t>(1 + rng.UniformInt(9))});
    }
  }
  // Applied in reverse, so the sparse rows hold their topics out of order.
  std::reverse(deltas.begin(), deltas.end());
  ASSERT_TRUE(table.Apply(deltas).ok());
  std::vector<double> alpha(K);
  for (TopicId k = 0; k < K; ++k) alpha[k] = 0.01 * (k + 1);
  const ModelSnapshot copy = ModelSnapshot::Capture(table, alpha, 0.02, 7, 3);
  const ModelRows rows(table, alpha, 0.02, 7, 3);
  // Both read each row sorted by topic, as the file format asks.
  size_t word_rows = 0;
  rows.ForEachRow([&](WordId w, absl::Span<const ModelRows::Entry> row) {
    std::vector<std::pair<TopicId, Count>> want, got;
    for (TopicId k = 0; k < K; ++k) {
      if (table.Get(w, k) > 0) want.emplace_back(k, table.Get(w, k));
    }
    for (const ModelRows::Entry& e : row) got.emplace_back(e.topic, e.count);
    EXPECT_EQ(got, want) << "word " << w;
    ++word_rows;
  });
  EXPECT_EQ(word_rows, V);
  EXPECT_EQ(rows.tokens(), copy.tokens);
  EXPECT_EQ(rows.TopicTotals(), copy.TopicTotals());
  const std::string bytes = rows.Serialize();
  EXPECT_EQ(bytes, copy.Serialize());
  ASSERT_TRUE(rows.WriteDurably((dir_ / "m.bin").string()).ok());
  absl::StatusOr<ModelSnapshot> loaded =
      ModelSnapshot::Load((dir_ / "m.bin").string());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->Serialize(), bytes);

  Vocabulary vocab;
  for (WordId w = 0; w < V; ++w) vocab.Add(absl::StrCat("w", w));
  std::filesystem::create_directories(dir_ / "a");
  std::filesystem::create_directories(dir_ / "b");
  ASSERT_TRUE(ExportModelText(rows, vocab, 5, (dir_ / "a").string()).ok());
  ASSERT_TRUE(ExportModelText(copy, vocab, 5, (dir_ / "b").string()).ok());
  for (const char* file :
       {"topics.txt", "word_topic_counts.tsv", "alpha.txt"}) {
    absl::StatusOr<std::string> a = ReadWholeFile((dir_ / "a" / file).string());
    absl::StatusOr<std::string> b = ReadWholeFile((dir_ / "b" / file).string());
    ASSERT_TRUE(a.ok() && b.ok()) << file;
    EXPECT_FALSE(a->empty()) << file;
    EXPECT_EQ(*a, *b) << file;
  }
}

// θ = ((2 + 0.5) / 3.75, (1 + 0.25) / 3.75): n_d + Σα = 3 + 0.75.
constexpr char kLine[] = "\t0:0.66667\t1:0.33333";

TEST_F(ModelExportTest, DocTopicsByteForByte) {
  std::unique_ptr<TokenStore> store = Store(2);
  const std::string path = (dir_ / "doc_topics.tsv").string();
  ASSERT_TRUE(ExportDocTopics(store.get(), {0.5, 0.25}, path).ok());
  auto text = ReadWholeFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, absl::StrCat("0\td0", kLine, "\n1\td1", kLine, "\n"));
}

// About 3 MB: three pieces and a rest; every line there, in order.
TEST_F(ModelExportTest, DocTopicsLargerThanAPieceComeWhole) {
  constexpr size_t kDocs = 100000;
  std::unique_ptr<TokenStore> store = Store(kDocs);
  const std::string path = (dir_ / "doc_topics.tsv").string();
  ASSERT_TRUE(ExportDocTopics(store.get(), {0.5, 0.25}, path).ok());
  auto text = ReadWholeFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_GT(text->size(), size_t{3} << 20);
  std::vector<std::string> lines = absl::StrSplit(*text, '\n');
  ASSERT_EQ(lines.size(), kDocs + 1);  // the last is empty
  EXPECT_EQ(lines.back(), "");
  for (size_t i : {size_t{0}, size_t{45000}, kDocs - 1}) {
    EXPECT_EQ(lines[i], absl::StrCat(i, "\td", i, kLine));
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_F(ModelExportTest, DocTopicsIntoAMissingDirectoryFailsNamingIt) {
  std::unique_ptr<TokenStore> store = Store(2);
  const std::string path = (dir_ / "no" / "doc_topics.tsv").string();
  const absl::Status s = ExportDocTopics(store.get(), {0.5, 0.25}, path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s;
}

}  // namespace
}  // namespace latentd
