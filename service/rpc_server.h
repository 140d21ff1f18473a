// RpcServer: the API as framed protobuf over TCP, on sync/'s transport
// (sync/transport/transport.h). A request frame's type is the Method number
// (service/api_dispatch.h) and its payload the binary request; the reply is
// the binary response, or the transport's error frame carrying the status
// (code and message). Calls that may block on I/O (MayBlock: Ingest's
// fsync, Checkpoint, a profile forwarded to its owner) run on a worker
// pool; the CPU-only ones run on the event-loop thread that read them,
// which saves two thread hand-offs per call (at 32 concurrent
// InferDocument calls on 2 cores, p99 8-9 ms instead of 12-13 ms).
//
// Authentication (RpcOptions::tokens set): a call comes in an
// api.AuthenticatedCall envelope (frame type kAuthenticatedCallType) that
// carries its bearer token, its Method and its request; each call is
// checked on its own, so no connection state is kept and the client's
// reconnects need nothing. A plain frame (no token) or an unknown token
// fails with kUnauthenticated, a role too low with kPermissionDenied. The
// envelope is accepted without tokens too (the token is then ignored).
//
// TLS (RpcOptions::tls): every connection runs TLS first; a client without
// TLS gets a kFailedPrecondition error saying the port speaks TLS.
//
// Connections (sync/transport/transport.h): at most max_connections open and
// max_connections_per_address from one client address (one more is closed
// at once); a connection idle idle_timeout_seconds between calls is closed.
// Reported as latentd_connections*{listener="tcp"}
// (service/internal/connection_metrics.h).
//
// Thread-safety: Start/Stop from one thread.
#ifndef LATENTD_SERVICE_RPC_SERVER_H_
#define LATENTD_SERVICE_RPC_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "service/api_dispatch.h"
#include "service/internal/work_queue.h"
#include "sync/transport/transport.h"

namespace latentd::service {

class ApiTokens;  // service/api_auth.h

struct RpcOptions {
  std::string host = "127.0.0.1";
  int port = 7071;         // 0 picks a free port (see port())
  int io_threads = 0;      // event-loop threads; 0: one per core
  int worker_threads = 8;  // threads running calls that may block
  uint32_t max_frame_bytes = 4 << 20;
  // Connections open at once, and from one client address (0: no cap).
  int max_connections = 4096;
  int max_connections_per_address = 512;
  // A connection with no call for this long is closed (clients reconnect).
  int idle_timeout_seconds = 60;
  // Payload bytes of frames still arriving, all connections together; a
  // frame that would take more closes its connection (0: no cap).
  size_t max_request_bytes_in_flight = size_t{256} << 20;
  // The API's bearer tokens; nullptr: no authentication. Not owned; must
  // outlive the server.
  const ApiTokens* tokens = nullptr;
  // Non-null (sync::TlsContext::ForServer): TLS on every connection.
  std::shared_ptr<const sync::TlsContext> tls;
};

class RpcServer {
 public:
  // Binds and serves. kUnavailable naming the address if it cannot be
  // bound, also when another socket listens on it already (the transport
  // sets SO_REUSEADDR only, so the port is never shared).
  static absl::StatusOr<std::unique_ptr<RpcServer>> Start(
      const RpcOptions& options, LatentdService* service,
      MetricsRegistry* metrics);
  ~RpcServer();  // Stop()
  int port() const;
  // Stops accepting, closes connections, finishes queued calls. Idempotent.
  void Stop();

 private:
  RpcServer(const RpcOptions& options, LatentdService* service,
            MetricsRegistry* metrics);
  ApiDispatcher dispatcher_;
  Gauge* queue_depth_;  // calls waiting for a worker
  std::unique_ptr<sync::EventLoop> loop_;
  std::unique_ptr<internal::WorkQueue> workers_;
  std::unique_ptr<sync::Server> server_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_RPC_SERVER_H_
