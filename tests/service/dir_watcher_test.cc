// The watched directory: a file renamed in is ingested at once (inotify),
// not at the next rescan, and moved to done/; a file without words goes to
// rejected/; a file that was there before Start() is taken by the first
// scan.
#include "service/dir_watcher.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "service/latentd_service.h"

namespace latentd::service {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

// True once `pred` holds, polling for at most `seconds`.
template <typename Pred>
bool Within(double seconds, Pred pred) {
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

TEST(DirWatcher, SeesNewFilesAtOnceThroughInotify) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("dir_watcher_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "watch");
  WriteFile(dir / "corpus.txt", "oil prices opec\nfootball goal team\n");
  ServiceOptions o;
  o.data_dir = (dir / "node").string();
  o.corpus.path = (dir / "corpus.txt").string();
  o.trainer.num_topics = 2;
  MetricsRegistry metrics;
  auto service = LatentdService::Open(o, &metrics);
  ASSERT_TRUE(service.ok()) << service.status();
  WriteFile(dir / "watch" / "early.txt", "oil barrel");

  // A rescan an hour away: only inotify can be this quick.
  DirWatcher watcher({.dir = (dir / "watch").string(), .poll_ms = 3600000},
                     service->get(), &metrics);
  watcher.Start();
  EXPECT_TRUE(Within(5, [&] {
    return fs::exists(dir / "watch/done/early.txt");
  })) << "a file there before Start() is taken by the first scan";

  WriteFile(dir / "watch" / ".late.tmp", "user: ann\nfootball goal");
  fs::rename(dir / "watch" / ".late.tmp", dir / "watch" / "late.txt");
  WriteFile(dir / "watch" / "empty.txt", "the of and");
  EXPECT_TRUE(
      Within(5, [&] { return fs::exists(dir / "watch/done/late.txt"); }));
  EXPECT_TRUE(
      Within(5, [&] { return fs::exists(dir / "watch/rejected/empty.txt"); }));
  EXPECT_TRUE((*service)->SourceIngested("file:late.txt"));
  EXPECT_TRUE((*service)->SourceIngested("file:early.txt"));

  const auto stop_start = std::chrono::steady_clock::now();
  watcher.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_start,
            std::chrono::seconds(5))
      << "Stop() waits for the rescan period";
  ASSERT_TRUE((*service)->Stop().ok());
  fs::remove_all(dir);
}

// Only regular files inside the directory are read: a symbolic link to a
// file elsewhere is rejected unread (its words never learned), and a file
// over the size limit is rejected on its fstat size, before any read.
TEST(DirWatcher, RejectsSymlinksAndOversizedFilesUnread) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("dir_watcher_reject_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "watch");
  WriteFile(dir / "corpus.txt", "oil prices opec\nfootball goal team\n");
  WriteFile(dir / "secret.txt", "zanzibar quokka");
  ServiceOptions o;
  o.data_dir = (dir / "node").string();
  o.corpus.path = (dir / "corpus.txt").string();
  o.trainer.num_topics = 2;
  o.max_text_bytes = 1000;
  MetricsRegistry metrics;
  auto service = LatentdService::Open(o, &metrics);
  ASSERT_TRUE(service.ok()) << service.status();
  fs::create_symlink(dir / "secret.txt", dir / "watch" / "link.txt");
  WriteFile(dir / "watch" / "big.txt", std::string(6000, 'a') + " oil");
  WriteFile(dir / "watch" / "fine.txt", "oil barrel");
  ::testing::internal::CaptureStderr();
  DirWatcher watcher({.dir = (dir / "watch").string(), .poll_ms = 3600000},
                     service->get(), &metrics);
  watcher.Start();
  EXPECT_TRUE(
      Within(5, [&] { return fs::exists(dir / "watch/done/fine.txt"); }));
  EXPECT_TRUE(Within(
      5, [&] { return fs::is_symlink(dir / "watch/rejected/link.txt"); }));
  EXPECT_TRUE(
      Within(5, [&] { return fs::exists(dir / "watch/rejected/big.txt"); }));
  watcher.Stop();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("link.txt rejected: a symbolic link"), std::string::npos)
      << log;
  EXPECT_NE(log.find("big.txt rejected: 6004 bytes, over the limit of 5096"),
            std::string::npos)
      << log;
  EXPECT_FALSE((*service)->SourceIngested("file:link.txt"));
  EXPECT_FALSE((*service)->SourceIngested("file:big.txt"));
  EXPECT_TRUE(fs::exists(dir / "secret.txt")) << "the link's target moved";
  EXPECT_TRUE(metrics.RenderText().find("latentd_watch_rejected_total 2") !=
              std::string::npos);
  ASSERT_TRUE((*service)->Stop().ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace latentd::service
