// Helpers of the transport tests: a thread-safe log sink and raw sockets
// for sending bytes a Client never would.
#ifndef LATENTD_TESTS_SYNC_TRANSPORT_TEST_UTIL_H_
#define LATENTD_TESTS_SYNC_TRANSPORT_TEST_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sync/transport/transport.h"

namespace latentd::sync::testing {

// Collects the transport's log lines.
struct LogSink {
  absl::Mutex mu;
  std::vector<std::string> lines;
  LogFn fn() {
    return [this](std::string_view l) {
      absl::MutexLock lock(&mu);
      lines.emplace_back(l);
    };
  }
  bool Contains(std::string_view s) {
    absl::MutexLock lock(&mu);
    return HasLocked(s);
  }
  // Contains, waiting up to `timeout` for the line: a server may log a
  // refusal after its client has already seen the connection fail (under
  // TLS 1.3 the client's handshake ends before the server checks its
  // certificate).
  bool WaitFor(std::string_view s, absl::Duration timeout = absl::Seconds(5)) {
    std::pair<LogSink*, std::string_view> arg(this, s);
    absl::MutexLock lock(&mu);
    return mu.AwaitWithTimeout(absl::Condition(
                                   +[](std::pair<LogSink*, std::string_view>* a)
                                        ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                          return a->first->HasLocked(a->second);
                                        },
                                   &arg),
                               timeout);
  }

 private:
  bool HasLocked(std::string_view s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    for (const auto& l : lines) {
      if (l.find(s) != std::string::npos) return true;
    }
    return false;
  }
};

// A blocking socket connected to 127.0.0.1:port whose reads time out
// after 2 s.
inline int RawConnect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// True if the peer closed `fd` within 2 s (read returns 0 or an error),
// after any bytes it sent.
inline bool ClosedByPeer(int fd) {
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[64];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

}  // namespace latentd::sync::testing

#endif  // LATENTD_TESTS_SYNC_TRANSPORT_TEST_UTIL_H_
