// base/log: the line format, level filtering, and that lines follow file
// descriptor 2 wherever it points (the daemon's --log-file and SIGHUP).
#include "base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace latentd::log {
namespace {

// Points fd 2 at a fresh file for the test's life, then restores it.
class StderrCapture {
 public:
  explicit StderrCapture(const std::string& name)
      : path_(::testing::TempDir() + "/log_test_" + std::to_string(::getpid()) +
              "_" + name) {
    saved_ = ::dup(2);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~StderrCapture() {
    ::dup2(saved_, 2);
    ::close(saved_);
    ::unlink(path_.c_str());
  }
  std::vector<std::string> Lines() const {
    std::ifstream in(path_);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }

 private:
  std::string path_;
  int saved_;
};

TEST(Log, LinesAreTimestampedLevelledAndFiltered) {
  StderrCapture capture("format");
  SetLevel(Level::kInfo);
  Debug("latentd", "hidden");
  Info("latentd", std::string("serving"));
  Warning("latentd sync", absl::string_view("peer lost"));
  SetLevel(Level::kError);
  Warning("latentd", "hidden too");
  Error("latentd", "disk full");
  SetLevel(Level::kDebug);
  Debug("latentd", std::string_view("now shown"));
  SetLevel(Level::kInfo);
  const std::vector<std::string> lines = capture.Lines();
  ASSERT_EQ(lines.size(), 4u);
  const std::regex stamp(
      R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (info   |warning|error  |debug  ) .*)");
  for (const std::string& l : lines) {
    EXPECT_TRUE(std::regex_match(l, stamp)) << l;
  }
  EXPECT_NE(lines[0].find(" info    latentd: serving"), std::string::npos);
  EXPECT_NE(lines[1].find(" warning latentd sync: peer lost"),
            std::string::npos);
  EXPECT_NE(lines[2].find(" error   latentd: disk full"), std::string::npos);
  EXPECT_NE(lines[3].find(" debug   latentd: now shown"), std::string::npos);
}

TEST(Log, ConcurrentLinesStayWhole) {
  StderrCapture capture("threads");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        Info("latentd", "thread " + std::to_string(t) + " line " +
                            std::to_string(i) + " end");
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::vector<std::string> lines = capture.Lines();
  ASSERT_EQ(lines.size(), 800u);
  for (const std::string& l : lines) {
    EXPECT_TRUE(l.size() >= 4 && l.compare(l.size() - 4, 4, " end") == 0) << l;
  }
}

TEST(Log, ParsesLevelNames) {
  EXPECT_EQ(*ParseLevel("debug"), Level::kDebug);
  EXPECT_EQ(*ParseLevel("warn"), Level::kWarning);
  EXPECT_EQ(*ParseLevel("warning"), Level::kWarning);
  EXPECT_EQ(*ParseLevel("error"), Level::kError);
  absl::StatusOr<Level> bad = ParseLevel("loud");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'loud'"), absl::string_view::npos);
  EXPECT_EQ(LevelName(Level::kWarning), "warning");
}

}  // namespace
}  // namespace latentd::log
