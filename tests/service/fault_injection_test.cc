// Disk faults at each place latentd writes (issue 16, "A file-system seam
// for fault injection"): ENOSPC, EIO, short writes and failed fsyncs,
// injected through FaultInjectionFileSystem into an in-process
// LatentdService (or its ingest log) during ingest, checkpoint, sweep and
// merge. Each case checks that the failing request gets a clear error,
// nothing acknowledged is lost (reopened from disk), reads go on, and
// writing resumes once the fault clears. Regressions are named after the
// bug they pin.

#include <cerrno>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/testing/fault_injection_file_system.h"
#include "base/testing/scratch_dir.h"
#include "gtest/gtest.h"
#include "sampler/model_dir.h"
#include "sampler/model_snapshot.h"
#include "service/ingest_log.h"
#include "service/latentd_service.h"
#include "service/metrics.h"

namespace latentd::service {
namespace {

std::string TempDir(const std::string& name) {
  return ::latentd::testing::ScratchDir("fault_injection", name);
}

// Two obvious themes, 60 documents; no periodic checkpoints (the tests
// call Checkpoint), the log never compacted by the service.
ServiceOptions SmallService(const std::string& dir) {
  const std::string corpus = dir + "/corpus.txt";
  std::string text;
  const char* themes[] = {"oil prices opec crude barrel energy market",
                          "football match goal team player season coach"};
  for (int d = 0; d < 60; ++d) {
    text += std::string(themes[d % 2]) + " " + themes[d % 2] + "\n";
  }
  EXPECT_TRUE(WriteFileAtomically(corpus, text).ok());
  ServiceOptions o;
  o.data_dir = dir + "/node";
  o.corpus.path = corpus;
  o.trainer.num_topics = 4;
  o.trainer.eval_every = 0;
  o.max_sweeps = 1;
  o.checkpoint_every = 0;
  o.checkpoint_seconds = 0;
  o.compact_log_bytes = 0;
  return o;
}

bool WaitFor(const std::function<bool()>& done, double seconds = 20) {
  const absl::Time deadline = absl::Now() + absl::Seconds(seconds);
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return done();
}

api::IngestRequest Doc(const std::string& text) {
  api::IngestRequest r;
  r.add_documents()->set_text(text);
  return r;
}

// The words of every record in the ingest log, in order.
std::vector<std::vector<std::string>> LogWords(const std::string& path) {
  std::vector<IngestRecord> records;
  auto log = IngestLog::Open(path, &records);
  EXPECT_TRUE(log.ok()) << log.status();
  std::vector<std::vector<std::string>> out;
  for (const IngestRecord& r : records) out.push_back(r.words);
  return out;
}

class Faults : public ::testing::Test {
 protected:
  void Open() {
    metrics_ = std::make_unique<MetricsRegistry>();
    auto s = LatentdService::Open(o_, metrics_.get());
    ASSERT_TRUE(s.ok()) << s.status();
    service_ = *std::move(s);
  }
  // Stops the service (faults cleared) and opens it again from disk.
  void Reopen() {
    faults_.Clear();
    ASSERT_TRUE(service_->Stop().ok());
    service_.reset();
    Open();
  }
  api::StatusResponse Status() {
    auto st = service_->Status({});
    EXPECT_TRUE(st.ok()) << st.status();
    return st.ok() ? *st : api::StatusResponse();
  }
  // Queries that read the model, not the disk, answer.
  void ExpectReadsServed() {
    EXPECT_TRUE(service_->Status({}).ok());
    EXPECT_TRUE(service_->ListTopics({}).ok());
    api::InferDocumentRequest infer;
    infer.set_text("oil crude barrel");
    auto inferred = service_->InferDocument(infer);
    EXPECT_TRUE(inferred.ok()) << inferred.status();
  }
  double Metric(const std::string& name) {
    const std::string text = metrics_->RenderText();
    const size_t at = text.find("\n" + name + " ");
    return at == std::string::npos
               ? -1
               : std::stod(text.substr(at + name.size() + 2));
  }
  std::string LogPath() const { return o_.data_dir + "/ingest.log"; }

  FaultInjectionFileSystem faults_;
  ScopedDefaultFileSystem use_{&faults_};
  ServiceOptions o_;
  std::unique_ptr<MetricsRegistry> metrics_;  // outlives service_
  std::unique_ptr<LatentdService> service_;
};

// ---- Ingest: the ingest log's append. ----

TEST_F(Faults, IngestAnswersAnErrorAndLosesNothing) {
  const std::vector<std::pair<std::string, FileFault>> cases = {
      {"eio", {.op = FileOp::kWrite, .error = EIO}},
      {"enospc-short",
       {.op = FileOp::kWrite, .error = ENOSPC, .short_write = true}},
      {"fdatasync", {.op = FileOp::kSync, .error = EIO}},
      {"fdatasync-once", {.op = FileOp::kSync, .error = EIO, .times = 1}},
  };
  for (auto [name, fault] : cases) {
    SCOPED_TRACE(name);
    o_ = SmallService(TempDir("ingest-" + name));
    ASSERT_NO_FATAL_FAILURE(Open());
    auto first = service_->Ingest(Doc("oil crude barrel"));
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->first_sequence(), 1u);
    const uint64_t size = FileSystem::Posix()->Stat(LogPath())->size;

    fault.path_glob = "*/ingest.log";
    faults_.Inject(fault);
    auto failed = service_->Ingest(Doc("goal team coach"));
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_TRUE(absl::StrContains(failed.status().message(), LogPath()))
        << failed.status();
    EXPECT_TRUE(
        absl::StrContains(failed.status().message(), "nothing acknowledged"))
        << failed.status();
    EXPECT_TRUE(absl::StrContains(failed.status().message(), "injected fault"))
        << failed.status();
    // No partial record is left behind.
    EXPECT_EQ(FileSystem::Posix()->Stat(LogPath())->size, size);
    ExpectReadsServed();

    faults_.Clear();
    auto resumed = service_->Ingest(Doc("match player season"));
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    EXPECT_EQ(resumed->first_sequence(), 2u);  // the failed one used none

    ASSERT_TRUE(service_->Stop().ok());
    service_.reset();
    const std::vector<std::vector<std::string>> expected = {
        {"oil", "crude", "barrel"}, {"match", "player", "season"}};
    EXPECT_EQ(LogWords(LogPath()), expected);
    ASSERT_NO_FATAL_FAILURE(Open());  // merges the log
    EXPECT_EQ(Status().documents(), 62u);
    EXPECT_EQ(Status().merged_sequence(), 2u);
    service_.reset();
  }
}

IngestRecord Rec(const std::string& word) {
  IngestRecord r;
  r.words = {word};
  return r;
}

// Regression: a failed append whose cut-back also failed left a complete
// record after the acknowledged ones; a compaction (which read the whole
// file) rewrote it as if acknowledged, and the next append reused its
// sequence.
TEST_F(Faults, FailedAppendThatCannotBeCutIsNeverAcknowledgedLater) {
  const std::string path = TempDir("dirty-tail") + "/ingest.log";
  std::vector<IngestRecord> records;
  {
    auto log = IngestLog::Open(path, &records);
    ASSERT_TRUE(log.ok()) << log.status();
    std::vector<IngestRecord> a = {Rec("alpha")};
    ASSERT_TRUE((*log)->Append(&a).ok());
    faults_.Inject(
        {.op = FileOp::kSync, .path_glob = "*/ingest.log", .times = 1});
    faults_.Inject({.op = FileOp::kTruncate, .path_glob = "*/ingest.log"});
    std::vector<IngestRecord> b = {Rec("beta")};
    ASSERT_FALSE((*log)->Append(&b).ok());
    // Still cannot cut it: the next append fails rather than build on it.
    std::vector<IngestRecord> c = {Rec("gamma")};
    absl::Status blocked = (*log)->Append(&c);
    EXPECT_FALSE(blocked.ok());
    EXPECT_TRUE(absl::StrContains(blocked.message(), "failed append"))
        << blocked;
    ASSERT_TRUE((*log)->Compact(/*merged_through=*/0, 10).ok());
    faults_.Clear();
    c = {Rec("gamma")};
    ASSERT_TRUE((*log)->Append(&c).ok());
    EXPECT_EQ(c[0].sequence, 2u);
  }
  auto log = IngestLog::Open(path, &records);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].words, std::vector<std::string>{"alpha"});
  EXPECT_EQ(records[1].words, std::vector<std::string>{"gamma"});
  EXPECT_EQ(records[1].sequence, 2u);
}

// The mark's fdatasync fails once its bytes are written: the append is not
// acknowledged, and the mark goes back before the log is cut, so the log
// closed right after (as a crash would leave it) reopens with no record
// taken for lost, and the sequence goes on.
TEST_F(Faults, AFailedMarkWriteIsNotReadAsALossWhenReopened) {
  const std::string path = TempDir("mark-fails") + "/ingest.log";
  std::vector<IngestRecord> records;
  {
    auto log = IngestLog::Open(path, &records);
    ASSERT_TRUE(log.ok()) << log.status();
    std::vector<IngestRecord> a = {Rec("alpha")};
    ASSERT_TRUE((*log)->Append(&a).ok());
    faults_.Inject(
        {.op = FileOp::kSync, .path_glob = "*/ingest.log.acked", .times = 1});
    std::vector<IngestRecord> b = {Rec("beta")};
    ASSERT_FALSE((*log)->Append(&b).ok());
    EXPECT_EQ(faults_.failures(), 1);
  }
  auto log = IngestLog::Open(path, &records);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].words, std::vector<std::string>{"alpha"});
  std::vector<IngestRecord> c = {Rec("gamma")};
  ASSERT_TRUE((*log)->Append(&c).ok());
  EXPECT_EQ(c[0].sequence, 2u);
}

// Compaction: each of its steps failing leaves a log that holds every
// acknowledged record, and appends go on (into the log named PATH).
TEST_F(Faults, CompactionFailureKeepsEveryAcknowledgedRecord) {
  const std::vector<std::pair<FileOp, std::string>> sites = {
      {FileOp::kOpenWrite, "*/ingest.log.tmp"},
      {FileOp::kWrite, "*/ingest.log.tmp"},
      {FileOp::kSync, "*/ingest.log.tmp"},
      {FileOp::kRename, "*/ingest.log"},
      {FileOp::kSyncDirectory, "*/compact-*"},
  };
  for (const auto& [op, glob] : sites) {
    SCOPED_TRACE(FileOpName(op));
    const std::string dir =
        TempDir(absl::StrCat("compact-", static_cast<int>(op)));
    const std::string path = dir + "/ingest.log";
    std::vector<IngestRecord> records;
    {
      auto log = IngestLog::Open(path, &records);
      ASSERT_TRUE(log.ok()) << log.status();
      for (const char* w : {"a", "b", "c"}) {
        std::vector<IngestRecord> one = {Rec(w)};
        ASSERT_TRUE((*log)->Append(&one).ok());
      }
      faults_.Inject({.op = op, .path_glob = glob, .error = ENOSPC});
      absl::Status compacted = (*log)->Compact(/*merged_through=*/2, 0);
      EXPECT_FALSE(compacted.ok());
      EXPECT_TRUE(absl::StrContains(compacted.message(), "injected fault"))
          << compacted;
      std::vector<IngestRecord> d = {Rec("d")};
      absl::Status appended = (*log)->Append(&d);
      // A compacted log whose name is not durable takes no appends.
      EXPECT_EQ(appended.ok(), op != FileOp::kSyncDirectory) << appended;
      faults_.Clear();
      std::vector<IngestRecord> e = {Rec("e")};
      ASSERT_TRUE((*log)->Append(&e).ok());
    }
    auto log = IngestLog::Open(path, &records);
    ASSERT_TRUE(log.ok()) << log.status();
    std::vector<std::string> words;
    for (const IngestRecord& r : records) {
      if (r.sequence > 2) words.push_back(r.words.at(0));
    }
    const std::vector<std::string> expected =
        op == FileOp::kSyncDirectory ? std::vector<std::string>{"c", "e"}
                                     : std::vector<std::string>{"c", "d", "e"};
    EXPECT_EQ(words, expected);
    EXPECT_FALSE(PathExists(path + ".tmp"));
  }
}

// ---- Checkpoint: model.bin.tmp, model.prev.bin, model.bin. ----

uint64_t SnapshotSweep(const std::string& path) {
  auto snap = ModelSnapshot::Load(path);
  EXPECT_TRUE(snap.ok()) << snap.status();
  return snap.ok() ? snap->sweep : ~uint64_t{0};
}

// Every file operation of a checkpoint, failed in turn: a failure that
// touches the new snapshot fails the checkpoint with the cause, and both
// model.bin and model.prev.bin still load; one that only touches the
// keeping of the previous snapshot is a warning. Then it works again.
TEST_F(Faults, CheckpointFailsCleanlyAtEachStep) {
  o_ = SmallService(TempDir("checkpoint"));
  o_.max_sweeps = 2;
  ASSERT_NO_FATAL_FAILURE(Open());
  service_->Start();
  ASSERT_TRUE(WaitFor([&] { return Status().version().sweep() >= 2; }));
  ASSERT_TRUE(service_->Checkpoint({}).ok());
  const ModelPaths paths(o_.data_dir);
  ASSERT_EQ(SnapshotSweep(paths.snapshot()), 2u);

  // The sites: what one checkpoint does to the model directory.
  faults_.ForgetCalls();
  ASSERT_TRUE(service_->Checkpoint({}).ok());
  std::set<std::pair<FileOp, std::string>> sites;
  for (const auto& [op, path] : faults_.Calls()) {
    if (absl::StrContains(path, "/model") || path == o_.data_dir)
      sites.insert({op, path});
  }
  const std::string tmp = paths.snapshot() + ".tmp";
  for (const auto& must : std::vector<std::pair<FileOp, std::string>>{
           {FileOp::kOpenWrite, tmp},
           {FileOp::kWrite, tmp},
           {FileOp::kSync, tmp},
           {FileOp::kClose, tmp},
           {FileOp::kRename, paths.snapshot()},
           {FileOp::kSyncDirectory, o_.data_dir},
           {FileOp::kLink, paths.prev_snapshot() + ".tmp"},
           {FileOp::kRename, paths.prev_snapshot()}}) {
    EXPECT_TRUE(sites.contains(must))
        << FileOpName(must.first) << " " << must.second;
  }
  // Failing these loses the new snapshot; the others only the keeping of
  // the previous one.
  const std::set<std::pair<FileOp, std::string>> fatal = {
      {FileOp::kOpenWrite, tmp},
      {FileOp::kWrite, tmp},
      {FileOp::kSync, tmp},
      {FileOp::kClose, tmp},
      {FileOp::kRename, paths.snapshot()},
      {FileOp::kSyncDirectory, o_.data_dir}};
  for (const auto& [op, path] : sites) {
    SCOPED_TRACE(std::string(FileOpName(op)) + " " + path);
    // A full disk where data is written, an I/O error elsewhere.
    const int error = op == FileOp::kWrite ? ENOSPC : EIO;
    faults_.Inject({.op = op, .path_glob = path, .error = error});
    auto r = service_->Checkpoint({});
    faults_.Clear();
    if (fatal.contains({op, path})) {
      ASSERT_FALSE(r.ok());
      EXPECT_TRUE(absl::StrContains(r.status().message(), "injected fault"))
          << r.status();
    } else {
      EXPECT_TRUE(r.ok()) << r.status();
    }
    EXPECT_FALSE(PathExists(tmp));
    EXPECT_EQ(SnapshotSweep(paths.snapshot()), 2u);
    EXPECT_EQ(SnapshotSweep(paths.prev_snapshot()), 2u);
    ExpectReadsServed();
    ASSERT_TRUE(service_->Checkpoint({}).ok());
  }
  // And the node starts from what is there.
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Status().version().sweep(), 2u);
}

// ---- Sweeps: the token store's rewrite. ----

// The token store failing under the sweeps: sampling stops and retries,
// reads and ingest go on (the document waits in the log), and once the
// fault clears the sweeps resume and the document is merged.
TEST_F(Faults, SweepFailuresAreRetriedAndIngestGoesOn) {
  const std::vector<std::pair<std::string, FileFault>> cases = {
      {"write-eio", {.op = FileOp::kWrite, .path_glob = "*/tokens.lts*tmp"}},
      {"write-enospc-short",
       {.op = FileOp::kWrite,
        .path_glob = "*/tokens.lts*tmp",
        .error = ENOSPC,
        .short_write = true}},
      {"fsync", {.op = FileOp::kSync, .path_glob = "*/tokens.lts*tmp"}},
      {"create",
       {.op = FileOp::kOpenWrite,
        .path_glob = "*/tokens.lts*tmp",
        .error = ENOSPC}},
      {"rename", {.op = FileOp::kRename, .path_glob = "*/tokens.lts"}},
  };
  for (const auto& [name, fault] : cases) {
    SCOPED_TRACE(name);
    o_ = SmallService(TempDir("sweep-" + name));
    o_.max_sweeps = 0;  // sample on
    ASSERT_NO_FATAL_FAILURE(Open());
    service_->Start();
    ASSERT_TRUE(WaitFor([&] { return Status().version().sweep() >= 2; }));
    faults_.Inject(fault);
    ASSERT_TRUE(WaitFor([&] {
      return Metric("latentd_sweep_errors_total") >= 2;
    })) << metrics_->RenderText();
    ExpectReadsServed();
    auto ingested = service_->Ingest(Doc("oil goal season"));
    ASSERT_TRUE(ingested.ok()) << ingested.status();
    const uint64_t sweep = Status().version().sweep();
    faults_.Clear();
    EXPECT_TRUE(WaitFor([&] {
      const api::StatusResponse st = Status();
      return st.version().sweep() >= sweep + 2 && st.merged_sequence() == 1;
    }));
    EXPECT_EQ(Status().documents(), 61u);
    ASSERT_NO_FATAL_FAILURE(Reopen());
    EXPECT_EQ(Status().documents(), 61u);
    service_.reset();
  }
}

// ---- Merges at the sweep boundary. ----

// Sampling stopped (max_sweeps 1): merges are then the only writers of the
// token store.

// Regression: a failed save of vocab.txt during a merge left the new words
// in memory only; the retried merge compared against the grown vocabulary,
// skipped the save, and committed a store using words vocab.txt lacked, so
// the node refused to start ("vocab.txt has N words but tokens.lts uses M").
TEST_F(Faults, FailedVocabularySaveIsRetriedBeforeTheStoreUsesTheWords) {
  o_ = SmallService(TempDir("vocab"));
  ASSERT_NO_FATAL_FAILURE(Open());
  service_->Start();
  ASSERT_TRUE(WaitFor([&] { return !Status().training(); }));
  faults_.Inject({.op = FileOp::kOpenWrite,
                  .path_glob = "*/vocab.txt.tmp",
                  .error = ENOSPC,
                  .times = 1});
  auto r = service_->Ingest(Doc("quokka narwhal axolotl"));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(WaitFor([&] { return Status().merged_sequence() == 1; }));
  EXPECT_EQ(faults_.failures(), 1);
  EXPECT_GE(Metric("latentd_merge_errors_total"), 1);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Status().documents(), 61u);
  auto vocab = ReadFileToString(ModelPaths(o_.data_dir).vocab());
  ASSERT_TRUE(vocab.ok());
  EXPECT_TRUE(absl::StrContains(*vocab, "quokka"));
}

// Regression: when only the directory fsync after the token store's rename
// failed, the merge was reported failed although the new version (with the
// records) was current; the retry merged the records a second time.
TEST_F(Faults, MergeWhoseRenameIsNotDurableIsNotMergedTwice) {
  o_ = SmallService(TempDir("dirsync"));
  ASSERT_NO_FATAL_FAILURE(Open());
  service_->Start();
  ASSERT_TRUE(WaitFor([&] { return !Status().training(); }));
  faults_.Inject(
      {.op = FileOp::kSyncDirectory, .path_glob = o_.data_dir, .times = 1});
  ::testing::internal::CaptureStderr();
  auto r = service_->Ingest(Doc("oil goal season"));
  ASSERT_TRUE(r.ok()) << r.status();
  const bool merged = WaitFor([&] { return Status().merged_sequence() == 1; });
  absl::SleepFor(absl::Milliseconds(700));  // a retry would come by now
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(merged);
  EXPECT_EQ(faults_.failures(), 1);
  EXPECT_TRUE(absl::StrContains(log, "current but not durable")) << log;
  EXPECT_EQ(Status().documents(), 61u);
  ASSERT_NO_FATAL_FAILURE(Reopen());
  EXPECT_EQ(Status().documents(), 61u);
}

}  // namespace
}  // namespace latentd::service
