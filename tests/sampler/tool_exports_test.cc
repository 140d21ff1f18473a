// The exports for other tools, byte for byte on a model small enough to
// work out by hand, and their refusals.
#include "sampler/tool_exports.h"

#include <filesystem>
#include <string>

#include "corpora/input_file.h"
#include "gtest/gtest.h"

namespace latentd {
namespace {

// K = 2, V = 3 (apple, bank, cat), α = (0.5, 0.25), β = 0.1, sweep 3.
//   doc 0 "d,0": apple/0 bank/0 apple/1
//   doc 1 (no id): cat/1 cat/1 bank/1
// n_wk: apple 0:1 1:1, bank 0:1 1:1, cat 1:2; n_0 = 2, n_1 = 4.
// φ_0 = (1.1, 1.1, 0.1)/2.3, φ_1 = (1.1, 1.1, 2.1)/4.3 (n_k + Vβ).
// θ_0 = (2.5, 1.25)/3.75, θ_1 = (0.5, 3.25)/3.75 (n_d + Σα = 3 + 0.75).
struct Fixture {
  ModelSnapshot model;
  Vocabulary vocab;
  std::unique_ptr<TokenStore> store;
};

Fixture Tiny() {
  Fixture f;
  f.model.num_topics = 2;
  f.model.vocab_size = 3;
  f.model.beta = 0.1;
  f.model.sweep = 3;
  f.model.tokens = 6;
  f.model.alpha = {0.5, 0.25};
  f.model.word_offsets = {0, 2, 4, 5};
  f.model.entries = {{0, 1}, {1, 1}, {0, 1}, {1, 1}, {1, 2}};
  for (const char* w : {"apple", "bank", "cat"}) f.vocab.Add(w);
  TokenStoreMeta meta;
  meta.num_topics = 2;
  meta.vocab_size = 3;
  meta.sweep = 3;
  f.store = CreateInMemoryTokenStore(meta);
  auto writer = f.store->Rewrite(meta);
  EXPECT_TRUE(writer.ok());
  DocBatch batch;
  const std::vector<WordId> w0 = {0, 1, 0}, w1 = {2, 2, 1};
  const std::vector<TopicId> z0 = {0, 0, 1}, z1 = {1, 1, 1};
  batch.AddDocument("d,0", "", w0, z0);
  batch.AddDocument("", "", w1, z1);
  EXPECT_TRUE((*writer)->Append(batch).ok());
  EXPECT_TRUE((*writer)->Commit().ok());
  return f;
}

class ToolExportsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tool_exports_test." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Read(const std::string& name) {
    auto s = ReadWholeFile((dir_ / name).string());
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : "";
  }
  absl::Status Export(Fixture& f, ToolFormat format, int top = 2) {
    ToolExportOptions o;
    o.top_words = top;
    return ExportForTool(f.model, f.vocab, f.store.get(), format, o, dir_);
  }
  std::filesystem::path dir_;
};

TEST(JavaDoubleString, PrintsAsJava) {
  EXPECT_EQ(JavaDoubleString(0.0), "0.0");
  EXPECT_EQ(JavaDoubleString(5.0), "5.0");
  EXPECT_EQ(JavaDoubleString(0.25), "0.25");
  EXPECT_EQ(JavaDoubleString(0.001), "0.001");
  EXPECT_EQ(JavaDoubleString(1e-4), "1.0E-4");
  EXPECT_EQ(JavaDoubleString(1.25e-5), "1.25E-5");
  EXPECT_EQ(JavaDoubleString(1234567.5), "1234567.5");
  EXPECT_EQ(JavaDoubleString(1e7), "1.0E7");
  EXPECT_EQ(JavaDoubleString(12345678.0), "1.2345678E7");
  EXPECT_EQ(JavaDoubleString(-0.5), "-0.5");
  EXPECT_EQ(JavaDoubleString(100.0), "100.0");
  EXPECT_EQ(JavaDoubleString(2.0 / 3.0), "0.6666666666666666");
}

TEST_F(ToolExportsTest, MalletFilesInMalletsLayouts) {
  Fixture f = Tiny();
  ASSERT_TRUE(Export(f, ToolFormat::kMallet).ok());
  // Top 2 words by count, ties by word id; every word followed by a space.
  EXPECT_EQ(Read("mallet_topic_keys.txt"),
            "0\t0.5\tapple bank \n"
            "1\t0.25\tcat apple \n");
  EXPECT_EQ(Read("mallet_doc_topics.txt"),
            "0\td,0\t0.6666666666666666\t0.3333333333333333\n"
            "1\tno-name\t0.13333333333333333\t0.8666666666666667\n");
  EXPECT_EQ(Read("mallet_state.gz"),
            "#doc source pos typeindex type topic\n"
            "#alpha : 0.5 0.25 \n"
            "#beta : 0.1\n"
            "0 NA 0 0 apple 0\n"
            "0 NA 1 1 bank 0\n"
            "0 NA 2 0 apple 1\n"
            "1 NA 0 2 cat 1\n"
            "1 NA 1 2 cat 1\n"
            "1 NA 2 1 bank 1\n");
  // Really gzip: the magic bytes.
  std::string raw(2, '\0');
  FILE* fp = std::fopen((dir_ / "mallet_state.gz").c_str(), "rb");
  ASSERT_NE(fp, nullptr);
  ASSERT_EQ(std::fread(raw.data(), 1, 2, fp), 2u);
  std::fclose(fp);
  EXPECT_EQ(raw, "\x1f\x8b");
}

TEST_F(ToolExportsTest, CsvMatricesWithHeaders) {
  Fixture f = Tiny();
  ASSERT_TRUE(Export(f, ToolFormat::kCsv).ok());
  EXPECT_EQ(Read("doc_topic.csv"),
            "doc,id,topic_0,topic_1\r\n"
            "0,\"d,0\",0.666666667,0.333333333\r\n"
            "1,,0.133333333,0.866666667\r\n");
  EXPECT_EQ(Read("topic_word.csv"),
            "topic,apple,bank,cat\r\n"
            "0,0.47826087,0.47826087,0.0434782609\r\n"
            "1,0.255813953,0.255813953,0.488372093\r\n");
}

TEST_F(ToolExportsTest, PyldavisJsonHoldsPrepareArguments) {
  Fixture f = Tiny();
  ASSERT_TRUE(Export(f, ToolFormat::kPyldavis).ok());
  EXPECT_EQ(Read("pyldavis.json"),
            "{\"topic_term_dists\": [\n"
            "[0.47826087,0.47826087,0.0434782609],\n"
            "[0.255813953,0.255813953,0.488372093]],\n"
            "\"doc_topic_dists\": [\n"
            "[0.666666667,0.333333333],\n"
            "[0.133333333,0.866666667]],\n"
            "\"doc_lengths\": [3,3],\n"
            "\"vocab\": [\"apple\",\"bank\",\"cat\"],\n"
            "\"term_frequency\": [2,2,2]}\n");
}

TEST_F(ToolExportsTest, JsonEscapesWords) {
  Fixture f = Tiny();
  f.vocab = Vocabulary();
  for (const char* w : {"a\"b", "back\\slash", "caf\xc3\xa9"}) f.vocab.Add(w);
  ASSERT_TRUE(Export(f, ToolFormat::kPyldavis).ok());
  EXPECT_NE(Read("pyldavis.json")
                .find("[\"a\\\"b\",\"back\\\\slash\",\"caf\xc3\xa9\"]"),
            std::string::npos);
}

TEST_F(ToolExportsTest, MalletRefusesWordsWithSpaces) {
  Fixture f = Tiny();
  f.vocab = Vocabulary();
  for (const char* w : {"apple", "new york", "cat"}) f.vocab.Add(w);
  absl::Status s = Export(f, ToolFormat::kMallet);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("'new york'"), std::string::npos) << s;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "mallet_topic_keys.txt"));
}

TEST_F(ToolExportsTest, StoreOfAnotherSweepIsRefused) {
  Fixture f = Tiny();
  f.model.sweep = 4;
  absl::Status s = Export(f, ToolFormat::kCsv);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("sweep 3"), std::string::npos) << s;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "doc_topic.csv"));
}

TEST_F(ToolExportsTest, FailedWriteLeavesNoFile) {
  Fixture f = Tiny();
  ToolExportOptions o;
  absl::Status s = ExportForTool(f.model, f.vocab, f.store.get(),
                                 ToolFormat::kCsv, o, (dir_ / "nope").string());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("nope"), std::string::npos) << s;
}

TEST(ParseToolFormat, NamesAndErrors) {
  EXPECT_EQ(*ParseToolFormat("mallet"), ToolFormat::kMallet);
  EXPECT_EQ(*ParseToolFormat("pyldavis"), ToolFormat::kPyldavis);
  EXPECT_EQ(*ParseToolFormat("csv"), ToolFormat::kCsv);
  absl::StatusOr<ToolFormat> bad = ParseToolFormat("gensim");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("gensim"), std::string::npos);
}

}  // namespace
}  // namespace latentd
