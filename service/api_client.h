// ApiClient: calls a running latentd over one of its two front ends —
// HTTP (JSON or binary protobuf body) or framed protobuf over TCP (sync/'s
// transport) — with the same request and response messages.
//
// Errors: the daemon's own status (code and message) comes back unchanged;
// cannot connect / connection lost is kUnavailable, no answer in time
// kDeadlineExceeded. With TLS: a server certificate that does not verify
// (wrong CA, or it does not name the host dialled), or a daemon port that
// wants TLS when the client has none, is kFailedPrecondition saying so.
//
// Thread-safety: Call() is safe from several threads (HTTP: one connection
// per call thread is opened as needed; TCP: calls are pipelined).
#ifndef LATENTD_SERVICE_API_CLIENT_H_
#define LATENTD_SERVICE_API_CLIENT_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "service/api_dispatch.h"
#include "sync/transport/transport.h"

namespace latentd::service {

enum class Protocol { kHttpJson, kHttpProto, kTcp };

// "json" | "http" | "tcp" (http = binary protobuf over HTTP).
absl::StatusOr<Protocol> ParseProtocol(std::string_view name);

// TLS towards the daemon (its tls-cert setting): HTTPS, or TLS under the
// framed TCP protocol (sync/transport/tls.h).
using sync::ClientTls;

class ApiClient {
 public:
  // `address` is "host:port". Does not connect yet. With
  // `explain_wrong_port` (for people, as in latentctl), a call failing as
  // unavailable or late probes the address in the other protocol (one short
  // connection), and if that answers, the error says to change --protocol
  // or --addr ("--addr points at an HTTP port: ...").
  // kInvalidArgument for a bad address or a CA file that cannot be loaded.
  static absl::StatusOr<std::unique_ptr<ApiClient>> Create(
      const std::string& address, Protocol protocol,
      absl::Duration timeout = absl::Seconds(30),
      bool explain_wrong_port = false, const ClientTls& tls = {});
  virtual ~ApiClient() = default;

  // Sends `request` as `method` and parses the answer into *response.
  virtual absl::Status Call(Method method,
                            const google::protobuf::Message& request,
                            google::protobuf::Message* response) = 0;

  // The bearer token every later call carries ("" = none, the default):
  // over HTTP as "Authorization: Bearer TOKEN", over TCP in an
  // api.AuthenticatedCall envelope (service/rpc_server.h). A daemon with
  // api-tokens refuses a call without one (kUnauthenticated) or with one
  // whose role is too low (kPermissionDenied).
  // Thread-safe: a Call() running meanwhile carries the old token or the
  // new one (a daemon's SIGHUP changes the token it forwards with).
  void set_token(std::string token) {
    absl::MutexLock lock(&token_mu_);
    token_ = std::move(token);
  }

 protected:
  std::string token() const {
    absl::MutexLock lock(&token_mu_);
    return token_;
  }

 private:
  mutable absl::Mutex token_mu_;
  std::string token_ ABSL_GUARDED_BY(token_mu_);
};

// Splits "host:port" (kInvalidArgument naming the address otherwise).
using sync::SplitHostPort;

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_API_CLIENT_H_
