// The file-system seam (base/file_system.h, base/file_util.h) and the
// fault-injecting file system tests use (base/testing/).
#include "base/file_system.h"

#include <cerrno>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "base/file_util.h"
#include "base/testing/fault_injection_file_system.h"
#include "base/testing/scratch_dir.h"
#include "gtest/gtest.h"

namespace latentd {
namespace {

std::string TempDir(const std::string& name) {
  return ::latentd::testing::ScratchDir("file_system", name);
}

TEST(PosixFileSystem, WriteReadRenameRemove) {
  const std::string dir = TempDir("posix");
  FileSystem* fs = FileSystem::Posix();
  auto f = fs->OpenForWrite(dir + "/a", WriteMode::kTruncate);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE((*f)->Append("hello ").ok());
  ASSERT_TRUE((*f)->Append("world").ok());
  ASSERT_TRUE((*f)->Sync().ok());
  ASSERT_TRUE((*f)->WriteAt(0, "J").ok());
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_FALSE((*f)->Append("x").ok());  // spent
  EXPECT_EQ(*ReadFileToString(dir + "/a"), "Jello world");

  // kKeep appends at the end; Truncate moves the position.
  f = fs->OpenForWrite(dir + "/a", WriteMode::kKeep);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append("!").ok());
  ASSERT_TRUE((*f)->DataSync().ok());
  ASSERT_TRUE((*f)->Truncate(5).ok());
  ASSERT_TRUE((*f)->Append("?").ok());
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(*ReadFileToString(dir + "/a"), "Jello?");

  ASSERT_TRUE(RenameDurably(dir + "/a", dir + "/b").ok());
  EXPECT_FALSE(PathExists(dir + "/a"));
  auto info = fs->Stat(dir + "/b");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 6u);
  EXPECT_FALSE(info->directory);
  EXPECT_TRUE(fs->Stat(dir)->directory);
  EXPECT_TRUE(absl::IsNotFound(fs->Remove(dir + "/a")));
  EXPECT_TRUE(fs->Remove(dir + "/b").ok());
  EXPECT_TRUE(absl::IsAlreadyExists(fs->CreateDirectory(dir)));
  auto missing = fs->OpenForRead(dir + "/nothing");
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_TRUE(absl::StrContains(missing.status().message(), dir + "/nothing"));
  EXPECT_TRUE(absl::IsInvalidArgument(fs->OpenForRead(dir).status()));
}

// Writeback starts every 8 MiB written (a hint to the kernel): a file of
// several such spans, appended in pieces of every size, with a WriteAt
// into an early span and a file opened to keep its bytes, reads back whole.
TEST(PosixFileSystem, LargeFilesWrittenWithWritebackReadBackWhole) {
  const std::string dir = TempDir("writeback");
  FileSystem* fs = FileSystem::Posix();
  std::string expected;
  auto f = fs->OpenForWrite(dir + "/big", WriteMode::kTruncate);
  ASSERT_TRUE(f.ok()) << f.status();
  for (size_t i = 0; expected.size() < (size_t{20} << 20); ++i) {
    const std::string piece((i * 7919) % (3 << 20), static_cast<char>(i));
    ASSERT_TRUE((*f)->Append(piece).ok());
    expected += piece;
  }
  ASSERT_TRUE((*f)->Flush().ok());
  ASSERT_TRUE((*f)->WriteAt(1 << 20, "written at").ok());
  expected.replace(1 << 20, 10, "written at");
  ASSERT_TRUE((*f)->Close().ok());
  f = fs->OpenForWrite(dir + "/big", WriteMode::kKeep);
  ASSERT_TRUE(f.ok());
  const std::string tail(9 << 20, 't');
  ASSERT_TRUE((*f)->Append(tail).ok());
  ASSERT_TRUE((*f)->Sync().ok());
  ASSERT_TRUE((*f)->Close().ok());
  expected += tail;
  auto read = ReadFileToString(dir + "/big");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->size(), expected.size());
  EXPECT_TRUE(*read == expected);
  EXPECT_TRUE(fs->Remove(dir + "/big").ok());
}

TEST(FileUtil, WriteFileAtomicallyLeavesNoTempOnFailure) {
  const std::string dir = TempDir("atomic");
  const std::string path = dir + "/x";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  FaultInjectionFileSystem faults;
  ScopedDefaultFileSystem use(&faults);
  for (FileOp op : {FileOp::kOpenWrite, FileOp::kWrite, FileOp::kSync,
                    FileOp::kClose, FileOp::kRename}) {
    faults.Inject({.op = op, .path_glob = "*/x*", .error = ENOSPC});
    absl::Status s = WriteFileAtomically(path, "new");
    faults.Clear();
    EXPECT_FALSE(s.ok()) << FileOpName(op);
    EXPECT_TRUE(absl::StrContains(s.message(), "injected fault")) << s;
    EXPECT_EQ(*ReadFileToString(path), "old") << FileOpName(op);
    EXPECT_FALSE(PathExists(path + ".tmp")) << FileOpName(op);
  }
  // Only the directory's fsync fails: the new file is in place, and the
  // error says so.
  faults.Inject({.op = FileOp::kSyncDirectory, .path_glob = dir});
  absl::Status s = WriteFileAtomically(path, "new");
  faults.Clear();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "renamed")) << s;
  EXPECT_EQ(*ReadFileToString(path), "new");
  EXPECT_TRUE(WriteFileAtomically(path, "newer").ok());
  EXPECT_EQ(*ReadFileToString(path), "newer");
}

TEST(FaultInjection, NthCallTimesAndClear) {
  const std::string dir = TempDir("nth");
  FaultInjectionFileSystem faults;
  auto f = faults.OpenForWrite(dir + "/log", WriteMode::kTruncate);
  ASSERT_TRUE(f.ok());
  // The third write fails, twice; then writes go through again.
  faults.Inject({.op = FileOp::kWrite,
                 .path_glob = "*/log",
                 .error = EIO,
                 .skip = 2,
                 .times = 2});
  EXPECT_TRUE((*f)->Append("a").ok());
  EXPECT_TRUE((*f)->Append("b").ok());
  absl::Status third = (*f)->Append("c");
  EXPECT_FALSE(third.ok());
  EXPECT_TRUE(absl::StrContains(third.message(), "cannot write")) << third;
  EXPECT_TRUE(absl::StrContains(third.message(), dir + "/log")) << third;
  EXPECT_FALSE((*f)->Append("d").ok());
  EXPECT_TRUE((*f)->Append("e").ok());
  EXPECT_EQ(faults.failures(), 2);
  // "Until cleared".
  faults.Inject({.op = FileOp::kSync, .error = EIO});
  for (int i = 0; i < 3; ++i) EXPECT_FALSE((*f)->Sync().ok());
  faults.Clear();
  EXPECT_TRUE((*f)->Sync().ok());
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(*ReadFileToString(dir + "/log"), "abe");
  // Other paths and operations are not touched; calls are recorded.
  faults.Inject({.op = FileOp::kRename, .path_glob = "*/other"});
  EXPECT_TRUE(faults.Rename(dir + "/log", dir + "/log2").ok());
  EXPECT_FALSE(faults.Rename(dir + "/log2", dir + "/other").ok());
  bool seen = false;
  for (const auto& [op, path] : faults.Calls()) {
    seen = seen || (op == FileOp::kRename && path == dir + "/other");
  }
  EXPECT_TRUE(seen);
}

TEST(FaultInjection, ShortWriteWritesHalfThenFails) {
  const std::string dir = TempDir("short");
  FaultInjectionFileSystem faults;
  auto f = faults.OpenForWrite(dir + "/f", WriteMode::kTruncate);
  ASSERT_TRUE(f.ok());
  faults.Inject(
      {.op = FileOp::kWrite, .error = ENOSPC, .short_write = true, .times = 1});
  absl::Status s = (*f)->WriteAt(0, "12345678");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "No space left")) << s;
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(*ReadFileToString(dir + "/f"), "1234");
}

TEST(FaultInjection, DefaultIsReplacedForTheScopeOnly) {
  FaultInjectionFileSystem faults;
  EXPECT_EQ(FileSystem::Default(), FileSystem::Posix());
  {
    ScopedDefaultFileSystem use(&faults);
    EXPECT_EQ(FileSystem::Default(), &faults);
  }
  EXPECT_EQ(FileSystem::Default(), FileSystem::Posix());
}

}  // namespace
}  // namespace latentd
