#include "service/api_dispatch.h"

#include <google/protobuf/util/json_util.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "service/graph_service.h"

namespace latentd::service {
namespace {

// Indexed by the method's number - 1.
constexpr std::array<std::string_view, kNumMethods> kNames = {
    "ListTopics",     "GetTopic",         "WordTopics",   "InferDocument",
    "GetUserProfile", "Ingest",           "Status",       "Checkpoint",
    "ExportModel",    "GetEmbedding",     "ScorePairs",   "NearestVertices",
    "IngestEdges",    "SimilarDocuments", "SimilarUsers", "GetDocumentTopics",
    "TopicDocuments", "ClusterMembers"};

// The node's graph model, or FAILED_PRECONDITION naming the call.
absl::StatusOr<GraphService*> GraphOf(LatentdService* s,
                                      std::string_view call) {
  if (s->graph() == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        absl::string_view(call.data(), call.size()),
        ": this node serves no graph (start latentd with --graph-edges FILE)"));
  }
  return s->graph();
}

}  // namespace

std::optional<Method> MethodFromName(std::string_view name) {
  for (uint32_t i = 0; i < kNumMethods; ++i) {
    if (kNames[i] == name) return static_cast<Method>(i + 1);
  }
  return std::nullopt;
}

bool MayBlock(Method method) {
  return method == Method::kIngest || method == Method::kIngestEdges ||
         method == Method::kCheckpoint || method == Method::kGetUserProfile ||
         method == Method::kClusterMembers;
}

bool IsTopicCall(Method method) {
  switch (method) {
    case Method::kStatus:
    case Method::kGetEmbedding:
    case Method::kScorePairs:
    case Method::kNearestVertices:
    case Method::kIngestEdges:
    case Method::kClusterMembers:
      return false;
    default:
      return true;
  }
}

std::optional<Method> MethodFromType(uint32_t type) {
  if (type < 1 || type > kNumMethods) return std::nullopt;
  return static_cast<Method>(type);
}

std::string_view MethodName(Method method) {
  return kNames[static_cast<uint32_t>(method) - 1];
}

absl::Status ParseJson(std::string_view json, google::protobuf::Message* m) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), m, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed JSON for ", m->GetTypeName(), ": ",
                     std::string(status.message())));
  }
  return absl::OkStatus();
}

std::string ToJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

std::string EncodeError(const absl::Status& status, Encoding encoding) {
  api::Error error;
  error.set_code(absl::StatusCodeToString(status.code()));
  error.set_message(std::string(status.message()));
  return encoding == Encoding::kJson ? ToJson(error)
                                     : error.SerializeAsString();
}

int HttpStatusFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kResourceExhausted:
      return 413;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    case absl::StatusCode::kUnimplemented:
      return 501;
    default:
      return 500;
  }
}

ApiDispatcher::ApiDispatcher(LatentdService* service, MetricsRegistry* metrics,
                             std::string_view transport)
    : service_(service) {
  for (uint32_t i = 0; i < kNumMethods; ++i) {
    const std::string labels = absl::StrCat(
        "call=\"", std::string(kNames[i]), "\",transport=\"",
        absl::string_view(transport.data(), transport.size()), "\"");
    latency_[i] = metrics->AddHistogram("latentd_request_seconds",
                                        "API call latency in seconds", labels);
  }
  for (uint32_t i = 0; i < kNumMethods; ++i) {
    const std::string labels = absl::StrCat(
        "call=\"", std::string(kNames[i]), "\",transport=\"",
        absl::string_view(transport.data(), transport.size()), "\"");
    errors_[i] =
        metrics->AddCounter("latentd_request_errors_total",
                            "API calls answered with an error", labels);
  }
}

template <typename Req, typename Resp, typename Fn>
absl::StatusOr<std::string> ApiDispatcher::Run(Method method,
                                               std::string_view body,
                                               Encoding encoding, Fn fn) {
  const auto start = std::chrono::steady_clock::now();
  const uint32_t i = static_cast<uint32_t>(method) - 1;
  auto finish = [&](absl::StatusOr<std::string> out) {
    latency_[i]->Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
    if (!out.ok()) errors_[i]->Add();
    return out;
  };
  Req request;
  if (encoding == Encoding::kJson) {
    absl::Status parsed = ParseJson(body.empty() ? "{}" : body, &request);
    if (!parsed.ok()) return finish(parsed);
  } else if (!request.ParseFromArray(body.data(),
                                     static_cast<int>(body.size()))) {
    return finish(absl::InvalidArgumentError(
        absl::StrCat("invalid protobuf: ", body.size(), " bytes are not a ",
                     request.GetTypeName())));
  }
  absl::StatusOr<Resp> resp = fn(request);
  if (!resp.ok()) return finish(resp.status());
  return finish(encoding == Encoding::kJson ? ToJson(*resp)
                                            : resp->SerializeAsString());
}

absl::StatusOr<std::string> ApiDispatcher::Call(Method method,
                                                std::string_view body,
                                                Encoding encoding, bool admin) {
  LatentdService* s = service_;
  if (!s->serves_topics() && IsTopicCall(method)) {
    const uint32_t i = static_cast<uint32_t>(method) - 1;
    errors_[i]->Add();
    return s->CheckTopics(MethodName(method));
  }
  switch (method) {
    case Method::kListTopics:
      return Run<api::ListTopicsRequest, api::ListTopicsResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->ListTopics(r); });
    case Method::kGetTopic:
      return Run<api::GetTopicRequest, api::GetTopicResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->GetTopic(r); });
    case Method::kWordTopics:
      return Run<api::WordTopicsRequest, api::WordTopicsResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->WordTopics(r); });
    case Method::kInferDocument:
      return Run<api::InferDocumentRequest, api::InferDocumentResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->InferDocument(r); });
    case Method::kGetUserProfile:
      return Run<api::GetUserProfileRequest, api::GetUserProfileResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->GetUserProfile(r); });
    case Method::kIngest:
      return Run<api::IngestRequest, api::IngestResponse>(
          method, body, encoding,
          [s, admin](const auto& r) -> absl::StatusOr<api::IngestResponse> {
            if (!admin && (r.local() || !r.replica_of().empty())) {
              return absl::PermissionDeniedError(
                  "Ingest's local and replica_of are for cluster nodes: they "
                  "need an admin token");
            }
            return s->Ingest(r);
          });
    case Method::kStatus:
      return Run<api::StatusRequest, api::StatusResponse>(
          method, body, encoding, [s](const auto& r) { return s->Status(r); });
    case Method::kCheckpoint:
      return Run<api::CheckpointRequest, api::CheckpointResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->Checkpoint(r); });
    case Method::kExportModel:
      return Run<api::ExportModelRequest, api::ExportModelResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->ExportModel(r); });
    case Method::kGetEmbedding:
      return Run<api::GetEmbeddingRequest, api::GetEmbeddingResponse>(
          method, body, encoding,
          [s](const auto& r) -> absl::StatusOr<api::GetEmbeddingResponse> {
            LATENTD_ASSIGN_OR_RETURN(GraphService * g,
                                     GraphOf(s, "GetEmbedding"));
            return g->GetEmbedding(r);
          });
    case Method::kScorePairs:
      return Run<api::ScorePairsRequest, api::ScorePairsResponse>(
          method, body, encoding,
          [s](const auto& r) -> absl::StatusOr<api::ScorePairsResponse> {
            LATENTD_ASSIGN_OR_RETURN(GraphService * g,
                                     GraphOf(s, "ScorePairs"));
            return g->ScorePairs(r);
          });
    case Method::kNearestVertices:
      return Run<api::NearestVerticesRequest, api::NearestVerticesResponse>(
          method, body, encoding,
          [s](const auto& r) -> absl::StatusOr<api::NearestVerticesResponse> {
            LATENTD_ASSIGN_OR_RETURN(GraphService * g,
                                     GraphOf(s, "NearestVertices"));
            return g->NearestVertices(r);
          });
    case Method::kIngestEdges:
      return Run<api::IngestEdgesRequest, api::IngestEdgesResponse>(
          method, body, encoding,
          [s](const auto& r) -> absl::StatusOr<api::IngestEdgesResponse> {
            LATENTD_ASSIGN_OR_RETURN(GraphService * g,
                                     GraphOf(s, "IngestEdges"));
            return g->IngestEdges(r);
          });
    case Method::kSimilarDocuments:
      return Run<api::SimilarDocumentsRequest, api::SimilarDocumentsResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->SimilarDocuments(r); });
    case Method::kSimilarUsers:
      return Run<api::SimilarUsersRequest, api::SimilarUsersResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->SimilarUsers(r); });
    case Method::kGetDocumentTopics:
      return Run<api::GetDocumentTopicsRequest, api::GetDocumentTopicsResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->GetDocumentTopics(r); });
    case Method::kTopicDocuments:
      return Run<api::TopicDocumentsRequest, api::TopicDocumentsResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->TopicDocuments(r); });
    case Method::kClusterMembers:
      return Run<api::ClusterMembersRequest, api::ClusterMembersResponse>(
          method, body, encoding,
          [s](const auto& r) { return s->ClusterMembers(r); });
  }
  return absl::InvalidArgumentError("unknown method");
}

}  // namespace latentd::service
