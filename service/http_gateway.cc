#include "service/http_gateway.h"

#include <httplib.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "service/api_auth.h"
#include "service/internal/http_server.h"
#include "service/internal/status_page.h"

namespace latentd::service {
namespace {

constexpr char kProtoType[] = "application/x-protobuf";
constexpr char kJsonType[] = "application/json";

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

// The token of "Authorization: Bearer TOKEN" ("" if none).
std::string BearerToken(const httplib::Request& req) {
  const std::string value = req.get_header_value("Authorization");
  constexpr absl::string_view kScheme = "Bearer ";
  if (!absl::StartsWithIgnoreCase(value, kScheme)) return "";
  return std::string(absl::StripLeadingAsciiWhitespace(
      absl::string_view(value).substr(kScheme.size())));
}

// Answers an authentication failure: 401 with a Bearer challenge, or 403.
void AnswerDenied(const absl::Status& denied, Encoding enc,
                  httplib::Response& res) {
  Answer(denied, enc, res);
  if (denied.code() == absl::StatusCode::kUnauthenticated) {
    res.set_header("WWW-Authenticate", "Bearer");
  }
}

// The request line's method and path (query cut) and the headers of
// `head` (request line, header lines, blank line) into *req.
void ParseHead(std::string_view head, httplib::Request* req) {
  bool first = true;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(head.data(), head.size()), '\n')) {
    line = absl::StripTrailingAsciiWhitespace(line);
    if (first) {
      first = false;
      const std::vector<absl::string_view> parts =
          absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (parts.size() >= 2) {
        req->method = std::string(parts[0]);
        req->path = std::string(parts[1].substr(0, parts[1].find('?')));
      }
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    req->headers.emplace(
        std::string(line.substr(0, colon)),
        std::string(absl::StripLeadingAsciiWhitespace(line.substr(colon + 1))));
  }
}

}  // namespace

// httplib's request handling (parsing, routing, the response) without its
// connection loop: internal::HttpServer calls Serve for each request.
class HttpGateway::Router : public httplib::Server {
 public:
  bool Serve(httplib::Stream& stream, bool close_connection,
             bool* connection_closed) {
    return process_request(stream, close_connection, *connection_closed,
                           nullptr);
  }
};

absl::StatusOr<bool> HttpGateway::Check(const httplib::Request& req,
                                        Method method, Encoding enc,
                                        httplib::Response& res) const {
  if (tokens_ == nullptr) return true;
  absl::StatusOr<Role> role = tokens_->Caller(BearerToken(req), method);
  if (!role.ok()) {
    AnswerDenied(role.status(), enc, res);
    return role.status();
  }
  return *role == Role::kAdmin;
}

bool HttpGateway::CheckProbe(const httplib::Request& req,
                             httplib::Response& res) const {
  if (tokens_ == nullptr || open_health_) return true;
  // The probes need what the least of the calls needs: a read token.
  return Check(req, Method::kStatus, Encoding::kJson, res).ok();
}

std::optional<internal::HttpHeadAnswer> HttpGateway::CheckHead(
    std::string_view head) const {
  if (tokens_ == nullptr) return std::nullopt;
  httplib::Request req;
  ParseHead(head, &req);
  httplib::Response res;
  bool allowed = true;
  if (absl::StartsWith(req.path, "/v1/")) {
    const std::optional<Method> m = MethodFromName(req.path.substr(4));
    if (!m.has_value()) return std::nullopt;  // 404 after the body
    const Encoding enc =
        req.method == "POST" ? EncodingOf(req) : Encoding::kJson;
    allowed = Check(req, *m, enc, res).ok();
  } else if (req.path == "/metrics" || req.path == "/healthz" ||
             req.path == "/readyz") {
    allowed = CheckProbe(req, res);
  }
  if (allowed) return std::nullopt;
  internal::HttpHeadAnswer answer;
  answer.status = res.status;
  answer.reason = res.status == 401 ? "Unauthorized" : "Forbidden";
  answer.content_type = res.get_header_value("Content-Type");
  answer.body = res.body;
  for (const auto& [name, value] : res.headers) {
    if (!absl::EqualsIgnoreCase(name, "Content-Type") &&
        !absl::EqualsIgnoreCase(name, "Content-Length")) {
      answer.headers.emplace_back(name, value);
    }
  }
  return answer;
}

HttpGateway::HttpGateway(LatentdService* service, MetricsRegistry* metrics)
    : dispatcher_(service, metrics, "http"),
      metrics_(metrics),
      router_(std::make_unique<Router>()) {}

HttpGateway::~HttpGateway() { Stop(); }

int HttpGateway::port() const { return server_ ? server_->port() : 0; }

absl::StatusOr<std::unique_ptr<HttpGateway>> HttpGateway::Start(
    const HttpOptions& options, LatentdService* service,
    MetricsRegistry* metrics) {
  std::unique_ptr<HttpGateway> g(new HttpGateway(service, metrics));
  g->tokens_ = options.tokens;
  g->open_health_ = options.open_health;
  Router& r = *g->router_;
  r.set_payload_max_length(options.max_body_bytes);
  // Only for the Keep-Alive header of answers: HttpServer keeps the time.
  r.set_keep_alive_timeout(options.idle_timeout_seconds);
  r.set_keep_alive_max_count(1000000);
  g->AddRoutes(service, options.max_body_bytes);
  internal::HttpServerOptions so;
  so.host = options.host;
  so.port = options.port;
  so.threads = std::max(1, options.threads);
  so.max_connections = std::max(1, options.max_connections);
  so.max_connections_per_address = options.max_connections_per_address;
  so.tls = options.tls;
  so.listen_backlog = options.listen_backlog;
  so.idle_timeout = absl::Seconds(options.idle_timeout_seconds);
  so.read_timeout = absl::Seconds(options.read_timeout_seconds);
  so.write_timeout = absl::Seconds(options.write_timeout_seconds);
  so.request_timeout = absl::Seconds(options.request_timeout_seconds);
  so.limits.max_body_bytes = options.max_body_bytes;
  so.limits.max_header_bytes = options.max_header_bytes;
  so.limits.max_headers = options.max_headers;
  so.max_request_bytes_in_flight = options.max_request_bytes_in_flight;
  so.check_head = [gateway = g.get()](std::string_view head) {
    return gateway->CheckHead(head);
  };
  absl::StatusOr<std::unique_ptr<internal::HttpServer>> server =
      internal::HttpServer::Start(
          so,
          [router = g->router_.get()](httplib::Stream& stream, bool close,
                                      bool* closed) {
            return router->Serve(stream, close, closed);
          },
          metrics);
  if (!server.ok()) return server.status();
  g->server_ = std::move(*server);
  return g;
}

void HttpGateway::AddRoutes(LatentdService* service, size_t max_body_bytes) {
  Router& s = *router_;
  HttpGateway* self = this;
  const size_t limit = max_body_bytes;
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
           const absl::StatusOr<bool> admin = self->Check(req, *m, enc, res);
           if (!admin.ok()) return;
           Answer(self->dispatcher_.Call(*m, req.body, enc, *admin), enc, res);
         });
  s.Get(R"(/v1/(Status|ListTopics))",
        [self](const httplib::Request& req, httplib::Response& res) {
          const Method m = *MethodFromName(req.matches[1].str());
          const absl::StatusOr<bool> admin =
              self->Check(req, m, Encoding::kJson, res);
          if (!admin.ok()) return;
          Answer(self->dispatcher_.Call(m, "", Encoding::kJson, *admin),
                 Encoding::kJson, res);
        });
  s.Get("/metrics", [self](const httplib::Request& req,
                           httplib::Response& res) {
    if (!self->CheckProbe(req, res)) return;
    res.set_content(self->metrics_->RenderText(), "text/plain; version=0.0.4");
  });
  s.Get("/healthz",
        [self](const httplib::Request& req, httplib::Response& res) {
          if (!self->CheckProbe(req, res)) return;
          res.set_content("ok\n", "text/plain");
        });
  s.Get("/readyz",
        [self, service](const httplib::Request& req, httplib::Response& res) {
          if (!self->CheckProbe(req, res)) return;
          const absl::Status ready = service->Readiness();
          res.status = ready.ok() ? 200 : 503;
          if (!ready.ok()) {
            res.set_content(absl::StrCat("not ready: ", ready.message(), "\n"),
                            "text/plain");
            return;
          }
          // Ready for queries; one that no longer samples says so and why.
          const std::string stopped = service->SamplingStoppedReason();
          res.set_content(
              stopped.empty()
                  ? std::string("ready\n")
                  : absl::StrCat("ready\nsampling stopped: ", stopped,
                                 "; queries are answered from the model of "
                                 "its last sweep\n"),
              "text/plain");
        });
  // The status page: static files that hold no data (the page reads the
  // API with the token the browser holds), so they need no token.
  for (const internal::StaticAsset& asset : internal::StatusPageAssets()) {
    s.Get(std::string(asset.path), [&asset](const httplib::Request&,
                                            httplib::Response& res) {
      res.set_content(asset.body.data(), asset.body.size(),
                      std::string(asset.content_type));
      // The browser may load nothing but the page's own files and call
      // nothing but this daemon.
      res.set_header("Content-Security-Policy",
                     "default-src 'none'; script-src 'self'; "
                     "style-src 'self'; connect-src 'self'; img-src 'self'; "
                     "base-uri 'none'; form-action 'none'; "
                     "frame-ancestors 'none'");
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Referrer-Policy", "no-referrer");
      res.set_header("Cache-Control", "no-cache");
    });
  }
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
}

void HttpGateway::Stop() {
  if (server_) server_->Stop();
}

}  // namespace latentd::service
