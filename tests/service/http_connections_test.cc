// Issue 16: connection hygiene on the HTTP port. Idle connections hold no
// worker, so a real client is answered at once even with hundreds of them
// open; idle connections are closed after the idle timeout, stalled
// requests after the read timeout; beyond max_connections a connection is
// answered 503 and closed at once. Every socket is on 127.0.0.1 and closed
// at the end.
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "service/http_gateway.h"
#include "tests/service/daemon_harness.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::testing {
namespace {

// "At once" on a loaded 2-core CI machine: well below the 5 s idle and
// read timeouts a broken gateway would wait out.
constexpr double kPrompt = 3.0;

using service::HttpGateway;
using service::HttpOptions;
using Clock = std::chrono::steady_clock;

// Reads until EOF, an error or `timeout_s`; *eof says whether it ended in
// EOF (or a reset) before the timeout.
std::string ReadAll(int fd, double timeout_s, bool* eof) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_s);
  tv.tv_usec = static_cast<suseconds_t>((timeout_s - tv.tv_sec) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    *eof = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    return out;
  }
}

bool SendAll(int fd, const std::string& data) {
  return ::send(fd, data.data(), data.size(), MSG_NOSIGNAL) ==
         static_cast<ssize_t>(data.size());
}

class ConnectionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = service::LatentdService::Open(SmallServiceOptions(dir_.path()),
                                           &metrics_);
    ASSERT_TRUE(s.ok()) << s.status();
    service_ = std::move(*s);
  }
  void Start(HttpOptions o) {
    o.port = 0;
    auto g = HttpGateway::Start(o, service_.get(), &metrics_);
    ASSERT_TRUE(g.ok()) << g.status();
    gateway_ = std::move(*g);
    port_ = gateway_->port();
  }
  // The HTTP listener's metrics (service/internal/connection_metrics.h).
  double Gauge(const std::string& name) {
    return metrics_.AddGauge(name, "", R"(listener="http")")->value();
  }
  uint64_t Counter(const std::string& name, const std::string& reason = "") {
    return metrics_
        .AddCounter(name, "",
                    reason.empty() ? std::string(R"(listener="http")")
                                   : absl::StrCat(R"(listener="http",reason=")",
                                                  reason, "\""))
        ->value();
  }
  // Waits (up to 5 s) until the gateway holds `n` open connections.
  bool WaitOpen(int n) {
    const auto start = Clock::now();
    while (Gauge("latentd_connections") != n) {
      if (SecondsSince(start) > 5) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  // `n` connections that send nothing.
  void OpenIdle(int n, Sockets* s) {
    for (int i = 0; i < n; ++i) {
      const int fd = ConnectLoopback(port_);
      ASSERT_GE(fd, 0) << "connection " << i << ": " << std::strerror(errno);
      s->fds.push_back(fd);
    }
  }

  TempDir dir_;
  service::MetricsRegistry metrics_;
  std::unique_ptr<service::LatentdService> service_;
  std::unique_ptr<HttpGateway> gateway_;
  int port_ = 0;
};

// The issue's case: 300 connections that send nothing, few workers.
TEST_F(ConnectionsTest, IdleConnectionsDoNotDelayARealClient) {
  HttpOptions o;
  o.threads = 4;
  o.max_connections = 1000;
  Start(o);
  Sockets idle;
  OpenIdle(300, &idle);
  ASSERT_TRUE(WaitOpen(300));
  for (int i = 0; i < 5; ++i) {
    const auto start = Clock::now();
    const HttpReply r = HttpGet(port_, "/healthz", 5);
    EXPECT_EQ(r.status, 200);
    EXPECT_LT(SecondsSince(start), kPrompt);
  }
  // A keep-alive client too, many requests on one connection.
  httplib::Client c("127.0.0.1", port_);
  c.set_keep_alive(true);
  const auto start = Clock::now();
  for (int i = 0; i < 50; ++i) {
    auto res = c.Get("/v1/Status");
    ASSERT_TRUE(res) << i;
    EXPECT_EQ(res->status, 200);
  }
  EXPECT_LT(SecondsSince(start), 2.0);
  EXPECT_EQ(Gauge("latentd_connections"), 301);
}

TEST_F(ConnectionsTest, OverTheCapIsRefusedAtOnce) {
  HttpOptions o;
  o.max_connections = 8;
  Start(o);
  Sockets idle;
  OpenIdle(8, &idle);
  ASSERT_TRUE(WaitOpen(8));
  const int extra = ConnectLoopback(port_);
  ASSERT_GE(extra, 0);
  const auto start = Clock::now();
  bool eof = false;
  const std::string answer = ReadAll(extra, 5, &eof);
  ::close(extra);
  EXPECT_TRUE(eof);
  EXPECT_LT(SecondsSince(start), kPrompt);
  EXPECT_EQ(answer.rfind("HTTP/1.1 503 ", 0), 0u) << answer;
  EXPECT_EQ(Counter("latentd_connections_refused_total", "max_connections"),
            1u);
  // A slot freed is a slot for the next client.
  ::close(idle.fds.back());
  idle.fds.pop_back();
  ASSERT_TRUE(WaitOpen(7));
  EXPECT_EQ(HttpGet(port_, "/healthz").status, 200);
}

TEST_F(ConnectionsTest, IdleConnectionsAreClosedAfterTheIdleTimeout) {
  HttpOptions o;
  o.idle_timeout_seconds = 1;
  Start(o);
  Sockets s;
  OpenIdle(2, &s);
  // One sends a request first: its idle time starts after the answer.
  ASSERT_TRUE(SendAll(s.fds[1], "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"));
  const auto start = Clock::now();
  for (int fd : s.fds) {
    bool eof = false;
    const std::string got = ReadAll(fd, 5, &eof);
    EXPECT_TRUE(eof);
    EXPECT_EQ(got.empty(), fd == s.fds[0]) << got;
  }
  EXPECT_GT(SecondsSince(start), 0.8);
  EXPECT_LT(SecondsSince(start), 3.0);
  EXPECT_EQ(Counter("latentd_connections_timed_out_total"), 2u);
  EXPECT_TRUE(WaitOpen(0));
}

// A request that stops half-way holds its worker for the read timeout at
// most; the other worker serves meanwhile.
TEST_F(ConnectionsTest, StalledRequestIsDroppedAfterTheReadTimeout) {
  HttpOptions o;
  o.threads = 2;
  o.read_timeout_seconds = 1;
  o.idle_timeout_seconds = 1;
  Start(o);
  Sockets s;
  OpenIdle(1, &s);
  ASSERT_TRUE(SendAll(s.fds[0], "GET /healthz HTTP/1.1\r\nHost"));
  EXPECT_EQ(HttpGet(port_, "/healthz").status, 200);
  const auto start = Clock::now();
  bool eof = false;
  ReadAll(s.fds[0], 10, &eof);
  EXPECT_TRUE(eof);
  EXPECT_LT(SecondsSince(start), 4.0);
}

// Requests sent back to back on one connection are all answered, in order.
TEST_F(ConnectionsTest, PipelinedRequestsAreAnswered) {
  Start(HttpOptions());
  Sockets s;
  OpenIdle(1, &s);
  ASSERT_TRUE(SendAll(s.fds[0],
                      "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
                      "GET /readyz HTTP/1.1\r\nHost: a\r\n\r\n"
                      "GET /healthz HTTP/1.1\r\nHost: a\r\n"
                      "Connection: close\r\n\r\n"));
  bool eof = false;
  const std::string got = ReadAll(s.fds[0], 5, &eof);
  EXPECT_TRUE(eof);
  const size_t a = got.find("\r\n\r\nok\n");
  const size_t b = got.find("\r\n\r\nready\n");
  const size_t c = got.rfind("\r\n\r\nok\n");
  EXPECT_NE(a, std::string::npos) << got;
  EXPECT_LT(a, b) << got;
  EXPECT_LT(b, c) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
}

TEST_F(ConnectionsTest, StopClosesIdleConnectionsPromptly) {
  Start(HttpOptions());
  Sockets idle;
  OpenIdle(50, &idle);
  ASSERT_TRUE(WaitOpen(50));
  const auto start = Clock::now();
  gateway_->Stop();
  EXPECT_LT(SecondsSince(start), kPrompt);
  bool eof = false;
  ReadAll(idle.fds[0], 5, &eof);
  EXPECT_TRUE(eof);
  EXPECT_LT(ConnectLoopback(port_), 0);  // nothing listens any more
}

}  // namespace
}  // namespace latentd::testing
