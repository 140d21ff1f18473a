// Transport: request/reply, async replies, timeouts, reconnect with backoff,
// and bad frames (garbage, truncated, oversized) closing only their own
// connection.
#include "sync/transport/transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "sync/transport/frame.h"
#include "sync/transport/ports.h"
#include "tests/sync/transport_test_util.h"

namespace latentd::sync {
namespace {

constexpr uint32_t kEcho = 7;
constexpr uint32_t kLater = 8;  // replied from another thread after 50 ms
constexpr uint32_t kNever = 9;  // never replied
constexpr uint32_t kFail = 10;  // replied with an error

using testing::ClosedByPeer;
using testing::LogSink;

class TransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.max_frame_bytes = 1024;
    o.frame_timeout = absl::Milliseconds(300);
    o.log = log_.fn();
    auto server = Server::Start(&loop_, o, [this](Frame f, Responder r) {
      switch (f.type) {
        case kEcho:
          r.Reply(std::move(f.payload));
          break;
        case kLater:
          workers_.emplace_back([r, p = std::move(f.payload)] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            r.Reply(p + "!");
          });
          break;
        case kFail:
          r.Reply(absl::NotFoundError("no such key"));
          break;
        default:
          break;
      }
    });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void TearDown() override {
    server_->Stop();
    for (auto& t : workers_) t.join();
  }
  ClientOptions ClientOpts() {
    ClientOptions o;
    o.port = server_->port();
    o.log = log_.fn();
    return o;
  }

  // A raw socket to the server, for sending bytes the Client never would.
  int RawConnect() { return testing::RawConnect(server_->port()); }

  LogSink log_;
  EventLoop loop_{1};
  std::unique_ptr<Server> server_;
  std::vector<std::thread> workers_;  // only the loop thread appends
};

TEST_F(TransportTest, EchoAndAsyncReply) {
  Client client(&loop_, ClientOpts());
  auto r = client.CallSync(kEcho, "hello", absl::Seconds(2));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->type, kEcho | kReplyBit);
  EXPECT_EQ(r->payload, "hello");
  auto later = client.CallSync(kLater, "x", absl::Seconds(2));
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_EQ(later->payload, "x!");
  EXPECT_GT(client.stats().bytes_sent.load(), 0u);
  EXPECT_GT(server_->stats().bytes_received.load(), 0u);
}

TEST_F(TransportTest, PipelinedCallsMatchTheirReplies) {
  Client client(&loop_, ClientOpts());
  absl::Mutex mu;
  int ok = 0;
  const int n = 200;
  for (int i = 0; i < n; ++i) {
    client.Call(i % 2 ? kLater : kEcho, std::to_string(i), absl::Seconds(5),
                [&, i](absl::StatusOr<Frame> r) {
                  absl::MutexLock l(&mu);
                  std::string want = std::to_string(i) + (i % 2 ? "!" : "");
                  if (r.ok() && r->payload == want) ++ok;
                });
  }
  absl::MutexLock l(&mu);
  EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(
                                      +[](int* k) { return *k == 200; }, &ok),
                                  absl::Seconds(10)));
}

TEST_F(TransportTest, HandlerErrorAndTimeout) {
  Client client(&loop_, ClientOpts());
  auto r = client.CallSync(kFail, "", absl::Seconds(2));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "no such key");
  auto t = client.CallSync(kNever, "", absl::Milliseconds(100));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDeadlineExceeded);
  // The connection survives a timed-out call.
  EXPECT_TRUE(client.CallSync(kEcho, "a", absl::Seconds(2)).ok());
}

TEST_F(TransportTest, UnavailablePeerBacksOffThenReconnects) {
  const uint16_t port = server_->port();
  server_->Stop();
  ClientOptions o = ClientOpts();
  o.initial_backoff = absl::Milliseconds(200);
  Client client(&loop_, o);
  auto r = client.CallSync(kEcho, "a", absl::Seconds(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  // Within the backoff window a call fails fast, without connecting.
  const auto start = std::chrono::steady_clock::now();
  auto fast = client.CallSync(kEcho, "a", absl::Seconds(1));
  EXPECT_EQ(fast.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(fast.status().message().find("backing off"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(150));
  // A server comes back on the same port; after the backoff the client
  // reconnects.
  ServerOptions so;
  so.port = port;
  so.log = log_.fn();
  auto again = Server::Start(
      &loop_, so, [](Frame f, Responder r) { r.Reply(std::move(f.payload)); });
  ASSERT_TRUE(again.ok()) << again.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  auto back = client.CallSync(kEcho, "b", absl::Seconds(2));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->payload, "b");
}

TEST_F(TransportTest, LostConnectionFailsPendingCalls) {
  Client client(&loop_, ClientOpts());
  std::atomic<int> code{-1};
  client.Call(kNever, "", absl::Seconds(10), [&](absl::StatusOr<Frame> r) {
    code = static_cast<int>(r.status().code());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server_->Stop();
  for (int i = 0; i < 100 && code.load() < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(code.load(), static_cast<int>(absl::StatusCode::kUnavailable));
}

// Each bad frame closes its own connection and is logged; a client that
// was connected all along keeps getting answers.
TEST_F(TransportTest, BadFramesCloseOnlyTheirConnection) {
  Client good(&loop_, ClientOpts());
  ASSERT_TRUE(good.CallSync(kEcho, "before", absl::Seconds(2)).ok());

  {  // garbage
    int fd = RawConnect();
    const std::string junk = "\x01\x02garbage that is no frame at all....";
    ASSERT_EQ(::write(fd, junk.data(), junk.size()),
              static_cast<ssize_t>(junk.size()));
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  {  // an HTTP request (curl at the wrong port): a 400 that says where to go
    int fd = RawConnect();
    const std::string get = "GET /v1/Status HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::write(fd, get.data(), get.size()),
              static_cast<ssize_t>(get.size()));
    timeval tv{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    std::string answer;
    char buf[512];
    for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) {
      answer.append(buf, static_cast<size_t>(n));
    }
    EXPECT_EQ(answer.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << answer;
    EXPECT_NE(answer.find("--http address"), std::string::npos) << answer;
    ::close(fd);
  }
  {  // oversized: header announces 1 MiB against a 1 KiB limit
    int fd = RawConnect();
    const std::string big = EncodeFrame(kEcho, 1, std::string(2048, 'x'));
    ASSERT_GT(::write(fd, big.data(), kFrameHeaderSize), 0);
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  {  // truncated: half a payload, then the writer goes away
    int fd = RawConnect();
    const std::string f = EncodeFrame(kEcho, 1, std::string(100, 'y'));
    ASSERT_GT(::write(fd, f.data(), kFrameHeaderSize + 50), 0);
    ::shutdown(fd, SHUT_WR);
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  {  // stalled mid-frame past frame_timeout (300 ms)
    int fd = RawConnect();
    const std::string f = EncodeFrame(kEcho, 1, std::string(100, 'z'));
    ASSERT_GT(::write(fd, f.data(), kFrameHeaderSize + 10), 0);
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  auto after = good.CallSync(kEcho, "after", absl::Seconds(2));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->payload, "after");
  EXPECT_GE(server_->stats().connections_rejected.load(), 5u);
  EXPECT_TRUE(log_.WaitFor("HTTP request reached the framed protobuf port"));
  EXPECT_TRUE(log_.WaitFor("bad magic"));
  EXPECT_TRUE(log_.WaitFor("exceeds the limit"));
  EXPECT_TRUE(log_.WaitFor("truncated frame"));
  EXPECT_TRUE(log_.WaitFor("stalled"));
}

// A request over the server's limit (1 KiB) but not the client's: the
// server reads and drops the payload and answers why, so the caller gets
// the limit, not a reset, and then closes the connection.
TEST_F(TransportTest, OversizedRequestGetsTheServersReason) {
  for (const size_t size : {size_t{2048}, size_t{3} << 20}) {
    Client client(&loop_, ClientOpts());
    auto r = client.CallSync(kEcho, std::string(size, 'o'), absl::Seconds(5));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted)
        << r.status();
    EXPECT_NE(r.status().message().find(absl::StrCat(
                  "payload of ", size, " bytes exceeds the limit of 1024")),
              std::string::npos)
        << r.status();
  }
  EXPECT_TRUE(log_.WaitFor("exceeds the limit"));
  Client client(&loop_, ClientOpts());
  auto after = client.CallSync(kEcho, "after", absl::Seconds(5));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->payload, "after");
}

TEST_F(TransportTest, OversizedRequestIsRefusedLocally) {
  Client client(&loop_, ClientOpts());
  ClientOptions o = ClientOpts();
  o.max_frame_bytes = 10;
  Client small(&loop_, o);
  auto r = small.CallSync(kEcho, std::string(11, 'a'), absl::Seconds(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SplitHostPort, SplitsAtTheLastColonAndChecksThePort) {
  std::string host;
  uint16_t port = 1;
  ASSERT_TRUE(SplitHostPort("127.0.0.1:0", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(SplitHostPort("::1:65535", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 65535);
  for (const char* bad :
       {"localhost", ":80", "h:", "h:65536", "h:-1", "h:8x"}) {
    absl::Status s = SplitHostPort(bad, &host, &port);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find(bad), std::string::npos) << s;
  }
}

// A port kept across restarts is drawn below the ephemeral range, where
// no outgoing connection can hold it when the process comes back; a plain
// port 0 is the kernel's, from that range.
TEST(ServerPort, ADurablePortIsDrawnBelowTheEphemeralRange) {
  const int ephemeral = FirstEphemeralPort();
  if (ephemeral - kFirstDurablePort < 1000) {
    GTEST_SKIP() << "the ephemeral range starts at " << ephemeral;
  }
  EventLoop loop(1);
  const Handler echo = [](Frame f, Responder r) {
    r.Reply(std::move(f.payload));
  };
  std::vector<std::unique_ptr<Server>> servers;
  for (int i = 0; i < 8; ++i) {
    ServerOptions o;
    o.durable_port = true;
    auto server = Server::Start(&loop, o, echo);
    ASSERT_TRUE(server.ok()) << server.status();
    EXPECT_GE((*server)->port(), kFirstDurablePort);
    EXPECT_LT((*server)->port(), ephemeral);
    servers.push_back(std::move(*server));
  }
  auto plain = Server::Start(&loop, ServerOptions{}, echo);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_GE((*plain)->port(), ephemeral);
  ClientOptions co;
  co.port = servers.back()->port();
  Client client(&loop, co);
  auto r = client.CallSync(kEcho, "kept", absl::Seconds(5));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->payload, "kept");
}

TEST(FrameTest, HeaderRoundTripAndValidation) {
  const std::string f = EncodeFrame(42, 0x0123456789abcdefull, "abc");
  auto h = DecodeFrameHeader(f.data(), 100);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->type, 42u);
  EXPECT_EQ(h->request_id, 0x0123456789abcdefull);
  EXPECT_EQ(h->payload_size, 3u);
  EXPECT_EQ(DecodeFrameHeader(f.data(), 2).status().code(),
            absl::StatusCode::kResourceExhausted);
  std::string bad = f;
  bad[0] = 'X';
  EXPECT_EQ(DecodeFrameHeader(bad.data(), 100).status().code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status s = DecodeStatus(EncodeStatus(absl::AbortedError("m")));
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(s.message(), "m");
  EXPECT_FALSE(DecodeStatus("ab").ok());
}

}  // namespace
}  // namespace latentd::sync
