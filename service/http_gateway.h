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
//   GET  /metrics     Prometheus text
//   GET  /healthz     liveness: "ok" whenever the process answers
//   GET  /readyz      readiness: 200 "ready" when the node should get
//                     traffic (LatentdService::Readiness: model loaded,
//                     cluster joined and sampling, ingest log writable);
//                     else 503 "not ready: <why>"
// A body over max_body_bytes is refused with 413 before it is read whole.
//
// Thread-safety: Start/Stop from one thread; requests are served by the
// gateway's own thread pool.
#ifndef LATENTD_SERVICE_HTTP_GATEWAY_H_
#define LATENTD_SERVICE_HTTP_GATEWAY_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "service/api_dispatch.h"
#include "service/metrics.h"

namespace httplib {
class Server;
}

namespace latentd::service {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 7070;  // 0 picks a free port (see port())
  int threads = 8;  // worker threads
  size_t max_body_bytes = 4 << 20;
  int read_timeout_seconds = 10;
  // Connections the kernel queues before the gateway accepts them.
  int listen_backlog = 1024;
};

class HttpGateway {
 public:
  // Binds and starts serving on a background thread. kUnavailable naming
  // the address if it cannot be bound, also when another socket (another
  // latentd) listens on it already: the port is not shared (no
  // SO_REUSEPORT). `service` and `metrics` must outlive this.
  static absl::StatusOr<std::unique_ptr<HttpGateway>> Start(
      const HttpOptions& options, LatentdService* service,
      MetricsRegistry* metrics);
  ~HttpGateway();  // Stop()

  int port() const { return port_; }
  // Stops accepting and waits for requests in progress. Idempotent.
  void Stop();

 private:
  HttpGateway(LatentdService* service, MetricsRegistry* metrics);
  ApiDispatcher dispatcher_;
  MetricsRegistry* metrics_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_HTTP_GATEWAY_H_
