// Issue 17: a port in use is a clear start-up error on every listening
// socket (the HTTP gateway, the TCP API, the cluster sync listener), never
// a second server sharing the port; and the HTTP listen backlog is not
// httplib's 5.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/http_gateway.h"
#include "service/rpc_server.h"
#include "sync/transport/transport.h"
#include "tests/service/daemon_harness.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::testing {
namespace {

using service::HttpGateway;
using service::HttpOptions;
using service::LatentdService;
using service::MetricsRegistry;
using service::RpcOptions;
using service::RpcServer;

// One small service (not training) for the servers to front.
class ListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = LatentdService::Open(SmallServiceOptions(dir_.path()), &metrics_);
    ASSERT_TRUE(s.ok()) << s.status();
    service_ = std::move(*s);
  }
  TempDir dir_;
  MetricsRegistry metrics_;
  std::unique_ptr<LatentdService> service_;
};

TEST_F(ListenerTest, SecondHttpGatewayOnThePortFails) {
  HttpOptions o;
  o.port = 0;
  auto first = HttpGateway::Start(o, service_.get(), &metrics_);
  ASSERT_TRUE(first.ok()) << first.status();
  o.port = (*first)->port();
  auto second = HttpGateway::Start(o, service_.get(), &metrics_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(absl::StrCat("127.0.0.1:", o.port)),
            std::string::npos)
      << second.status();
  // The first one still answers.
  EXPECT_EQ(HttpGet(o.port, "/healthz").status, 200);
}

TEST_F(ListenerTest, HttpListenBacklogIsRaised) {
  HttpOptions o;
  o.port = 0;
  o.listen_backlog = 1000;
  auto g = HttpGateway::Start(o, service_.get(), &metrics_);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ListenBacklog((*g)->port()), 1000);  // httplib's own: 5
}

TEST_F(ListenerTest, SecondRpcServerOnThePortFails) {
  RpcOptions o;
  o.port = 0;
  o.io_threads = 1;
  o.worker_threads = 1;
  auto first = RpcServer::Start(o, service_.get(), &metrics_);
  ASSERT_TRUE(first.ok()) << first.status();
  o.port = (*first)->port();
  auto second = RpcServer::Start(o, service_.get(), &metrics_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(absl::StrCat("127.0.0.1:", o.port)),
            std::string::npos)
      << second.status();
  // Nor can the HTTP gateway take the TCP API's port, or the other way.
  HttpOptions h;
  h.port = o.port;
  EXPECT_EQ(HttpGateway::Start(h, service_.get(), &metrics_).status().code(),
            absl::StatusCode::kUnavailable);
  h.port = 0;
  auto http = HttpGateway::Start(h, service_.get(), &metrics_);
  ASSERT_TRUE(http.ok()) << http.status();
  o.port = (*http)->port();
  EXPECT_EQ(RpcServer::Start(o, service_.get(), &metrics_).status().code(),
            absl::StatusCode::kUnavailable);
}

// The cluster's sync listener (sync::Server, SO_REUSEADDR only).
TEST(SyncListener, SecondServerOnThePortFails) {
  sync::EventLoop loop(1);
  auto echo = [](sync::Frame req, sync::Responder r) {
    r.Reply(std::move(req.payload));
  };
  auto first = sync::Server::Start(&loop, {.port = 0}, echo);
  ASSERT_TRUE(first.ok()) << first.status();
  const uint16_t port = (*first)->port();
  auto second = sync::Server::Start(&loop, {.port = port}, echo);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(absl::StrCat("127.0.0.1:", port)),
            std::string::npos)
      << second.status();
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Waits up to timeout_s for pid; its wait status, or -1 (then killed).
int WaitExit(pid_t pid, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(int(timeout_s * 1000));
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return StopProcess(pid, SIGKILL, 10), -1;
}

// A second latentd given the first one's --http (or --listen) port exits
// non-zero at start-up, saying which address is taken.
TEST(Daemon, SecondDaemonOnTheSamePortExits) {
  TempDir tmp;
  Daemon first(tmp.path() + "/a", SmallCorpusArgs(tmp.path()));
  ASSERT_TRUE(first.ok()) << first.Log();
  const char* bin = std::getenv("LATENTD_BIN");
  ASSERT_NE(bin, nullptr);
  struct Case {
    std::string http, tcp, want;
  } cases[] = {
      {first.http(), "127.0.0.1:0", "cannot bind HTTP to " + first.http()},
      {"127.0.0.1:0", first.tcp(), "cannot listen on " + first.tcp()},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    const std::string dir = absl::StrCat(tmp.path(), "/b", n++);
    std::vector<std::string> argv = {bin,    "--data-dir", dir,  "--http",
                                     c.http, "--listen",   c.tcp};
    for (const std::string& a : SmallCorpusArgs(tmp.path())) argv.push_back(a);
    const std::string log = dir + ".log";
    const int status = WaitExit(Spawn(argv, log), 30);
    ASSERT_TRUE(WIFEXITED(status)) << status << Slurp(log);
    EXPECT_NE(WEXITSTATUS(status), 0);
    EXPECT_NE(Slurp(log).find(c.want), std::string::npos) << Slurp(log);
    EXPECT_FALSE(std::filesystem::exists(dir + "/ports"));
  }
  // The first daemon is untouched and still the only one on its ports.
  EXPECT_EQ(HttpGet(std::stoi(first.http().substr(first.http().rfind(':') + 1)),
                    "/healthz")
                .status,
            200);
  EXPECT_EQ(first.Stop(), 0) << first.Log();
}

}  // namespace
}  // namespace latentd::testing
