#include "service/document_queries.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "service/api_dispatch.h"
#include "service/internal/topic_answers.h"
#include "service/scatter_merge.h"

namespace latentd::service {
namespace {

using internal::AddRankedTopics;
using internal::CheckTopWords;
using internal::kMaxTopDocuments;
using internal::OrDefault;
using internal::Ranked;
using Answers = std::vector<ClusterRouter::PeerAnswer>;

// Topic weights (all K of them, in any order) as θ in topic order.
void SetTheta(const google::protobuf::RepeatedPtrField<api::TopicWeight>& w,
              google::protobuf::RepeatedField<float>* theta) {
  theta->Resize(w.size(), 0.0f);
  for (const api::TopicWeight& t : w) {
    if (t.topic() < static_cast<uint32_t>(w.size())) {
      theta->Set(static_cast<int>(t.topic()), static_cast<float>(t.weight()));
    }
  }
}

// `local` (this node's answer to the θ query `ask`, or its error) merged
// with every other member's answer to it: the best top neighbours,
// ask.exclude() left out, the staleness exact only if every answer's was,
// and the items indexed summed.
template <typename Request, typename Response>
absl::StatusOr<Response> GatherSimilar(const ClusterRouter& router,
                                       Method method, const Request& ask,
                                       absl::StatusOr<Response> mine) {
  if (!mine.ok()) return mine;
  Response* local = &*mine;
  const Answers answers = router.Scatter(method, ask, Response());
  std::vector<const google::protobuf::RepeatedPtrField<api::Neighbor>*> parts =
      {&local->neighbors()};
  api::SimilarityStaleness* staleness = local->mutable_staleness();
  for (const ClusterRouter::PeerAnswer& a : answers) {
    if (!a.status.ok()) continue;
    const auto& r = static_cast<const Response&>(*a.response);
    parts.push_back(&r.neighbors());
    staleness->set_exact(staleness->exact() && r.staleness().exact());
    staleness->set_indexed(staleness->indexed() + r.staleness().indexed());
  }
  google::protobuf::RepeatedPtrField<api::Neighbor> merged = MergeNeighbors(
      parts, ask.top() == 0 ? SimilarityService::kDefaultTop : ask.top(),
      ask.exclude());
  local->mutable_neighbors()->Swap(&merged);
  AddMissing(answers, absl::StatusCode::kOk, local);
  return mine;
}

}  // namespace

DocumentQueries::DocumentQueries(const TrainingLoop* training,
                                 const ClusterRouter* router,
                                 const TopicQueries* topics)
    : training_(*training), router_(*router), topics_(*topics) {}

absl::StatusOr<api::GetDocumentTopicsResponse>
DocumentQueries::GetDocumentTopics(
    const api::GetDocumentTopicsRequest& request) const {
  absl::StatusOr<api::GetDocumentTopicsResponse> mine =
      LocalDocumentTopics(request);
  if (mine.status().code() != absl::StatusCode::kNotFound ||
      !Scatters(request.local())) {
    return mine;
  }
  api::GetDocumentTopicsRequest ask = request;
  ask.set_local(true);
  const Answers answers = router_.Scatter(Method::kGetDocumentTopics, ask,
                                          api::GetDocumentTopicsResponse());
  api::GetDocumentTopicsResponse found;
  AddMissing(answers, absl::StatusCode::kNotFound, &found);
  for (const ClusterRouter::PeerAnswer& a : answers) {
    if (!a.status.ok()) continue;
    found.MergeFrom(
        static_cast<const api::GetDocumentTopicsResponse&>(*a.response));
    return found;
  }
  std::string missing;
  if (found.missing_members_size() > 0) {
    missing =
        absl::StrCat("; members ", absl::StrJoin(found.missing_members(), ", "),
                     " did not answer: it may be on one of them");
  }
  return absl::NotFoundError(absl::StrCat(
      "document '", request.document(), "' is in none of the ",
      answers.size() + 1,
      " cluster members' models (unknown, a user's events, or ingested and "
      "not merged yet)",
      missing));
}

absl::StatusOr<api::TopicDocumentsResponse> DocumentQueries::TopicDocuments(
    const api::TopicDocumentsRequest& request) const {
  LATENTD_ASSIGN_OR_RETURN(api::TopicDocumentsResponse mine,
                           LocalTopicDocuments(request));
  if (!Scatters(request.local())) return mine;
  api::TopicDocumentsRequest ask = request;
  ask.set_local(true);
  const Answers answers = router_.Scatter(Method::kTopicDocuments, ask,
                                          api::TopicDocumentsResponse());
  std::vector<const api::TopicDocumentsResponse*> parts = {&mine};
  for (const ClusterRouter::PeerAnswer& a : answers) {
    if (a.status.ok()) {
      parts.push_back(
          static_cast<const api::TopicDocumentsResponse*>(a.response.get()));
    }
  }
  api::TopicDocumentsResponse resp = MergeTopicDocuments(
      parts, request.top() == 0 ? kDefaultTopDocuments : request.top());
  AddMissing(answers, absl::StatusCode::kOk, &resp);
  return resp;
}

absl::StatusOr<api::SimilarDocumentsResponse> DocumentQueries::SimilarDocuments(
    const api::SimilarDocumentsRequest& request) const {
  if (similarity_ == nullptr) {
    return absl::FailedPreconditionError(
        "SimilarDocuments: this node has no topic model");
  }
  const bool by_document = !request.document().empty();
  if (!Scatters(request.local()) || request.theta_size() > 0 ||
      by_document == !request.text().empty()) {
    return similarity_->SimilarDocuments(request);  // its errors too
  }
  // The query's θ, found once: the document's wherever it lives, or the
  // text's inferred here.
  api::SimilarDocumentsRequest ask = request;
  ask.clear_document();
  ask.clear_text();
  ask.set_local(true);
  if (by_document) {
    api::GetDocumentTopicsRequest doc;
    doc.set_document(request.document());
    LATENTD_ASSIGN_OR_RETURN(api::GetDocumentTopicsResponse d,
                             GetDocumentTopics(doc));
    SetTheta(d.topics(), ask.mutable_theta());
    ask.set_exclude(request.document());
  } else {
    LATENTD_ASSIGN_OR_RETURN(std::vector<float> theta,
                             SimilarityService::TextTheta(
                                 [this](const api::InferDocumentRequest& r) {
                                   return topics_.InferDocument(r);
                                 },
                                 request));
    ask.mutable_theta()->Assign(theta.begin(), theta.end());
  }
  return GatherSimilar(router_, Method::kSimilarDocuments, ask,
                       similarity_->SimilarDocuments(ask));
}

absl::StatusOr<api::SimilarUsersResponse> DocumentQueries::SimilarUsers(
    const api::SimilarUsersRequest& request) const {
  if (similarity_ == nullptr) {
    return absl::FailedPreconditionError(
        "SimilarUsers: this node has no topic model");
  }
  if (!Scatters(request.local()) || request.theta_size() > 0 ||
      request.user().empty()) {
    return similarity_->SimilarUsers(request);  // its errors too
  }
  // The user's θ from its owner's profile of it.
  api::GetUserProfileRequest profile;
  profile.set_user(request.user());
  profile.set_top(std::numeric_limits<uint32_t>::max());  // every topic
  profile.set_top_words(1);
  LATENTD_ASSIGN_OR_RETURN(api::GetUserProfileResponse p,
                           topics_.GetUserProfile(profile));
  api::SimilarUsersRequest ask = request;
  ask.clear_user();
  ask.set_local(true);
  SetTheta(p.topics(), ask.mutable_theta());
  ask.set_exclude(request.user());
  return GatherSimilar(router_, Method::kSimilarUsers, ask,
                       similarity_->SimilarUsers(ask));
}

absl::StatusOr<api::GetDocumentTopicsResponse>
DocumentQueries::LocalDocumentTopics(
    const api::GetDocumentTopicsRequest& request) const {
  if (request.document().empty()) {
    return absl::InvalidArgumentError(
        "a document is needed: its id as the corpus or the ingest named it");
  }
  LATENTD_RETURN_IF_ERROR(CheckTopWords(request.top_words()));
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const DocumentTopics> table,
                           Documents());
  const std::optional<DocumentTopics::Document> doc =
      table->Find(request.document());
  if (!doc.has_value()) {
    return absl::NotFoundError(absl::StrCat(
        "document '", request.document(),
        "' is not in this node's model (unknown, a user's events, or "
        "ingested and not merged yet)"));
  }
  std::shared_ptr<const ModelView> v = view();
  const std::vector<double>& alpha = v->snapshot.alpha;
  const double alpha_sum = std::accumulate(alpha.begin(), alpha.end(), 0.0);
  std::vector<double> counts(alpha.size(), 0.0);
  api::GetDocumentTopicsResponse resp;
  resp.mutable_version()->set_sweep(table->sweep());
  resp.mutable_version()->set_view(table->view());
  resp.set_document(request.document());
  resp.set_tokens(doc->tokens);
  for (size_t i = 0; i < doc->topics.size(); ++i) {
    if (doc->topics[i] < counts.size()) counts[doc->topics[i]] = doc->counts[i];
    api::TopicCount* c = resp.add_counts();
    c->set_topic(doc->topics[i]);
    c->set_count(doc->counts[i]);
  }
  const double denom = static_cast<double>(doc->tokens) + alpha_sum;
  std::vector<double> theta(alpha.size());
  for (uint32_t k = 0; k < alpha.size(); ++k) {
    theta[k] = (counts[k] + alpha[k]) / denom;
  }
  AddRankedTopics(*v, Ranked(theta),
                  request.top() == 0 ? theta.size() : request.top(),
                  request.top_words(), &resp);
  return resp;
}

absl::StatusOr<api::TopicDocumentsResponse>
DocumentQueries::LocalTopicDocuments(
    const api::TopicDocumentsRequest& request) const {
  if (request.top() > kMaxTopDocuments) {
    return absl::InvalidArgumentError(absl::StrCat(
        "top ", request.top(), " is over the limit of ", kMaxTopDocuments));
  }
  std::shared_ptr<const ModelView> v = view();
  const std::vector<double>& alpha = v->snapshot.alpha;
  if (request.topic() >= alpha.size()) {
    return absl::NotFoundError(absl::StrCat(
        "topic ", request.topic(), " does not exist: the model has ",
        alpha.size(), " topics (0..", alpha.size() - 1, ")"));
  }
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const DocumentTopics> table,
                           Documents());
  api::TopicDocumentsResponse resp;
  resp.mutable_version()->set_sweep(table->sweep());
  resp.mutable_version()->set_view(table->view());
  resp.set_topic(request.topic());
  const uint32_t top = OrDefault(request.top(), kDefaultTopDocuments);
  for (const DocumentTopics::Ranked& r :
       table->TopDocuments(request.topic(), top, alpha)) {
    const DocumentTopics::Document d = table->At(r.document);
    api::DocumentWeight* out = resp.add_documents();
    out->set_document(std::string(d.key));
    out->set_weight(r.weight);
    out->set_tokens(d.tokens);
    auto it =
        std::lower_bound(d.topics.begin(), d.topics.end(), request.topic());
    if (it != d.topics.end() && *it == request.topic()) {
      out->set_count(d.counts[static_cast<size_t>(it - d.topics.begin())]);
    }
  }
  return resp;
}

}  // namespace latentd::service
