// DocumentQueries: the API's read calls on the documents and users behind
// the topic model (service/api.proto): GetDocumentTopics, TopicDocuments,
// SimilarDocuments and SimilarUsers. Each reads the document table and
// model view the TrainingLoop published, so it needs no lock beyond taking
// the pointers and never waits for a sweep.
//
// Cluster mode, without the request's `local`: the calls answer from every
// member's data. This node asks the other members at once
// (ClusterRouter::Scatter, with `local` set so that they answer from their
// own) and merges (scatter_merge.h): GetDocumentTopics asks them when this
// node has no such document and takes the first that has it;
// TopicDocuments merges every member's top documents; SimilarDocuments and
// SimilarUsers find the query's θ once here (a document's by
// GetDocumentTopics, a user's by its profile, a text's by InferDocument),
// every member ranks its own items against it and the answers are merged.
// Members that fail or do not answer within the router's scatter timeout
// are named in missing_members, not an error.
//
// Errors: kInvalidArgument for a bad request (naming the field and the
// limit), kNotFound for an unknown topic or document, kFailedPrecondition
// for a similarity call on a node without a topic model.
//
// Thread-safety: every method may be called from any number of threads at
// once; SetSimilarity once, before the first call.
#ifndef LATENTD_SERVICE_DOCUMENT_QUERIES_H_
#define LATENTD_SERVICE_DOCUMENT_QUERIES_H_

#include <memory>

#include "absl/status/statusor.h"
#include "service/api.pb.h"
#include "service/cluster_router.h"
#include "service/document_topics.h"
#include "service/model_view.h"
#include "service/similarity_service.h"
#include "service/topic_queries.h"
#include "service/training_loop.h"

namespace latentd::service {

class DocumentQueries {
 public:
  // The parts it reads; not owned, they outlive it. `topics` answers the
  // θ of a text (InferDocument) and of a user (GetUserProfile).
  DocumentQueries(const TrainingLoop* training, const ClusterRouter* router,
                  const TopicQueries* topics);

  // The similarity calls' service (not owned); without one they answer
  // kFailedPrecondition.
  void SetSimilarity(const SimilarityService* similarity) {
    similarity_ = similarity;
  }

  // kInvalidArgument for an empty document or top over 1000.
  absl::StatusOr<api::GetDocumentTopicsResponse> GetDocumentTopics(
      const api::GetDocumentTopicsRequest& request) const;
  absl::StatusOr<api::TopicDocumentsResponse> TopicDocuments(
      const api::TopicDocumentsRequest& request) const;
  absl::StatusOr<api::SimilarDocumentsResponse> SimilarDocuments(
      const api::SimilarDocumentsRequest& request) const;
  absl::StatusOr<api::SimilarUsersResponse> SimilarUsers(
      const api::SimilarUsersRequest& request) const;

 private:
  // TopicDocuments' documents when the request says 0.
  static constexpr uint32_t kDefaultTopDocuments = 10;
  std::shared_ptr<const ModelView> view() const { return training_.view(); }
  absl::StatusOr<std::shared_ptr<const DocumentTopics>> Documents() const {
    return training_.Documents();
  }
  // GetDocumentTopics and TopicDocuments from this node's documents only.
  absl::StatusOr<api::GetDocumentTopicsResponse> LocalDocumentTopics(
      const api::GetDocumentTopicsRequest& request) const;
  absl::StatusOr<api::TopicDocumentsResponse> LocalTopicDocuments(
      const api::TopicDocumentsRequest& request) const;
  // Whether a request with this `local` flag is asked of every member.
  bool Scatters(bool local) const {
    return !local && router_.link() != nullptr;
  }

  const TrainingLoop& training_;
  const ClusterRouter& router_;
  const TopicQueries& topics_;
  const SimilarityService* similarity_ = nullptr;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_DOCUMENT_QUERIES_H_
