// The framed transport with TLS (sync/transport/tls.h) and its connection
// hygiene (caps per server and per client address, the idle timeout),
// in-process on 127.0.0.1, and the sync port's mutual TLS. The test CAs and
// certificates are made by the openssl CLI (tests/sync/test_pki.h).
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "sync/transport/frame.h"
#include "sync/transport/tls.h"
#include "sync/transport/transport.h"
#include "tests/sync/test_pki.h"
#include "tests/sync/transport_test_util.h"

namespace latentd::sync {
namespace {

constexpr uint32_t kEcho = 7;
using testing::ClosedByPeer;
using testing::LogSink;
using testing::RawConnect;
using Pki = testing::TestPki;

class TransportTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new Pki; }
  static void TearDownTestSuite() { delete pki_; }

  void SetUp() override { ASSERT_TRUE(pki_->ok()) << "openssl failed"; }

  std::unique_ptr<Server> Start(ServerOptions o) {
    o.log = log_.fn();
    auto s = Server::Start(
        &loop_, o, [](Frame f, Responder r) { r.Reply(std::move(f.payload)); });
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // A TLS server that also wants the cluster key's handshake.
  std::unique_ptr<Server> StartKeyed() {
    ServerOptions o;
    o.tls = ServerTls();
    o.auth = std::make_shared<PeerAuth>(
        PeerAuth{std::string(32, 'k'), "server-node"});
    return Start(o);
  }
  std::shared_ptr<const TlsContext> ServerTls() {
    auto t = TlsContext::ForServer(pki_->path("server.pem"),
                                   pki_->path("server.key"));
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : nullptr;
  }
  std::shared_ptr<const TlsContext> ClientTls(const std::string& ca) {
    auto t = TlsContext::ForClient(pki_->path(ca));
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : nullptr;
  }
  absl::StatusOr<Frame> Echo(uint16_t port,
                             std::shared_ptr<const TlsContext> tls,
                             std::shared_ptr<const PeerAuth> auth = nullptr,
                             const std::string& host = "127.0.0.1") {
    ClientOptions o;
    o.host = host;
    o.port = port;
    o.tls = std::move(tls);
    o.auth = std::move(auth);
    o.log = log_.fn();
    Client c(&loop_, o);
    return c.CallSync(kEcho, "hello", absl::Seconds(5));
  }

  static Pki* pki_;
  LogSink log_;
  EventLoop loop_{2};
};
Pki* TransportTlsTest::pki_ = nullptr;

TEST_F(TransportTlsTest, VerifiedClientTalks) {
  ServerOptions o;
  o.tls = ServerTls();
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  auto reply = Echo(server->port(), ClientTls("ca.pem"));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->payload, "hello");
}

// Frames of every size up to tens of MiB cross the TLS stream (records of
// 16 KiB, partial reads and writes on the non-blocking socket) intact
// both ways, also several at once on one connection, with the cluster key's
// frame MACs on.
TEST_F(TransportTlsTest, LargeFramesCrossIntactBothWays) {
  auto server = StartKeyed();
  ASSERT_NE(server, nullptr);
  ClientOptions co;
  co.port = server->port();
  co.tls = ClientTls("ca.pem");
  co.auth = std::make_shared<PeerAuth>(PeerAuth{std::string(32, 'k'), "node"});
  co.log = log_.fn();
  Client c(&loop_, co);
  std::mt19937_64 rng(7);
  auto payload = [&rng](size_t n) {
    std::string p(n, '\0');
    for (size_t i = 0; i < n; i += 8) {
      const uint64_t r = rng();
      std::memcpy(p.data() + i, &r, std::min<size_t>(8, n - i));
    }
    return p;
  };
  for (size_t n : {size_t{1}, size_t{16383}, size_t{16384}, size_t{16385},
                   size_t{(1 << 20) + 7}, size_t{40} << 20}) {
    const std::string sent = payload(n);
    auto reply = c.CallSync(kEcho, sent, absl::Seconds(60));
    ASSERT_TRUE(reply.ok()) << n << " bytes: " << reply.status();
    EXPECT_TRUE(reply->payload == sent) << n << " bytes came back changed";
  }
  // Four 4 MiB frames in flight at once: their writes interleave.
  constexpr int kAtOnce = 4;
  std::vector<std::string> sent;
  for (int i = 0; i < kAtOnce; ++i) sent.push_back(payload((4 << 20) + i));
  absl::Mutex mu;
  std::vector<absl::StatusOr<Frame>> replies(kAtOnce,
                                             absl::UnknownError("pending"));
  int done = 0;
  for (int i = 0; i < kAtOnce; ++i) {
    c.Call(kEcho, sent[i], absl::Seconds(60), [&, i](absl::StatusOr<Frame> r) {
      absl::MutexLock l(&mu);
      replies[i] = std::move(r);
      ++done;
    });
  }
  {
    absl::MutexLock l(&mu);
    mu.Await(absl::Condition(
        +[](int* d) { return *d == kAtOnce; }, &done));
  }
  for (int i = 0; i < kAtOnce; ++i) {
    ASSERT_TRUE(replies[i].ok()) << "call " << i << ": " << replies[i].status();
    EXPECT_TRUE(replies[i]->payload == sent[i]) << "call " << i << " changed";
  }
}

TEST_F(TransportTlsTest, ClusterKeyHandshakeRunsInsideTls) {
  auto server = StartKeyed();
  ASSERT_NE(server, nullptr);
  auto reply =
      Echo(server->port(), ClientTls("ca.pem"),
           std::make_shared<PeerAuth>(PeerAuth{std::string(32, 'k'), "node"}));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->payload, "hello");
}

TEST_F(TransportTlsTest, CertificateOfAnotherCaIsRefused) {
  ServerOptions o;
  o.tls = ServerTls();
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  auto reply = Echo(server->port(), ClientTls("other-ca.pem"));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(reply.status().message().find("certificate does not verify"),
            std::string::npos)
      << reply.status();
  EXPECT_NE(reply.status().message().find("other-ca.pem"), std::string::npos);
}

TEST_F(TransportTlsTest, CertificateWithoutTheHostNameIsRefused) {
  ServerOptions o;
  o.tls = ServerTls();
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  // The right CA, but the certificate names IP 127.0.0.1, not "localhost".
  auto reply = Echo(server->port(), ClientTls("ca.pem"), nullptr, "localhost");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kFailedPrecondition)
      << reply.status();
  EXPECT_NE(reply.status().message().find("for 'localhost'"), std::string::npos)
      << reply.status();
}

TEST_F(TransportTlsTest, PlaintextClientIsToldThePortSpeaksTls) {
  ServerOptions o;
  o.tls = ServerTls();
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  const auto start = std::chrono::steady_clock::now();
  auto reply = Echo(server->port(), nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(reply.status().message().find("this port speaks TLS"),
            std::string::npos)
      << reply.status();
}

TEST_F(TransportTlsTest, TlsClientAtAPlaintextPortFailsClearly) {
  auto server = Start(ServerOptions{});
  ASSERT_NE(server, nullptr);
  auto reply = Echo(server->port(), ClientTls("ca.pem"));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(reply.status().message().find("TLS handshake with"),
            std::string::npos)
      << reply.status();
}

TEST_F(TransportTlsTest, BadCertificateFilesNameThemselves) {
  auto no_cert = TlsContext::ForServer(pki_->path("missing.pem"),
                                       pki_->path("server.key"));
  ASSERT_FALSE(no_cert.ok());
  EXPECT_NE(no_cert.status().message().find("missing.pem"), std::string::npos);
  auto wrong_key =
      TlsContext::ForServer(pki_->path("server.pem"), pki_->path("ca.key"));
  ASSERT_FALSE(wrong_key.ok());
  EXPECT_NE(wrong_key.status().message().find("does not match"),
            std::string::npos)
      << wrong_key.status();
  auto bad_ca = TlsContext::ForClient(pki_->path("server.key"));
  EXPECT_FALSE(bad_ca.ok());
}

// The sync port's mutual TLS: a client must show a certificate from the
// server's CA; one without, or with another CA's, never gets a frame in.
TEST_F(TransportTlsTest, MutualTlsWantsAClientCertificateFromTheCa) {
  const MutualTlsFiles node{pki_->path("server.pem"), pki_->path("server.key"),
                            pki_->path("ca.pem")};
  auto server_tls = TlsContext::ForMutualServer(node);
  ASSERT_TRUE(server_tls.ok()) << server_tls.status();
  EXPECT_TRUE((*server_tls)->is_mutual());
  ServerOptions o;
  o.tls = *server_tls;
  auto auth =
      std::make_shared<PeerAuth>(PeerAuth{"a-cluster-key-0123456", "n"});
  o.auth = auth;
  auto server = Start(o);
  ASSERT_NE(server, nullptr);

  auto member_tls = TlsContext::ForMutualClient(node);
  ASSERT_TRUE(member_tls.ok()) << member_tls.status();
  auto member = Echo(server->port(), *member_tls, auth);
  ASSERT_TRUE(member.ok()) << member.status();
  EXPECT_EQ(member->payload, "hello");

  // No client certificate (it verifies the server all the same).
  auto none = Echo(server->port(), ClientTls("ca.pem"), auth);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnavailable)
      << none.status();
  // A certificate from another CA.
  auto stranger_tls = TlsContext::ForMutualClient({pki_->path("stranger.pem"),
                                                   pki_->path("stranger.key"),
                                                   pki_->path("ca.pem")});
  ASSERT_TRUE(stranger_tls.ok()) << stranger_tls.status();
  auto stranger = Echo(server->port(), *stranger_tls, auth);
  ASSERT_FALSE(stranger.ok());
  EXPECT_NE(stranger.status().message().find("refused this node's TLS"),
            std::string::npos)
      << stranger.status();
  EXPECT_EQ(server->stats().frames_received.load(), 1u);  // the member's
  EXPECT_TRUE(log_.WaitFor("the client presented no certificate"));
  EXPECT_TRUE(log_.WaitFor("the client's certificate does not verify"));

  // Missing or unusable files name themselves.
  auto partial = TlsContext::ForMutualServer(
      {pki_->path("server.pem"), pki_->path("server.key"), ""});
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("--cluster-tls-ca"),
            std::string::npos);
  auto bad_ca = TlsContext::ForMutualClient({pki_->path("server.pem"),
                                             pki_->path("server.key"),
                                             pki_->path("missing-ca.pem")});
  ASSERT_FALSE(bad_ca.ok());
  EXPECT_NE(bad_ca.status().message().find("missing-ca.pem"),
            std::string::npos);
}

// Hygiene, without TLS: the caps close a connection at once and count it;
// an idle connection is closed after idle_timeout and its client reconnects.
TEST_F(TransportTlsTest, CapsAndIdleTimeout) {
  ServerOptions o;
  o.max_connections = 3;
  o.max_connections_per_address = 2;
  o.idle_timeout = absl::Milliseconds(300);
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  const int a = RawConnect(server->port());
  const int b = RawConnect(server->port());
  const int c = RawConnect(server->port());  // a third from 127.0.0.1
  EXPECT_TRUE(ClosedByPeer(c));
  EXPECT_EQ(server->stats().connections_refused_per_address.load(), 1u);
  // Idle: closed after the timeout, counted.
  EXPECT_TRUE(ClosedByPeer(a));
  EXPECT_TRUE(ClosedByPeer(b));
  EXPECT_EQ(server->stats().connections_idle_closed.load(), 2u);
  for (int fd : {a, b, c}) ::close(fd);
  // A client whose connection went idle reconnects on its next call.
  ClientOptions co;
  co.port = server->port();
  Client client(&loop_, co);
  ASSERT_TRUE(client.CallSync(kEcho, "1", absl::Seconds(5)).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  auto again = client.CallSync(kEcho, "2", absl::Seconds(5));
  if (!again.ok()) again = client.CallSync(kEcho, "2", absl::Seconds(5));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->payload, "2");
}

TEST_F(TransportTlsTest, TotalCapRefusesAtOnce) {
  ServerOptions o;
  o.max_connections = 2;
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  const int a = RawConnect(server->port());
  const int b = RawConnect(server->port());
  const int c = RawConnect(server->port());
  EXPECT_TRUE(ClosedByPeer(c));
  EXPECT_EQ(server->stats().connections_refused_max.load(), 1u);
  EXPECT_EQ(server->stats().connections_open.load(), 2);
  for (int fd : {a, b, c}) ::close(fd);
}

}  // namespace
}  // namespace latentd::sync
