// Damaged files in the data directory (issue 16, "Two good snapshots"):
// a damaged model.bin falls back to model.prev.bin and says why, and a
// crash between a checkpoint's steps still starts. In-process
// LatentdService over a small corpus.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sampler/checkpoint_files.h"
#include "sampler/model_dir.h"
#include "sampler/model_snapshot.h"
#include "service/latentd_service.h"
#include "service/metrics.h"

namespace latentd::service {
namespace {

namespace fs = std::filesystem;

std::string TempDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/damaged_files_" +
                          std::to_string(::getpid()) + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void FlipByte(const std::string& path, uint64_t offset) {
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << path;
  char c;
  ASSERT_EQ(::pread(fd, &c, 1, static_cast<off_t>(offset)), 1);
  c = static_cast<char>(c ^ 0x5a);
  ASSERT_EQ(::pwrite(fd, &c, 1, static_cast<off_t>(offset)), 1);
  ::close(fd);
}

// Two obvious themes, 60 documents.
ServiceOptions SmallService(const std::string& dir) {
  const std::string corpus = dir + "/corpus.txt";
  FILE* f = std::fopen(corpus.c_str(), "w");
  const char* themes[] = {"oil prices opec crude barrel energy market",
                          "football match goal team player season coach"};
  for (int d = 0; d < 60; ++d) {
    std::fprintf(f, "%s %s\n", themes[d % 2], themes[d % 2]);
  }
  std::fclose(f);
  ServiceOptions o;
  o.data_dir = dir + "/node";
  o.corpus.path = corpus;
  o.trainer.num_topics = 4;
  o.trainer.eval_every = 0;
  o.max_sweeps = 3;
  o.compact_log_bytes = 0;  // merged records keep their words in the log
  return o;
}

// A running service stopped after `max_sweeps`: its Stop() checkpoint is
// model.bin (sweep 3), the first start's model.prev.bin (sweep 0).
void TrainAndStop(const ServiceOptions& o) {
  MetricsRegistry metrics;
  auto s = LatentdService::Open(o, &metrics);
  ASSERT_TRUE(s.ok()) << s.status();
  (*s)->Start();
  for (int i = 0; i < 500; ++i) {
    if ((*s)->Status({})->version().sweep() >= o.max_sweeps) break;
    ::usleep(10000);
  }
  ASSERT_TRUE((*s)->Stop().ok());
}

// Opens the service with its log lines captured.
struct Opened {
  std::unique_ptr<MetricsRegistry> metrics;  // outlives the service
  absl::StatusOr<std::unique_ptr<LatentdService>> service;
  std::string log;
};
Opened OpenCapturing(const ServiceOptions& o) {
  Opened out;
  out.metrics = std::make_unique<MetricsRegistry>();
  ::testing::internal::CaptureStderr();
  out.service = LatentdService::Open(o, out.metrics.get());
  out.log = ::testing::internal::GetCapturedStderr();
  return out;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

uint64_t SweepOf(const std::string& path) {
  auto snap = ModelSnapshot::Load(path);
  EXPECT_TRUE(snap.ok()) << snap.status();
  return snap.ok() ? snap->sweep : ~uint64_t{0};
}

TEST(SnapshotFallback, CheckpointKeepsThePreviousSnapshot) {
  const ServiceOptions o = SmallService(TempDir("keep"));
  TrainAndStop(o);
  ModelPaths paths(o.data_dir);
  EXPECT_EQ(SweepOf(paths.snapshot()), 3u);
  EXPECT_EQ(SweepOf(paths.prev_snapshot()), 0u);
  // Two files, not two names of one: damage to one leaves the other.
  struct stat a, b;
  ASSERT_EQ(::stat(paths.snapshot().c_str(), &a), 0);
  ASSERT_EQ(::stat(paths.prev_snapshot().c_str(), &b), 0);
  EXPECT_NE(a.st_ino, b.st_ino);
}

TEST(SnapshotFallback, FlippedByteInModelBinResumesFromPrevious) {
  const ServiceOptions o = SmallService(TempDir("flip"));
  TrainAndStop(o);
  ModelPaths paths(o.data_dir);
  FlipByte(paths.snapshot(), 100);
  Opened s = OpenCapturing(o);
  ASSERT_TRUE(s.service.ok()) << s.service.status() << "\n" << s.log;
  EXPECT_TRUE(Contains(
      s.log, paths.snapshot() + " refused: checksum mismatch over its"))
      << s.log;
  EXPECT_TRUE(Contains(s.log,
                       "resuming from checkpoint at sweep 0 "
                       "(model.prev.bin), token store at sweep 3"))
      << s.log;
  EXPECT_TRUE(
      Contains(s.metrics->RenderText(), "latentd_snapshots_refused_total 1"));
  // Only α goes back: the sweep and the counts come from the token store.
  auto st = (*s.service)->Status({});
  EXPECT_EQ(st->checkpoint_sweep(), 0u);
  EXPECT_EQ(st->version().sweep(), 3u);
  EXPECT_EQ(st->documents(), 60u);
  // The damaged model.bin does not push out the good model.prev.bin; the
  // checkpoint replaces model.bin and says why it kept the older one.
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE((*s.service)->Checkpoint({}).ok());
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(Contains(log, "no longer verifies")) << log;
  EXPECT_EQ(SweepOf(paths.snapshot()), 3u);
  EXPECT_EQ(SweepOf(paths.prev_snapshot()), 0u);
  // The next one keeps it as usual.
  ASSERT_TRUE((*s.service)->Checkpoint({}).ok());
  EXPECT_EQ(SweepOf(paths.prev_snapshot()), 3u);
}

TEST(SnapshotFallback, BothDamagedFailsNamingBoth) {
  const ServiceOptions o = SmallService(TempDir("both"));
  TrainAndStop(o);
  ModelPaths paths(o.data_dir);
  FlipByte(paths.snapshot(), 100);
  ASSERT_EQ(::truncate(paths.prev_snapshot().c_str(), 50), 0);
  Opened s = OpenCapturing(o);
  ASSERT_FALSE(s.service.ok());
  EXPECT_EQ(s.service.status().code(), absl::StatusCode::kDataLoss);
  const std::string message(s.service.status().message());
  EXPECT_TRUE(Contains(
      message, paths.snapshot() + " refused: checksum mismatch over its"))
      << message;
  EXPECT_TRUE(Contains(message, paths.prev_snapshot() +
                                    " refused: checksum mismatch over its 50"))
      << message;
}

// A crash after the first step of a checkpoint (model.bin.tmp written) or
// after the second (both names on one file), or a model.bin gone: start.
TEST(SnapshotFallback, CrashBetweenStepsStillStarts) {
  const ServiceOptions o = SmallService(TempDir("crash"));
  TrainAndStop(o);
  ModelPaths paths(o.data_dir);
  {
    std::ofstream(paths.snapshot() + ".tmp") << "half a snapshot";
    std::ofstream(paths.prev_snapshot() + ".tmp") << "half a link";
    Opened s = OpenCapturing(o);
    ASSERT_TRUE(s.service.ok()) << s.service.status();
    EXPECT_TRUE(Contains(s.log,
                         "resuming from checkpoint at sweep 3 "
                         "(model.bin)"))
        << s.log;
    ASSERT_TRUE((*s.service)->Checkpoint({}).ok());  // over the strays
    EXPECT_FALSE(fs::exists(paths.snapshot() + ".tmp"));
    EXPECT_EQ(SweepOf(paths.prev_snapshot()), 3u);
  }
  {
    ASSERT_EQ(::unlink(paths.prev_snapshot().c_str()), 0);
    ASSERT_EQ(::link(paths.snapshot().c_str(), paths.prev_snapshot().c_str()),
              0);
    Opened s = OpenCapturing(o);
    ASSERT_TRUE(s.service.ok()) << s.service.status();
  }
  {
    ASSERT_EQ(::unlink(paths.snapshot().c_str()), 0);
    Opened s = OpenCapturing(o);
    ASSERT_TRUE(s.service.ok()) << s.service.status();
    EXPECT_TRUE(Contains(s.log, paths.snapshot() + " refused: missing"))
        << s.log;
    EXPECT_TRUE(Contains(s.log, "(model.prev.bin)")) << s.log;
  }
}

// A snapshot newer than the token store belongs to another store (a store
// restored from a backup, say): the older one that fits is taken.
TEST(SnapshotFallback, SnapshotNewerThanTheStoreIsRefused) {
  const ServiceOptions o = SmallService(TempDir("newer"));
  TrainAndStop(o);
  ModelPaths paths(o.data_dir);
  auto snap = ModelSnapshot::Load(paths.snapshot());
  ASSERT_TRUE(snap.ok());
  snap->sweep = 1000;
  ASSERT_TRUE(snap->Save(paths.snapshot()).ok());
  Opened s = OpenCapturing(o);
  ASSERT_TRUE(s.service.ok()) << s.service.status();
  EXPECT_TRUE(Contains(s.log,
                       "refused: it is at sweep 1000, newer than the "
                       "token store (sweep 3)"))
      << s.log;
  EXPECT_TRUE(Contains(s.log, "(model.prev.bin)")) << s.log;
}

}  // namespace
}  // namespace latentd::service
