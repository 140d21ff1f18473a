#include "service/api_client.h"

#include <httplib.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "sync/transport.h"

namespace latentd::service {
namespace {

absl::StatusCode CodeFromName(const std::string& name) {
  for (int c = 0; c <= 16; ++c) {
    const auto code = static_cast<absl::StatusCode>(c);
    if (absl::StatusCodeToString(code) == name) return code;
  }
  return absl::StatusCode::kUnknown;
}

class HttpClient : public ApiClient {
 public:
  HttpClient(std::string host, int port, bool json, absl::Duration timeout)
      : host_(std::move(host)),
        port_(port),
        json_(json),
        timeout_(timeout),
        client_(host_, port_) {
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
    httplib::Result res = client_.Post(path.c_str(), body, type);
    if (!res) {
      return absl::UnavailableError(
          absl::StrCat("HTTP ", host_, ":", port_, path, ": ",
                       httplib::to_string(res.error())));
    }
    if (res->status != 200) {
      api::Error error;
      const bool parsed = json_ ? ParseJson(res->body, &error).ok()
                                : error.ParseFromString(res->body);
      if (!parsed) {
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
  absl::Duration timeout_;
  absl::Mutex mu_;
  httplib::Client client_ ABSL_GUARDED_BY(mu_);
};

class TcpClient : public ApiClient {
 public:
  TcpClient(std::string host, int port, absl::Duration timeout)
      : loop_(1), client_(&loop_, Options(host, port)), timeout_(timeout) {}

  absl::Status Call(Method method, const google::protobuf::Message& request,
                    google::protobuf::Message* response) override {
    absl::StatusOr<sync::Frame> reply = client_.CallSync(
        static_cast<uint32_t>(method), request.SerializeAsString(), timeout_);
    if (!reply.ok()) return reply.status();
    if (!response->ParseFromString(reply->payload)) {
      return absl::DataLossError(
          absl::StrCat("answer of ", std::string(MethodName(method)),
                       " is not a ", response->GetTypeName()));
    }
    return absl::OkStatus();
  }

 private:
  static sync::ClientOptions Options(const std::string& host, int port) {
    sync::ClientOptions o;
    o.host = host;
    o.port = static_cast<uint16_t>(port);
    return o;
  }
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
    const std::string& address, Protocol protocol, absl::Duration timeout) {
  std::string host;
  uint16_t port = 0;
  absl::Status s = SplitHostPort(address, &host, &port);
  if (!s.ok()) return s;
  if (protocol == Protocol::kTcp) {
    return std::unique_ptr<ApiClient>(new TcpClient(host, port, timeout));
  }
  return std::unique_ptr<ApiClient>(
      new HttpClient(host, port, protocol == Protocol::kHttpJson, timeout));
}

}  // namespace latentd::service
