// Issue 17: liveness (/healthz, the process answers) is not readiness
// (/readyz: 200 only when the node should get traffic, else 503 saying
// why), and LatentdService::Readiness says which.
#include <filesystem>
#include <memory>

#include "gtest/gtest.h"
#include "service/http_gateway.h"
#include "tests/service/daemon_harness.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::testing {
namespace {

using service::HttpGateway;
using service::HttpOptions;
using service::LatentdService;
using service::MetricsRegistry;
using service::ServiceOptions;

class HealthTest : public ::testing::Test {
 protected:
  // Opens the service and an HTTP gateway in front of it.
  void Open(const ServiceOptions& options) {
    auto s = LatentdService::Open(options, &metrics_);
    ASSERT_TRUE(s.ok()) << s.status();
    service_ = std::move(*s);
    HttpOptions h;
    h.port = 0;
    auto g = HttpGateway::Start(h, service_.get(), &metrics_);
    ASSERT_TRUE(g.ok()) << g.status();
    gateway_ = std::move(*g);
  }
  HttpReply Get(const std::string& path) {
    return HttpGet(gateway_->port(), path);
  }

  TempDir dir_;
  MetricsRegistry metrics_;
  std::unique_ptr<LatentdService> service_;
  std::unique_ptr<HttpGateway> gateway_;
};

TEST_F(HealthTest, ReadyOnceOpen) {
  Open(SmallServiceOptions(dir_.path()));
  EXPECT_TRUE(service_->Readiness().ok()) << service_->Readiness();
  const HttpReply ready = Get("/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body, "ready\n");
  const HttpReply live = Get("/healthz");
  EXPECT_EQ(live.status, 200);
  EXPECT_EQ(live.body, "ok\n");
}

// A cluster-mode node serves before it has joined (its id is its bound API
// address), but it is not ready: it cannot take users' events yet.
TEST_F(HealthTest, ClusterNodeNotJoinedIsAliveButNotReady) {
  ServiceOptions o = SmallServiceOptions(dir_.path());
  o.cluster_mode = true;
  Open(o);
  EXPECT_EQ(service_->Readiness().code(), absl::StatusCode::kUnavailable);
  const HttpReply ready = Get("/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("not ready: still joining its cluster"),
            std::string::npos)
      << ready.body;
  EXPECT_EQ(Get("/healthz").status, 200);
}

// The data directory (with the ingest log) gone from under the node: it
// can no longer acknowledge documents durably, so it is not ready.
// (Removing the directory, not chmod: the tests may run as root.)
TEST_F(HealthTest, IngestLogNotWritableIsNotReady) {
  const ServiceOptions o = SmallServiceOptions(dir_.path());
  Open(o);
  ASSERT_EQ(Get("/readyz").status, 200);
  std::filesystem::remove_all(o.data_dir);
  const HttpReply ready = Get("/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("ingest log"), std::string::npos) << ready.body;
  EXPECT_NE(ready.body.find("not writable"), std::string::npos) << ready.body;
  EXPECT_EQ(Get("/healthz").status, 200);
}

TEST_F(HealthTest, NotReadyOnceStopping) {
  Open(SmallServiceOptions(dir_.path()));
  ASSERT_TRUE(service_->Stop().ok());
  const HttpReply ready = Get("/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("shutting down"), std::string::npos) << ready.body;
}

}  // namespace
}  // namespace latentd::testing
