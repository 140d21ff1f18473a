// ApiDispatcher: the one place a request is decoded, routed to the
// LatentdService call it names, and its answer encoded — in binary protobuf
// or protobuf's own JSON mapping — so the HTTP gateway and the framed TCP
// server cannot disagree. Records per-call latency and error counts.
//
// Thread-safety: Call() is safe from any number of threads.
#ifndef LATENTD_SERVICE_API_DISPATCH_H_
#define LATENTD_SERVICE_API_DISPATCH_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "service/latentd_service.h"
#include "service/metrics.h"

namespace latentd::service {

enum class Encoding { kProto, kJson };

// The API's calls; the value is the request type on the framed transport,
// so a number, once given, never changes: a new call takes the next one.
enum class Method : uint32_t {
  kListTopics = 1,
  kGetTopic = 2,
  kWordTopics = 3,
  kInferDocument = 4,
  kGetUserProfile = 5,
  kIngest = 6,
  kStatus = 7,
  kCheckpoint = 8,
  kExportModel = 9,
  // The graph model (service/graph_service.h).
  kGetEmbedding = 10,
  kScorePairs = 11,
  kNearestVertices = 12,
  kIngestEdges = 13,
  // Similar documents and users (service/similarity_service.h).
  kSimilarDocuments = 14,
  kSimilarUsers = 15,
  // Documents of the model (service/document_topics.h).
  kGetDocumentTopics = 16,
  kTopicDocuments = 17,
  // The cluster's members as Redis records them.
  kClusterMembers = 18,
};
inline constexpr uint32_t kNumMethods = 18;
// Whether `method` reads or writes the topic model (a graph-only node
// answers it kFailedPrecondition): every call but Status and the graph's.
bool IsTopicCall(Method method);
// The framed TCP API's frame type for an api.AuthenticatedCall envelope (a
// call with a bearer token, service/api_auth.h): far above the calls'.
inline constexpr uint32_t kAuthenticatedCallType = 65536;

// "InferDocument" etc. <-> Method.
std::optional<Method> MethodFromName(std::string_view name);
std::optional<Method> MethodFromType(uint32_t type);
std::string_view MethodName(Method method);
// Whether a call may block on I/O: Ingest and IngestEdges (the logs'
// fsync, a forward in cluster mode), Checkpoint (waits for the sweep, writes),
// GetUserProfile (forwarded to the user's owner in cluster mode),
// ClusterMembers (reads Redis). The others only compute.
bool MayBlock(Method method);

class ApiDispatcher {
 public:
  // `transport` labels the metrics ("http", "tcp"). Both pointers must
  // outlive the dispatcher.
  ApiDispatcher(LatentdService* service, MetricsRegistry* metrics,
                std::string_view transport);

  // Decodes `body` as the method's request, runs it, encodes the answer.
  // kInvalidArgument names the method and the decoding problem for a body
  // that is not a valid request; otherwise the call's own status. `admin`:
  // the caller showed an admin token, or the API has no tokens. Only such a
  // caller may set the fields nodes set for each other (an Ingest's local
  // and replica_of: what they carry enters the model or a replica log
  // unchecked against the ring); others get kPermissionDenied.
  absl::StatusOr<std::string> Call(Method method, std::string_view body,
                                   Encoding encoding, bool admin);

 private:
  template <typename Req, typename Resp, typename Fn>
  absl::StatusOr<std::string> Run(Method method, std::string_view body,
                                  Encoding encoding, Fn fn);

  LatentdService* service_;
  std::array<Histogram*, kNumMethods> latency_{};
  std::array<Counter*, kNumMethods> errors_{};
};

// Encodes an error as api.Error (binary or JSON).
std::string EncodeError(const absl::Status& status, Encoding encoding);

// HTTP status for an absl status code (400 for bad input, 401 no or an
// unknown token, 403 a role too low, 404 not found, 503 unavailable, ...).
int HttpStatusFor(absl::StatusCode code);

// JSON <-> message with protobuf's mapping; errors are kInvalidArgument.
absl::Status ParseJson(std::string_view json, google::protobuf::Message* m);
std::string ToJson(const google::protobuf::Message& m);

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_API_DISPATCH_H_
