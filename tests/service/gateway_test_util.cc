#include "tests/service/gateway_test_util.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "gtest/gtest.h"
#include "httplib.h"

namespace latentd::testing {

std::string WriteSmallCorpus(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/corpus.txt";
  FILE* f = std::fopen(path.c_str(), "w");
  const char* themes[] = {"oil prices opec crude barrel energy market",
                          "football match goal team player season coach"};
  for (int d = 0; d < 60; ++d) {
    std::fprintf(f, "%s %s\n", themes[d % 2], themes[d % 2]);
  }
  std::fclose(f);
  return path;
}

service::ServiceOptions SmallServiceOptions(const std::string& dir) {
  service::ServiceOptions o;
  o.data_dir = dir + "/node";
  o.corpus.path = WriteSmallCorpus(dir);
  o.trainer.num_topics = 4;
  o.trainer.eval_every = 0;
  o.max_sweeps = 3;
  return o;
}

std::vector<std::string> SmallCorpusArgs(const std::string& dir) {
  // Sweeps 20 ms apart: back to back, a daemon left training this corpus
  // for a test's half minute of connections burns a core for nothing.
  return {"--corpus", WriteSmallCorpus(dir), "--format", "lines", "--topics",
          "4",        "--sweep-interval-ms", "20"};
}

api::IngestEdgesRequest Edges(
    const std::vector<std::pair<uint64_t, uint64_t>>& pairs) {
  api::IngestEdgesRequest r;
  for (const auto& [a, b] : pairs) {
    api::GraphEdge* e = r.add_edges();
    e->set_src(a);
    e->set_dst(b);
  }
  return r;
}

HttpReply HttpGet(int port, const std::string& path, double timeout_s) {
  httplib::Client c("127.0.0.1", port);
  const auto usec = static_cast<time_t>(timeout_s * 1e6);
  c.set_connection_timeout(usec / 1000000, usec % 1000000);
  c.set_read_timeout(usec / 1000000, usec % 1000000);
  HttpReply reply;
  if (auto res = c.Get(path.c_str())) {
    reply.status = res->status;
    reply.body = res->body;
  }
  return reply;
}

bool HttpsHealthz(SSL_CTX* ctx, int port, double timeout_s) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return false;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_s);
  tv.tv_usec = static_cast<suseconds_t>((timeout_s - tv.tv_sec) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  const std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  char buf[64] = {};
  const bool ok =
      SSL_connect(ssl) == 1 &&
      SSL_write(ssl, req.data(), static_cast<int>(req.size())) > 0 &&
      SSL_read(ssl, buf, sizeof(buf) - 1) > 12 &&
      std::string(buf).rfind("HTTP/1.1 200", 0) == 0;
  SSL_free(ssl);
  ::close(fd);
  return ok;
}

int ConnectLoopback(int port, int receive_buffer) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (receive_buffer > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer,
                 sizeof(receive_buffer));
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int ListenBacklog(int port) {
  const int nl =
      ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return -1;
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof(msg);
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.req.sdiag_family = AF_INET;
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = 1u << 10;  // TCP_LISTEN
  int backlog = -1;
  if (::send(nl, &msg, sizeof(msg), 0) == static_cast<ssize_t>(sizeof(msg))) {
    alignas(nlmsghdr) char buf[16384];
    bool done = false;
    while (!done) {
      const ssize_t n = ::recv(nl, buf, sizeof(buf), 0);
      if (n <= 0) break;
      int len = static_cast<int>(n);
// glibc's NLMSG_OK compares the header's u32 length with this int.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
      for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len);
           h = NLMSG_NEXT(h, len)) {
        if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
          done = true;
          break;
        }
        const auto* d = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
        if (ntohs(d->id.idiag_sport) == port &&
            d->id.idiag_src[0] == htonl(INADDR_LOOPBACK)) {
          backlog = static_cast<int>(d->idiag_wqueue);  // for a listener
        }
      }
#pragma GCC diagnostic pop
    }
  }
  ::close(nl);
  return backlog;
}

int ConnectFrom(int from, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in src{};
  src.sin_family = AF_INET;
  src.sin_addr.s_addr = htonl(0x7F000000u | static_cast<uint32_t>(from));
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(src)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void RaiseOpenFiles(rlim_t want) {
  rlimit l{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &l), 0);
  if (l.rlim_cur >= want) return;
  ASSERT_GE(l.rlim_max, want) << "hard open-files limit too low";
  l.rlim_cur = want;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &l), 0);
}

double TimeWithOneRetry(const std::function<bool()>& request, double bound_s) {
  double best = 1e9;
  for (int attempt = 0; attempt < 2 && best >= bound_s; ++attempt) {
    const auto start = std::chrono::steady_clock::now();
    const bool ok = request();
    const double took = SecondsSince(start);
    EXPECT_TRUE(ok) << "attempt " << attempt;
    if (ok) best = std::min(best, took);
  }
  return best;
}

int PortOf(const std::string& address) {
  return std::stoi(address.substr(address.rfind(':') + 1));
}

}  // namespace latentd::testing
