// Issue 16, must-show 3: with 1,000 idle connections open on each listener
// (a latentd process's HTTP gateway and TCP API; the framed transport the
// sync port runs on, in-process), a real request is still answered within
// 100 ms, the connections and the caps are reported in /metrics, and a
// client address past its per-address cap is refused at once (counted by
// reason). The idle sockets come from 127.0.0.2..127.0.0.9 (loopback
// addresses other than the real client's 127.0.0.1), 125 from each.
//
// The 100 ms bound is the issue's functional requirement, not a benchmark:
// a request that waits behind idle connections waits for seconds (their
// timeouts); one retry absorbs a scheduling hiccup on a loaded CI machine.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/api.pb.h"
#include "service/api_client.h"
#include "sync/transport/transport.h"
#include "tests/service/daemon_harness.h"
#include "tests/service/gateway_test_util.h"

namespace latentd::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kIdlePerListener = 1000;
constexpr int kSourceAddresses = 8;  // 127.0.0.2 .. 127.0.0.9
constexpr double kBoundSeconds = 0.100;

// kIdlePerListener connections to `port` that send nothing, spread over
// the source addresses.
void OpenIdle(int port, Sockets* s) {
  for (int i = 0; i < kIdlePerListener; ++i) {
    const int fd = ConnectFrom(2 + i % kSourceAddresses, port);
    ASSERT_GE(fd, 0) << "idle connection " << i << " to port " << port << ": "
                     << std::strerror(errno);
    s->fds.push_back(fd);
  }
}

// The value of the sample `name{labels}` in Prometheus text; -1 if absent.
double Sample(const std::string& text, const std::string& name,
              const std::string& labels) {
  const std::string key = absl::StrCat(name, "{", labels, "} ");
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  const size_t end = text.find('\n', at);
  double v = -1;
  if (!absl::SimpleAtod(text.substr(at + key.size(), end - at - key.size()),
                        &v)) {
    return -1;
  }
  return v;
}

// Polls /metrics until `name{labels}` reaches `at_least` (up to 10 s);
// returns the last value.
double WaitForSample(int http_port, const std::string& name,
                     const std::string& labels, double at_least) {
  double v = -1;
  const auto start = Clock::now();
  while (SecondsSince(start) < 10) {
    v = Sample(HttpGet(http_port, "/metrics").body, name, labels);
    if (v >= at_least) break;
    ::usleep(50 * 1000);
  }
  return v;
}

TEST(IdleConnections, ARealRequestIsAnsweredWithin100msOnEveryListener) {
  RaiseOpenFiles(3 * kIdlePerListener + 512);
  TempDir dir;
  // Per-address caps of 200: the 125 idle connections from each source
  // address fit; the real client (127.0.0.1) has its own allowance.
  std::vector<std::string> args = SmallCorpusArgs(dir.path());
  for (const std::string a :
       {"--http-idle-timeout", "60", "--http-max-connections-per-address",
        "200", "--listen-max-connections-per-address", "200"}) {
    args.push_back(a);
  }
  Daemon d(dir.path() + "/node", args);
  ASSERT_TRUE(d.ok()) << d.Log();
  const int http = PortOf(d.http());
  const int tcp = PortOf(d.tcp());
  auto client = service::ApiClient::Create(d.tcp(), service::Protocol::kTcp,
                                           absl::Seconds(5));
  ASSERT_TRUE(client.ok()) << client.status();

  Sockets idle;
  OpenIdle(http, &idle);
  OpenIdle(tcp, &idle);
  // Both listeners hold them (the metric counts the /metrics call too).
  EXPECT_GE(WaitForSample(http, "latentd_connections", R"(listener="http")",
                          kIdlePerListener),
            kIdlePerListener);
  EXPECT_GE(WaitForSample(http, "latentd_connections", R"(listener="tcp")",
                          kIdlePerListener),
            kIdlePerListener);

  const double http_s = TimeWithOneRetry([&] {
    const HttpReply r = HttpGet(http, "/healthz", 5);
    return r.status == 200 && r.body == "ok\n";
  });
  EXPECT_LT(http_s, kBoundSeconds) << "GET /healthz behind idle connections";
  const double tcp_s = TimeWithOneRetry([&] {
    api::StatusResponse status;
    const absl::Status s = (*client)->Call(service::Method::kStatus,
                                           api::StatusRequest(), &status);
    return s.ok() && status.topics() == 4;
  });
  EXPECT_LT(tcp_s, kBoundSeconds) << "TCP Status behind idle connections";
  std::printf(
      "with %d idle connections on each: GET /healthz %.1f ms, TCP "
      "Status %.1f ms\n",
      kIdlePerListener, http_s * 1e3, tcp_s * 1e3);

  // The caps are reported.
  const std::string metrics = HttpGet(http, "/metrics").body;
  EXPECT_EQ(Sample(metrics, "latentd_connections_max", R"(listener="http")"),
            4096);
  EXPECT_EQ(Sample(metrics, "latentd_connections_max", R"(listener="tcp")"),
            4096);
  EXPECT_EQ(Sample(metrics, "latentd_connections_max_per_address",
                   R"(listener="http")"),
            200);
  EXPECT_EQ(Sample(metrics, "latentd_connections_max_per_address",
                   R"(listener="tcp")"),
            200);

  // 127.0.0.2 holds 125 on each listener: 80 more, of which 5 go over its
  // cap of 200 and are closed at once.
  int last_http = -1;
  for (const int port : {http, tcp}) {
    for (int i = 0; i < 80; ++i) {
      const int fd = ConnectFrom(2, port);
      ASSERT_GE(fd, 0);
      idle.fds.push_back(fd);
      if (port == http) last_http = fd;
    }
  }
  for (const char* listener : {"http", "tcp"}) {
    EXPECT_EQ(WaitForSample(http, "latentd_connections_refused_total",
                            absl::StrCat("listener=\"", listener,
                                         "\",reason=\"per_address\""),
                            5),
              5)
        << listener;
  }
  // A refused HTTP connection is told why.
  timeval tv{5, 0};
  ::setsockopt(last_http, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[256] = {};
  const ssize_t n = ::recv(last_http, buf, sizeof(buf) - 1, 0);
  ASSERT_GT(n, 0);
  EXPECT_NE(std::string(buf).find("503"), std::string::npos) << buf;
  EXPECT_NE(std::string(buf).find("too many connections from your address"),
            std::string::npos)
      << buf;
  // The real client still gets in.
  EXPECT_EQ(HttpGet(http, "/healthz", 5).status, 200);
}

// The framed transport the cluster's sync port (and the TCP API) runs on:
// the same bound with 1,000 idle connections, in-process.
TEST(IdleConnections, TransportServerAnswersWithin100ms) {
  RaiseOpenFiles(kIdlePerListener + 512);
  sync::EventLoop loop(1);
  sync::ServerOptions so;
  so.max_connections = 4096;
  so.max_connections_per_address = 512;
  so.idle_timeout = absl::Seconds(60);
  auto server = sync::Server::Start(
      &loop, so,
      [](sync::Frame f, sync::Responder r) { r.Reply(std::move(f.payload)); });
  ASSERT_TRUE(server.ok()) << server.status();
  Sockets idle;
  OpenIdle((*server)->port(), &idle);
  const auto start = Clock::now();
  while ((*server)->stats().connections_open.load() < kIdlePerListener &&
         SecondsSince(start) < 10) {
    ::usleep(10 * 1000);
  }
  EXPECT_EQ((*server)->stats().connections_open.load(), kIdlePerListener);
  sync::ClientOptions co;
  co.port = (*server)->port();
  sync::Client client(&loop, co);
  const double s = TimeWithOneRetry([&] {
    auto reply = client.CallSync(7, "ping", absl::Seconds(5));
    return reply.ok() && reply->payload == "ping";
  });
  EXPECT_LT(s, kBoundSeconds);
  std::printf("with %d idle connections: a framed call %.1f ms\n",
              kIdlePerListener, s * 1e3);
  client.Close();
  (*server)->Stop();
}

}  // namespace
}  // namespace latentd::testing
