#include "corpora/token_store.h"

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "corpora/internal/token_store_format.h"
#include "gtest/gtest.h"
#include "tests/corpora/test_util.h"

namespace latentd {
namespace {

TokenStoreMeta Meta(uint32_t k = 8, uint32_t v = 100) {
  TokenStoreMeta meta;
  meta.num_topics = k;
  meta.vocab_size = v;
  meta.sweep = 3;
  return meta;
}

// Batch b holds b+1 documents of lengths 0, 1, 2, ... with deterministic
// words and topics.
DocBatch MakeBatch(int b, uint32_t topic_shift = 0) {
  DocBatch batch;
  for (int d = 0; d <= b; ++d) {
    std::vector<WordId> words;
    std::vector<TopicId> topics;
    for (int i = 0; i < d + b; ++i) {
      words.push_back((7 * b + 3 * d + i) % 100);
      topics.push_back((b + d + i + topic_shift) % 8);
    }
    batch.AddDocument("doc" + std::to_string(b) + "_" + std::to_string(d),
                      d % 2 ? "user" + std::to_string(d) : "", words, topics);
  }
  return batch;
}

void WriteBatches(TokenStore& store, int n, uint32_t topic_shift = 0) {
  auto writer = store.Rewrite(Meta());
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int b = 0; b < n; ++b) {
    ASSERT_TRUE((*writer)->Append(MakeBatch(b, topic_shift)).ok());
  }
  ASSERT_TRUE((*writer)->Commit().ok());
}

absl::StatusOr<std::vector<DocBatch>> ReadAll(TokenStore& store) {
  auto reader = store.Read();
  if (!reader.ok()) return reader.status();
  std::vector<DocBatch> out;
  DocBatch batch;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&batch);
    if (!more.ok()) return more.status();
    if (!*more) return out;
    out.push_back(batch);
  }
}

void ExpectSameBatch(const DocBatch& got, const DocBatch& want) {
  EXPECT_EQ(got.doc_offsets, want.doc_offsets);
  EXPECT_EQ(got.words, want.words);
  EXPECT_EQ(got.topics, want.topics);
  EXPECT_EQ(got.doc_ids, want.doc_ids);
  EXPECT_EQ(got.users, want.users);
}

using StoreFactory =
    std::function<std::unique_ptr<TokenStore>(const testing::TempDir&)>;

class TokenStoreTest : public ::testing::TestWithParam<bool> {
 protected:
  std::unique_ptr<TokenStore> NewStore() {
    if (!GetParam()) return CreateInMemoryTokenStore(Meta());
    auto store = CreateFileTokenStore(dir_.File("store.lts"), Meta());
    EXPECT_TRUE(store.ok()) << store.status();
    return std::move(*store);
  }
  testing::TempDir dir_;
};

TEST_P(TokenStoreTest, RoundTripKeepsBatchesAndCounts) {
  auto store = NewStore();
  EXPECT_EQ(store->meta().num_batches, 0u);
  WriteBatches(*store, 4);
  EXPECT_EQ(store->meta().num_batches, 4u);
  EXPECT_EQ(store->meta().num_docs, 1u + 2 + 3 + 4);
  EXPECT_EQ(store->meta().num_tokens,
            0u + (1 + 2) + (2 + 3 + 4) + (3 + 4 + 5 + 6));
  EXPECT_EQ(store->meta().sweep, 3u);
  auto batches = ReadAll(*store);
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 4u);
  uint64_t first_doc = 0;
  for (int b = 0; b < 4; ++b) {
    ExpectSameBatch((*batches)[b], MakeBatch(b));
    EXPECT_EQ((*batches)[b].index, static_cast<uint64_t>(b));
    EXPECT_EQ((*batches)[b].first_doc, first_doc);
    first_doc += b + 1;
  }
}

TEST_P(TokenStoreTest, EmptyStoreReadsNothing) {
  auto store = NewStore();
  auto before = ReadAll(*store);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_TRUE(before->empty());
  WriteBatches(*store, 0);
  auto after = ReadAll(*store);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->empty());
  EXPECT_EQ(store->meta().num_docs, 0u);
}

TEST_P(TokenStoreTest, AppendRejectsOutOfRangeWordsTopicsAndBadShapes) {
  auto store = NewStore();
  auto writer = store->Rewrite(Meta(8, 100));
  ASSERT_TRUE(writer.ok());
  DocBatch bad_word;
  std::vector<WordId> w = {100};
  std::vector<TopicId> t = {0};
  bad_word.AddDocument("", "", w, t);
  EXPECT_EQ((*writer)->Append(bad_word).code(),
            absl::StatusCode::kInvalidArgument);
  DocBatch bad_topic;
  w = {5};
  t = {8};
  bad_topic.AddDocument("", "", w, t);
  EXPECT_EQ((*writer)->Append(bad_topic).code(),
            absl::StatusCode::kInvalidArgument);
  DocBatch bad_shape = MakeBatch(2);
  bad_shape.topics.pop_back();
  EXPECT_EQ((*writer)->Append(bad_shape).code(),
            absl::StatusCode::kInvalidArgument);
  DocBatch bad_offsets = MakeBatch(2);
  bad_offsets.doc_offsets[1] = 1000;
  EXPECT_EQ((*writer)->Append(bad_offsets).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*writer)->Append(MakeBatch(1)).ok());
}

TEST_P(TokenStoreTest, RewriteRejectsBadMetaAndSecondWriter) {
  auto store = NewStore();
  EXPECT_EQ(store->Rewrite(Meta(0)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Rewrite(Meta(kMaxTopics + 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto writer = store->Rewrite(Meta());
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ(store->Rewrite(Meta()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  writer->reset();
  EXPECT_TRUE(store->Rewrite(Meta()).ok());
}

TEST_P(TokenStoreTest, AbandonedRewriteKeepsOldVersion) {
  auto store = NewStore();
  WriteBatches(*store, 2);
  {
    auto writer = store->Rewrite(Meta());
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append(MakeBatch(3)).ok());
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.File("store.lts.tmp")));
  auto batches = ReadAll(*store);
  ASSERT_TRUE(batches.ok());
  ASSERT_EQ(batches->size(), 2u);
  ExpectSameBatch((*batches)[1], MakeBatch(1));
  EXPECT_EQ(store->meta().num_batches, 2u);
}

TEST_P(TokenStoreTest, RewriteWhileReadingSeesOldVersionUntilNewPass) {
  auto store = NewStore();
  WriteBatches(*store, 3, /*topic_shift=*/0);
  auto reader = store->Read();
  ASSERT_TRUE(reader.ok());
  auto writer = store->Rewrite(Meta());
  ASSERT_TRUE(writer.ok());
  DocBatch batch;
  for (int b = 0; b < 3; ++b) {
    auto more = (*reader)->Next(&batch);
    ASSERT_TRUE(more.ok() && *more) << more.status();
    ExpectSameBatch(batch, MakeBatch(b, 0));
    for (TopicId& t : batch.topics) t = (t + 1) % 8;
    if (b < 2) {
      ASSERT_TRUE((*writer)->Append(batch).ok());
    }
    if (b == 1) {
      ASSERT_TRUE((*writer)->Commit().ok());  // mid-pass
    }
  }
  EXPECT_EQ((*writer)->Append(batch).code(),
            absl::StatusCode::kFailedPrecondition);
  auto end = (*reader)->Next(&batch);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_FALSE(*end);
  auto fresh = ReadAll(*store);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  ASSERT_EQ(fresh->size(), 2u);  // committed after two batches
  ExpectSameBatch((*fresh)[1], MakeBatch(1, 1));
}

INSTANTIATE_TEST_SUITE_P(MemoryAndFile, TokenStoreTest,
                         ::testing::Values(false, true), [](const auto& info) {
                           return info.param ? "File" : "Memory";
                         });

class FileTokenStoreTest : public ::testing::Test {
 protected:
  // Writes a 3-batch store and returns its path.
  std::string WriteStore() {
    std::string path = dir_.File("s.lts");
    auto store = CreateFileTokenStore(path, Meta());
    EXPECT_TRUE(store.ok());
    WriteBatches(**store, 3);
    return path;
  }
  absl::Status ReadStatus(const std::string& path) {
    auto store = OpenFileTokenStore(path);
    if (!store.ok()) return store.status();
    return ReadAll(**store).status();
  }
  testing::TempDir dir_;
};

TEST_F(FileTokenStoreTest, ReopenSeesCommittedData) {
  std::string path = WriteStore();
  auto store = OpenFileTokenStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->meta().num_batches, 3u);
  EXPECT_EQ((*store)->meta().num_topics, 8u);
  EXPECT_EQ((*store)->meta().vocab_size, 100u);
  auto batches = ReadAll(**store);
  ASSERT_TRUE(batches.ok());
  ASSERT_EQ(batches->size(), 3u);
  ExpectSameBatch((*batches)[2], MakeBatch(2));
}

// Found by the ASan+UBSan unit run (issue 16): appending a batch without
// documents, or documents without tokens, passed an empty vector's null
// data() to memcpy in the writer (the POSIX WritableFile::Append) and the
// reader (DecodeBlockPayload): undefined behaviour, caught only by UBSan.
TEST_F(FileTokenStoreTest, EmptyBatchesRoundTripRegression) {
  const std::string path = dir_.File("empty.lts");
  {
    auto store = CreateFileTokenStore(path, Meta());
    ASSERT_TRUE(store.ok()) << store.status();
    auto writer = (*store)->Rewrite(Meta());
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->Append(DocBatch()).ok());  // no documents
    DocBatch no_tokens;
    no_tokens.AddDocument("d", "", {}, {});
    ASSERT_TRUE((*writer)->Append(no_tokens).ok());
    ASSERT_TRUE((*writer)->Commit().ok());
  }
  auto store = OpenFileTokenStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto batches = ReadAll(**store);
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 2u);
  EXPECT_EQ((*batches)[0].num_docs(), 0u);
  EXPECT_EQ((*batches)[1].num_docs(), 1u);
  EXPECT_EQ((*batches)[1].num_tokens(), 0u);
}

TEST_F(FileTokenStoreTest, CreateNeedsDirectoryAndReplacesOnlyOnCommit) {
  EXPECT_EQ(
      CreateFileTokenStore(dir_.File("no/such/s.lts"), Meta()).status().code(),
      absl::StatusCode::kNotFound);
  std::string path = WriteStore();
  auto fresh = CreateFileTokenStore(path, Meta());
  ASSERT_TRUE(fresh.ok());
  auto old = OpenFileTokenStore(path);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ((*old)->meta().num_batches, 3u);
  WriteBatches(**fresh, 1);
  auto now = OpenFileTokenStore(path);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ((*now)->meta().num_batches, 1u);
}

TEST_F(FileTokenStoreTest, TruncationAnywhereIsDataLoss) {
  std::string path = WriteStore();
  std::string bytes = testing::ReadFileBytes(path);
  for (size_t cut :
       {size_t{70}, size_t{64 + 40 + 3}, bytes.size() / 2, bytes.size() - 1}) {
    testing::WriteFile(dir_.File("cut.lts"), bytes.substr(0, cut));
    absl::Status status = ReadStatus(dir_.File("cut.lts"));
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << cut << status;
    EXPECT_NE(status.message().find("cut.lts"), std::string::npos) << status;
  }
  testing::WriteFile(dir_.File("cut.lts"), bytes.substr(0, 30));
  EXPECT_EQ(ReadStatus(dir_.File("cut.lts")).code(),
            absl::StatusCode::kDataLoss);
  testing::WriteFile(dir_.File("long.lts"), bytes + "x");
  EXPECT_EQ(ReadStatus(dir_.File("long.lts")).code(),
            absl::StatusCode::kDataLoss);
}

TEST_F(FileTokenStoreTest, FlippedByteIsChecksumErrorNamingBlock) {
  std::string path = WriteStore();
  std::string bytes = testing::ReadFileBytes(path);
  // Every byte of the file, header included, is covered by a checksum.
  for (size_t at = 0; at < bytes.size(); at += 7) {
    std::string damaged = bytes;
    damaged[at] ^= 0x20;
    testing::WriteFile(dir_.File("bad.lts"), damaged);
    absl::Status status = ReadStatus(dir_.File("bad.lts"));
    EXPECT_FALSE(status.ok()) << "flip at " << at;
    if (at >= 8) {
      EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << at << status;
    }
  }
  std::string damaged = bytes;
  damaged[bytes.size() - 1] ^= 1;  // last block's payload
  testing::WriteFile(dir_.File("bad.lts"), damaged);
  absl::Status status = ReadStatus(dir_.File("bad.lts"));
  EXPECT_NE(status.message().find("block 2"), std::string::npos) << status;
  EXPECT_NE(status.message().find("checksum"), std::string::npos) << status;
}

TEST_F(FileTokenStoreTest, ForeignFileAndNewerVersionAreInvalidArgument) {
  testing::WriteFile(dir_.File("foreign"), "hello, I am not a token store\n");
  EXPECT_EQ(OpenFileTokenStore(dir_.File("foreign")).status().code(),
            absl::StatusCode::kInvalidArgument);
  testing::WriteFile(dir_.File("empty"), "");
  EXPECT_EQ(OpenFileTokenStore(dir_.File("empty")).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::string bytes = testing::ReadFileBytes(WriteStore());
  bytes[8] = 2;  // version 2
  testing::WriteFile(dir_.File("v2"), bytes);
  absl::Status status = OpenFileTokenStore(dir_.File("v2")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("version"), std::string::npos);
}

TEST_F(FileTokenStoreTest, OversizedBlockIsRejectedBeforeAllocating) {
  std::string path = WriteStore();
  std::string bytes = testing::ReadFileBytes(path).substr(0, 64);
  internal::BlockHeader h;
  h.num_docs = 1;
  h.num_tokens = 1;
  h.payload_bytes = uint64_t{8} << 30;
  bytes += internal::EncodeBlockHeader(h);
  testing::WriteFile(dir_.File("big.lts"), bytes);
  absl::Status status = ReadStatus(dir_.File("big.lts"));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("block 0"), std::string::npos) << status;
  h.payload_bytes = 1000;  // more than the file holds
  bytes = bytes.substr(0, 64) + internal::EncodeBlockHeader(h);
  testing::WriteFile(dir_.File("big.lts"), bytes);
  status = ReadStatus(dir_.File("big.lts"));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("truncated"), std::string::npos) << status;
}

TEST_F(FileTokenStoreTest, MissingFileIsNotFound) {
  EXPECT_EQ(OpenFileTokenStore(dir_.File("nope")).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace latentd
