// ReplicaLogs (service/replica_logs.h): one fsynced log per origin node,
// resent copies dropped by source, kept across a reopen, read back in
// order, dropped once adopted; a file that is not a replica log's name
// fails the open naming it, and a disk fault fails the append with nothing
// kept.
#include "service/replica_logs.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "base/testing/fault_injection_file_system.h"
#include "base/testing/scratch_dir.h"
#include "gtest/gtest.h"

namespace latentd::service {
namespace {

IngestRecord Rec(const std::string& source, const std::string& user,
                 std::vector<std::string> words) {
  IngestRecord r;
  r.source = source;
  r.user = user;
  r.doc_id = "d-" + source;
  r.words = std::move(words);
  return r;
}

TEST(ReplicaLogs, KeepsEachOriginsCopiesAcrossAReopenAndDropsThem) {
  const std::string dir = testing::ScratchDir("ReplicaLogs", "roundtrip");
  {
    auto logs = ReplicaLogs::Open(dir + "/replicas");
    ASSERT_TRUE(logs.ok()) << logs.status();
    EXPECT_TRUE((*logs)->Origins().empty());
    auto n = (*logs)->Append("127.0.0.1:7001",
                             {Rec("s1", "ann", {"apple", "pie"}),
                              Rec("", "", {"plain"}), Rec("s1", "ann", {"x"})});
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 2u) << "the second s1 of the batch is a resent copy";
    n = (*logs)->Append("127.0.0.1:7001", {Rec("s1", "ann", {"again"})});
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 0u);
    n = (*logs)->Append("127.0.0.1:7002", {Rec("s2", "", {"other"})});
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 1u);
    EXPECT_EQ((*logs)->records(), 3u);
    EXPECT_FALSE((*logs)->Append("", {Rec("s3", "", {"w"})}).ok());
  }
  auto logs = ReplicaLogs::Open(dir + "/replicas");
  ASSERT_TRUE(logs.ok()) << logs.status();
  std::vector<std::string> origins = (*logs)->Origins();
  std::sort(origins.begin(), origins.end());
  EXPECT_EQ(origins,
            (std::vector<std::string>{"127.0.0.1:7001", "127.0.0.1:7002"}));
  EXPECT_TRUE((*logs)->HoldsSource("127.0.0.1:7001", "s1"));
  EXPECT_FALSE((*logs)->HoldsSource("127.0.0.1:7002", "s1"));
  auto read = (*logs)->Read("127.0.0.1:7001");
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].user, "ann");
  EXPECT_EQ((*read)[0].doc_id, "d-s1");
  EXPECT_EQ((*read)[0].words, (std::vector<std::string>{"apple", "pie"}));
  EXPECT_EQ((*read)[1].words, (std::vector<std::string>{"plain"}));
  // Still appendable after a read.
  auto n = (*logs)->Append("127.0.0.1:7001", {Rec("s4", "", {"more"})});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1u);
  ASSERT_TRUE((*logs)->Drop("127.0.0.1:7001").ok());
  EXPECT_EQ((*logs)->Origins(), std::vector<std::string>{"127.0.0.1:7002"});
  EXPECT_EQ((*logs)->records(), 1u);
  EXPECT_TRUE((*logs)->Read("127.0.0.1:7001")->empty());
  logs->reset();
  logs = ReplicaLogs::Open(dir + "/replicas");
  ASSERT_TRUE(logs.ok());
  EXPECT_EQ((*logs)->Origins(), std::vector<std::string>{"127.0.0.1:7002"});
}

TEST(ReplicaLogs, AFileThatIsNoReplicaLogFailsTheOpenNamingIt) {
  const std::string dir = testing::ScratchDir("ReplicaLogs", "badname");
  ASSERT_TRUE(ReplicaLogs::Open(dir).ok());
  std::ofstream(dir + "/zz.log") << "x";
  auto logs = ReplicaLogs::Open(dir);
  ASSERT_FALSE(logs.ok());
  EXPECT_NE(logs.status().message().find("zz.log"), std::string::npos)
      << logs.status();
}

TEST(ReplicaLogs, AFailedFsyncKeepsNothing) {
  const std::string dir = testing::ScratchDir("ReplicaLogs", "fault");
  FaultInjectionFileSystem faulty;
  ScopedDefaultFileSystem scope(&faulty);
  auto logs = ReplicaLogs::Open(dir);
  ASSERT_TRUE(logs.ok()) << logs.status();
  ASSERT_TRUE((*logs)->Append("n1", {Rec("a", "", {"one"})}).ok());
  faulty.Inject({.op = FileOp::kSync, .times = 1});
  auto n = (*logs)->Append("n1", {Rec("b", "", {"two"})});
  EXPECT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), absl::StatusCode::kUnavailable) << n.status();
  faulty.Clear();
  auto read = (*logs)->Read("n1");
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].source, "a");
  // The source of the failed append is not taken: a resend is kept.
  n = (*logs)->Append("n1", {Rec("b", "", {"two"})});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 1u);
}

}  // namespace
}  // namespace latentd::service
