// HttpServer's answers go out as the socket takes them, never on a worker
// that waits for a client to read:
//   - 200 clients (4 workers) each ask for a 2 MiB answer and never read;
//     a fresh connection's GET /healthz answers within 100 ms throughout;
//   - a client that reads slowly gets every answer whole, byte-exact and
//     in order, plain and over TLS, while another client is served;
//   - a client that stops reading is dropped after write_timeout without
//     progress, counted in latentd_connections_timed_out_total.
//   - a client that sends a body over the limit whole before it reads (as
//     httplib's client and Python's http.client do) reads the 413.
// Every socket is on 127.0.0.1. The clients' receive buffers are 4 KiB and
// the server's send buffers 64 KiB (loopback would otherwise grow them to
// take megabytes), so an answer is 30 times what the buffers hold.
#include "service/internal/http_server.h"

#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "service/metrics.h"
#include "sync/transport/tls.h"
#include "tests/service/gateway_test_util.h"
#include "tests/sync/test_pki.h"

namespace latentd::testing {
namespace {

using service::internal::HttpServer;
using service::internal::HttpServerOptions;
using Clock = std::chrono::steady_clock;

constexpr size_t kBigBytes = size_t{2} << 20;
constexpr int kClientReceiveBuffer = 4 << 10;
constexpr int kServerSendBuffer = 64 << 10;
constexpr double kBoundSeconds = 0.100;

// kBigBytes that no shifted copy of itself matches.
const std::string& Big() {
  static const std::string* big = [] {
    auto* s = new std::string(kBigBytes, '\0');
    for (size_t i = 0; i < s->size(); ++i) {
      (*s)[i] = static_cast<char>('a' + (i * 7 + i / 4093) % 26);
    }
    return s;
  }();
  return *big;
}

// httplib's request handling without its connection loop, as the gateway.
class Router : public httplib::Server {
 public:
  Router() {
    Get("/big", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(Big(), "application/octet-stream");
      big_answers.fetch_add(1, std::memory_order_relaxed);
    });
    Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
  }
  bool Serve(httplib::Stream& stream, bool close, bool* closed) {
    const int size = kServerSendBuffer;
    ::setsockopt(stream.socket(), SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    return process_request(stream, close, *closed, nullptr);
  }
  std::atomic<int> big_answers{0};
};

bool SendAll(int fd, const std::string& bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
         static_cast<ssize_t>(bytes.size());
}

// The bodies of the answers in `bytes` (each with a Content-Length), in
// order; an answer not 200 or cut short ends the list.
std::vector<std::string> Bodies(absl::string_view bytes) {
  std::vector<std::string> bodies;
  for (;;) {
    const size_t head = bytes.find("\r\n\r\n");
    if (head == absl::string_view::npos ||
        !absl::StartsWith(bytes, "HTTP/1.1 200 ")) {
      return bodies;
    }
    const size_t at = bytes.find("Content-Length: ");
    const size_t eol = bytes.find("\r\n", at);
    size_t length = 0;
    if (at > head ||
        !absl::SimpleAtoi(bytes.substr(at + 16, eol - at - 16), &length) ||
        bytes.size() < head + 4 + length) {
      return bodies;
    }
    bodies.emplace_back(bytes.substr(head + 4, length));
    bytes.remove_prefix(head + 4 + length);
  }
}

// Three requests in one write: a big answer, a small one, a big one that
// closes the connection.
const char kThreeRequests[] =
    "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"
    "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    "GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

class HttpServerTest : public ::testing::Test {
 protected:
  // The clients' own writes (OpenSSL's socket BIO, write(2)) must not
  // kill the test when the server has closed.
  static void SetUpTestSuite() { ::signal(SIGPIPE, SIG_IGN); }
  // Start over TLS, with a certificate from a test CA (no client
  // verifies it: the tests check bytes, not trust).
  void StartTls(int threads, absl::Duration write_timeout) {
    pki_ = std::make_unique<sync::testing::TestPki>();
    ASSERT_TRUE(pki_->ok());
    auto tls = sync::TlsContext::ForServer(pki_->path("server.pem"),
                                           pki_->path("server.key"));
    ASSERT_TRUE(tls.ok()) << tls.status();
    Start(threads, write_timeout, *tls);
  }
  void Start(int threads, absl::Duration write_timeout,
             std::shared_ptr<const sync::TlsContext> tls = nullptr) {
    HttpServerOptions o;
    o.threads = threads;
    o.write_timeout = write_timeout;
    o.idle_timeout = absl::Seconds(30);
    o.tls = std::move(tls);
    o.limits.max_body_bytes = max_body_bytes_;
    auto s = HttpServer::Start(
        o,
        [this](httplib::Stream& stream, bool close, bool* closed) {
          return router_.Serve(stream, close, closed);
        },
        &metrics_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    port_ = server_->port();
  }
  double Open() {
    return metrics_.AddGauge("latentd_connections", "", R"(listener="http")")
        ->value();
  }
  uint64_t TimedOut() {
    return metrics_
        .AddCounter("latentd_connections_timed_out_total", "",
                    R"(listener="http")")
        ->value();
  }
  // Polls `done` every 10 ms for up to `seconds`.
  static bool WaitUntil(const std::function<bool()>& done, double seconds) {
    const auto start = Clock::now();
    while (!done()) {
      if (SecondsSince(start) > seconds) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  // A client connection with a small receive buffer, closed at the end;
  // -1 on failure.
  int Connect() {
    const int fd = ConnectLoopback(port_, kClientReceiveBuffer);
    if (fd >= 0) clients_.fds.push_back(fd);
    return fd;
  }
  // GET /healthz on a fresh connection, answered 200 within 2 s.
  bool Healthz() { return HttpGet(port_, "/healthz", 2).status == 200; }

  // Reads the answers to kThreeRequests through `read` (bytes read, <= 0
  // at the end) 4 KiB at a time, a millisecond apart and with a pause of
  // half the write timeout every 400 reads, timing a GET /healthz every
  // 100 reads (`healthz`); then checks them.
  void ReadSlowlyAndCheck(const char* what,
                          const std::function<int(char*, int)>& read,
                          const std::function<bool()>& healthz) {
    std::string got;
    char buf[4 << 10];
    double worst = 0;
    const auto start = Clock::now();
    for (int i = 0;; ++i) {
      const int n = read(buf, sizeof(buf));
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
      std::this_thread::sleep_for(
          std::chrono::milliseconds(i % 400 == 200 ? 500 : 1));
      if (i % 100 == 0) {
        worst = std::max(worst, TimeWithOneRetry(healthz));
      }
    }
    std::printf(
        "a slow %s reader got %zu bytes in %.1f s; worst GET /healthz "
        "meanwhile %.1f ms\n",
        what, got.size(), SecondsSince(start), worst * 1e3);
    const std::vector<std::string> bodies = Bodies(got);
    ASSERT_EQ(bodies.size(), 3u) << got.substr(0, 200);
    EXPECT_TRUE(bodies[0] == Big());
    EXPECT_EQ(bodies[1], "ok\n");
    EXPECT_TRUE(bodies[2] == Big());
    EXPECT_LT(worst, kBoundSeconds);
    EXPECT_EQ(TimedOut(), 0u);
  }

  size_t max_body_bytes_ =
      service::internal::HttpRequestLimits{}.max_body_bytes;
  service::MetricsRegistry metrics_;
  Router router_;
  std::unique_ptr<sync::testing::TestPki> pki_;  // outlives server_
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  Sockets clients_;
};

TEST_F(HttpServerTest, ClientsThatDoNotReadHoldNoWorker) {
  constexpr int kClients = 200;
  Start(4, absl::Seconds(60));
  for (int i = 0; i < kClients; ++i) {
    const int fd = Connect();
    ASSERT_GE(fd, 0) << "client " << i << ": " << std::strerror(errno);
    ASSERT_TRUE(SendAll(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"));
  }
  // Every answer is made (and waits for its client); a worker that waited
  // on its client would make four and hold them until the 60 s write
  // timeout. 30 s leaves room for a TSan build on two busy cores.
  const bool all_made =
      WaitUntil([&] { return router_.big_answers.load() == kClients; }, 30);
  double worst = 0;
  int probes = 0;
  const auto start = Clock::now();
  while (SecondsSince(start) < 5) {
    worst = std::max(worst, TimeWithOneRetry([&] { return Healthz(); }));
    ++probes;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::printf(
      "%d clients not reading a %zu-byte answer each, 4 workers: %d answers "
      "made; worst GET /healthz of %d over 5 s: %.1f ms\n",
      kClients, kBigBytes, router_.big_answers.load(), probes, worst * 1e3);
  EXPECT_TRUE(all_made) << router_.big_answers.load() << " answers made";
  EXPECT_LT(worst, kBoundSeconds);
  EXPECT_EQ(Open(), kClients);  // all still waiting, none timed out
  EXPECT_EQ(TimedOut(), 0u);
}

TEST_F(HttpServerTest, SlowReaderGetsEveryAnswerWhole) {
  // One worker: the other client is served while the slow one reads.
  Start(1, absl::Seconds(1));
  const int fd = Connect();
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_TRUE(SendAll(fd, kThreeRequests));
  ReadSlowlyAndCheck(
      "plain",
      [fd](char* buf, int size) {
        return static_cast<int>(::recv(fd, buf, static_cast<size_t>(size), 0));
      },
      [this] { return Healthz(); });
}

TEST_F(HttpServerTest, SlowReaderGetsEveryAnswerWholeOverTls) {
  StartTls(1, absl::Seconds(1));
  const int fd = Connect();
  ASSERT_GE(fd, 0) << std::strerror(errno);
  // The test checks bytes, not trust: no verification.
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(
      SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  SSL_set_fd(ssl.get(), fd);
  ASSERT_EQ(SSL_connect(ssl.get()), 1);
  const int sent =
      SSL_write(ssl.get(), kThreeRequests, sizeof(kThreeRequests) - 1);
  ASSERT_EQ(sent, static_cast<int>(sizeof(kThreeRequests) - 1));
  ReadSlowlyAndCheck(
      "TLS",
      [&ssl](char* buf, int size) { return SSL_read(ssl.get(), buf, size); },
      [&] { return HttpsHealthz(ctx.get(), port_, 2); });
}

TEST_F(HttpServerTest, ClientThatStopsReadingIsDroppedAfterTheWriteTimeout) {
  Start(1, absl::Seconds(1));
  const int fd = Connect();
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_TRUE(SendAll(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(WaitUntil([&] { return router_.big_answers.load() == 1; }, 5));
  const auto start = Clock::now();
  EXPECT_TRUE(Healthz());  // the one worker is free meanwhile
  ASSERT_TRUE(WaitUntil([&] { return Open() == 0; }, 10));
  const double dropped = SecondsSince(start);
  std::printf(
      "a client not reading was dropped after %.2f s (write "
      "timeout 1 s)\n",
      dropped);
  EXPECT_GT(dropped, 0.8);
  EXPECT_LT(dropped, 3.0);
  EXPECT_EQ(TimedOut(), 1u);
  // What it reads now ends short of the answer.
  std::string got;
  char buf[16 << 10];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) {
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_LT(got.size(), kBigBytes);
  EXPECT_TRUE(Healthz());
}

TEST_F(HttpServerTest, BodyOverTheLimitSentWholeStillReads413) {
  max_body_bytes_ = 1 << 10;
  Start(2, absl::Seconds(5));
  const size_t body = size_t{3} << 20;
  const int fd = Connect();
  ASSERT_GE(fd, 0) << std::strerror(errno);
  // The head and the whole body before any read: a server that closed
  // after its 413 would reset this send.
  ASSERT_TRUE(SendAll(fd, absl::StrCat("POST /big HTTP/1.1\r\nHost: x\r\n"
                                       "Content-Length: ",
                                       body, "\r\n\r\n") +
                              std::string(body, 'a')))
      << std::strerror(errno);
  std::string got;
  char buf[4 << 10];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) {
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_TRUE(absl::StartsWith(got, "HTTP/1.1 413 ")) << got;
  EXPECT_TRUE(absl::StrContains(got, "over the limit of 1024 bytes")) << got;
  EXPECT_EQ(metrics_
                .AddCounter("latentd_http_requests_refused_total", "",
                            R"(reason="body")")
                ->value(),
            1u);
  EXPECT_TRUE(Healthz());
}

TEST_F(HttpServerTest, TlsClientGoneMidAnswerRaisesNoSigpipe) {
  StartTls(2, absl::Seconds(5));
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(
      SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  // With SIGPIPE's default action, a server write to a closed connection
  // that raised it would end this process.
  ::signal(SIGPIPE, SIG_DFL);
  const int kClients = 8;
  for (int i = 0; i < kClients; ++i) {
    const int fd = Connect();
    ASSERT_GE(fd, 0) << std::strerror(errno);
    std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
    SSL_set_fd(ssl.get(), fd);
    ASSERT_EQ(SSL_connect(ssl.get()), 1);
    const std::string get = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(SSL_write(ssl.get(), get.data(), static_cast<int>(get.size())),
              static_cast<int>(get.size()));
    // Closed before the answer: the server's next writes meet a reset.
    ::close(fd);
  }
  ASSERT_TRUE(
      WaitUntil([&] { return router_.big_answers.load() == kClients; }, 10));
  ASSERT_TRUE(WaitUntil([&] { return Open() == 0; }, 10));
  ::signal(SIGPIPE, SIG_IGN);
  EXPECT_TRUE(HttpsHealthz(ctx.get(), port_, 2));
}

}  // namespace
}  // namespace latentd::testing
