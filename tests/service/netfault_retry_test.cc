// A client's retry of an ingest that timed out counts once
// (tests/service/netfault_cluster.h): two nodes and Redis in network
// namespaces of their own, the link between the nodes cut while node 0
// waits for its backup's copy of a document; the client gives up, the link
// is healed, the client sends the document again with the same source. The
// first call, still running in the node, completes once its copy gets
// through, and the document must count once in the model. Skipped (exit
// 77, the reason printed) when not root or `ip netns` is unavailable.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "service/api.pb.h"
#include "service/api_client.h"
#include "tests/service/netfault_cluster.h"

namespace latentd::testing {
namespace {

using service::Method;
using service::Protocol;
using Clock = std::chrono::steady_clock;

// A client's retry of an ingest that timed out while the node waited for
// its backup's copy (the link between them cut) counts once: the first
// call, still running in the node, completes once the link is back, and
// the retry with the same source must not be appended a second time.
TEST(DaemonNetFault, ARetryWhileTheFirstCallAwaitsItsBackupCountsOnce) {
  const std::string why = NetTopology::Unavailable();
  if (!why.empty()) GTEST_SKIP() << "no network namespaces: " << why;
  NetCluster net(
      2, "0", /*docs_per_node=*/30);  // no failover: the cut is the only fault
  ASSERT_TRUE(net.ok());
  Daemon* n0 = net.cluster->node(0);
  auto quick =
      service::ApiClient::Create(n0->tcp(), Protocol::kTcp, absl::Seconds(1));
  auto patient =
      service::ApiClient::Create(n0->tcp(), Protocol::kTcp, absl::Seconds(30));
  ASSERT_TRUE(quick.ok() && patient.ok());
  api::IngestRequest req;
  api::Document* doc = req.add_documents();
  doc->set_text("zqwarm market");
  doc->set_source("retry-0");
  api::IngestResponse resp;
  // The node's connection to its backup is up before the cut.
  ASSERT_TRUE((*patient)->Call(Method::kIngest, req, &resp).ok());
  doc->set_text("zqretry market");
  doc->set_source("retry-1");
  ASSERT_TRUE(net.net->Cut(0, 1).ok());
  const absl::Status first = (*quick)->Call(Method::kIngest, req, &resp);
  EXPECT_FALSE(first.ok()) << "acknowledged without its backup's copy";
  SleepMs(1000);
  ASSERT_TRUE(net.net->HealAll().ok());
  absl::Status retry;
  for (int i = 0; i < 40; ++i) {
    retry = (*patient)->Call(Method::kIngest, req, &resp);
    if (retry.ok()) break;
    SleepMs(250);
  }
  ASSERT_TRUE(retry.ok()) << retry;
  // The first call ends in the node once its copy gets through (TCP
  // retransmits within seconds); then both are merged, or only one.
  int64_t n_w = -1;
  for (const Clock::time_point t = Clock::now(); Since(t) < 20;) {
    SleepMs(500);
    api::StatusRequest sreq;
    api::StatusResponse st;
    api::WordTopicsRequest wreq;
    wreq.set_word("zqretry");
    api::WordTopicsResponse w;
    if ((*patient)->Call(Method::kStatus, sreq, &st).ok() &&
        st.pending() == 0 &&
        (*patient)->Call(Method::kWordTopics, wreq, &w).ok()) {
      n_w = w.count();
      if (Since(t) > 5) break;  // the first call has had its time
    }
  }
  EXPECT_EQ(n_w, 1) << "the retried document counts " << n_w << " times"
                    << net.cluster->Logs();
  std::printf(
      "netfault retry: first call %s; the retry acknowledged; "
      "n_w %lld\n",
      first.ToString().c_str(), static_cast<long long>(n_w));
  net.cluster->StopAll();
}

}  // namespace
}  // namespace latentd::testing
