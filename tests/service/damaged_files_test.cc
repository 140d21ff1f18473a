// Damaged files in the data directory (issue 16, "Two good snapshots"):
// a damaged model.bin falls back to model.prev.bin and says why, a crash
// between a checkpoint's steps still starts, and a damaged ingest log
// record is skipped (merged) or reported lost (not merged) instead of
// stopping the node. In-process LatentdService over a small corpus.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sampler/checkpoint_files.h"
#include "sampler/model_dir.h"
#include "sampler/model_snapshot.h"
#include "service/daemon_settings.h"
#include "service/ingest_log.h"
#include "service/latentd_service.h"
#include "service/metrics.h"
#include "xxhash.h"

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

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
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
  uint64_t sweep = 0;
  for (int i = 0; i < 500 && sweep < o.max_sweeps; ++i) {
    auto st = (*s)->Status({});
    ASSERT_TRUE(st.ok()) << st.status();
    sweep = st->version().sweep();
    if (sweep < o.max_sweeps) ::usleep(10000);
  }
  EXPECT_GE(sweep, o.max_sweeps) << "the service did not finish sampling";
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

// ---- The ingest log. ----

IngestRecord Rec(std::string word) {
  IngestRecord r;
  r.doc_id.assign(1, 'd');
  r.words = {std::move(word)};
  return r;
}

// Offsets of the records of the log at `path` (walking the lengths).
std::vector<uint64_t> RecordOffsets(const std::string& path) {
  const std::string all = ReadFile(path);
  std::vector<uint64_t> out;
  for (size_t pos = 0; pos + 12 <= all.size();) {
    out.push_back(pos);
    uint32_t len;
    std::memcpy(&len, all.data() + pos, 4);
    pos += 12 + len;
  }
  return out;
}

// Five records, sequences 1..5, one append each.
std::string WriteLog(const std::string& dir) {
  const std::string path = dir + "/ingest.log";
  std::vector<IngestRecord> existing;
  auto log = IngestLog::Open(path, &existing);
  EXPECT_TRUE(log.ok());
  for (const char* w : {"alpha", "beta", "gamma", "delta", "epsilon"}) {
    std::vector<IngestRecord> one = {Rec(w)};
    EXPECT_TRUE((*log)->Append(&one).ok());
  }
  return path;
}

std::vector<std::string> DamagedCopies(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ingest.log.damaged-", 0) == 0) out.push_back(e.path());
  }
  return out;
}

std::vector<uint64_t> Sequences(const std::vector<IngestRecord>& records) {
  std::vector<uint64_t> out;
  for (const IngestRecord& r : records) out.push_back(r.sequence);
  return out;
}

TEST(IngestLogRepair, MergedDamagedRecordIsSkippedAndTheFileKeptAside) {
  const std::string dir = TempDir("log-merged");
  const std::string path = WriteLog(dir);
  FlipByte(path, RecordOffsets(path)[1] + 20);  // inside record 2's payload
  const std::string damaged = ReadFile(path);
  std::vector<IngestRecord> records;
  IngestLogRepair repair;
  auto log = IngestLog::Open(path, &records,
                             {.repair = true, .merged_through = 3}, &repair);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(Sequences(records), (std::vector<uint64_t>{1, 3, 4, 5}));
  ASSERT_EQ(repair.damage.size(), 1u);
  EXPECT_EQ(repair.lost(), 0u);
  EXPECT_EQ(repair.damage[0].after_sequence, 1u);
  EXPECT_EQ(repair.damage[0].before_sequence, 3u);
  EXPECT_TRUE(Contains(repair.damage[0].Describe(), "merged already"));
  // The damaged bytes are kept; the log itself is clean now.
  EXPECT_EQ(DamagedCopies(dir), std::vector<std::string>{repair.kept_aside});
  EXPECT_EQ(ReadFile(repair.kept_aside), damaged);
  std::vector<IngestRecord> next = {Rec("zeta")};
  ASSERT_TRUE((*log)->Append(&next).ok());
  EXPECT_EQ(next[0].sequence, 6u);
  log->reset();
  auto again = IngestLog::Open(path, &records);  // strict: no damage left
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Sequences(records), (std::vector<uint64_t>{1, 3, 4, 5, 6}));
}

TEST(IngestLogRepair, UnmergedDamageIsReportedLostOrRefused) {
  const std::string dir = TempDir("log-unmerged");
  const std::string path = WriteLog(dir);
  const std::vector<uint64_t> at = RecordOffsets(path);
  // Records 3 and 4, their length fields too: found again by scanning.
  for (uint64_t b = at[2]; b < at[4]; b += 7) FlipByte(path, b);
  const std::string damaged = ReadFile(path);
  std::vector<IngestRecord> records;
  IngestLogRepair repair;
  auto refused = IngestLog::Open(
      path, &records,
      {.repair = true, .merged_through = 2, .refuse_loss = true}, &repair);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(
      Contains(std::string(refused.status().message()), "sequences 3..4 lost"))
      << refused.status();
  EXPECT_EQ(ReadFile(path), damaged) << "refusing changed the log";
  EXPECT_TRUE(DamagedCopies(dir).empty());

  auto log = IngestLog::Open(path, &records,
                             {.repair = true, .merged_through = 2}, &repair);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(Sequences(records), (std::vector<uint64_t>{1, 2, 5}));
  EXPECT_EQ(repair.lost(), 2u);
  ASSERT_EQ(repair.damage.size(), 1u);
  EXPECT_EQ(repair.damage[0].first_lost, 3u);
  EXPECT_EQ(repair.damage[0].last_lost, 4u);
  EXPECT_EQ(ReadFile(repair.kept_aside), damaged);
}

// Before: the damaged last records were cut as a torn tail, and the log then
// ended before the store's merged sequence, which stopped the node.
TEST(IngestLogRepair, DamagedMergedTailKeepsTheSequenceGoing) {
  const std::string dir = TempDir("log-tail");
  const std::string path = WriteLog(dir);
  FlipByte(path, RecordOffsets(path)[4] + 20);  // record 5, the last
  std::vector<IngestRecord> records;
  IngestLogRepair repair;
  auto log = IngestLog::Open(path, &records,
                             {.repair = true, .merged_through = 5}, &repair);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ((*log)->last_sequence(), 5u);
  EXPECT_EQ(repair.lost(), 0u);
  ASSERT_EQ(repair.damage.size(), 1u);
  EXPECT_EQ(repair.damage[0].before_sequence, 0u);
  std::vector<IngestRecord> next = {Rec("zeta")};
  ASSERT_TRUE((*log)->Append(&next).ok());
  EXPECT_EQ(next[0].sequence, 6u);
}

// Before: damage to the last record looked like a torn append and was cut
// off silently, and the next append used its sequence again.
TEST(IngestLogRepair, DamagedAcknowledgedLastRecordIsLostNotCut) {
  const std::string dir = TempDir("log-last");
  const std::string path = WriteLog(dir);
  FlipByte(path, RecordOffsets(path)[4] + 20);  // record 5, acknowledged
  const std::string damaged = ReadFile(path);
  std::vector<IngestRecord> records;
  auto strict = IngestLog::Open(path, &records);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadFile(path), damaged) << "a strict open changed the log";

  IngestLogRepair repair;
  auto log = IngestLog::Open(path, &records,
                             {.repair = true, .merged_through = 2}, &repair);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(Sequences(records), (std::vector<uint64_t>{1, 2, 3, 4, 5}))
      << "sequence 5 is a tombstone: the sequence goes on past it";
  EXPECT_TRUE(records.back().words.empty());
  EXPECT_EQ(repair.lost(), 1u);
  ASSERT_EQ(repair.damage.size(), 1u);
  EXPECT_TRUE(Contains(repair.damage[0].Describe(), "sequence 5 lost"))
      << repair.damage[0].Describe();
  EXPECT_EQ(ReadFile(repair.kept_aside), damaged);
  std::vector<IngestRecord> next = {Rec("zeta")};
  ASSERT_TRUE((*log)->Append(&next).ok());
  EXPECT_EQ(next[0].sequence, 6u);
}

// An acknowledged tail cut off whole (the file shortened) is lost too.
TEST(IngestLogRepair, TruncatedAcknowledgedTailIsLost) {
  const std::string dir = TempDir("log-truncated");
  const std::string path = WriteLog(dir);
  ASSERT_EQ(::truncate(path.c_str(), RecordOffsets(path)[3]), 0);
  std::vector<IngestRecord> records;
  IngestLogRepair repair;
  auto refused = IngestLog::Open(
      path, &records, {.repair = true, .refuse_loss = true}, &repair);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(
      Contains(std::string(refused.status().message()), "sequences 4..5 lost"))
      << refused.status();
  auto log = IngestLog::Open(path, &records, {.repair = true}, &repair);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(repair.lost(), 2u);
  EXPECT_EQ((*log)->last_sequence(), 5u);
}

// A record durable in the log whose mark was not yet raised (a crash
// between the two fdatasyncs: never acknowledged) is kept, and a torn
// append after it is cut without a report.
TEST(IngestLogRepair, TornTailAfterTheMarkIsCutSilently) {
  const std::string dir = TempDir("log-torn");
  const std::string path = WriteLog(dir);
  {
    // The mark as it was before sequence 5.
    std::string mark(16, '\0');
    const uint64_t four = 4;
    std::memcpy(mark.data(), &four, 8);
    const uint64_t hash = XXH64(mark.data(), 8, 0);
    std::memcpy(mark.data() + 8, &hash, 8);
    std::ofstream(AckMarkPath(path), std::ios::binary) << mark;
    std::ofstream(path, std::ios::binary | std::ios::app) << "\x40\x00torn";
  }
  std::vector<IngestRecord> records;
  IngestLogRepair repair;
  auto log = IngestLog::Open(path, &records, {.repair = true}, &repair);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(repair.damage.empty());
  EXPECT_FALSE(repair.ack_mark_damaged);
  EXPECT_EQ(Sequences(records), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  log->reset();
  // The kept record is acknowledged now: losing it later is reported.
  ASSERT_EQ(::truncate(path.c_str(), RecordOffsets(path)[4]), 0);
  auto again = IngestLog::Open(path, &records);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kDataLoss);
}

// A damaged mark cannot vouch for the tail: said, and rewritten.
TEST(IngestLogRepair, DamagedMarkIsReportedAndRewritten) {
  const std::string dir = TempDir("log-mark");
  const std::string path = WriteLog(dir);
  FlipByte(AckMarkPath(path), 3);
  std::vector<IngestRecord> records;
  IngestLogRepair repair;
  auto log = IngestLog::Open(path, &records, {.repair = true}, &repair);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(repair.ack_mark_damaged);
  EXPECT_EQ(records.size(), 5u);
  log->reset();
  auto again = IngestLog::Open(path, &records, {.repair = true}, &repair);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(repair.ack_mark_damaged);
}

// Before: a flipped length field made everything after it a "torn tail",
// silently cut.
TEST(IngestLogRepair, StrictOpenReportsADamagedLengthInsteadOfCutting) {
  const std::string dir = TempDir("log-length");
  const std::string path = WriteLog(dir);
  FlipByte(path, RecordOffsets(path)[1] + 3);  // high byte of the length
  const std::string damaged = ReadFile(path);
  std::vector<IngestRecord> records;
  auto log = IngestLog::Open(path, &records);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadFile(path), damaged);
}

TEST(IngestLogRepair, CompactDoesNotLaunderADamagedRecord) {
  const std::string dir = TempDir("log-compact");
  const std::string path = WriteLog(dir);
  std::vector<IngestRecord> records;
  auto log = IngestLog::Open(path, &records);
  ASSERT_TRUE(log.ok());
  // A letter of record 4's word: it still decodes, only the checksum
  // tells.
  FlipByte(path, RecordOffsets(path)[3] + 12 + 31);
  EXPECT_EQ((*log)->Compact(2, 10).code(), absl::StatusCode::kDataLoss);
}

// The service: ingested documents, one of them damaged in the log.
class ServiceLogDamage : public ::testing::Test {
 protected:
  // Ingests three documents (sequences 1..3), merging them if `merge`.
  void Ingest(bool merge) {
    o_ = SmallService(TempDir(merge ? "svc-merged" : "svc-unmerged"));
    for (int i = 0; i < 2; ++i) {
      MetricsRegistry metrics;
      auto s = LatentdService::Open(o_, &metrics);  // merges what is logged
      ASSERT_TRUE(s.ok()) << s.status();
      if (i == 0) {
        for (const char* w : {"oil", "goal", "coach"}) {
          ASSERT_TRUE((*s)->IngestRecords({Rec(w)}).ok());
        }
      }
      ASSERT_TRUE((*s)->Stop().ok());
      if (!merge) break;
    }
    log_ = o_.data_dir + "/ingest.log";
    FlipByte(log_, RecordOffsets(log_)[1] + 20);  // sequence 2
  }

  ServiceOptions o_;
  std::string log_;
};

TEST_F(ServiceLogDamage, MergedRecordIsSkipped) {
  Ingest(/*merge=*/true);
  Opened s = OpenCapturing(o_);
  ASSERT_TRUE(s.service.ok()) << s.service.status();
  EXPECT_TRUE(Contains(s.log, "merged already, skipped")) << s.log;
  EXPECT_TRUE(Contains(s.log, "ingest.log.damaged-")) << s.log;
  EXPECT_TRUE(
      Contains(s.metrics->RenderText(), "latentd_ingest_log_damage_total 1"));
  EXPECT_TRUE(Contains(s.metrics->RenderText(), "latentd_ingest_lost_total 0"));
  auto st = (*s.service)->Status({});
  EXPECT_EQ(st->documents(), 63u);
  EXPECT_EQ(st->merged_sequence(), 3u);
}

TEST_F(ServiceLogDamage, UnmergedRecordIsLostAndSaid) {
  Ingest(/*merge=*/false);
  ServiceOptions strict = o_;
  strict.refuse_ingest_loss = true;
  Opened refused = OpenCapturing(strict);
  ASSERT_FALSE(refused.service.ok());
  EXPECT_EQ(refused.service.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(std::string(refused.service.status().message()),
                       "sequence 2 lost"))
      << refused.service.status();

  Opened s = OpenCapturing(o_);
  ASSERT_TRUE(s.service.ok()) << s.service.status();
  EXPECT_TRUE(Contains(s.log, "sequence 2 lost (acknowledged, not merged)"))
      << s.log;
  EXPECT_TRUE(Contains(s.metrics->RenderText(), "latentd_ingest_lost_total 1"));
  auto st = (*s.service)->Status({});
  EXPECT_EQ(st->documents(), 62u);  // 1 and 3
  EXPECT_EQ(st->merged_sequence(), 3u);
}

// The daemon: the last acknowledged record damaged before it was merged.
TEST_F(ServiceLogDamage, DamagedLastRecordIsLostAndItsSequenceNotReused) {
  Ingest(/*merge=*/false);
  FlipByte(log_, RecordOffsets(log_)[1] + 20);  // undo: sequence 2 intact
  FlipByte(log_, RecordOffsets(log_)[2] + 20);  // sequence 3, the last
  Opened s = OpenCapturing(o_);
  ASSERT_TRUE(s.service.ok()) << s.service.status();
  EXPECT_TRUE(Contains(s.log, "sequence 3 lost (acknowledged, not merged)"))
      << s.log;
  EXPECT_TRUE(Contains(s.metrics->RenderText(), "latentd_ingest_lost_total 1"));
  LatentdService::LogRange appended;
  ASSERT_TRUE((*s.service)->IngestRecords({Rec("league")}, &appended).ok());
  EXPECT_EQ(appended.first, 4u) << "sequence 3 was used again";
  ASSERT_TRUE((*s.service)->Stop().ok());
  std::vector<IngestRecord> records;
  auto log = IngestLog::Open(log_, &records);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.back().sequence, 4u);
}

// Offset of the first byte of block `b`'s payload in a token store file.
uint64_t StorePayloadOffset(const std::string& path, int b) {
  const std::string bytes = ReadFile(path);
  uint64_t at = 64;  // the file header
  for (int i = 0;; ++i) {
    uint64_t payload;
    std::memcpy(&payload, bytes.data() + at + 16, sizeof(payload));
    if (i == b) return at + 40;
    at += 40 + payload;
  }
}

// A damaged block of tokens.lts no longer stops the node: at start its
// documents are dropped (kept as empty documents, so every other one keeps
// its index), said with their indices and counted, the damaged file kept
// aside, the counts rebuilt from what is left; the node samples on. With
// --refuse-ingest-loss it refuses to start instead and changes nothing.
TEST(TokenStoreRepair, ADamagedBlockLosesOnlyItsDocuments) {
  ServiceOptions o = SmallService(TempDir("store-block"));
  o.build.batch_tokens = 200;  // several blocks (each document has 14)
  TrainAndStop(o);
  const std::string store = o.data_dir + "/tokens.lts";
  FlipByte(store, StorePayloadOffset(store, 1) + 3);
  const std::string damaged = ReadFile(store);

  ServiceOptions strict = o;
  strict.refuse_ingest_loss = true;
  Opened refused = OpenCapturing(strict);
  ASSERT_FALSE(refused.service.ok());
  EXPECT_EQ(refused.service.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(std::string(refused.service.status().message()),
                       "--refuse-ingest-loss on"))
      << refused.service.status();
  EXPECT_EQ(ReadFile(store), damaged);

  o.max_sweeps = 6;
  Opened s = OpenCapturing(o);
  ASSERT_TRUE(s.service.ok()) << s.service.status();
  for (size_t at = 0, end; at < s.log.size(); at = end + 1) {
    end = s.log.find('\n', at);
    if (end == std::string::npos) end = s.log.size();
    const std::string line = s.log.substr(at, end - at);
    if (Contains(line, "tokens.lts")) std::printf("%s\n", line.c_str());
  }
  EXPECT_TRUE(Contains(s.log, "tokens.lts: lost documents ")) << s.log;
  EXPECT_TRUE(Contains(s.log, "tokens.lts.damaged-")) << s.log;
  const std::string metrics = s.metrics->RenderText();
  EXPECT_TRUE(Contains(metrics, "latentd_token_store_damage_total 1"))
      << metrics;
  auto st = (*s.service)->Status({});
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->documents(), 60u);  // the lost ones are empty, not gone
  // Every document has 14 tokens: the missing tokens are the lost
  // documents', as many as the metric counts.
  ASSERT_LT(st->tokens(), 60u * 14);
  EXPECT_EQ((60u * 14 - st->tokens()) % 14, 0u);
  const uint64_t lost = (60u * 14 - st->tokens()) / 14;
  EXPECT_TRUE(Contains(
      metrics,
      absl::StrCat("latentd_token_store_docs_lost_total ", lost, "\n")))
      << metrics;
  // It samples on from the repaired store.
  (*s.service)->Start();
  uint64_t sweep = 0;
  for (int i = 0; i < 500 && sweep < o.max_sweeps; ++i) {
    sweep = (*s.service)->Status({})->version().sweep();
    if (sweep < o.max_sweeps) ::usleep(10000);
  }
  EXPECT_GE(sweep, o.max_sweeps);
  ASSERT_TRUE((*s.service)->Stop().ok());
}

// latentd --refuse-ingest-loss (and its config line) sets the option.
TEST(DaemonSettings, RefuseIngestLoss) {
  auto config = ResolveConfig({}, {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->service.refuse_ingest_loss);
  config = ResolveConfig({{"refuse-ingest-loss", "on"}}, {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->service.refuse_ingest_loss);
  config = ResolveConfig({}, {{"refuse-ingest-loss", "maybe"}});
  EXPECT_FALSE(config.ok());
}

}  // namespace
}  // namespace latentd::service
