// Issue 29, defect 2, on the framed transport (the sync port and the TCP
// API run on it), in-process: a frame's memory follows the bytes that
// arrived, never its header's announcement, and before its handshakes a
// connection holds a small fixed buffer:
//   - 1,000 connections each announce a 64 MiB frame and send nothing
//     more: RSS grows by less than 64 MB and a real call answers within
//     100 ms (plain, and with the cluster key and mutual TLS, where the
//     headers arrive in plaintext as the attacker sent them);
//   - the listener's budget for request bytes in flight closes a
//     connection whose frame would take more, counted in the stats;
//   - frames much larger than the first read chunk still arrive whole.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sync/transport/frame.h"
#include "sync/transport/peer_auth.h"
#include "sync/transport/tls.h"
#include "sync/transport/transport.h"
#include "tests/sync/test_pki.h"

namespace latentd::sync {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kConns = 1000;
constexpr double kBoundSeconds = 0.100;
constexpr double kMaxGrowthBytes = 64 << 20;

double Seconds(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void RaiseOpenFiles(rlim_t want) {
  rlimit l{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &l), 0);
  if (l.rlim_cur >= want) return;
  ASSERT_GE(l.rlim_max, want) << "hard open-files limit too low";
  l.rlim_cur = want;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &l), 0);
}

double RssBytes() {
  std::ifstream in("/proc/self/statm");
  long long size = 0, resident = 0;
  in >> size >> resident;
  return static_cast<double>(resident) * ::sysconf(_SC_PAGESIZE);
}

struct Sockets {
  ~Sockets() {
    for (int fd : fds) ::close(fd);
  }
  std::vector<int> fds;
};

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string Header(uint32_t payload) {
  FrameHeader h;
  h.payload_size = payload;
  h.type = 7;
  h.request_id = 1;
  std::string out(kFrameHeaderSize, '\0');
  EncodeFrameHeader(h, out.data());
  return out;
}

// kConns connections each sending `bytes`, then nothing.
void Announce(int port, const std::string& bytes, Sockets* s) {
  for (int i = 0; i < kConns; ++i) {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    s->fds.push_back(fd);
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
}

void Echo(Frame f, Responder r) { r.Reply(std::move(f.payload)); }

// The best of two calls' seconds.
double TimeCall(Client* client) {
  double best = 1e9;
  for (int i = 0; i < 2 && best >= kBoundSeconds; ++i) {
    const auto start = Clock::now();
    auto reply = client->CallSync(7, "ping", absl::Seconds(5));
    EXPECT_TRUE(reply.ok()) << reply.status();
    if (reply.ok()) best = std::min(best, Seconds(start));
  }
  return best;
}

TEST(TransportBounds, AnnouncedFramesTakeNoMemory) {
  RaiseOpenFiles(kConns + 512);
  EventLoop loop(1);
  ServerOptions so;
  so.max_connections = 4096;
  so.max_connections_per_address = 4096;
  so.log = [](std::string_view) {};
  auto server = Server::Start(&loop, so, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  ClientOptions co;
  co.port = (*server)->port();
  Client client(&loop, co);
  ASSERT_TRUE(client.CallSync(7, "warm", absl::Seconds(5)).ok());
  const double before = RssBytes();
  Sockets held;
  Announce((*server)->port(), Header(kDefaultMaxFrameBytes), &held);
  const auto start = Clock::now();
  while ((*server)->stats().connections_open.load() < kConns + 1 &&
         Seconds(start) < 10) {
    ::usleep(10 * 1000);
  }
  ::usleep(300 * 1000);
  const double grown = RssBytes() - before;
  const double call = TimeCall(&client);
  std::printf(
      "%d connections announcing %u-byte frames: RSS +%.1f MB, a "
      "call %.1f ms\n",
      kConns, kDefaultMaxFrameBytes, grown / 1e6, call * 1e3);
  EXPECT_LT(grown, kMaxGrowthBytes);
  EXPECT_LT(call, kBoundSeconds);
  client.Close();
  (*server)->Stop();
}

TEST(TransportBounds, PlaintextAtMutualTlsPortTakesNoMemory) {
  RaiseOpenFiles(kConns + 512);
  testing::TestPki pki;
  ASSERT_TRUE(pki.ok());
  const MutualTlsFiles node{pki.path("server.pem"), pki.path("server.key"),
                            pki.path("ca.pem")};
  auto server_tls = TlsContext::ForMutualServer(node);
  auto client_tls = TlsContext::ForMutualClient(node);
  ASSERT_TRUE(server_tls.ok() && client_tls.ok());
  EventLoop loop(1);
  ServerOptions so;
  so.max_connections = 4096;
  so.max_connections_per_address = 4096;
  so.tls = *server_tls;
  so.auth = std::make_shared<PeerAuth>(PeerAuth{"a-cluster-key-0123456", "s"});
  so.log = [](std::string_view) {};
  auto server = Server::Start(&loop, so, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  ClientOptions co;
  co.port = (*server)->port();
  co.tls = *client_tls;
  co.auth = std::make_shared<PeerAuth>(PeerAuth{"a-cluster-key-0123456", "c"});
  Client client(&loop, co);
  ASSERT_TRUE(client.CallSync(7, "warm", absl::Seconds(5)).ok());
  const double before = RssBytes();
  Sockets held;
  Announce((*server)->port(), Header(kDefaultMaxFrameBytes), &held);
  ::usleep(500 * 1000);
  const double grown = RssBytes() - before;
  const double call = TimeCall(&client);
  std::printf(
      "%d plaintext %u-byte frame headers at a mutual-TLS port: RSS "
      "+%.1f MB, a call %.1f ms\n",
      kConns, kDefaultMaxFrameBytes, grown / 1e6, call * 1e3);
  EXPECT_LT(grown, kMaxGrowthBytes);
  EXPECT_LT(call, kBoundSeconds);
  client.Close();
  (*server)->Stop();
}

TEST(TransportBounds, BudgetForBytesInFlightClosesTheFrameOverIt) {
  EventLoop loop(1);
  ServerOptions so;
  so.max_request_bytes_in_flight = 1 << 20;
  so.log = [](std::string_view) {};
  auto server = Server::Start(&loop, so, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  // Two connections each send 700 KiB of a 900 KiB frame: the second
  // passes the 1 MiB budget and is closed; the first goes on.
  const std::string part(700 << 10, 'x');
  Sockets s;
  for (int i = 0; i < 2; ++i) {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0);
    s.fds.push_back(fd);
    const std::string bytes = Header(900 << 10) + part;
    ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    ::usleep(200 * 1000);
  }
  const auto start = Clock::now();
  while ((*server)->stats().frames_over_budget.load() < 1 &&
         Seconds(start) < 5) {
    ::usleep(10 * 1000);
  }
  EXPECT_EQ((*server)->stats().frames_over_budget.load(), 1u);
  // The first one finishes its frame and gets its echo.
  const std::string rest((900 << 10) - (700 << 10), 'x');
  ASSERT_EQ(::send(s.fds[0], rest.data(), rest.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(rest.size()));
  std::string reply;
  char buf[64 << 10];
  while (reply.size() < kFrameHeaderSize + (900 << 10)) {
    const ssize_t n = ::recv(s.fds[0], buf, sizeof(buf), 0);
    ASSERT_GT(n, 0);
    reply.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(reply.substr(kFrameHeaderSize), part + rest);
  EXPECT_LE((*server)->stats().request_bytes_in_flight.load(), 0);
  (*server)->Stop();
}

TEST(TransportBounds, LargeFramesArriveWholeAsTheyGrow) {
  EventLoop loop(2);
  auto server = Server::Start(&loop, ServerOptions{}, Echo);
  ASSERT_TRUE(server.ok()) << server.status();
  ClientOptions co;
  co.port = (*server)->port();
  Client client(&loop, co);
  for (const size_t size : {size_t{0}, size_t{4095}, size_t{4097},
                            size_t{1} << 20, (size_t{24} << 20) + 3}) {
    std::string payload(size, '\0');
    for (size_t i = 0; i < size; ++i) payload[i] = static_cast<char>(i * 7);
    auto reply = client.CallSync(7, payload, absl::Seconds(20));
    ASSERT_TRUE(reply.ok()) << size << ": " << reply.status();
    EXPECT_EQ(reply->payload, payload) << size;
  }
  client.Close();
  (*server)->Stop();
}

}  // namespace
}  // namespace latentd::sync
