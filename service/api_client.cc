#include "service/api_client.h"

#include <httplib.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "service/api.pb.h"
#include "sync/transport/transport.h"

namespace latentd::service {
namespace {

// A wrong-protocol mistake is common (the daemon listens on two ports), so
// a transport failure that looks like one is checked with a short probe in
// the other protocol and the error then says what to change.
constexpr char kHttpPortHint[] =
    "--addr points at an HTTP port: use --protocol http or json, or the "
    "daemon's --listen address for tcp";
constexpr char kTcpPortHint[] =
    "--addr points at the framed protobuf/TCP port: use --protocol tcp, or "
    "the daemon's --http address for http and json";

// A body this large that fails to send was most likely refused for its
// size (the limit's smallest setting is 1 KiB, its default 4 MiB).
constexpr size_t kLargeBodyBytes = size_t{1} << 20;

absl::Status WithHint(const absl::Status& s, const char* hint) {
  return absl::Status(s.code(), absl::StrCat(s.message(), ": ", hint));
}

// True if host:port answers an HTTP request (any status).
bool AnswersHttp(const std::string& host, int port) {
  httplib::Client probe(host, port);
  probe.set_connection_timeout(1, 0);
  probe.set_read_timeout(2, 0);
  return static_cast<bool>(probe.Get("/healthz"));
}

// True if host:port answers a framed Status request (any answer, also an
// error such as a daemon with api-tokens refusing a call without a token).
bool AnswersFramedTcp(const std::string& host, int port) {
  sync::EventLoop loop(1);
  sync::ClientOptions o;
  o.host = host;
  o.port = static_cast<uint16_t>(port);
  o.connect_timeout = absl::Seconds(1);
  o.log = [](std::string_view) {};
  sync::Client probe(&loop, o);
  const absl::Status answer =
      probe
          .CallSync(static_cast<uint32_t>(Method::kStatus),
                    api::StatusRequest().SerializeAsString(), absl::Seconds(2))
          .status();
  return answer.code() != absl::StatusCode::kUnavailable &&
         answer.code() != absl::StatusCode::kDeadlineExceeded;
}

absl::StatusCode CodeFromName(const std::string& name) {
  for (int c = 0; c <= 16; ++c) {
    const auto code = static_cast<absl::StatusCode>(c);
    if (absl::StatusCodeToString(code) == name) return code;
  }
  return absl::StatusCode::kUnknown;
}

// The first words of the plain 400 a TLS gateway sends a client without
// TLS (service/internal/http_server.cc).
constexpr char kHttpsOnlyBody[] = "This port serves HTTPS";
constexpr char kTlsOptionsHint[] =
    "connect with TLS (latentctl: --tls-ca FILE, or --tls on for the "
    "system's CAs)";

class HttpClient : public ApiClient {
 public:
  HttpClient(std::string host, int port, bool json, absl::Duration timeout,
             bool explain, ClientTls tls)
      : host_(std::move(host)),
        port_(port),
        json_(json),
        explain_(explain),
        tls_(std::move(tls)),
        timeout_(timeout),
        client_(absl::StrCat(tls_.enabled ? "https://" : "http://",
                             absl::StrContains(host_, ':')
                                 ? absl::StrCat("[", host_, "]")
                                 : host_,
                             ":", port_)) {
    if (tls_.enabled) {
      if (!tls_.ca_file.empty()) client_.set_ca_cert_path(tls_.ca_file.c_str());
      client_.enable_server_certificate_verification(true);
    }
    const auto secs = absl::ToInt64Seconds(timeout_);
    client_.set_connection_timeout(5, 0);
    client_.set_read_timeout(secs, 0);
    client_.set_write_timeout(secs, 0);
    client_.set_keep_alive(true);
    client_.set_tcp_nodelay(true);
  }

  absl::Status Call(Method method, const google::protobuf::Message& request,
                    google::protobuf::Message* response) override {
    const std::string path =
        absl::StrCat("/v1/", std::string(MethodName(method)));
    const std::string body =
        json_ ? ToJson(request) : request.SerializeAsString();
    const char* type = json_ ? "application/json" : "application/x-protobuf";
    absl::MutexLock lock(&mu_);
    httplib::Headers headers;
    if (const std::string t = token(); !t.empty()) {
      headers.emplace("Authorization", absl::StrCat("Bearer ", t));
    }
    httplib::Result res = client_.Post(path.c_str(), headers, body, type);
    if (!res && tls_.enabled &&
        res.error() == httplib::Error::SSLServerVerification) {
      return absl::FailedPreconditionError(absl::StrCat(
          "HTTPS ", host_, ":", port_,
          ": the server's certificate does not verify against ",
          tls_.ca_file.empty() ? std::string("the system's CAs")
                               : absl::StrCat("the CA in ", tls_.ca_file),
          " or does not name '", host_, "'"));
    }
    if (!res && tls_.enabled && res.error() == httplib::Error::SSLConnection) {
      return absl::UnavailableError(
          absl::StrCat("HTTPS ", host_, ":", port_,
                       ": TLS handshake failed (does this port serve HTTPS?)"));
    }
    if (!res && res.error() == httplib::Error::Write &&
        body.size() > kLargeBodyBytes) {
      // The server answers a body over its limit with 413 and reads
      // and drops up to 64 MiB of it; past that it closes, and a client
      // that sends the whole body first never reads the 413.
      return absl::UnavailableError(absl::StrCat(
          "HTTP ", host_, ":", port_, path,
          ": the daemon closed the "
          "connection while this request's ",
          body.size(),
          "-byte body was "
          "sent: a daemon answers a body over its max-body-bytes (4194304 "
          "unless set) with 413 and closes"));
    }
    if (!res) {
      absl::Status s = absl::UnavailableError(
          absl::StrCat("HTTP ", host_, ":", port_, path, ": ",
                       httplib::to_string(res.error())));
      // Connected, but no HTTP answer: a framed port closes on "POST".
      if (explain_ && res.error() != httplib::Error::Connection &&
          res.error() != httplib::Error::ConnectionTimeout &&
          AnswersFramedTcp(host_, port_)) {
        return WithHint(s, kTcpPortHint);
      }
      return s;
    }
    if (res->status != 200) {
      api::Error error;
      // A request refused before the gateway read it (413, 431, 503)
      // is answered in JSON whichever encoding the client asked for.
      const bool json_answer =
          json_ || absl::StartsWith(res->get_header_value("Content-Type"),
                                    "application/json");
      const bool parsed = json_answer ? ParseJson(res->body, &error).ok()
                                      : error.ParseFromString(res->body);
      if (!parsed) {
        if (res->status == 400 && res->body.rfind(kHttpsOnlyBody, 0) == 0) {
          return absl::FailedPreconditionError(
              absl::StrCat("HTTP ", host_, ":", port_,
                           ": this port serves HTTPS; ", kTlsOptionsHint));
        }
        // The framed port answers an HTTP request with a plain 400 saying so.
        if (res->status == 400 &&
            res->body.rfind("This port speaks latentd's framed protobuf", 0) ==
                0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "HTTP ", host_, ":", port_, path, ": ", kTcpPortHint));
        }
        return absl::UnknownError(
            absl::StrCat("HTTP ", res->status, ": ", res->body.substr(0, 200)));
      }
      return absl::Status(CodeFromName(error.code()), error.message());
    }
    if (json_) return ParseJson(res->body, response);
    if (!response->ParseFromString(res->body)) {
      return absl::DataLossError(absl::StrCat("answer of ", path, " is not a ",
                                              response->GetTypeName()));
    }
    return absl::OkStatus();
  }

 private:
  std::string host_;
  int port_;
  bool json_;
  bool explain_;  // probe for a wrong port on a transport failure
  ClientTls tls_;
  absl::Duration timeout_;
  absl::Mutex mu_;
  httplib::Client client_ ABSL_GUARDED_BY(mu_);
};

class TcpClient : public ApiClient {
 public:
  TcpClient(std::string host, int port, absl::Duration timeout, bool explain,
            std::shared_ptr<const sync::TlsContext> tls)
      : host_(host),
        port_(port),
        explain_(explain),
        tls_(tls != nullptr),
        loop_(1),
        client_(&loop_, Options(host, port, std::move(tls))),
        timeout_(timeout) {}

  absl::Status Call(Method method, const google::protobuf::Message& request,
                    google::protobuf::Message* response) override {
    uint32_t type = static_cast<uint32_t>(method);
    std::string payload = request.SerializeAsString();
    if (std::string t = token(); !t.empty()) {
      api::AuthenticatedCall call;
      call.set_token(std::move(t));
      call.set_method(type);
      call.set_request(std::move(payload));
      type = kAuthenticatedCallType;
      payload = call.SerializeAsString();
    }
    absl::StatusOr<sync::Frame> reply =
        client_.CallSync(type, std::move(payload), timeout_);
    if (!reply.ok()) return WithProtocolHint(reply.status());
    if (!response->ParseFromString(reply->payload)) {
      return absl::DataLossError(
          absl::StrCat("answer of ", std::string(MethodName(method)),
                       " is not a ", response->GetTypeName()));
    }
    return absl::OkStatus();
  }

 private:
  // An HTTP server answers a frame with "HTTP/1.1 400 ..." (whose first
  // bytes, read as a frame header, are the magic 0x48545450, "HTTP"), or
  // waits for a request line and gives up. Either way the call fails as
  // unavailable or late; the hint is given when an HTTP probe answers.
  // Not over TLS: a TLS port answers any plaintext request (the probe's
  // too) with a 400 naming TLS, and an HTTPS port shows as the bad magic.
  absl::Status WithProtocolHint(const absl::Status& s) {
    const bool transport = s.code() == absl::StatusCode::kUnavailable ||
                           s.code() == absl::StatusCode::kDeadlineExceeded;
    if (!transport || !explain_) return s;
    if (absl::StrContains(s.message(), "TLS handshake")) return s;
    if (absl::StrContains(s.message(), "bad magic 0x48545450") ||
        (!tls_ && AnswersHttp(host_, port_))) {
      return WithHint(s, kHttpPortHint);
    }
    return s;
  }

  static sync::ClientOptions Options(
      const std::string& host, int port,
      std::shared_ptr<const sync::TlsContext> tls) {
    sync::ClientOptions o;
    o.host = host;
    o.port = static_cast<uint16_t>(port);
    o.tls = std::move(tls);
    return o;
  }
  std::string host_;
  int port_;
  bool explain_;  // probe for a wrong port on a transport failure
  bool tls_;
  sync::EventLoop loop_;
  sync::Client client_;
  absl::Duration timeout_;
};

}  // namespace

absl::StatusOr<Protocol> ParseProtocol(std::string_view name) {
  if (name == "json") return Protocol::kHttpJson;
  if (name == "http") return Protocol::kHttpProto;
  if (name == "tcp") return Protocol::kTcp;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown protocol '", absl::string_view(name.data(), name.size()),
      "' (json, http or tcp)"));
}

absl::StatusOr<std::unique_ptr<ApiClient>> ApiClient::Create(
    const std::string& address, Protocol protocol, absl::Duration timeout,
    bool explain_wrong_port, const ClientTls& tls) {
  std::string host;
  uint16_t port = 0;
  absl::Status s = SplitHostPort(address, &host, &port);
  if (!s.ok()) return s;
  std::shared_ptr<const sync::TlsContext> context;
  if (tls.enabled) {
    // Loaded here for both protocols, so that a bad CA file is an error
    // naming it before any connection (httplib loads it again for HTTPS).
    absl::StatusOr<std::shared_ptr<const sync::TlsContext>> c =
        sync::TlsContext::ForClient(tls.ca_file);
    if (!c.ok()) return c.status();
    context = *std::move(c);
  }
  if (protocol == Protocol::kTcp) {
    return std::unique_ptr<ApiClient>(new TcpClient(
        host, port, timeout, explain_wrong_port, std::move(context)));
  }
  return std::unique_ptr<ApiClient>(
      new HttpClient(host, port, protocol == Protocol::kHttpJson, timeout,
                     explain_wrong_port, tls));
}

}  // namespace latentd::service
