// HttpConnectionDriver: takes one HTTP connection as far as its socket
// allows without waiting — the TLS handshake, reading request bytes,
// serving each request once it has arrived whole, sending the answers —
// and says what the connection waits for next. HttpServer (http_server.h)
// decides which connection is driven when and closes those that stall; this
// class owns what a request may take on its way in: the limits
// (HttpRequestLimits, answered 413 / 431 / 400), the head check, and the
// budget of request bytes buffered by all connections together.
//
// A request refused for a Content-Length over the body limit is answered
// 413 at once; its body is then read and dropped as it comes (at most
// kMaxDiscardBytes, each read into a small buffer, never kept) before the
// connection closes, so a client that sends its whole body before it reads
// (most do) reads the 413 rather than a reset. Any other refusal closes
// after a short linger.
//
// Thread-safety: the driver is shared by the server's workers; each call
// takes one connection that the calling worker alone holds (busy).
#ifndef LATENTD_SERVICE_INTERNAL_HTTP_CONNECTION_DRIVER_H_
#define LATENTD_SERVICE_INTERNAL_HTTP_CONNECTION_DRIVER_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "service/internal/http_connection.h"
#include "service/internal/http_server_options.h"
#include "service/metrics.h"

namespace latentd::service::internal {

class HttpConnectionDriver {
 public:
  // The body bytes after a 413 read and dropped before the close, at most.
  static constexpr uint64_t kMaxDiscardBytes = uint64_t{64} << 20;

  // `options`, `stopping` and `metrics` must outlive the driver. Registers
  // latentd_http_requests_refused_total{reason} (all but "timeout", which
  // the server counts) and latentd_http_request_bytes_in_flight.
  HttpConnectionDriver(const HttpServerOptions& options, RequestFn serve,
                       MetricsRegistry* metrics,
                       const std::atomic<bool>* stopping);

  // TLS only: one step of `c`'s handshake. kWait / kWaitWritable: it
  // needs the socket readable / writable; kFailed: drop it.
  enum class TlsStep { kDone, kWait, kWaitWritable, kFailed };
  TlsStep Handshake(HttpConnection* c);

  // What a connection waits for once its worker lets it go.
  enum class Await {
    kRequest,          // request bytes: readable
    kRequestWritable,  // TLS must send before it reads on: writable
    kSendWritable,     // an answer waits for the socket: writable
    kSendReadable,     // an answer waits and TLS must read first: readable
    kDrop,
  };
  // Sends what is pending, serves what has arrived whole, reads what came,
  // until the socket would block. *progress: whether any answer byte went
  // out. Sets c->last_byte / request_since as bytes come (the connection
  // is busy: the server reads them only once it is not).
  Await Advance(HttpConnection* c, bool* progress);

  // Gives back the budget `c` holds (it is being dropped).
  void Release(HttpConnection* c);
  // Publishes the bytes buffered, all connections, to the gauge.
  void UpdateGauge();

 private:
  // Sends what `c`'s answers hold without waiting (while stopping: waits
  // up to write_timeout per stall, as no epoll set is left to wait in).
  HttpResponseWriter::Sent SendPending(HttpConnection* c, bool* progress);
  // Serves the first request of `c`'s buffer if it has arrived whole,
  // queueing its answer. kNeedMore: it has not (a "100 Continue" may be
  // queued); kClose: close `c` once its answers are sent.
  enum class Served { kNeedMore, kAnswered, kClose };
  Served ServeOne(HttpConnection* c);
  // One non-blocking read into `c`'s buffer, charged to the budget.
  enum class Fill { kMore, kWait, kWaitWritable, kClosed };
  Fill Receive(HttpConnection* c);
  // One non-blocking read (plain or TLS) into `into`: its size in *n.
  static Fill ReadSome(HttpConnection* c, char* into, size_t size, size_t* n);
  // Reads and drops what is left of a refused body (c->discard_left).
  Fill Discard(HttpConnection* c);
  // Queues the answer to a refused request and counts it under `reason`.
  void Refuse(HttpConnection* c, int status, const std::string& message,
              Counter* reason);
  // Queues `answer` ("Connection: close" added); once it is sent the
  // connection is wound down (Linger) and dropped.
  static void AnswerAndClose(HttpConnection* c, const HttpHeadAnswer& answer);
  // Shuts down `c`'s sending side and reads a little of what the client
  // sends on (a close with unread bytes resets the connection, which
  // could lose the answer).
  static void Linger(HttpConnection* c);
  // Gives back the budget `c` holds for bytes no longer buffered.
  void Uncharge(HttpConnection* c);

  const HttpServerOptions& options_;
  const RequestFn serve_;
  const std::atomic<bool>& stopping_;
  // latentd_http_requests_refused_total{reason}.
  Counter* refused_body_;
  Counter* refused_headers_;
  Counter* refused_malformed_;
  Counter* refused_budget_;
  Counter* refused_head_;
  Gauge* bytes_in_flight_;
  std::atomic<int64_t> in_flight_{0};  // bytes buffered, all connections
};

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_HTTP_CONNECTION_DRIVER_H_
