// HttpGateway: the API over HTTP/1.1 (cpp-httplib), plus /metrics and the
// health probes /healthz and /readyz.
//
//   POST /v1/<Call>   body: the request message, as protobuf JSON
//                     (Content-Type application/json, the default) or as
//                     binary protobuf (application/x-protobuf or
//                     application/protobuf); the answer
//                     comes in the same encoding. Errors: 4xx/5xx with an
//                     api.Error body (code, message).
//   GET  /v1/Status, /v1/ListTopics   the same with an empty request
//   GET  /            the status page (service/status_page/, embedded at
//                     build time), and its files under /status_page/:
//                     topics (sorted, searched, each with its words and
//                     documents), the topic map, a user's profile, the
//                     log-likelihood plot, throughput, ingest and cluster
//                     members, refreshed from the API by the page's
//                     scripts every few seconds
//   GET  /metrics     Prometheus text
//   GET  /healthz     liveness: "ok" whenever the process answers
//   GET  /readyz      readiness: 200 "ready" when the node should get
//                     traffic (LatentdService::Readiness: model loaded,
//                     cluster joined and sampling, ingest log writable);
//                     else 503 "not ready: <why>"
// A body over max_body_bytes is refused with 413 before it is read whole.
//
// Authentication (HttpOptions::tokens set): every /v1/ call needs
// "Authorization: Bearer TOKEN" whose role may make it (service/api_auth.h);
// none or an unknown token is answered 401 with "WWW-Authenticate: Bearer",
// a role too low 403, both with an api.Error body. /healthz, /readyz and
// /metrics stay open unless open_health is off; then they need a read token.
// The status page's files are always served (they hold no data); the page
// sends the read token it is given in its URL fragment (#token=...) with
// its API calls, and asks for one when an API call answers 401.
//
// Connections (service/internal/http_server.h): an idle keep-alive
// connection holds no thread, nor does one sending its request or reading
// its answer slowly, so idle or slow clients cannot keep a real one
// waiting; a connection idle for idle_timeout_seconds (also a new one
// that sends nothing) is closed, a request or answer stalled for
// read/write_timeout_seconds drops its connection, and beyond
// max_connections (or max_connections_per_address from one client address)
// a new connection is answered 503 and closed at once. Reported as
// latentd_connections*{listener="http"}.
//
// TLS (HttpOptions::tls): HTTPS only; a plain HTTP request is answered a
// 400 "This port serves HTTPS..." and its connection closed.
//
// Thread-safety: Start/Stop from one thread; requests are served by the
// gateway's own worker threads.
#ifndef LATENTD_SERVICE_HTTP_GATEWAY_H_
#define LATENTD_SERVICE_HTTP_GATEWAY_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "service/api_dispatch.h"
#include "service/metrics.h"
#include "sync/transport/tls.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace latentd::service {
class ApiTokens;  // service/api_auth.h
namespace internal {
class HttpServer;       // service/internal/http_server.h
struct HttpHeadAnswer;  // service/internal/http_server.h
}  // namespace internal

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 7070;  // 0 picks a free port (see port())
  // Threads serving requests. A connection holds one only while one of its
  // requests is read, run and answered.
  int threads = 8;
  size_t max_body_bytes = 4 << 20;
  // Connections open at once (idle ones included), and from one client
  // address (0: no cap); one more is answered 503 and closed at once.
  int max_connections = 4096;
  int max_connections_per_address = 512;
  // A connection without a request for this long is closed.
  int idle_timeout_seconds = 5;
  // A request that stalls (no byte) this long drops its connection; the
  // same for an answer the client does not read.
  int read_timeout_seconds = 5;
  int write_timeout_seconds = 5;
  // A request must arrive whole within this many seconds of its first
  // byte, or its connection is closed.
  int request_timeout_seconds = 30;
  // Request line + headers: at most this many bytes and header lines;
  // more is answered 431 (a chunked body's trailers count too).
  size_t max_header_bytes = 64 << 10;
  int max_headers = 100;
  // Bytes of requests received and not yet served, all connections
  // together; a request that would take more is answered 503 (0: no cap).
  size_t max_request_bytes_in_flight = size_t{256} << 20;
  // Connections the kernel queues before the gateway accepts them.
  int listen_backlog = 1024;
  // The API's bearer tokens; nullptr: no authentication. Not owned; must
  // outlive the gateway.
  const ApiTokens* tokens = nullptr;
  // With tokens: whether /healthz, /readyz and /metrics answer without one.
  bool open_health = true;
  // Non-null (sync::TlsContext::ForServer): HTTPS.
  std::shared_ptr<const sync::TlsContext> tls;
};

class HttpGateway {
 public:
  // Binds and starts serving on its own threads. kUnavailable naming
  // the address if it cannot be bound, also when another socket (another
  // latentd) listens on it already: the port is not shared (no
  // SO_REUSEPORT). `service` and `metrics` must outlive this.
  static absl::StatusOr<std::unique_ptr<HttpGateway>> Start(
      const HttpOptions& options, LatentdService* service,
      MetricsRegistry* metrics);
  ~HttpGateway();  // Stop()

  int port() const;
  // Stops accepting, waits for requests in progress and closes every
  // connection. Idempotent.
  void Stop();

 private:
  class Router;  // the routes: an httplib::Server that answers a request
  HttpGateway(LatentdService* service, MetricsRegistry* metrics);
  void AddRoutes(LatentdService* service, size_t max_body_bytes);
  // Whether the caller is an admin (always true without tokens) if the
  // request may make `method`; else answers 401/403 into `res` and returns
  // the error.
  absl::StatusOr<bool> Check(const httplib::Request& req, Method method,
                             Encoding enc, httplib::Response& res) const;
  // For the probes and /metrics: true if they may be answered; else
  // answers 401/403 into `res`.
  bool CheckProbe(const httplib::Request& req, httplib::Response& res) const;
  // Check or CheckProbe on a request's head alone (its body not read yet):
  // the answer that refuses it, or nullopt (no tokens, a path neither
  // guards, or a caller they allow).
  std::optional<internal::HttpHeadAnswer> CheckHead(
      std::string_view head) const;
  ApiDispatcher dispatcher_;
  MetricsRegistry* metrics_;
  const ApiTokens* tokens_ = nullptr;  // nullptr: no authentication
  bool open_health_ = true;
  std::unique_ptr<Router> router_;
  std::unique_ptr<internal::HttpServer> server_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_HTTP_GATEWAY_H_
