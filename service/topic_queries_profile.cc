// The parts of a user's profile in cluster mode: a user's documents may be
// on several members (its owner's, and those an interim owner or an
// earlier one took while the ring put the user there), so the owner asks
// every other member for its part (ClusterRouter::Scatter, with `local`
// and `part` set) and adds them up. A member that fails or does not
// answer in time is named in the answer's missing_members; it fails
// nothing.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "service/api_dispatch.h"
#include "service/scatter_merge.h"
#include "service/topic_queries.h"

namespace latentd::service {

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
  const std::vector<ClusterRouter::PeerAnswer> answers = router_.Scatter(
      Method::kGetUserProfile, ask, api::GetUserProfileResponse());
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
