// A graph node's edge ingestion (service/graph_ingest.h) and its journal
// (service/edge_journal.h): edges read back in order after a reopen; a
// torn tail cut off with the records before it kept; acknowledged last
// records lost reported, never cut; a missing or damaged mark written
// again; a damaged record
// before the end refused naming the file and offset, the file left as it
// is; an older plain-text ingested.edges taken in once (also through
// GraphService); a failed append through the file-system seam not
// acknowledged nor kept; a node leaving its cluster acknowledges no edge
// of its own.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/testing/fault_injection_file_system.h"
#include "base/testing/scratch_dir.h"
#include "gtest/gtest.h"
#include "service/edge_journal.h"
#include "service/graph_service.h"
#include "service/internal/ack_mark.h"
#include "service/metrics.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::service {
namespace {

using testing::Edges;

const std::vector<Edge> kFirst = {{1, 2, 1.0f}, {3, 9, 0.5f}};
const std::vector<Edge> kSecond = {{4, 5, 2.0f}};
const std::vector<Edge> kThird = {{6, 7, 1.0f}, {2, 8, 0.25f}, {1, 9, 3.0f}};

std::vector<Edge> Concat(std::initializer_list<std::vector<Edge>> parts) {
  std::vector<Edge> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// Options for a GraphService on a 4-cycle (written to DIR/edges.txt) with
// its files in DIR/graph.
GraphServiceOptions SmallGraph(const std::string& dir) {
  GraphServiceOptions o;
  o.edges_path = dir + "/edges.txt";
  o.dir = dir + "/graph";
  o.trainer.dim = 4;
  o.checkpoint_every = 0;
  EXPECT_TRUE(WriteFileDurably(o.edges_path, "1 2\n2 3\n3 4\n4 1\n").ok());
  return o;
}

std::string JournalPath(const std::string& dir) {
  return dir + "/" + EdgeJournal::kFileName;
}

// Sets the journal's acknowledgement mark to `value`.
void SetMark(const std::string& dir, uint64_t value) {
  auto mark = FileSystem::Default()->OpenForWrite(
      internal::AckMarkPath(JournalPath(dir)), WriteMode::kKeep);
  ASSERT_TRUE(mark.ok()) << mark.status();
  ASSERT_TRUE(internal::WriteAckMark(mark->get(), value).ok());
}

// Writes the three batches into a new journal under `dir` and returns the
// byte offsets where each record begins, then the file's end.
std::vector<uint64_t> WriteThree(const std::string& dir) {
  std::vector<Edge> edges;
  auto j = EdgeJournal::Open(dir, &edges);
  EXPECT_TRUE(j.ok()) << j.status();
  if (!j.ok()) return {};
  EXPECT_TRUE(edges.empty());
  std::vector<uint64_t> at = {(*j)->size_bytes()};
  for (const auto* batch : {&kFirst, &kSecond, &kThird}) {
    EXPECT_TRUE((*j)->Append(*batch).ok());
    at.push_back((*j)->size_bytes());
  }
  EXPECT_TRUE((*j)->Close().ok());
  return at;
}

TEST(EdgeJournal, ReadsBackEveryAppendedEdgeInOrder) {
  const std::string dir = testing::ScratchDir("EdgeJournal", "roundtrip");
  const std::vector<uint64_t> at = WriteThree(dir);
  ASSERT_EQ(at.size(), 4u);
  // Each record: 12 bytes of frame, a u32 count, 20 bytes an edge.
  EXPECT_EQ(at[1] - at[0], 12u + 4 + 2 * 20);
  std::vector<Edge> edges;
  auto j = EdgeJournal::Open(dir, &edges);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(edges, Concat({kFirst, kSecond, kThird}));
  EXPECT_EQ((*j)->size_bytes(), at[3]);
  EXPECT_FALSE(PathExists(dir + "/" + EdgeJournal::kLegacyFileName));
}

TEST(EdgeJournal, CutsOffATornTailAndKeepsTheRecordsBeforeIt) {
  const std::string dir = testing::ScratchDir("EdgeJournal", "torn");
  const std::vector<uint64_t> at = WriteThree(dir);
  ASSERT_EQ(at.size(), 4u);
  // The last append cut by a crash: only part of its record is there, and
  // the mark still says the length before it (never acknowledged).
  auto bytes = ReadFileToString(JournalPath(dir));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_TRUE(
      WriteFileDurably(JournalPath(dir), bytes->substr(0, at[3] - 7)).ok());
  SetMark(dir, at[2]);
  {
    std::vector<Edge> edges;
    auto j = EdgeJournal::Open(dir, &edges);
    ASSERT_TRUE(j.ok()) << j.status();
    EXPECT_EQ(edges, Concat({kFirst, kSecond}));
    EXPECT_EQ((*j)->size_bytes(), at[2]);
    ASSERT_TRUE((*j)->Append(kThird).ok());
  }
  auto cut = ReadFileToString(JournalPath(dir));
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(*cut, *bytes) << "the torn bytes were cut before the append";
  std::vector<Edge> edges;
  ASSERT_TRUE(EdgeJournal::Open(dir, &edges).ok());
  EXPECT_EQ(edges, Concat({kFirst, kSecond, kThird}));
}

// A journal whose acknowledged last records were damaged or cut (the mark
// says they were acknowledged) is refused as a loss, never cut silently;
// both files are left as they are.
TEST(EdgeJournal, ReportsAcknowledgedLastRecordsLostNeverCutsThem) {
  for (const bool whole : {false, true}) {
    SCOPED_TRACE(whole ? "the last record gone whole" : "part of it gone");
    const std::string dir =
        testing::ScratchDir("EdgeJournal", whole ? "lost_whole" : "lost_part");
    const std::vector<uint64_t> at = WriteThree(dir);
    ASSERT_EQ(at.size(), 4u);
    auto bytes = ReadFileToString(JournalPath(dir));
    ASSERT_TRUE(bytes.ok());
    const std::string left = bytes->substr(0, whole ? at[2] : at[3] - 7);
    ASSERT_TRUE(WriteFileDurably(JournalPath(dir), left).ok());
    std::vector<Edge> edges;
    auto j = EdgeJournal::Open(dir, &edges);
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.status().code(), absl::StatusCode::kDataLoss) << j.status();
    EXPECT_TRUE(
        absl::StrContains(j.status().message(), "acknowledged edges lost"))
        << j.status();
    EXPECT_TRUE(absl::StrContains(
        j.status().message(), absl::StrCat(at[3], " bytes were acknowledged")))
        << j.status();
    EXPECT_TRUE(absl::StrContains(j.status().message(),
                                  absl::StrCat("end at byte ", at[2])))
        << j.status();
    auto after = ReadFileToString(JournalPath(dir));
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(*after, left) << "nothing is cut";
  }
}

// A mark that is missing (a journal of an older version) or does not
// verify is written again from the intact records, which are all kept.
TEST(EdgeJournal, AMissingOrDamagedMarkIsWrittenAgain) {
  for (const bool missing : {true, false}) {
    const std::string dir =
        testing::ScratchDir("EdgeJournal", missing ? "nomark" : "badmark");
    const std::vector<uint64_t> at = WriteThree(dir);
    ASSERT_EQ(at.size(), 4u);
    const std::string mark = internal::AckMarkPath(JournalPath(dir));
    if (missing) {
      ASSERT_TRUE(FileSystem::Default()->Remove(mark).ok());
    } else {
      ASSERT_TRUE(WriteFileDurably(mark, "not a mark").ok());
    }
    std::vector<Edge> edges;
    ASSERT_TRUE(EdgeJournal::Open(dir, &edges).ok());
    EXPECT_EQ(edges, Concat({kFirst, kSecond, kThird}));
    auto read = internal::ReadAckMark(JournalPath(dir));
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_FALSE(read->damaged);
    EXPECT_EQ(read->value, at[3]);
  }
}

TEST(EdgeJournal, RefusesADamagedRecordBeforeTheEndNamingFileAndOffset) {
  const std::string dir = testing::ScratchDir("EdgeJournal", "damaged");
  const std::vector<uint64_t> at = WriteThree(dir);
  ASSERT_EQ(at.size(), 4u);
  auto bytes = ReadFileToString(JournalPath(dir));
  ASSERT_TRUE(bytes.ok());
  std::string damaged = *bytes;
  damaged[at[1] + 20] ^= 0x01;  // in the second record's payload
  ASSERT_TRUE(WriteFileDurably(JournalPath(dir), damaged).ok());
  std::vector<Edge> edges;
  auto j = EdgeJournal::Open(dir, &edges);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), absl::StatusCode::kDataLoss) << j.status();
  EXPECT_TRUE(absl::StrContains(j.status().message(), JournalPath(dir)))
      << j.status();
  EXPECT_TRUE(absl::StrContains(j.status().message(),
                                absl::StrCat("at byte ", at[1], " ")))
      << j.status();
  auto after = ReadFileToString(JournalPath(dir));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, damaged) << "a damaged journal is left as it is";
}

TEST(EdgeJournal, TakesInAnOldPlainTextFileOnce) {
  const std::string dir = testing::ScratchDir("EdgeJournal", "legacy");
  const std::string legacy = dir + "/" + EdgeJournal::kLegacyFileName;
  // As the old version wrote it, and a last line a crash cut.
  ASSERT_TRUE(WriteFileDurably(legacy, "1 2 1\n3 9 0.5\n4 5 2\n6 7").ok());
  {
    std::vector<Edge> edges;
    auto j = EdgeJournal::Open(dir, &edges);
    ASSERT_TRUE(j.ok()) << j.status();
    EXPECT_EQ(edges, Concat({kFirst, kSecond}));
    EXPECT_FALSE(PathExists(legacy));
    ASSERT_TRUE((*j)->Append(kThird).ok());
  }
  std::vector<Edge> edges;
  ASSERT_TRUE(EdgeJournal::Open(dir, &edges).ok());
  EXPECT_EQ(edges, Concat({kFirst, kSecond, kThird}));
}

TEST(EdgeJournal, AnOldFileBesideTheJournalAddsOnlyTheEdgesItLacks) {
  // A crash between the rewrite and the old file's removal, or an older
  // version run on the directory since.
  const std::string dir = testing::ScratchDir("EdgeJournal", "both");
  {
    std::vector<Edge> edges;
    auto j = EdgeJournal::Open(dir, &edges);
    ASSERT_TRUE(j.ok()) << j.status();
    ASSERT_TRUE((*j)->Append(kFirst).ok());
  }
  ASSERT_TRUE(WriteFileDurably(dir + "/" + EdgeJournal::kLegacyFileName,
                               "2 1 1\n4 5 2\n")
                  .ok());
  std::vector<Edge> edges;
  ASSERT_TRUE(EdgeJournal::Open(dir, &edges).ok());
  EXPECT_EQ(edges, Concat({kFirst, kSecond}));
  ASSERT_TRUE(EdgeJournal::Open(dir, &edges).ok());
  EXPECT_EQ(edges, Concat({kFirst, kSecond}));
}

// An older data directory through the service: its ingested edges are
// known (duplicates now) and counted.
TEST(EdgeJournal, GraphServiceStartsFromAnOldPlainTextFile) {
  const GraphServiceOptions o =
      SmallGraph(testing::ScratchDir("EdgeJournal", "service"));
  ASSERT_TRUE(FileSystem::Default()->CreateDirectory(o.dir).ok());
  ASSERT_TRUE(WriteFileDurably(o.dir + "/" + EdgeJournal::kLegacyFileName,
                               "10 11 1\n12 13 1\n")
                  .ok());
  MetricsRegistry metrics;
  auto g = GraphService::Open(o, &metrics);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->Status().ingested_edges(), 2u);
  EXPECT_EQ((*g)->Status().vertices(), 8u);
  auto resp = (*g)->IngestEdges(Edges({{11, 10}, {13, 14}}));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->accepted(), 1u);
  EXPECT_EQ(resp->duplicates(), 1u);
  EXPECT_TRUE((*g)->Stop().ok());
  std::vector<Edge> edges;
  ASSERT_TRUE(EdgeJournal::Open(o.dir, &edges).ok());
  EXPECT_EQ(edges, (std::vector<Edge>{{10, 11, 1}, {12, 13, 1}, {13, 14, 1}}));
}

// A failed write (short) or fdatasync of the journal fails the call with
// nothing acknowledged and nothing left in the file; once the fault clears,
// edges are appended again, and a reopened service holds exactly the
// acknowledged ones.
// A graph node leaving its cluster hands off the edges it acknowledged,
// then acknowledges none: an edge it would keep is refused, not kept
// (else it would be acknowledged after the hand-off and trained nowhere).
TEST(GraphIngest, ALeavingNodeAcknowledgesNoEdgeOfItsOwn) {
  const std::string dir = testing::ScratchDir("GraphIngest", "leaving");
  MetricsRegistry metrics;
  std::vector<Edge> fresh;
  auto ingest = GraphIngest::Open(
      {.dir = dir,
       .ingested = metrics.AddCounter("t_ingested_total", "test"),
       .forwarded = metrics.AddCounter("t_forwarded_total", "test")},
      {}, &fresh);
  ASSERT_TRUE(ingest.ok()) << ingest.status();
  (*ingest)->SetAccepting(false);
  auto r = (*ingest)->IngestEdges(Edges({{10, 11}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "leaving the cluster"))
      << r.status();
  EXPECT_TRUE((*ingest)->TakePending().empty());
  EXPECT_EQ((*ingest)->counts().ingested, 0u);
  // A removal that failed: the node takes edges again.
  (*ingest)->SetAccepting(true);
  r = (*ingest)->IngestEdges(Edges({{10, 11}}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->accepted(), 1u);
  EXPECT_EQ((*ingest)->TakePending().size(), 1u);
  (*ingest)->BeginStop();
  EXPECT_TRUE((*ingest)->Close().ok());
}

TEST(GraphIngestFaults, FailedAppendsAreNotAcknowledgedNorKept) {
  const GraphServiceOptions o =
      SmallGraph(testing::ScratchDir("GraphIngestFaults", "append"));
  FaultInjectionFileSystem faults;
  ScopedDefaultFileSystem use(&faults);
  {
    MetricsRegistry metrics;
    auto g = GraphService::Open(o, &metrics);
    ASSERT_TRUE(g.ok()) << g.status();
    faults.Inject({.op = FileOp::kWrite,
                   .path_glob = "*/ingested_edges.log",
                   .short_write = true,
                   .times = 1});
    auto r = (*g)->IngestEdges(Edges({{10, 11}}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), "nothing acknowledged"))
        << r.status();
    faults.Inject(
        {.op = FileOp::kSync, .path_glob = "*/ingested_edges.log", .times = 1});
    r = (*g)->IngestEdges(Edges({{12, 13}}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(faults.failures(), 2);
    r = (*g)->IngestEdges(Edges({{14, 15}}));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->accepted(), 1u);
    EXPECT_TRUE((*g)->Stop().ok());
  }
  {
    std::vector<Edge> kept;
    ASSERT_TRUE(EdgeJournal::Open(o.dir, &kept).ok());
    EXPECT_EQ(kept, (std::vector<Edge>{{14, 15, 1.0f}}));
  }
  MetricsRegistry metrics;
  auto g = GraphService::Open(o, &metrics);
  ASSERT_TRUE(g.ok()) << g.status();
  auto r = (*g)->IngestEdges(Edges({{10, 11}, {12, 13}, {14, 15}}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->accepted(), 2u);  // the two never acknowledged
  EXPECT_EQ(r->duplicates(), 1u);
}

// The mark's fdatasync fails once its bytes are written: nothing is
// acknowledged, the mark goes back before the journal is cut, and the
// journal closed right after reopens (no "acknowledged edges lost").
TEST(GraphIngestFaults, AFailedMarkWriteIsNotReadAsALossWhenReopened) {
  const std::string dir = testing::ScratchDir("GraphIngestFaults", "mark");
  FaultInjectionFileSystem faults;
  ScopedDefaultFileSystem use(&faults);
  std::vector<Edge> edges;
  {
    auto j = EdgeJournal::Open(dir, &edges);
    ASSERT_TRUE(j.ok()) << j.status();
    ASSERT_TRUE((*j)->Append({{1, 2, 1}}).ok());
    faults.Inject({.op = FileOp::kSync,
                   .path_glob = "*/ingested_edges.log.acked",
                   .times = 1});
    EXPECT_FALSE((*j)->Append({{3, 4, 1}}).ok());
    EXPECT_EQ(faults.failures(), 1);
  }
  auto j = EdgeJournal::Open(dir, &edges);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(edges, (std::vector<Edge>{{1, 2, 1}}));
}

}  // namespace
}  // namespace latentd::service
