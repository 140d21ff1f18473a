#include "corpora/document_reader.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/corpora/compress_util.h"
#include "tests/corpora/test_util.h"

namespace latentd {
namespace {

using Words = std::vector<std::string>;

struct ReadResult {
  absl::Status status;
  std::vector<RawDocument> docs;
  ReadStats stats;
};

ReadResult ReadAll(const ReaderOptions& options) {
  ReadResult result;
  auto reader = OpenDocumentReader(options);
  if (!reader.ok()) {
    result.status = reader.status();
    return result;
  }
  RawDocument doc;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&doc);
    if (!more.ok()) {
      result.status = more.status();
      break;
    }
    if (!*more) break;
    result.docs.push_back(doc);
  }
  result.stats = (*reader)->stats();
  return result;
}

bool Contains(absl::string_view haystack, absl::string_view needle) {
  return haystack.find(needle) != absl::string_view::npos;
}

class DocumentReaderTest : public ::testing::Test {
 protected:
  ReaderOptions Options(CorpusFormat format, const std::string& name,
                        const std::string& contents, bool skip = true) {
    ReaderOptions o;
    o.format = format;
    o.path = dir_.File(name);
    o.skip_malformed = skip;
    testing::WriteFile(o.path, contents);
    return o;
  }
  // Expects `contents` (format, with `vocab` if not empty) to give one
  // malformed record whose message names `name:line` and contains `what`,
  // in both modes.
  void ExpectMalformed(CorpusFormat format, const std::string& contents,
                       int line, const std::string& what,
                       const std::string& vocab = "") {
    SCOPED_TRACE(contents);
    std::string where = "bad.txt:" + std::to_string(line) + ":";
    ReaderOptions o = Options(format, "bad.txt", contents);
    if (!vocab.empty()) {
      o.vocab_path = dir_.File("bad.vocab");
      testing::WriteFile(o.vocab_path, vocab);
    }
    ReadResult skipped = ReadAll(o);
    ASSERT_TRUE(skipped.status.ok()) << skipped.status;
    EXPECT_EQ(skipped.stats.malformed, 1u);
    ASSERT_EQ(skipped.stats.messages.size(), 1u);
    EXPECT_TRUE(Contains(skipped.stats.messages[0], where))
        << skipped.stats.messages[0];
    EXPECT_TRUE(Contains(skipped.stats.messages[0], what))
        << skipped.stats.messages[0];
    EXPECT_TRUE(Contains(skipped.stats.Summary(), where));
    o.skip_malformed = false;
    ReadResult fatal = ReadAll(o);
    EXPECT_EQ(fatal.status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(fatal.status.message(), where)) << fatal.status;
    EXPECT_TRUE(Contains(fatal.status.message(), what)) << fatal.status;
  }
  testing::TempDir dir_;
};

TEST(CorpusFormat, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(*ParseCorpusFormat("lines"), CorpusFormat::kLines);
  EXPECT_EQ(*ParseCorpusFormat("yahoo"), CorpusFormat::kYahoo);
  EXPECT_EQ(*ParseCorpusFormat("dir"), CorpusFormat::kDirectory);
  EXPECT_EQ(*ParseCorpusFormat("uci"), CorpusFormat::kUci);
  EXPECT_EQ(*ParseCorpusFormat("ldac"), CorpusFormat::kLdaC);
  EXPECT_EQ(*ParseCorpusFormat("lda-c"), CorpusFormat::kLdaC);
  auto bad = ParseCorpusFormat("json");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(bad.status().message(), "json"));
  for (CorpusFormat f :
       {CorpusFormat::kLines, CorpusFormat::kYahoo, CorpusFormat::kDirectory,
        CorpusFormat::kUci, CorpusFormat::kLdaC}) {
    EXPECT_EQ(*ParseCorpusFormat(CorpusFormatName(f)), f);
  }
}

TEST_F(DocumentReaderTest, LinesTokenizeAndSkipEmptyDocuments) {
  ReadResult r = ReadAll(Options(CorpusFormat::kLines, "c.txt",
                                 "Hello, World!\n\nfoo 42\nthe of\nbar"));
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.docs.size(), 3u);
  EXPECT_EQ(r.docs[0].id, "1");
  EXPECT_EQ(r.docs[0].words, (Words{"hello", "world"}));
  EXPECT_EQ(r.docs[1].id, "3");
  EXPECT_EQ(r.docs[1].words, (Words{"foo"}));
  EXPECT_EQ(r.docs[2].words, (Words{"bar"}));
  EXPECT_EQ(r.stats.records, 5u);
  EXPECT_EQ(r.stats.documents, 3u);
  EXPECT_EQ(r.stats.tokens, 4u);
  EXPECT_EQ(r.stats.empty_documents, 2u);
  EXPECT_EQ(r.stats.malformed, 0u);
}

TEST_F(DocumentReaderTest, LinesReadCompressedInput) {
  ReaderOptions o = Options(CorpusFormat::kLines, "c.txt.zst",
                            testing::ZstdCompress("alpha beta\ngamma\n"));
  ReadResult r = ReadAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.docs.size(), 2u);
  EXPECT_EQ(r.docs[1].words, Words{"gamma"});
}

TEST_F(DocumentReaderTest, YahooReadsIdsUsersAndWords) {
  ReadResult r = ReadAll(Options(CorpusFormat::kYahoo, "y.txt",
                                 "d1 u1 Apples and Pears\n"
                                 "d2 u2\n"
                                 "\n"
                                 "d3\tu3\tplums,  kiwis\n"));
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.docs.size(), 2u);
  EXPECT_EQ(r.docs[0].id, "d1");
  EXPECT_EQ(r.docs[0].user, "u1");
  EXPECT_EQ(r.docs[0].words, (Words{"apples", "pears"}));
  EXPECT_EQ(r.docs[1].id, "d3");
  EXPECT_EQ(r.docs[1].user, "u3");
  EXPECT_EQ(r.docs[1].words, (Words{"plums", "kiwis"}));
  EXPECT_EQ(r.stats.empty_documents, 2u);
}

TEST_F(DocumentReaderTest, YahooLineWithOneFieldIsMalformed) {
  ExpectMalformed(CorpusFormat::kYahoo, "d1 u1 apple\nlonely\nd2 u2 pear\n", 2,
                  "1 field");
}

TEST_F(DocumentReaderTest, DirectoryReadsFilesSortedRecursivelyByRelativePath) {
  testing::WriteFile(dir_.File("root/b/c/x.txt.gz"),
                     testing::GzipCompress("gzipped words"));
  testing::WriteFile(dir_.File("root/a/2.txt"), "two caf\xe9 na\xc3\xafve");
  testing::WriteFile(dir_.File("root/a/10.txt"), "tenth");
  testing::WriteFile(dir_.File("root/empty.txt"), "  42 \n");
  testing::WriteFile(dir_.File("root/.DS_Store"), "hidden junk");
  testing::WriteFile(dir_.File("root/.git/config"), "hidden dir");
  ReaderOptions o;
  o.format = CorpusFormat::kDirectory;
  o.path = dir_.File("root");
  ReadResult r = ReadAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.docs.size(), 3u);
  EXPECT_EQ(r.docs[0].id, "a/10.txt");
  EXPECT_EQ(r.docs[0].words, Words{"tenth"});
  EXPECT_EQ(r.docs[1].id, "a/2.txt");
  EXPECT_EQ(r.docs[1].words, (Words{"caf", "na\xc3\xafve"}));
  EXPECT_EQ(r.docs[2].id, "b/c/x.txt.gz");
  EXPECT_EQ(r.docs[2].words, (Words{"gzipped", "words"}));
  EXPECT_EQ(r.stats.records, 4u);
  EXPECT_EQ(r.stats.empty_documents, 1u);
}

TEST_F(DocumentReaderTest, DirectoryUnreadableFileIsMalformed) {
  testing::WriteFile(dir_.File("root/a.txt"), "fine words");
  testing::WriteFile(dir_.File("root/b.zst"), "not zstd data");
  ReaderOptions o;
  o.format = CorpusFormat::kDirectory;
  o.path = dir_.File("root");
  ReadResult r = ReadAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.docs.size(), 1u);
  EXPECT_EQ(r.stats.malformed, 1u);
  ASSERT_EQ(r.stats.messages.size(), 1u);
  EXPECT_TRUE(Contains(r.stats.messages[0], "b.zst")) << r.stats.messages[0];
  o.skip_malformed = false;
  EXPECT_EQ(ReadAll(o).status.code(), absl::StatusCode::kInvalidArgument);
  o.path = dir_.File("missing");
  EXPECT_EQ(ReadAll(o).status.code(), absl::StatusCode::kNotFound);
}

TEST_F(DocumentReaderTest, UciExpandsCountsThroughVocabulary) {
  ReaderOptions o = Options(CorpusFormat::kUci, "docword.txt",
                            "4\n4\n5\n1 1 2\n1 3 1\n3 2 1\n3 4 3\n3 1 1\n");
  o.vocab_path = dir_.File("vocab.txt");
  testing::WriteFile(o.vocab_path, "Alpha\nthe\ngamma \ndelta\n");
  ReadResult r = ReadAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.docs.size(), 2u);
  EXPECT_EQ(r.docs[0].id, "1");
  EXPECT_EQ(r.docs[0].words, (Words{"alpha", "alpha", "gamma"}));
  EXPECT_EQ(r.docs[1].id, "3");
  // No stop-word filter for vocabulary words ("the").
  EXPECT_EQ(r.docs[1].words,
            (Words{"the", "delta", "delta", "delta", "alpha"}));
  EXPECT_EQ(r.stats.empty_documents, 2u);  // docs 2 and 4
  EXPECT_EQ(r.stats.tokens, 8u);
  o.vocab_path.clear();
  r = ReadAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.docs[0].words, (Words{"w1", "w1", "w3"}));
}

TEST_F(DocumentReaderTest, UciMalformedRecords) {
  const std::string h = "3\n4\n2\n";
  ExpectMalformed(CorpusFormat::kUci, h + "1 1 1\n1 2\n2 1 1\n", 5, "fields");
  ExpectMalformed(CorpusFormat::kUci, h + "1 1 1\n1 x 1\n2 1 1\n", 5, "wordID");
  ExpectMalformed(CorpusFormat::kUci, h + "1 1 1\n0 1 1\n2 1 1\n", 5, "docID");
  ExpectMalformed(CorpusFormat::kUci, h + "1 1 1\n4 1 1\n2 1 1\n", 5, "docID");
  ExpectMalformed(CorpusFormat::kUci, h + "1 1 1\n1 5 1\n2 1 1\n", 5, "wordID");
  ExpectMalformed(CorpusFormat::kUci, h + "1 1 1\n1 2 0\n2 1 1\n", 5, "count");
  ExpectMalformed(CorpusFormat::kUci, h + "1 1 1\n1 2 -2\n2 1 1\n", 5, "count");
  ExpectMalformed(CorpusFormat::kUci, h + "2 1 1\n1 2 1\n2 3 1\n", 5, "sorted");
  ExpectMalformed(CorpusFormat::kUci, h + "1 1 1\n2 1 1\n3 1 1\n", 6, "NNZ");
  ExpectMalformed(CorpusFormat::kUci, h + "1 1 1\n", 4, "NNZ");
}

TEST_F(DocumentReaderTest, UciBadHeaderOrShortVocabularyIsFatal) {
  for (const char* contents : {"3\nx\n2\n1 1 1\n", "3\n4\n", "3 4\n4\n2\n"}) {
    ReadResult r = ReadAll(Options(CorpusFormat::kUci, "h.txt", contents));
    EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument) << contents;
    EXPECT_TRUE(Contains(r.status.message(), "h.txt:")) << r.status;
  }
  ReaderOptions o = Options(CorpusFormat::kUci, "h.txt", "1\n3\n1\n1 3 1\n");
  o.vocab_path = dir_.File("v.txt");
  testing::WriteFile(o.vocab_path, "a\nb\n");
  EXPECT_EQ(ReadAll(o).status.code(), absl::StatusCode::kInvalidArgument);
  testing::WriteFile(o.vocab_path, "a\n\nc\n");
  EXPECT_EQ(ReadAll(o).status.code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DocumentReaderTest, LdaCReadsAnyWhitespaceAndTrailingSpaces) {
  ReaderOptions o = Options(CorpusFormat::kLdaC, "c.dat",
                            "2 0:1 2:2\n1\t1:3\n0\n\n3 0:1  1:1 2:1     ");
  o.vocab_path = dir_.File("vocab.txt");
  testing::WriteFile(o.vocab_path, "Zero\none\ntwo\n");
  ReadResult r = ReadAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.docs.size(), 3u);
  EXPECT_EQ(r.docs[0].id, "1");
  EXPECT_EQ(r.docs[0].words, (Words{"zero", "two", "two"}));
  EXPECT_EQ(r.docs[1].words, (Words{"one", "one", "one"}));
  EXPECT_EQ(r.docs[2].id, "5");
  EXPECT_EQ(r.docs[2].words, (Words{"zero", "one", "two"}));
  EXPECT_EQ(r.stats.empty_documents, 2u);
  EXPECT_EQ(r.stats.malformed, 0u);
  o.vocab_path.clear();
  r = ReadAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.docs[0].words, (Words{"w0", "w2", "w2"}));
}

TEST_F(DocumentReaderTest, LdaCMalformedRecords) {
  const std::string vocab = "a\nb\nc\n";
  ExpectMalformed(CorpusFormat::kLdaC, "1 0:1\n2 0:1\n", 2, "N=2", vocab);
  ExpectMalformed(CorpusFormat::kLdaC, "1 0:1\nx 0:1\n", 2, "N", vocab);
  ExpectMalformed(CorpusFormat::kLdaC, "1 0:1\n1 3\n", 2, "id:count", vocab);
  ExpectMalformed(CorpusFormat::kLdaC, "1 0:1\n1 3:1\n", 2, "word id", vocab);
  ExpectMalformed(CorpusFormat::kLdaC, "1 x:1\n1 0:1\n", 1, "word id", vocab);
  ExpectMalformed(CorpusFormat::kLdaC, "1 0:0\n1 0:1\n", 1, "count", vocab);
  ExpectMalformed(CorpusFormat::kLdaC, "1 0:1\n1 0:-4\n", 2, "count", vocab);
  ExpectMalformed(CorpusFormat::kLdaC, "1 0:1\n1 0:1:2\n", 2, "count", vocab);
}

// A few bytes must not announce millions of tokens: a 46-byte LDA-C line
// with counts of 2^24 was 67 M tokens (4.6 GB RSS) before these limits.
TEST_F(DocumentReaderTest, BagOfWordsCountsAndLengthsAreBounded) {
  const std::string vocab = "a\nb\nc\n";
  ExpectMalformed(CorpusFormat::kLdaC,
                  "1 0:1\n3 0:16777216 1:16777216 2:16777216\n", 2,
                  "not in 1..65536 (max-word-count)", vocab);
  ReaderOptions o = Options(CorpusFormat::kLdaC, "tight.dat",
                            "2 0:3 1:3\n2 0:4 1:3\n1 2:7\n");
  o.max_word_count = 5;
  o.max_document_tokens = 6;
  ReadResult r = ReadAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.docs.size(), 1u);  // 3+3; 4+3 is over 6; 7 is over 5
  EXPECT_EQ(r.stats.malformed, 2u);
  ASSERT_EQ(r.stats.messages.size(), 2u);
  EXPECT_TRUE(Contains(r.stats.messages[0], "tight.dat:2:"))
      << r.stats.messages[0];
  EXPECT_TRUE(Contains(r.stats.messages[0], "max-document-tokens"))
      << r.stats.messages[0];
  EXPECT_TRUE(Contains(r.stats.messages[1], "max-word-count"))
      << r.stats.messages[1];
  // UCI: a document whose entries add up past the limit.
  o = Options(CorpusFormat::kUci, "tight.uci",
              "2\n2\n3\n1 1 3\n1 2 4\n2 1 2\n");
  o.max_document_tokens = 6;
  r = ReadAll(o);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.stats.malformed, 1u);
  ASSERT_FALSE(r.stats.messages.empty());
  EXPECT_TRUE(
      Contains(r.stats.messages[0], "document 1 has more than 6 tokens"))
      << r.stats.messages[0];
}

TEST_F(DocumentReaderTest, SkippedRecordsAreCountedButOnlyFirstMessagesKept) {
  std::string contents;
  for (int i = 0; i < 25; ++i) contents += "2 0:1\n1 1:1\n";
  ReadResult r = ReadAll(Options(CorpusFormat::kLdaC, "many.dat", contents));
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.docs.size(), 25u);
  EXPECT_EQ(r.stats.malformed, 25u);
  EXPECT_EQ(r.stats.messages.size(), ReadStats::kMaxMessages);
  EXPECT_TRUE(Contains(r.stats.Summary(), "25 malformed"));
}

TEST(MissingVocabularyWarning, OnlyForBagOfWordsWithoutVocabulary) {
  ReaderOptions o;
  o.path = "ap.dat";
  o.format = CorpusFormat::kLdaC;
  const std::string ldac = MissingVocabularyWarning(o);
  EXPECT_TRUE(Contains(ldac,
                       "ap.dat: an LDA-C corpus read without a "
                       "vocabulary (--vocab)"))
      << ldac;
  EXPECT_TRUE(Contains(ldac, "w0, w1")) << ldac;
  o.format = CorpusFormat::kUci;
  EXPECT_TRUE(Contains(MissingVocabularyWarning(o), "w1, w2"));
  o.vocab_path = "vocab.txt";
  EXPECT_EQ(MissingVocabularyWarning(o), "");
  o.vocab_path.clear();
  for (CorpusFormat f :
       {CorpusFormat::kLines, CorpusFormat::kYahoo, CorpusFormat::kDirectory}) {
    o.format = f;
    EXPECT_EQ(MissingVocabularyWarning(o), "");
  }
}

TEST_F(DocumentReaderTest, MissingInputIsNotFound) {
  ReaderOptions o;
  o.path = dir_.File("none.txt");
  EXPECT_EQ(ReadAll(o).status.code(), absl::StatusCode::kNotFound);
  o.format = CorpusFormat::kLdaC;
  o.vocab_path = dir_.File("none.vocab");
  EXPECT_EQ(ReadAll(o).status.code(), absl::StatusCode::kNotFound);
}

TEST(InMemoryDocumentReader, ReturnsNonEmptyDocumentsWithPositions) {
  auto reader = NewInMemoryDocumentReader({{"a", "b"}, {}, {"c"}});
  RawDocument doc;
  ASSERT_TRUE(*reader->Next(&doc));
  EXPECT_EQ(doc.id, "0");
  ASSERT_TRUE(*reader->Next(&doc));
  EXPECT_EQ(doc.id, "2");
  EXPECT_EQ(doc.words, Words{"c"});
  EXPECT_FALSE(*reader->Next(&doc));
  EXPECT_EQ(reader->stats().empty_documents, 1u);
  EXPECT_EQ(reader->stats().tokens, 3u);
}

}  // namespace
}  // namespace latentd
