#include "base/dir_lock.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace latentd {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/dir_lock_", name, "_", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(DirectoryLock, SecondHolderIsRefusedNamingTheFirst) {
  const std::string dir = FreshDir("second");
  absl::StatusOr<DirectoryLock> first = DirectoryLock::Acquire(dir);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<DirectoryLock> second = DirectoryLock::Acquire(dir);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find(
                absl::StrCat("in use by process ", ::getpid())),
            std::string::npos)
      << second.status();
}

TEST(DirectoryLock, ReleasedOnDestructionAndMove) {
  const std::string dir = FreshDir("release");
  {
    absl::StatusOr<DirectoryLock> lock = DirectoryLock::Acquire(dir);
    ASSERT_TRUE(lock.ok()) << lock.status();
    DirectoryLock moved = *std::move(lock);
    EXPECT_FALSE(DirectoryLock::Acquire(dir).ok());
  }
  // The LOCK file stays behind; it does not block the next holder.
  EXPECT_TRUE(std::filesystem::exists(dir + "/LOCK"));
  EXPECT_TRUE(DirectoryLock::Acquire(dir).ok());
}

TEST(DirectoryLock, MissingDirectoryIsAnError) {
  absl::StatusOr<DirectoryLock> lock =
      DirectoryLock::Acquire(FreshDir("missing") + "/not-there");
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find("not-there/LOCK"), std::string::npos)
      << lock.status();
}

}  // namespace
}  // namespace latentd
