#include "corpora/corpus_builder.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/corpora/test_util.h"

namespace latentd {
namespace {

using Docs = std::vector<std::vector<std::string>>;

std::vector<DocBatch> ReadBatches(TokenStore& store) {
  std::vector<DocBatch> out;
  auto reader = store.Read();
  EXPECT_TRUE(reader.ok());
  DocBatch batch;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return out;
    out.push_back(batch);
  }
}

// The store's documents as words again.
Docs Words(TokenStore& store, const Vocabulary& vocab) {
  Docs docs;
  for (const DocBatch& b : ReadBatches(store)) {
    for (size_t d = 0; d < b.num_docs(); ++d) {
      docs.emplace_back();
      for (WordId w : b.doc_words(d)) docs.back().push_back(vocab.word(w));
    }
  }
  return docs;
}

// n documents of varying length over a vocabulary of `v` words.
Docs MakeDocs(int n, int v) {
  Docs docs(n);
  for (int d = 0; d < n; ++d) {
    for (int i = 0; i < 3 + d % 7; ++i) {
      docs[d].push_back(absl::StrCat("w", (d * 13 + i * i) % v));
    }
  }
  return docs;
}

CorpusBuilderOptions Opts(uint32_t k = 4) {
  CorpusBuilderOptions o;
  o.num_topics = k;
  return o;
}

TEST(CorpusBuilder, RoundTripsDocumentsWithFrequencyOrderedIds) {
  Docs docs = {{"b", "a", "c"}, {"a", "b", "a"}, {"d"}};
  auto store = CreateInMemoryTokenStore({});
  auto built = BuildCorpusFromDocuments(docs, Opts(), store.get());
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(Words(*store, built->vocab), docs);
  // a (3 tokens), b (2), then c and d (1 each) in order of first sight.
  ASSERT_EQ(built->vocab.size(), 4u);
  EXPECT_EQ(built->vocab.word(0), "a");
  EXPECT_EQ(built->vocab.word(1), "b");
  EXPECT_EQ(built->vocab.word(2), "c");
  EXPECT_EQ(built->vocab.word(3), "d");
  EXPECT_EQ(store->meta().num_topics, 4u);
  EXPECT_EQ(store->meta().vocab_size, 4u);
  EXPECT_EQ(store->meta().num_docs, 3u);
  EXPECT_EQ(store->meta().num_tokens, 7u);
  EXPECT_EQ(store->meta().sweep, 0u);
  EXPECT_EQ(built->stats.documents, 3u);
  EXPECT_EQ(built->stats.tokens, 7u);
  EXPECT_EQ(ReadBatches(*store)[0].doc_ids[2], "2");
}

TEST(CorpusBuilder, PrunesByDocumentFrequencyAndVocabularySize) {
  Docs docs = {{"a", "b", "c", "c", "c"}, {"a", "b"}, {"a", "d"}, {"e"}};
  CorpusBuilderOptions o = Opts();
  o.min_doc_freq = 2;
  auto store = CreateInMemoryTokenStore({});
  auto built = BuildCorpusFromDocuments(docs, o, store.get());
  ASSERT_TRUE(built.ok()) << built.status();
  // c has 3 tokens but is in one document only.
  EXPECT_EQ(Words(*store, built->vocab), (Docs{{"a", "b"}, {"a", "b"}, {"a"}}));
  EXPECT_EQ(built->stats.raw_vocab_size, 5u);
  EXPECT_EQ(built->stats.vocab_size, 2u);
  EXPECT_EQ(built->stats.pruned_words, 3u);
  EXPECT_EQ(built->stats.pruned_tokens, 5u);
  EXPECT_EQ(built->stats.pruned_documents, 1u);
  o.min_doc_freq = 1;
  o.max_vocab = 2;  // the two most frequent: c (3), a (3) by first sight
  built = BuildCorpusFromDocuments(docs, o, store.get());
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->vocab.word(0), "a");
  EXPECT_EQ(built->vocab.word(1), "c");
  EXPECT_EQ(Words(*store, built->vocab),
            (Docs{{"a", "c", "c", "c"}, {"a"}, {"a"}}));
}

TEST(CorpusBuilder, BatchesHoldWholeDocumentsOfAboutBatchTokens) {
  Docs docs(10, std::vector<std::string>(4, "x"));
  docs[5].assign(25, "y");
  CorpusBuilderOptions o = Opts();
  o.batch_tokens = 10;
  auto store = CreateInMemoryTokenStore({});
  ASSERT_TRUE(BuildCorpusFromDocuments(docs, o, store.get()).ok());
  std::vector<size_t> sizes;
  for (const DocBatch& b : ReadBatches(*store)) sizes.push_back(b.num_tokens());
  // 4+4+4 | 4+4+25 | 4+4+4 | 4
  EXPECT_EQ(sizes, (std::vector<size_t>{12, 33, 12, 4}));
}

// A small corpus is cut into about min_batches batches (not fewer than
// min_batch_tokens tokens each), so that parallel samplers see most of it
// applied; a large one keeps batch_tokens.
TEST(CorpusBuilder, BatchesAreSizedToTheCorpus) {
  Docs docs(400, std::vector<std::string>(5, "x"));  // 2000 tokens
  CorpusBuilderOptions o = Opts();
  o.batch_tokens = 1000;
  o.min_batches = 20;
  o.min_batch_tokens = 50;
  auto store = CreateInMemoryTokenStore({});
  ASSERT_TRUE(BuildCorpusFromDocuments(docs, o, store.get()).ok());
  std::vector<DocBatch> batches = ReadBatches(*store);
  EXPECT_EQ(batches.size(), 20u);  // 2000 / 20 = 100 tokens each
  for (const DocBatch& b : batches) EXPECT_EQ(b.num_tokens(), 100u);
  o.min_batch_tokens = 400;  // the floor wins: 5 batches
  ASSERT_TRUE(BuildCorpusFromDocuments(docs, o, store.get()).ok());
  EXPECT_EQ(ReadBatches(*store).size(), 5u);
  o.min_batches = 0;  // off: batch_tokens as given
  ASSERT_TRUE(BuildCorpusFromDocuments(docs, o, store.get()).ok());
  EXPECT_EQ(ReadBatches(*store).size(), 2u);
  o.min_batch_tokens = 0;
  EXPECT_FALSE(BuildCorpusFromDocuments(docs, o, store.get()).ok());
}

TEST(CorpusBuilder, SameSeedSameStoreDifferentSeedDifferentTopics) {
  Docs docs = MakeDocs(300, 50);
  auto a = CreateInMemoryTokenStore({});
  auto b = CreateInMemoryTokenStore({});
  auto c = CreateInMemoryTokenStore({});
  CorpusBuilderOptions o = Opts(7);
  o.batch_tokens = 64;
  ASSERT_TRUE(BuildCorpusFromDocuments(docs, o, a.get()).ok());
  ASSERT_TRUE(BuildCorpusFromDocuments(docs, o, b.get()).ok());
  o.seed = 2;
  ASSERT_TRUE(BuildCorpusFromDocuments(docs, o, c.get()).ok());
  auto ba = ReadBatches(*a), bb = ReadBatches(*b), bc = ReadBatches(*c);
  ASSERT_EQ(ba.size(), bb.size());
  bool any_differs = false;
  std::vector<int> per_topic(7);
  for (size_t i = 0; i < ba.size(); ++i) {
    EXPECT_EQ(ba[i].words, bb[i].words);
    EXPECT_EQ(ba[i].topics, bb[i].topics);
    EXPECT_EQ(ba[i].words, bc[i].words);
    any_differs |= ba[i].topics != bc[i].topics;
    for (TopicId t : ba[i].topics) {
      ASSERT_LT(t, 7u);
      ++per_topic[t];
    }
  }
  EXPECT_TRUE(any_differs);
  for (int n : per_topic) EXPECT_GT(n, 150) << "topics are not uniform";
}

TEST(CorpusBuilder, HoldsOutADeterministicShareOfDocuments) {
  Docs docs = MakeDocs(1000, 40);
  CorpusBuilderOptions o = Opts();
  o.holdout_fraction = 0.3;
  auto train = CreateInMemoryTokenStore({});
  auto held = CreateInMemoryTokenStore({});
  auto built = BuildCorpusFromDocuments(docs, o, train.get(), held.get());
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_NEAR(static_cast<double>(built->stats.heldout_documents), 300, 50);
  EXPECT_EQ(built->stats.documents + built->stats.heldout_documents, 1000u);
  EXPECT_EQ(held->meta().num_docs, built->stats.heldout_documents);
  EXPECT_EQ(held->meta().vocab_size, train->meta().vocab_size);
  auto train2 = CreateInMemoryTokenStore({});
  auto held2 = CreateInMemoryTokenStore({});
  ASSERT_TRUE(
      BuildCorpusFromDocuments(docs, o, train2.get(), held2.get()).ok());
  EXPECT_EQ(ReadBatches(*held2)[0].doc_ids, ReadBatches(*held)[0].doc_ids);
  EXPECT_EQ(ReadBatches(*held2)[0].topics, ReadBatches(*held)[0].topics);
  EXPECT_EQ(BuildCorpusFromDocuments(docs, o, train.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// --shard I/N: the shards of one input are disjoint, together every
// document once (each with the words it had), and share one vocabulary.
TEST(CorpusBuilder, ShardsOfOneInputPartitionItsDocuments) {
  const Docs docs = MakeDocs(100, 40);
  auto whole = CreateInMemoryTokenStore({});
  auto all = BuildCorpusFromDocuments(docs, Opts(), whole.get());
  ASSERT_TRUE(all.ok()) << all.status();
  uint64_t documents = 0, tokens = 0;
  Docs seen(docs.size());
  for (uint32_t i = 0; i < 3; ++i) {
    CorpusBuilderOptions o = Opts();
    o.shard_index = i;
    o.shard_count = 3;
    auto store = CreateInMemoryTokenStore({});
    auto built = BuildCorpusFromDocuments(docs, o, store.get());
    ASSERT_TRUE(built.ok()) << built.status();
    EXPECT_EQ(built->vocab.size(), all->vocab.size());
    EXPECT_EQ(built->stats.other_shards_documents,
              docs.size() - built->stats.documents);
    documents += built->stats.documents;
    tokens += built->stats.tokens;
    const Docs words = Words(*store, built->vocab);
    size_t j = 0;
    for (const DocBatch& b : ReadBatches(*store)) {
      for (const std::string& id : b.doc_ids) {
        const size_t d = std::stoul(id);  // the document's input position
        EXPECT_EQ(d % 3, i) << id;
        EXPECT_TRUE(seen[d].empty()) << "document " << d << " twice";
        seen[d] = words[j++];
      }
    }
  }
  EXPECT_EQ(documents, docs.size());
  EXPECT_EQ(tokens, all->stats.tokens);
  EXPECT_EQ(seen, docs);
  CorpusBuilderOptions bad = Opts();
  bad.shard_index = 3;
  bad.shard_count = 3;
  auto store = CreateInMemoryTokenStore({});
  EXPECT_EQ(BuildCorpusFromDocuments(docs, bad, store.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CorpusBuilder, EmptyCorpusIsInvalidArgumentAndKeepsOldStore) {
  auto store = CreateInMemoryTokenStore({});
  ASSERT_TRUE(BuildCorpusFromDocuments({{"keep"}}, Opts(), store.get()).ok());
  for (const Docs& docs : {Docs{}, Docs{{}, {}}}) {
    auto built = BuildCorpusFromDocuments(docs, Opts(), store.get());
    EXPECT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(built.status().message().find("empty corpus"),
              absl::string_view::npos);
  }
  CorpusBuilderOptions o = Opts();
  o.min_doc_freq = 2;  // prunes every word
  EXPECT_EQ(
      BuildCorpusFromDocuments({{"a"}, {"b"}}, o, store.get()).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->meta().num_docs, 1u);
}

// An edge list read as LDA-C (every line malformed) is an empty corpus whose
// error names the first malformed records' file, line and reason, not only
// their count.
TEST(CorpusBuilder, EmptyCorpusErrorNamesTheMalformedRecords) {
  testing::TempDir dir;
  std::string edges = "# FromNodeId\tToNodeId\n";
  for (int i = 0; i < 30; ++i) absl::StrAppend(&edges, 3466 + i, "\t937\n");
  testing::WriteFile(dir.File("edges.txt"), edges);
  ReaderOptions input;
  input.path = dir.File("edges.txt");
  input.format = CorpusFormat::kLdaC;
  auto built = BuildCorpusFiles(input, Opts(), dir.File("c.lts"));
  ASSERT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(built.status().message());
  EXPECT_NE(message.find("31 malformed"), std::string::npos) << message;
  EXPECT_NE(message.find(dir.File("edges.txt") +
                         ":1: term count N \"#\" is not a number"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(dir.File("edges.txt") +
                         ":2: N=3466 but the line has 1 id:count pairs"),
            std::string::npos)
      << message;
}

TEST(CorpusBuilder, RejectsBadOptions) {
  auto store = CreateInMemoryTokenStore({});
  CorpusBuilderOptions o = Opts(0);
  EXPECT_EQ(BuildCorpusFromDocuments({{"a"}}, o, store.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = Opts();
  o.holdout_fraction = 1.0;
  auto held = CreateInMemoryTokenStore({});
  EXPECT_EQ(BuildCorpusFromDocuments({{"a"}}, o, store.get(), held.get())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  o = Opts();
  o.batch_tokens = 0;
  EXPECT_EQ(BuildCorpusFromDocuments({{"a"}}, o, store.get()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CorpusBuilder, BuildsFileStoresFromAReaderAndReportsProgress) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("c.txt"),
                     "apples pears\n\nplums apples\nkiwis 12\n");
  ReaderOptions input;
  input.path = dir.File("c.txt");
  CorpusBuilderOptions o = Opts();
  std::vector<BuildProgress> reports;
  o.progress = [&](const BuildProgress& p) { reports.push_back(p); };
  o.progress_every_docs = 1;
  auto built = BuildCorpusFiles(input, o, dir.File("c.lts"));
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->stats.read.empty_documents, 1u);
  EXPECT_FALSE(std::filesystem::exists(dir.File("c.lts.pass1")));
  auto store = OpenFileTokenStore(dir.File("c.lts"));
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(Words(**store, built->vocab),
            (Docs{{"apples", "pears"}, {"plums", "apples"}, {"kiwis"}}));
  auto batches = ReadBatches(**store);
  EXPECT_EQ(batches[0].doc_ids, (std::vector<std::string>{"1", "3", "4"}));
  ASSERT_FALSE(reports.empty());
  EXPECT_TRUE(reports.back().pass_done);
  EXPECT_EQ(reports.back().pass, 2);
  EXPECT_EQ(reports.back().documents, 3u);
  EXPECT_NE(built->stats.Summary().find("3 documents"), std::string::npos);
  input.path = dir.File("missing.txt");
  EXPECT_EQ(BuildCorpusFiles(input, o, dir.File("c.lts")).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace latentd
