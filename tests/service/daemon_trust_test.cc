// Issue 29 ("trust") at the daemon's level: what latentd processes say and
// refuse on their real listeners.
//
// ReadyzAfterSampling: a node that stopped sampling (--max-sweeps reached)
// still answers queries and stays ready, and its /readyz body says that
// sampling stopped and why.
#include <chrono>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/service/daemon_cluster_util.h"
#include "tests/service/daemon_harness.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::testing {
namespace {

using service::Method;
using service::Protocol;

int HttpPort(const Daemon& d) {
  return std::stoi(d.http().substr(d.http().rfind(':') + 1));
}

TEST(DaemonTrust, ReadyzAfterSamplingStoppedSaysWhy) {
  TempDir tmp;
  Daemon d(tmp.path() + "/node", TrainingArgs("5", "2"));
  ASSERT_TRUE(d.ok()) << d.Log();
  auto client = d.Client(Protocol::kTcp);
  auto stopped = WaitStatus(
      client.get(),
      [](const api::StatusResponse& s) {
        return !s.training() && s.version().sweep() >= 2;
      },
      120);
  ASSERT_TRUE(stopped.ok()) << stopped.status() << d.Log();
  // The training thread records why with training off; poll briefly.
  HttpReply ready;
  for (int i = 0; i < 100; ++i) {
    ready = HttpGet(HttpPort(d), "/readyz");
    if (ready.body.find("sampling stopped") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(ready.body.rfind("ready\n", 0), 0u) << ready.body;
  EXPECT_NE(ready.body.find("sampling stopped: --max-sweeps 2 reached"),
            std::string::npos)
      << ready.body;
  EXPECT_EQ(HttpGet(HttpPort(d), "/healthz").body, "ok\n");
  // It still answers queries from its last model.
  api::ListTopicsResponse topics;
  ASSERT_TRUE(
      client->Call(Method::kListTopics, api::ListTopicsRequest(), &topics)
          .ok());
  EXPECT_EQ(topics.topics_size(), 5);
  EXPECT_EQ(d.Stop(), 0) << d.Log();
}

}  // namespace
}  // namespace latentd::testing
