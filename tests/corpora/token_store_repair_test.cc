// RepairFileTokenStore: an intact store is left alone; a damaged payload, a
// damaged block header (counted from the file header) or a cut-off end
// loses only its own documents, which become empty, and every other
// document keeps its index, id, words and topics; the damaged file is kept
// aside; two stretches without a header, a damaged file header, or more
// documents lost than kept are refused and change nothing.
#include "corpora/token_store_repair.h"

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "corpora/internal/token_store_format.h"
#include "corpora/token_store.h"
#include "gtest/gtest.h"
#include "tests/corpora/test_util.h"

namespace latentd {
namespace {

constexpr int kBatches = 5;
constexpr int kDocsPerBatch = 10;

std::string DocId(int d) { return "doc" + std::to_string(d); }

// kBatches blocks of kDocsPerBatch documents; document d has d % 7 + 1
// tokens of word (d + t) % 50 and topic t % 4.
void WriteStore(const std::string& path) {
  TokenStoreMeta meta;
  meta.num_topics = 4;
  meta.vocab_size = 50;
  meta.sweep = 3;
  auto store = CreateFileTokenStore(path, meta);
  ASSERT_TRUE(store.ok());
  auto writer = (*store)->Rewrite(meta);
  ASSERT_TRUE(writer.ok());
  for (int b = 0; b < kBatches; ++b) {
    DocBatch batch;
    for (int i = 0; i < kDocsPerBatch; ++i) {
      const int d = b * kDocsPerBatch + i;
      std::vector<WordId> words;
      std::vector<TopicId> topics;
      for (int t = 0; t < d % 7 + 1; ++t) {
        words.push_back(static_cast<WordId>((d + t) % 50));
        topics.push_back(static_cast<TopicId>(t % 4));
      }
      batch.AddDocument(DocId(d), d % 2 ? "u" : "", words, topics);
    }
    ASSERT_TRUE((*writer)->Append(batch).ok());
  }
  ASSERT_TRUE((*writer)->Commit().ok());
}

// Byte offset of block `b`'s header.
uint64_t BlockOffset(const std::string& bytes, int b) {
  uint64_t at = internal::kFileHeaderBytes;
  for (int i = 0; i < b; ++i) {
    uint64_t payload;
    std::memcpy(&payload, bytes.data() + at + 16, sizeof(payload));
    at += internal::kBlockHeaderBytes + payload;
  }
  return at;
}

struct Doc {
  std::string id, user;
  std::vector<WordId> words;
  std::vector<TopicId> topics;
};

std::vector<Doc> ReadAll(const std::string& path) {
  std::vector<Doc> docs;
  auto store = OpenFileTokenStore(path);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return docs;
  auto reader = (*store)->Read();
  EXPECT_TRUE(reader.ok());
  DocBatch batch;
  for (;;) {
    absl::StatusOr<bool> more = (*reader)->Next(&batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    EXPECT_EQ(batch.first_doc, docs.size());
    for (size_t d = 0; d < batch.num_docs(); ++d) {
      const auto w = batch.doc_words(d);
      const auto t = batch.doc_topics(d);
      docs.push_back({batch.doc_ids[d],
                      batch.users[d],
                      {w.begin(), w.end()},
                      {t.begin(), t.end()}});
    }
  }
  return docs;
}

// True if a pass over the store at `path` ends without an error.
bool ReadsClean(const std::string& path) {
  auto store = OpenFileTokenStore(path);
  if (!store.ok()) return false;
  auto reader = (*store)->Read();
  if (!reader.ok()) return false;
  DocBatch batch;
  for (;;) {
    absl::StatusOr<bool> more = (*reader)->Next(&batch);
    if (!more.ok()) return false;
    if (!*more) return true;
  }
}

class TokenStoreRepairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("tokens.lts");
    WriteStore(path_);
    intact_ = ReadAll(path_);
    bytes_ = testing::ReadFileBytes(path_);
    ASSERT_EQ(intact_.size(), size_t{kBatches * kDocsPerBatch});
  }
  void Damage(uint64_t offset) {
    std::string b = bytes_;
    b[offset] ^= 0x5a;
    testing::WriteFile(path_, b);
    ASSERT_FALSE(ReadsClean(path_));  // the damage is real
  }
  // Every document outside [first, first + n) is as written; those are
  // empty.
  void ExpectOnlyLost(uint64_t first, uint64_t n) {
    const std::vector<Doc> now = ReadAll(path_);
    ASSERT_EQ(now.size(), intact_.size());
    for (size_t d = 0; d < now.size(); ++d) {
      if (d >= first && d < first + n) {
        EXPECT_TRUE(now[d].id.empty() && now[d].words.empty()) << d;
      } else {
        EXPECT_EQ(now[d].id, intact_[d].id) << d;
        EXPECT_EQ(now[d].user, intact_[d].user) << d;
        EXPECT_EQ(now[d].words, intact_[d].words) << d;
        EXPECT_EQ(now[d].topics, intact_[d].topics) << d;
      }
    }
  }

  testing::TempDir dir_;
  std::string path_, bytes_;
  std::vector<Doc> intact_;
};

TEST_F(TokenStoreRepairTest, AnIntactStoreIsLeftAlone) {
  absl::StatusOr<TokenStoreRepair> r = RepairFileTokenStore(path_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->damage.empty());
  EXPECT_TRUE(r->kept_aside.empty());
  EXPECT_EQ(testing::ReadFileBytes(path_), bytes_);
}

TEST_F(TokenStoreRepairTest, ADamagedPayloadLosesOnlyItsBlock) {
  Damage(BlockOffset(bytes_, 2) + internal::kBlockHeaderBytes + 5);
  absl::StatusOr<TokenStoreRepair> r = RepairFileTokenStore(path_);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->damage.size(), 1u);
  EXPECT_EQ(r->damage[0].first_doc, 20u);
  EXPECT_EQ(r->damage[0].docs, 10u);
  EXPECT_TRUE(r->damage[0].counted_from_header);
  EXPECT_NE(r->damage[0].Describe().find("documents 20..29"), std::string::npos)
      << r->damage[0].Describe();
  ExpectOnlyLost(20, 10);
  // The damaged bytes are kept under the other name.
  std::string damaged = bytes_;
  damaged[BlockOffset(bytes_, 2) + internal::kBlockHeaderBytes + 5] ^= 0x5a;
  EXPECT_EQ(testing::ReadFileBytes(r->kept_aside), damaged);
  // Repaired, it verifies: a second repair finds nothing.
  absl::StatusOr<TokenStoreRepair> again = RepairFileTokenStore(path_);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->damage.empty());
  auto store = OpenFileTokenStore(path_);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->meta().sweep, 3u);
  EXPECT_EQ((*store)->meta().num_docs, 50u);
}

TEST_F(TokenStoreRepairTest, ADamagedBlockHeaderIsCountedFromTheFileHeader) {
  Damage(BlockOffset(bytes_, 1) + 6);  // in the document count
  absl::StatusOr<TokenStoreRepair> r = RepairFileTokenStore(path_);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->damage.size(), 1u);
  EXPECT_FALSE(r->damage[0].counted_from_header);
  EXPECT_EQ(r->damage[0].first_doc, 10u);
  EXPECT_EQ(r->damage[0].docs, 10u);
  EXPECT_EQ(r->damage[0].offset, BlockOffset(bytes_, 1));
  EXPECT_EQ(r->damage[0].bytes,
            BlockOffset(bytes_, 2) - BlockOffset(bytes_, 1));
  ExpectOnlyLost(10, 10);
}

TEST_F(TokenStoreRepairTest, ACutOffEndLosesTheLastBlock) {
  testing::WriteFile(path_, bytes_.substr(0, BlockOffset(bytes_, 4) + 50));
  absl::StatusOr<TokenStoreRepair> r = RepairFileTokenStore(path_);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->damage.size(), 1u);
  EXPECT_EQ(r->damage[0].first_doc, 40u);
  EXPECT_EQ(r->damage[0].docs, 10u);
  ExpectOnlyLost(40, 10);
}

TEST_F(TokenStoreRepairTest, TwoPayloadsDamagedAreBothRepaired) {
  std::string b = bytes_;
  b[BlockOffset(bytes_, 0) + internal::kBlockHeaderBytes + 1] ^= 1;
  b[BlockOffset(bytes_, 3) + internal::kBlockHeaderBytes + 1] ^= 1;
  testing::WriteFile(path_, b);
  absl::StatusOr<TokenStoreRepair> r = RepairFileTokenStore(path_);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->damage.size(), 2u);
  EXPECT_EQ(r->docs_lost(), 20u);
  const std::vector<Doc> now = ReadAll(path_);
  ASSERT_EQ(now.size(), 50u);
  EXPECT_TRUE(now[5].id.empty());
  EXPECT_TRUE(now[35].id.empty());
  EXPECT_EQ(now[15].id, DocId(15));
  EXPECT_EQ(now[45].id, DocId(45));
}

TEST_F(TokenStoreRepairTest, MoreLostThanKeptIsRefused) {
  std::string b = bytes_;
  for (int block : {0, 1, 2}) {
    b[BlockOffset(bytes_, block) + internal::kBlockHeaderBytes + 1] ^= 1;
  }
  testing::WriteFile(path_, b);
  absl::StatusOr<TokenStoreRepair> r = RepairFileTokenStore(path_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("lose 30 documents and keep only 20"),
            std::string::npos)
      << r.status();
  EXPECT_EQ(testing::ReadFileBytes(path_), b);
}

TEST_F(TokenStoreRepairTest, TwoHeadersDamagedOrAFileHeaderAreRefused) {
  std::string b = bytes_;
  b[BlockOffset(bytes_, 1) + 6] ^= 1;
  b[BlockOffset(bytes_, 3) + 6] ^= 1;
  testing::WriteFile(path_, b);
  absl::StatusOr<TokenStoreRepair> r = RepairFileTokenStore(path_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("not known"), std::string::npos)
      << r.status();
  EXPECT_EQ(testing::ReadFileBytes(path_), b);

  // A file header that verifies but miscounts the blocks.
  absl::StatusOr<TokenStoreMeta> meta = internal::DecodeFileHeader(
      bytes_.substr(0, internal::kFileHeaderBytes), path_);
  ASSERT_TRUE(meta.ok());
  meta->num_batches += 1;
  b = internal::EncodeFileHeader(*meta) +
      bytes_.substr(internal::kFileHeaderBytes);
  testing::WriteFile(path_, b);
  r = RepairFileTokenStore(path_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  EXPECT_NE(r.status().message().find("5 blocks hold"), std::string::npos)
      << r.status();
  EXPECT_EQ(testing::ReadFileBytes(path_), b);

  Damage(20);  // the file header's document count
  r = RepairFileTokenStore(path_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  std::string damaged = bytes_;
  damaged[20] ^= 0x5a;
  EXPECT_EQ(testing::ReadFileBytes(path_), damaged);
}

}  // namespace
}  // namespace latentd
