// Helpers shared by the front-end tests (listener, metrics, health,
// connections): a small in-process service, a tiny corpus for latentd
// processes, and plain HTTP/TCP on 127.0.0.1 only.
#ifndef LATENTD_TESTS_SERVICE_GATEWAY_TEST_UTIL_H_
#define LATENTD_TESTS_SERVICE_GATEWAY_TEST_UTIL_H_

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "service/latentd_service.h"

typedef struct ssl_ctx_st SSL_CTX;  // NOLINT: OpenSSL's own name

namespace latentd::testing {

// Writes a 60-document raw-text corpus of two themes to dir/corpus.txt
// (creating dir) and returns its path.
std::string WriteSmallCorpus(const std::string& dir);

// Options of a 4-topic service over WriteSmallCorpus(dir), data in
// dir/node, at most 3 sweeps.
service::ServiceOptions SmallServiceOptions(const std::string& dir);

// latentd flags for the same corpus, its sweeps 20 ms apart (append to a
// Daemon's args).
std::vector<std::string> SmallCorpusArgs(const std::string& dir);

// An IngestEdges request of the edges {src, dst} (weight unset: 1).
api::IngestEdgesRequest Edges(
    const std::vector<std::pair<uint64_t, uint64_t>>& pairs);

struct HttpReply {
  int status = 0;  // 0: no answer (connect, send or read failed)
  std::string body;
};
// GET http://127.0.0.1:port/path on a fresh connection, with a timeout.
HttpReply HttpGet(int port, const std::string& path, double timeout_s = 5);
// GET https://127.0.0.1:port/healthz on a fresh connection through
// `ctx` (a client context; what it verifies is the caller's choice); true
// if answered 200 within `timeout_s`.
bool HttpsHealthz(SSL_CTX* ctx, int port, double timeout_s = 5);

// Seconds of the steady clock since `t`.
inline double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

// Sockets (file descriptors) closed at scope end.
struct Sockets {
  ~Sockets() {
    for (int fd : fds) ::close(fd);
  }
  std::vector<int> fds;
};

// A TCP connection to 127.0.0.1:port (blocking connect); -1 on failure.
// `receive_buffer` > 0: its SO_RCVBUF, set before the connect (so the
// window the server sees stays that small).
int ConnectLoopback(int port, int receive_buffer = 0);
// A blocking connection from 127.0.0.`from` to 127.0.0.1:port (a client of
// another loopback address, so per-address caps do not pool them); -1 on
// failure.
int ConnectFrom(int from, int port);
// Raises this process's open-files soft limit to `want` (a gtest failure if
// the hard limit is lower).
void RaiseOpenFiles(rlim_t want);
// Runs `request` (true: answered correctly) and returns its seconds; tries
// a second time if the first took `bound_s` or more.
double TimeWithOneRetry(const std::function<bool()>& request,
                        double bound_s = 0.100);
// The port of "host:port".
int PortOf(const std::string& address);

// The listen backlog the kernel applies to the TCP socket listening on
// 127.0.0.1:port (sock_diag), or -1 if there is none.
int ListenBacklog(int port);

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_SERVICE_GATEWAY_TEST_UTIL_H_
