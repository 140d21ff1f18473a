// HttpServer: the connection handling under the HTTP gateway — a listening
// socket, an epoll set of the open connections, and worker threads that
// take whichever connection is ready (bytes to read, or room for the
// answer it is sending) as far as its socket allows without waiting.
// The request itself (parsing, routing, the response) is the gateway's
// RequestFn, and reading, serving and answering one ready connection is
// HttpConnectionDriver's (http_connection_driver.h); this class only
// decides which connection is served when, and for how long it may stall.
//
// Why not httplib's own loop: it hands each accepted connection to a worker
// thread that keeps it for the connection's whole life, so a few hundred
// keep-alive connections that send nothing hold every worker for their
// read timeout and a real client waits behind them (issue 16). Here an idle
// connection holds no thread, only a slot in the epoll set:
//   - a connection waiting for its (next) request is idle; after
//     idle_timeout it is closed;
//   - a request is read as its bytes come: a worker takes the connection
//     for one non-blocking read (plain or through TLS), appends what came
//     to the connection's buffer and puts it back into the epoll set, so a
//     client that trickles its request holds no thread between its bytes.
//     Only once the request has fully arrived (headers and body, framed by
//     HttpRequestScanner) does a worker run the handler;
//   - an answer is written as the socket takes it: the handler's bytes are
//     queued on the connection (HttpResponseWriter), a worker sends what
//     the socket takes without waiting, and the connection goes back into
//     the epoll set, waiting to be writable, until all is sent. A client
//     that does not read holds its answer's bytes (made already) but no
//     thread; when no byte of it goes out for write_timeout the connection
//     is closed (latentd_connections_timed_out_total). The next request on
//     a connection is served only once the answers before it are sent, so
//     answers keep their order and a pipelining client that does not read
//     holds one answer at a time;
//   - a request must arrive whole within request_timeout of its first byte,
//     and no gap between its bytes may exceed read_timeout; else the
//     connection is closed (latentd_http_requests_refused_total
//     {reason="timeout"});
//   - the request's limits (HttpRequestLimits: body, header bytes, header
//     lines) are checked as it arrives: over one, it is answered 413 or
//     431 and the connection closed, with what came so far the only memory
//     it took (a body refused on its Content-Length is first read and
//     dropped, so that its sender reads the 413: HttpConnectionDriver). All
//     connections together buffer at most max_request_bytes_in_flight bytes of
//     requests not yet served; a request that would take more is answered 503
//     and closed;
//   - at most max_connections are open, and max_connections_per_address
//     from one client address; a connection beyond either is answered 503
//     (without TLS) and closed at once, never queued.
// TLS (options.tls): a new connection's first byte tells a TLS client from
// a plaintext one; a plaintext one is answered a plain 400 that starts
// "This port serves HTTPS" and closed. The TLS handshake runs in steps on
// the workers as its bytes come, so a connection that stalls mid-handshake
// holds no thread either; the whole handshake must end within idle_timeout
// of the connect.
// The listening socket sets SO_REUSEADDR only (a port in use is an error,
// never shared) and listens with listen_backlog.
//
// Thread-safety: Start/Stop from one thread; the RequestFn runs on the
// worker threads, several at once (on different connections).
#ifndef LATENTD_SERVICE_INTERNAL_HTTP_SERVER_H_
#define LATENTD_SERVICE_INTERNAL_HTTP_SERVER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/log.h"
#include "service/internal/connection_metrics.h"
#include "service/internal/http_connection_driver.h"
#include "service/internal/http_server_options.h"
#include "service/metrics.h"

namespace latentd::service::internal {

class HttpServer {
 public:
  // Binds options.host:port and starts the threads. kUnavailable naming the
  // address if it cannot be bound (in use, not local) or listened on.
  // Registers its metrics (latentd_connections*{listener="http"},
  // service/internal/connection_metrics.h) in *metrics, which, like
  // `serve`'s captures, must outlive the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const HttpServerOptions& options, RequestFn serve,
      MetricsRegistry* metrics);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // Stops accepting, lets requests in progress finish (their answers say
  // "Connection: close" and are sent, each stall bounded by
  // write_timeout), closes every connection (cutting answers still waiting
  // for a client to read them), joins the threads. Idempotent.
  void Stop();

 private:
  using Conn = HttpConnection;
  HttpServer(const HttpServerOptions& options, RequestFn serve,
             MetricsRegistry* metrics);
  absl::Status Listen();
  void AcceptLoop();  // the acceptor thread: accepts, closes idle ones
  void AcceptAll();
  void CloseIdle();
  void WorkerLoop();
  // Hands `c` to the driver, then puts it back into the epoll set for what
  // it waits for, or drops it.
  void Serve(const std::shared_ptr<Conn>& c);
  using Await = HttpConnectionDriver::Await;
  using TlsStep = HttpConnectionDriver::TlsStep;
  // Puts `c` back into the epoll set for `events` (since `since` with no
  // request begun), or drops it.
  void Rearm(const std::shared_ptr<Conn>& c, absl::Time since, uint32_t events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes `id` from the epoll set and the table (its socket closes when
  // the last reference goes).
  void Drop(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const HttpServerOptions options_;
  ConnectionMetrics metrics_;
  // latentd_http_requests_refused_total{reason="timeout"} (the driver
  // counts the other reasons).
  Counter* refused_timeout_;
  std::atomic<bool> stopping_{false};  // release by Stop, acquire by threads
  HttpConnectionDriver driver_;
  log::Throttle accept_log_{absl::Seconds(10)};  // the acceptor's thread
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd, readable once Stop() begins
  int port_ = 0;
  bool stopped_ = false;  // Start/Stop thread only

  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<Conn>> conns_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;  // 0 is the wake fd
  // Open connections per client IP address.
  absl::flat_hash_map<std::string, int> per_address_ ABSL_GUARDED_BY(mu_);

  std::thread acceptor_;
  std::vector<std::thread> workers_;
};

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_HTTP_SERVER_H_
