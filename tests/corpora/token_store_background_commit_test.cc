// BatchWriter::CommitInBackground on the file store: the new version is
// current at once (read from its temporary name until the store's thread
// renames it), the next writer takes the other temporary name, the next
// commit or WaitDurable reports a failure of the background work once, and
// a version left not durable stays current until a later commit succeeds.
#include <filesystem>
#include <string>
#include <vector>

#include "base/file_system.h"
#include "base/testing/fault_injection_file_system.h"
#include "corpora/token_store.h"
#include "gtest/gtest.h"
#include "tests/corpora/test_util.h"

namespace latentd {
namespace {

TokenStoreMeta Meta(uint64_t sweep) {
  TokenStoreMeta meta;
  meta.num_topics = 4;
  meta.vocab_size = 10;
  meta.sweep = sweep;
  return meta;
}

// One batch of two documents whose topics all equal `topic`.
DocBatch Batch(TopicId topic) {
  DocBatch batch;
  batch.AddDocument("a", "", std::vector<WordId>{1, 2, 3},
                    std::vector<TopicId>(3, topic));
  batch.AddDocument("b", "", std::vector<WordId>{4, 5},
                    std::vector<TopicId>(2, topic));
  return batch;
}

// Writes the version of `sweep` (every topic = sweep % 4), committed in the
// background or not.
absl::Status WriteVersion(TokenStore& store, uint64_t sweep, bool background) {
  absl::StatusOr<std::unique_ptr<BatchWriter>> writer =
      store.Rewrite(Meta(sweep));
  if (!writer.ok()) return writer.status();
  absl::Status s = (*writer)->Append(Batch(sweep % 4));
  if (!s.ok()) return s;
  return background ? (*writer)->CommitInBackground() : (*writer)->Commit();
}

// The topic every token of the store's current version has (-1 if mixed).
absl::StatusOr<int> TopicOf(TokenStore& store) {
  absl::StatusOr<std::unique_ptr<BatchReader>> reader = store.Read();
  if (!reader.ok()) return reader.status();
  DocBatch batch;
  int topic = -2;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&batch);
    if (!more.ok()) return more.status();
    if (!*more) return topic;
    for (TopicId t : batch.topics) {
      topic = topic == -2 || topic == static_cast<int>(t) ? t : -1;
    }
  }
}

class BackgroundCommitTest : public ::testing::Test {
 protected:
  std::unique_ptr<TokenStore> NewStore() {
    absl::StatusOr<std::unique_ptr<TokenStore>> store =
        CreateFileTokenStore(path_, Meta(0));
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }
  // The sweep of the version a fresh open of the file finds.
  uint64_t SweepOnDisk() {
    absl::StatusOr<std::unique_ptr<TokenStore>> reopened =
        OpenFileTokenStore(path_);
    EXPECT_TRUE(reopened.ok()) << reopened.status();
    return reopened.ok() ? (*reopened)->meta().sweep : ~uint64_t{0};
  }

  testing::TempDir dir_;
  const std::string path_ = dir_.File("s.lts");
  // Outlives the stores the tests make, whose commit threads may use it.
  FaultInjectionFileSystem faults_;
};

TEST_F(BackgroundCommitTest, VersionIsCurrentAtOnceAndDurableAfterWait) {
  std::unique_ptr<TokenStore> store = NewStore();
  for (uint64_t sweep = 1; sweep <= 5; ++sweep) {
    ASSERT_TRUE(WriteVersion(*store, sweep, /*background=*/true).ok());
    EXPECT_EQ(store->meta().sweep, sweep);
    absl::StatusOr<int> topic = TopicOf(*store);  // maybe before the rename
    ASSERT_TRUE(topic.ok()) << topic.status();
    EXPECT_EQ(*topic, static_cast<int>(sweep % 4));
  }
  ASSERT_TRUE(store->WaitDurable().ok());
  EXPECT_EQ(SweepOnDisk(), 5u);
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
  EXPECT_FALSE(std::filesystem::exists(path_ + ".1.tmp"));
}

TEST_F(BackgroundCommitTest, NextWriterTakesTheOtherTemporaryName) {
  std::unique_ptr<TokenStore> store = NewStore();
  ASSERT_TRUE(WriteVersion(*store, 1, /*background=*/false).ok());
  ScopedDefaultFileSystem use(&faults_);
  // Renames of the store fail: each version stays under its own name.
  faults_.Inject({.op = FileOp::kRename, .path_glob = path_});
  ASSERT_TRUE(WriteVersion(*store, 2, /*background=*/true).ok());
  absl::StatusOr<std::unique_ptr<BatchWriter>> next = store->Rewrite(Meta(3));
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE((*next)->Append(Batch(3)).ok());
  // Writing version 3 did not touch version 2, still read from its name.
  absl::StatusOr<int> topic = TopicOf(*store);
  ASSERT_TRUE(topic.ok()) << topic.status();
  EXPECT_EQ(*topic, 2);
  // Version 3's commit reports version 2's failure and is itself dropped.
  absl::Status failed = (*next)->CommitInBackground();
  EXPECT_NE(failed.message().find("cannot rename"), std::string::npos)
      << failed;
  next->reset();
  EXPECT_EQ(store->meta().sweep, 2u);
  topic = TopicOf(*store);
  ASSERT_TRUE(topic.ok()) << topic.status();
  EXPECT_EQ(*topic, 2);
  // Not durable: the file still holds version 1, and WaitDurable says so
  // each time it is asked.
  EXPECT_EQ(store->WaitDurable().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(store->WaitDurable().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(SweepOnDisk(), 1u);
  // Once the fault clears, the next commit makes the store durable again.
  faults_.Clear();
  ASSERT_TRUE(WriteVersion(*store, 4, /*background=*/true).ok());
  ASSERT_TRUE(store->WaitDurable().ok());
  EXPECT_EQ(SweepOnDisk(), 4u);
  topic = TopicOf(*store);
  ASSERT_TRUE(topic.ok()) << topic.status();
  EXPECT_EQ(*topic, 0);
}

TEST_F(BackgroundCommitTest, FailedFsyncIsReportedOnceByWaitDurable) {
  std::unique_ptr<TokenStore> store = NewStore();
  ASSERT_TRUE(WriteVersion(*store, 1, /*background=*/false).ok());
  ScopedDefaultFileSystem use(&faults_);
  faults_.Inject({.op = FileOp::kSync, .path_glob = path_ + "*", .times = 1});
  ASSERT_TRUE(WriteVersion(*store, 2, /*background=*/true).ok());
  absl::Status first = store->WaitDurable();
  EXPECT_NE(first.message().find("cannot fsync"), std::string::npos) << first;
  // Asked again: no new failure to report, but still not durable.
  absl::Status again = store->WaitDurable();
  EXPECT_EQ(again.code(), absl::StatusCode::kDataLoss) << again;
  EXPECT_EQ(SweepOnDisk(), 1u);
  EXPECT_EQ(store->meta().sweep, 2u);
  // A synchronous commit (a merge's) recovers durability as well.
  ASSERT_TRUE(WriteVersion(*store, 3, /*background=*/false).ok());
  EXPECT_TRUE(store->WaitDurable().ok());
  EXPECT_EQ(SweepOnDisk(), 3u);
}

TEST_F(BackgroundCommitTest, FailedDirectoryFsyncIsRetriedByWaitDurable) {
  std::unique_ptr<TokenStore> store = NewStore();
  ScopedDefaultFileSystem use(&faults_);
  faults_.Inject({.op = FileOp::kSyncDirectory, .times = 1});
  ASSERT_TRUE(WriteVersion(*store, 1, /*background=*/true).ok());
  absl::Status first = store->WaitDurable();
  EXPECT_NE(first.message().find("current but not durable"), std::string::npos)
      << first;
  // Renamed already: the retry of the directory's fsync succeeds.
  EXPECT_TRUE(store->WaitDurable().ok());
  EXPECT_EQ(SweepOnDisk(), 1u);
}

TEST_F(BackgroundCommitTest, DestroyingTheStoreFinishesTheCommit) {
  {
    std::unique_ptr<TokenStore> store = NewStore();
    ASSERT_TRUE(WriteVersion(*store, 7, /*background=*/true).ok());
  }
  EXPECT_EQ(SweepOnDisk(), 7u);
}

TEST(InMemoryBackgroundCommit, CommitsAtOnce) {
  std::unique_ptr<TokenStore> store = CreateInMemoryTokenStore(Meta(0));
  ASSERT_TRUE(WriteVersion(*store, 2, /*background=*/true).ok());
  EXPECT_EQ(store->meta().sweep, 2u);
  EXPECT_TRUE(store->WaitDurable().ok());
  absl::StatusOr<int> topic = TopicOf(*store);
  ASSERT_TRUE(topic.ok()) << topic.status();
  EXPECT_EQ(*topic, 2);
}

}  // namespace
}  // namespace latentd
