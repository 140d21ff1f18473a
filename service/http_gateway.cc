#include "service/http_gateway.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace latentd::service {
namespace {

constexpr char kProtoType[] = "application/x-protobuf";
constexpr char kJsonType[] = "application/json";

// httplib::Server with its listening socket in reach. The library's listen
// backlog is CPPHTTPLIB_LISTEN_BACKLOG (5), compiled into Debian's
// libcpp-httplib, so defining the macro here would change nothing; listen(2)
// again on a listening socket changes only its backlog.
class Listener : public httplib::Server {
 public:
  bool SetBacklog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

// httplib's default socket options also set SO_REUSEPORT, which lets a
// second process bind the same port and take half of its connections.
// SO_REUSEADDR alone only allows a restart while old connections linger in
// TIME_WAIT.
void ReuseAddressOnly(socket_t sock) {
  const int yes = 1;
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

Encoding EncodingOf(const httplib::Request& req) {
  const std::string type = req.get_header_value("Content-Type");
  return type.rfind(kProtoType, 0) == 0 ||
                 type.rfind("application/protobuf", 0) == 0
             ? Encoding::kProto
             : Encoding::kJson;
}

void Answer(const absl::StatusOr<std::string>& out, Encoding enc,
            httplib::Response& res) {
  const char* type = enc == Encoding::kProto ? kProtoType : kJsonType;
  if (out.ok()) {
    res.status = 200;
    res.set_content(*out, type);
  } else {
    res.status = HttpStatusFor(out.status().code());
    res.set_content(EncodeError(out.status(), enc), type);
  }
}

}  // namespace

HttpGateway::HttpGateway(LatentdService* service, MetricsRegistry* metrics)
    : dispatcher_(service, metrics, "http"),
      metrics_(metrics),
      server_(std::make_unique<Listener>()) {}

HttpGateway::~HttpGateway() { Stop(); }

absl::StatusOr<std::unique_ptr<HttpGateway>> HttpGateway::Start(
    const HttpOptions& options, LatentdService* service,
    MetricsRegistry* metrics) {
  std::unique_ptr<HttpGateway> g(new HttpGateway(service, metrics));
  httplib::Server& s = *g->server_;
  const int threads = std::max(1, options.threads);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_payload_max_length(options.max_body_bytes);
  s.set_read_timeout(options.read_timeout_seconds, 0);
  s.set_keep_alive_max_count(1000000);
  s.set_tcp_nodelay(true);  // no Nagle/delayed-ACK stalls on small answers
  s.set_socket_options(ReuseAddressOnly);
  HttpGateway* self = g.get();
  const size_t limit = options.max_body_bytes;
  s.Post(R"(/v1/(\w+))",
         [self](const httplib::Request& req, httplib::Response& res) {
           const Encoding enc = EncodingOf(req);
           std::optional<Method> m = MethodFromName(req.matches[1].str());
           if (!m.has_value()) {
             Answer(absl::NotFoundError(absl::StrCat(
                        "no API call named '", req.matches[1].str(), "'")),
                    enc, res);
             return;
           }
           Answer(self->dispatcher_.Call(*m, req.body, enc), enc, res);
         });
  s.Get(R"(/v1/(Status|ListTopics))",
        [self](const httplib::Request& req, httplib::Response& res) {
          Answer(self->dispatcher_.Call(*MethodFromName(req.matches[1].str()),
                                        "", Encoding::kJson),
                 Encoding::kJson, res);
        });
  s.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->metrics_->RenderText(), "text/plain; version=0.0.4");
  });
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  s.Get("/readyz", [service](const httplib::Request&, httplib::Response& res) {
    const absl::Status ready = service->Readiness();
    res.status = ready.ok() ? 200 : 503;
    res.set_content(ready.ok()
                        ? std::string("ready\n")
                        : absl::StrCat("not ready: ", ready.message(), "\n"),
                    "text/plain");
  });
  // Errors httplib answers by itself (413 over-size body, 404 unknown
  // path, 400 unparsable request) get an api.Error body too.
  s.set_error_handler([limit](const httplib::Request& req,
                              httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string msg;
    switch (res.status) {
      case 413:
        msg = absl::StrCat("request body over the limit of ", limit, " bytes");
        break;
      case 404:
        msg = absl::StrCat("no such path: ", req.path);
        break;
      default:
        msg = absl::StrCat("HTTP ", res.status);
    }
    absl::Status st(res.status == 413   ? absl::StatusCode::kResourceExhausted
                    : res.status == 404 ? absl::StatusCode::kNotFound
                                        : absl::StatusCode::kInvalidArgument,
                    msg);
    res.set_content(EncodeError(st, Encoding::kJson), kJsonType);
  });
  if (options.port == 0) {
    g->port_ = s.bind_to_any_port(options.host);
    if (g->port_ < 0) g->port_ = 0;
  } else {
    g->port_ = s.bind_to_port(options.host, options.port) ? options.port : 0;
  }
  if (g->port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot bind HTTP to ", options.host, ":", options.port,
                     " (address in use, or not an address of this host)"));
  }
  if (!static_cast<Listener&>(s).SetBacklog(options.listen_backlog)) {
    return absl::UnavailableError(absl::StrCat("cannot listen on HTTP ",
                                               options.host, ":", g->port_,
                                               ": ", std::strerror(errno)));
  }
  g->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  // httplib's stop() does nothing until the loop runs: wait for it, so that
  // a Stop() right after Start() cannot hang.
  while (!s.is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return g;
}

void HttpGateway::Stop() {
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
}

}  // namespace latentd::service
