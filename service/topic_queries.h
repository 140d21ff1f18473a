// TopicQueries: the API's read calls on the topic model (service/api.proto).
// Each reads one published ModelView of the TrainingLoop (and the
// document calls the document table published beside it), so it needs no
// lock beyond taking the pointers and never waits for a sweep.
//
// Errors: kInvalidArgument for a bad request (naming the field and the
// limit), kNotFound for an unknown topic, word, user or document.
//
// Cluster mode: GetUserProfile is answered by the user's owner (forwarded
// unless the request is `local`), which adds up every member's part of the
// user (topic_queries_profile.cc). The calls on documents and users behind
// the model are DocumentQueries' (document_queries.h).
//
// Thread-safety: every method may be called from any number of threads at
// once.
#ifndef LATENTD_SERVICE_TOPIC_QUERIES_H_
#define LATENTD_SERVICE_TOPIC_QUERIES_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "service/api.pb.h"
#include "service/cluster_router.h"
#include "service/document_checker.h"
#include "service/ingest_path.h"
#include "service/internal/cpu_gate.h"
#include "service/model_view.h"
#include "service/service_options.h"
#include "service/training_loop.h"

namespace latentd::service {

class TopicQueries {
 public:
  // The parts it reads; not owned, they outlive it.
  TopicQueries(const ServiceOptions& options, const TrainingLoop* training,
               const DocumentChecker* checker, const ClusterRouter* router,
               const IngestPath* ingest);

  absl::StatusOr<api::ListTopicsResponse> ListTopics(
      const api::ListTopicsRequest& request) const;
  absl::StatusOr<api::GetTopicResponse> GetTopic(
      const api::GetTopicRequest& request) const;
  absl::StatusOr<api::WordTopicsResponse> WordTopics(
      const api::WordTopicsRequest& request) const;
  // Folds the text into the model; at most ServiceOptions::infer_slots at
  // once (the others wait).
  absl::StatusOr<api::InferDocumentResponse> InferDocument(
      const api::InferDocumentRequest& request) const;
  absl::StatusOr<api::GetUserProfileResponse> GetUserProfile(
      const api::GetUserProfileRequest& request) const;
  // A page of the published model's counts (api.proto ExportModelRequest
  // says how pages are cut); kInvalidArgument if first_word is past the
  // vocabulary (topic_queries_export.cc).
  absl::StatusOr<api::ExportModelResponse> ExportModel(
      const api::ExportModelRequest& request) const;

  // The sweep and view number of `v`, as every answer carries them.
  static api::ModelVersion Version(const ModelView& v);

 private:
  std::shared_ptr<const ModelView> view() const { return training_.view(); }
  // GetUserProfile for a user whose owner failed over (docs/design.md,
  // "Replicated ingestion"): this node, the user's owner now, holds copies
  // of the events that owner acknowledged (IngestPath::CopiedEvents). Folds
  // each into model `v` (not adding it to the model: the failed node's
  // counts are still in it) and adds its expected topic counts to *counts
  // (K entries), its known tokens to *tokens and the copies to *events.
  absl::Status AddCopiedEvents(const std::string& user, const ModelView& v,
                               std::vector<double>* counts, double* tokens,
                               uint64_t* events) const;
  // GetUserProfile in cluster mode (topic_queries_profile.cc). A user's
  // documents may be on several members: its owner's, and those an interim
  // owner or an earlier one took while the ring put the user there.
  // ProfilePart: this node's part as asked by the owner (`found`: it has
  // a document of the user; `counts` its n_uk), filled into `resp`.
  // AddProfileParts: the owner asks every other member for its part and
  // adds each to *counts (K entries), *tokens and *events; the members
  // that failed go in resp->missing_members. Whether any member had one.
  static absl::StatusOr<api::GetUserProfileResponse> ProfilePart(
      const std::string& user, bool found, const std::vector<double>& counts,
      uint64_t tokens, uint64_t events, api::GetUserProfileResponse resp);
  bool AddProfileParts(const std::string& user, std::vector<double>* counts,
                       uint64_t* tokens, uint64_t* events,
                       api::GetUserProfileResponse* resp) const;

  const ServiceOptions options_;
  const TrainingLoop& training_;
  const DocumentChecker& checker_;
  const ClusterRouter& router_;
  const IngestPath& ingest_;
  mutable internal::CpuGate infer_gate_;  // InferDocument's slots
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_TOPIC_QUERIES_H_
