// The calls that answer from every cluster member's documents or users
// (GetDocumentTopics, TopicDocuments, SimilarDocuments, SimilarUsers, and
// the parts of a user's profile that GetUserProfile adds up): in
// cluster mode, without the request's `local`, this node asks the other
// members at once (ClusterRouter::Scatter, with `local` set so that they
// answer from their own data) and merges (scatter_merge.h). A member that
// fails or does not answer in time is named in the answer's
// missing_members; it fails nothing.
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "service/api_dispatch.h"
#include "service/scatter_merge.h"
#include "service/similarity_service.h"
#include "service/topic_queries.h"

namespace latentd::service {
namespace {

using Answers = std::vector<ClusterRouter::PeerAnswer>;

// The members whose answers failed, but for errors of code `ignored` (the
// member answered: it has no such item).
template <typename Response>
void AddMissing(const Answers& answers, absl::StatusCode ignored,
                Response* out) {
  for (const ClusterRouter::PeerAnswer& a : answers) {
    if (!a.status.ok() && a.status.code() != ignored) {
      out->add_missing_members(a.member);
    }
  }
}

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

absl::StatusOr<api::GetDocumentTopicsResponse> TopicQueries::GetDocumentTopics(
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

absl::StatusOr<api::TopicDocumentsResponse> TopicQueries::TopicDocuments(
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

absl::StatusOr<api::SimilarDocumentsResponse> TopicQueries::SimilarDocuments(
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
                                   return InferDocument(r);
                                 },
                                 request));
    ask.mutable_theta()->Assign(theta.begin(), theta.end());
  }
  return GatherSimilar(router_, Method::kSimilarDocuments, ask,
                       similarity_->SimilarDocuments(ask));
}

absl::StatusOr<api::SimilarUsersResponse> TopicQueries::SimilarUsers(
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
                           GetUserProfile(profile));
  api::SimilarUsersRequest ask = request;
  ask.clear_user();
  ask.set_local(true);
  SetTheta(p.topics(), ask.mutable_theta());
  ask.set_exclude(request.user());
  return GatherSimilar(router_, Method::kSimilarUsers, ask,
                       similarity_->SimilarUsers(ask));
}

absl::StatusOr<api::GetUserProfileResponse> TopicQueries::ProfilePart(
    const std::string& user, bool found, const std::vector<double>& counts,
    uint64_t tokens, uint64_t events, api::GetUserProfileResponse resp) {
  if (!found) {
    return absl::NotFoundError(
        absl::StrCat("user '", user, "' has no document on this member"));
  }
  resp.set_tokens(tokens);
  resp.set_events(events);
  for (size_t k = 0; k < counts.size(); ++k) {
    if (counts[k] <= 0) continue;
    api::TopicCount* c = resp.add_part_counts();
    c->set_topic(static_cast<uint32_t>(k));
    c->set_count(static_cast<uint64_t>(counts[k]));
  }
  return resp;
}

bool TopicQueries::AddProfileParts(const std::string& user,
                                   std::vector<double>* counts,
                                   uint64_t* tokens, uint64_t* events,
                                   api::GetUserProfileResponse* resp) const {
  if (router_.link() == nullptr) return false;
  api::GetUserProfileRequest ask;
  ask.set_user(user);
  ask.set_local(true);
  ask.set_part(true);
  const Answers answers = router_.Scatter(Method::kGetUserProfile, ask,
                                          api::GetUserProfileResponse());
  AddMissing(answers, absl::StatusCode::kNotFound, resp);
  bool found = false;
  for (const ClusterRouter::PeerAnswer& a : answers) {
    if (!a.status.ok()) continue;
    const auto& part =
        static_cast<const api::GetUserProfileResponse&>(*a.response);
    found = true;
    *tokens += part.tokens();
    *events += part.events();
    for (const api::TopicCount& c : part.part_counts()) {
      // (A member of another K is not of this cluster: its topics past
      // this model's are dropped, as a malformed answer's would be.)
      if (c.topic() < counts->size()) {
        (*counts)[c.topic()] += static_cast<double>(c.count());
      }
    }
  }
  return found;
}

}  // namespace latentd::service
