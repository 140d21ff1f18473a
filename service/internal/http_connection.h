// HttpConnection: one connection the HTTP server (http_server.h) has
// accepted, and HttpConnectionStream, the httplib::Stream a request
// handler reads its request from and writes its answer to.
//
// Thread-safety: the fields say which are guarded by the server's mutex;
// the others only the worker serving the connection touches.
#ifndef LATENTD_SERVICE_INTERNAL_HTTP_CONNECTION_H_
#define LATENTD_SERVICE_INTERNAL_HTTP_CONNECTION_H_

#include <httplib.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "service/internal/http_request_scanner.h"
#include "service/internal/http_response_writer.h"

namespace latentd::service::internal {

// One accepted connection. The socket is non-blocking; the read buffer
// lives as long as the connection, so bytes of a pipelined next request
// read along with this one are not lost.
struct HttpConnection {
  HttpConnection(int fd, uint64_t id, const HttpRequestLimits& limits)
      : fd(fd), id(id), scanner(limits) {}
  ~HttpConnection() {
    if (ssl != nullptr) {
      if (tls_ready) SSL_shutdown(ssl);  // close_notify, best effort
      SSL_free(ssl);
    }
    ::close(fd);
  }
  const int fd;
  const uint64_t id;
  // TLS: the session (from the first byte on) and whether its handshake
  // is done. Only the worker serving the connection touches them.
  SSL* ssl = nullptr;
  bool tls_ready = false;
  std::string remote_ip, local_ip;
  int remote_port = 0, local_port = 0;
  // Guarded by the server's mu_: a worker is serving it (not in the epoll
  // set). The times below are written by that worker while `busy`, and
  // read by others under mu_ only while it is not (busy changes under
  // mu_, which orders the two): since when it has been idle (no request
  // begun); when its current request began and when its last byte came
  // (InfinitePast: no request in progress); since when an answer has
  // waited for the socket (its last byte taken, or the answer made;
  // InfinitePast: none waits).
  bool busy = false;
  absl::Time idle_since;
  absl::Time request_since = absl::InfinitePast();
  absl::Time last_byte = absl::InfinitePast();
  absl::Time write_since = absl::InfinitePast();
  // Only the worker serving the connection touches these: the bytes
  // received and not yet served (whole requests are served from the
  // front), the budget they hold, and where the first request ends.
  std::string in;
  size_t charged = 0;
  HttpRequestScanner scanner;
  bool sent_continue = false;
  bool head_checked = false;  // check_head ran for the current request
  // The answers not yet sent; the next request is served only once they
  // are. `closing`: drop the connection once they are sent; `linger`:
  // first shut down its sending side and read a little (a refusal).
  // `discard_left`: body bytes of a refused request to read and drop
  // before the close.
  HttpResponseWriter out;
  bool closing = false;
  bool linger = false;
  uint64_t discard_left = 0;
};

// httplib::Stream over one whole request buffered in an HttpConnection
// (reads past its end see EOF); what the handler writes is queued in the
// connection's `out`, for the server's workers to send.
class HttpConnectionStream final : public httplib::Stream {
 public:
  HttpConnectionStream(HttpConnection* c, size_t request_size)
      : c_(c), end_(request_size) {}

  bool is_readable() const override { return pos_ < end_; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, end_ - pos_);
    std::memcpy(ptr, c_->in.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    c_->out.Append(std::string_view(ptr, size));
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = c_->remote_ip;
    port = c_->remote_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = c_->local_ip;
    port = c_->local_port;
  }
  socket_t socket() const override { return c_->fd; }

 private:
  HttpConnection* const c_;
  const size_t end_;
  size_t pos_ = 0;
};

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_HTTP_CONNECTION_H_
