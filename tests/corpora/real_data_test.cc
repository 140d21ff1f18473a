// Reads the real corpora under $LATENTD_DATA_DIR (tests/data_dir.h; ctest
// label data) and checks the counts their SOURCE.md files state. Each test
// is skipped, naming the missing file, if its corpus is absent.
#include <filesystem>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "corpora/corpus_builder.h"
#include "corpora/document_reader.h"
#include "gtest/gtest.h"
#include "tests/corpora/test_util.h"
#include "tests/data_dir.h"

namespace latentd {
namespace {

struct Counts {
  uint64_t docs = 0, tokens = 0, distinct = 0;
  ReadStats stats;
};

Counts CountAll(const ReaderOptions& options) {
  Counts c;
  auto reader = OpenDocumentReader(options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return c;
  absl::flat_hash_set<std::string> words;
  RawDocument doc;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&doc);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    ++c.docs;
    c.tokens += doc.words.size();
    words.insert(doc.words.begin(), doc.words.end());
  }
  c.distinct = words.size();
  c.stats = (*reader)->stats();
  return c;
}

TEST(RealData, BleiApLdaC) {
  LATENTD_REQUIRE_DATA("blei-ap/ap.dat.zst", "blei-ap/vocab.txt.zst");
  ReaderOptions o;
  o.format = CorpusFormat::kLdaC;
  o.path = testing::RealDataPath("blei-ap/ap.dat.zst");
  o.vocab_path = testing::RealDataPath("blei-ap/vocab.txt.zst");
  o.skip_malformed = false;  // the last line's trailing spaces are fine
  Counts c = CountAll(o);
  EXPECT_EQ(c.docs, 2246u);
  EXPECT_EQ(c.tokens, 435838u);
  EXPECT_EQ(c.distinct, 10473u);
  EXPECT_EQ(c.stats.malformed, 0u);
  EXPECT_EQ(c.stats.empty_documents, 0u);
}

TEST(RealData, UciKos) {
  LATENTD_REQUIRE_DATA("uci-kos/docword.kos.txt.zst",
                       "uci-kos/vocab.kos.txt.zst");
  ReaderOptions o;
  o.format = CorpusFormat::kUci;
  o.path = testing::RealDataPath("uci-kos/docword.kos.txt.zst");
  o.vocab_path = testing::RealDataPath("uci-kos/vocab.kos.txt.zst");
  o.skip_malformed = false;
  Counts c = CountAll(o);
  EXPECT_EQ(c.docs, 3430u);
  EXPECT_EQ(c.tokens, 467714u);
  EXPECT_EQ(c.distinct, 6906u);
  EXPECT_EQ(c.stats.records, 353160u);
  EXPECT_EQ(c.stats.empty_documents, 0u);
}

TEST(RealData, News20LinesWithAndWithoutStopwords) {
  LATENTD_REQUIRE_DATA("20newsgroups-bydate/news20.lines.zst");
  ReaderOptions o;
  o.format = CorpusFormat::kLines;
  o.path = testing::RealDataPath("20newsgroups-bydate/news20.lines.zst");
  o.tokenizer.remove_stopwords = false;
  o.tokenizer.min_length = 1;
  Counts c = CountAll(o);
  EXPECT_EQ(c.docs, 18805u);
  EXPECT_EQ(c.tokens, 2181914u);
  EXPECT_EQ(c.distinct, 19950u);
  // The file was made with scikit-learn's stop-word list and words of 3+
  // letters, so the default tokenizer (the same list, 2+) removes nothing.
  Counts d = CountAll(ReaderOptions{o.format, o.path, "", {}, true});
  EXPECT_EQ(d.tokens, 2181914u);
}

TEST(RealData, BuildApStore) {
  LATENTD_REQUIRE_DATA("blei-ap/ap.dat.zst", "blei-ap/vocab.txt.zst");
  ReaderOptions o;
  o.format = CorpusFormat::kLdaC;
  o.path = testing::RealDataPath("blei-ap/ap.dat.zst");
  o.vocab_path = testing::RealDataPath("blei-ap/vocab.txt.zst");
  testing::TempDir dir;
  CorpusBuilderOptions b;
  b.num_topics = 50;
  b.holdout_fraction = 0.1;
  auto built = BuildCorpusFiles(o, b, dir.File("ap.lts"), dir.File("ap.held"));
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->stats.vocab_size, 10473u);
  EXPECT_EQ(built->stats.documents + built->stats.heldout_documents, 2246u);
  EXPECT_EQ(built->stats.tokens + built->stats.heldout_tokens, 435838u);
  EXPECT_NEAR(built->stats.heldout_documents, 224.6, 45);
  auto store = OpenFileTokenStore(dir.File("ap.lts"));
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->meta().num_tokens, built->stats.tokens);
  EXPECT_EQ((*store)->meta().vocab_size, 10473u);
  EXPECT_FALSE(std::filesystem::exists(dir.File("ap.lts.pass1")));
}

}  // namespace
}  // namespace latentd
