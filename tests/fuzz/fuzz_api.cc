// libFuzzer harness: the API's request decoding and the calls behind it,
// on a small trained model in this process (LatentdService, not started).
// The first input byte picks the front end:
//   0  HTTP/JSON: the rest is "Method\nbody" (POST /v1/Method), decoded
//      with protobuf's JSON mapping as the HTTP gateway does;
//   1  binary protobuf body for the method numbered by the next byte;
//   2  a framed TCP request: the 20-byte frame header, then the payload
//      (an AuthenticatedCall envelope when the type says so), checked
//      against a tokens file as the TCP server (service/rpc_server.cc) does.
// Every call answers OK or an error; an error is a 4xx-class code for
// bytes that are not a valid request, never INTERNAL. Ingest and
// Checkpoint are decoded only (they would write and fsync the data
// directory on every input).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "service/api.pb.h"
#include "service/api_auth.h"
#include "service/api_dispatch.h"
#include "service/latentd_service.h"
#include "service/metrics.h"
#include "sync/transport/frame.h"
#include "tests/fuzz/fuzz_util.h"

namespace latentd::service {
namespace {

struct World {
  MetricsRegistry metrics;
  std::unique_ptr<LatentdService> service;
  std::unique_ptr<ApiDispatcher> dispatcher;
  std::optional<ApiTokens> tokens;  // set once, in TheWorld
};

World* TheWorld() {
  static World* world = [] {
    auto* w = new World;
    const std::string dir = fuzz::ScratchDir() + "/api";
    std::filesystem::create_directories(dir);
    std::string corpus;
    for (int d = 0; d < 40; ++d) {
      corpus += d % 2 ? "oil prices opec crude barrel energy market\n"
                      : "football match goal team player season coach\n";
    }
    ServiceOptions o;
    o.data_dir = dir + "/node";
    o.corpus.path = fuzz::WriteScratchFile("api/corpus.txt", corpus);
    o.trainer.num_topics = 4;
    o.trainer.eval_every = 0;
    o.max_sweeps = 2;
    o.max_infer_iterations = 50;  // bounds the work of one input
    o.max_text_bytes = 4096;
    o.max_documents_per_ingest = 16;
    absl::StatusOr<std::unique_ptr<LatentdService>> s =
        LatentdService::Open(o, &w->metrics);
    if (!s.ok()) {
      std::fprintf(stderr, "fuzz_api: %s\n", s.status().ToString().c_str());
      std::abort();
    }
    w->service = std::move(*s);
    w->dispatcher =
        std::make_unique<ApiDispatcher>(w->service.get(), &w->metrics, "tcp");
    absl::StatusOr<ApiTokens> t = ApiTokens::Parse(
        "read read-token-0123456789\nwrite write-token-0123456789\n"
        "admin admin-token-0123456789\n",
        "tokens");
    if (!t.ok()) std::abort();
    w->tokens.emplace(std::move(*t));
    return w;
  }();
  return world;
}

// A status from a request's bytes: never INTERNAL or UNKNOWN.
void CheckStatus(const absl::Status& s) {
  LATENTD_FUZZ_CHECK(s.code() != absl::StatusCode::kInternal);
  LATENTD_FUZZ_CHECK(s.code() != absl::StatusCode::kUnknown);
}

void CallMethod(Method m, std::string_view body, Encoding enc) {
  World* w = TheWorld();
  if (m == Method::kIngest || m == Method::kCheckpoint) {
    api::IngestRequest ingest;
    api::CheckpointRequest checkpoint;
    google::protobuf::Message* msg =
        m == Method::kIngest ? static_cast<google::protobuf::Message*>(&ingest)
                             : &checkpoint;
    if (enc == Encoding::kJson) {
      (void)ParseJson(body, msg);
    } else {
      (void)msg->ParseFromArray(body.data(), static_cast<int>(body.size()));
    }
    return;
  }
  absl::StatusOr<std::string> out =
      w->dispatcher->Call(m, body, enc, /*admin=*/true);
  if (!out.ok()) {
    CheckStatus(out.status());
    // The error body a front end sends back encodes in either form.
    LATENTD_FUZZ_CHECK(!EncodeError(out.status(), enc).empty());
  }
}

// What RpcServer's frame handler does before the dispatcher.
void CallFrame(std::string_view bytes) {
  World* w = TheWorld();
  std::string header(bytes.substr(0, sync::kFrameHeaderSize));
  header.resize(sync::kFrameHeaderSize, '\0');
  absl::StatusOr<sync::FrameHeader> h =
      sync::DecodeFrameHeader(header.data(), 1 << 20);
  if (!h.ok()) return;
  bytes.remove_prefix(std::min(bytes.size(), sync::kFrameHeaderSize));
  std::string payload(bytes.substr(0, h->payload_size));
  uint32_t type = h->type;
  std::string token;
  if (type == kAuthenticatedCallType) {
    api::AuthenticatedCall call;
    if (!call.ParseFromString(payload)) return;
    type = call.method();
    token = call.token();
    payload = call.request();
  }
  const std::optional<Method> m = MethodFromType(type);
  if (!m.has_value()) return;
  if (absl::Status s = w->tokens->Authorize(token, *m); !s.ok()) {
    LATENTD_FUZZ_CHECK(s.code() == absl::StatusCode::kUnauthenticated ||
                       s.code() == absl::StatusCode::kPermissionDenied);
    return;
  }
  CallMethod(*m, payload, Encoding::kProto);
}

}  // namespace
}  // namespace latentd::service

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  latentd::fuzz::QuietLogs();
  (void)latentd::service::TheWorld();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd::service;
  if (size < 2) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {  // HTTP/JSON
      const size_t nl = rest.find('\n');
      if (nl == std::string_view::npos) return 0;
      const std::optional<Method> m = MethodFromName(rest.substr(0, nl));
      if (m.has_value()) CallMethod(*m, rest.substr(nl + 1), Encoding::kJson);
      return 0;
    }
    case 1: {  // binary body
      const std::optional<Method> m =
          MethodFromType(static_cast<uint8_t>(rest[0]));
      if (m.has_value()) CallMethod(*m, rest.substr(1), Encoding::kProto);
      return 0;
    }
    default:
      CallFrame(rest);
      return 0;
  }
}
