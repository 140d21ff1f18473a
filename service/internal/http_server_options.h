// The options of the HTTP server (http_server.h) and the request handler
// it calls: shared by the server and HttpConnectionDriver.
#ifndef LATENTD_SERVICE_INTERNAL_HTTP_SERVER_OPTIONS_H_
#define LATENTD_SERVICE_INTERNAL_HTTP_SERVER_OPTIONS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "service/internal/http_request_scanner.h"
#include "sync/transport/tls.h"

namespace httplib {
class Stream;
}

namespace latentd::service::internal {

// An answer to a request refused on its head (HttpServerOptions::check_head).
struct HttpHeadAnswer {
  int status = 401;
  std::string reason = "Unauthorized";  // the status line's text
  std::vector<std::pair<std::string, std::string>> headers;
  std::string content_type = "application/json";
  std::string body;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;     // 0 picks a free port (see port())
  int threads = 8;  // workers serving requests; idle connections need none
  int max_connections = 4096;
  int max_connections_per_address = 512;  // 0: no cap
  // Non-null (sync::TlsContext::ForServer): HTTPS only.
  std::shared_ptr<const sync::TlsContext> tls;
  int listen_backlog = 1024;
  absl::Duration idle_timeout = absl::Seconds(5);   // between requests
  absl::Duration read_timeout = absl::Seconds(5);   // no byte in a request
  absl::Duration write_timeout = absl::Seconds(5);  // no byte of an answer
  // A request not arrived whole this long after its first byte: closed.
  absl::Duration request_timeout = absl::Seconds(30);
  HttpRequestLimits limits;
  // Bytes of requests not yet served, all connections together; 0: no cap.
  size_t max_request_bytes_in_flight = size_t{256} << 20;
  // Called once per request as soon as its request line and headers have
  // arrived (`head`, the blank line included), before its body is read or
  // "100 Continue" sent: an answer refuses the request, which is then
  // answered so and its connection closed, its body never read (a caller
  // without a valid token sends no body into the server's memory). Runs
  // on the worker threads; may be empty.
  std::function<std::optional<HttpHeadAnswer>(std::string_view head)>
      check_head;
};

// Serves one request from `stream`, which holds the whole request (reads
// past its end see EOF): reads it, answers it, returns false if the
// connection must close (an unreadable request). Writes to `stream` never
// block: they are queued and sent once it returns. Sets
// *connection_closed when the client asked to close. `close_connection`
// asks the answer to say "Connection: close" (the server is stopping).
using RequestFn = std::function<bool(
    httplib::Stream& stream, bool close_connection, bool* connection_closed)>;

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_HTTP_SERVER_OPTIONS_H_
