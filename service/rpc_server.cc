#include "service/rpc_server.h"

#include <algorithm>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "service/api.pb.h"
#include "service/api_auth.h"
#include "service/internal/connection_metrics.h"

namespace latentd::service {

RpcServer::RpcServer(const RpcOptions& options, LatentdService* service,
                     MetricsRegistry* metrics)
    : dispatcher_(service, metrics, "tcp"),
      queue_depth_(metrics->AddGauge("latentd_rpc_queue_depth",
                                     "TCP calls waiting for a worker thread")),
      loop_(std::make_unique<sync::EventLoop>(
          options.io_threads > 0
              ? options.io_threads
              : std::max(
                    1, static_cast<int>(std::thread::hardware_concurrency())))),
      workers_(
          options.worker_threads > 0
              ? std::make_unique<internal::WorkQueue>(options.worker_threads)
              : nullptr) {}

RpcServer::~RpcServer() { Stop(); }

absl::StatusOr<std::unique_ptr<RpcServer>> RpcServer::Start(
    const RpcOptions& options, LatentdService* service,
    MetricsRegistry* metrics) {
  std::unique_ptr<RpcServer> s(new RpcServer(options, service, metrics));
  sync::ServerOptions so;
  so.host = options.host;
  so.port = static_cast<uint16_t>(options.port);
  so.max_frame_bytes = options.max_frame_bytes;
  so.tls = options.tls;
  so.max_connections = options.max_connections;
  so.max_connections_per_address = options.max_connections_per_address;
  so.max_request_bytes_in_flight = options.max_request_bytes_in_flight;
  so.idle_timeout = options.idle_timeout_seconds > 0
                        ? absl::Seconds(options.idle_timeout_seconds)
                        : absl::InfiniteDuration();
  RpcServer* self = s.get();
  absl::StatusOr<std::unique_ptr<sync::Server>> server = sync::Server::Start(
      s->loop_.get(), so,
      [self, tokens = options.tokens](sync::Frame request, sync::Responder r) {
        std::string token;
        if (request.type == kAuthenticatedCallType) {
          api::AuthenticatedCall call;
          if (!call.ParseFromString(request.payload)) {
            r.Reply(absl::InvalidArgumentError(
                "invalid protobuf: not an AuthenticatedCall"));
            return;
          }
          request.type = call.method();
          token = std::move(*call.mutable_token());
          request.payload = std::move(*call.mutable_request());
        }
        const std::optional<Method> m = MethodFromType(request.type);
        if (!m.has_value()) {
          r.Reply(absl::InvalidArgumentError(
              absl::StrCat("unknown request type ", request.type,
                           " (calls are 1..", kNumMethods, ")")));
          return;
        }
        bool admin = true;
        if (tokens != nullptr) {
          absl::StatusOr<Role> role = tokens->Caller(token, *m);
          if (!role.ok()) {
            r.Reply(role.status());
            return;
          }
          admin = *role == Role::kAdmin;
        }
        if (self->workers_ == nullptr || !MayBlock(*m)) {
          r.Reply(self->dispatcher_.Call(*m, request.payload, Encoding::kProto,
                                         admin));
          return;
        }
        self->workers_->Post([self, method = *m,
                              payload = std::move(request.payload), r, admin] {
          r.Reply(
              self->dispatcher_.Call(method, payload, Encoding::kProto, admin));
        });
        self->queue_depth_->Set(static_cast<double>(self->workers_->depth()));
      });
  if (!server.ok()) return server.status();
  s->server_ = std::move(*server);
  // The registry keeps the collector past the server: it holds the
  // counters, not the server.
  auto connections = std::make_shared<internal::ConnectionMetrics>(
      metrics, "tcp", options.max_connections,
      options.max_connections_per_address);
  metrics->AddCollector([connections, stats = s->server_->shared_stats()] {
    connections->MirrorFrom(*stats);
  });
  return s;
}

int RpcServer::port() const { return server_ ? server_->port() : 0; }

void RpcServer::Stop() {
  if (server_) server_->Stop();
  workers_.reset();  // finishes queued calls (their replies may be dropped)
  server_.reset();
  loop_.reset();
}

}  // namespace latentd::service
