#include "service/cluster_router.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "corpora/types.h"
#include "service/api_client.h"

namespace latentd::service {

ClusterRouter::ClusterRouter(ClusterRouterOptions options)
    : options_(std::move(options)), peer_token_(options_.peer_token) {}

ClusterRouter::~ClusterRouter() = default;

sync::Key ClusterRouter::UserKey(std::string_view user) {
  // Salted, so that users and the word of the same spelling spread apart.
  return HashWord(user) ^ 0x5bd1e9955bd1e995ULL;
}

void ClusterRouter::SetLink(ClusterLink* link) {
  link_.store(link, std::memory_order_release);
}

absl::Status ClusterRouter::CheckJoined() const {
  if (options_.cluster_mode && link() == nullptr) {
    return absl::UnavailableError(
        "this node is still joining its cluster: it takes users' events and "
        "profile queries once it knows the ring");
  }
  return absl::OkStatus();
}

std::string ClusterRouter::UserOwner(std::string_view user) const {
  const ClusterLink* link = this->link();
  if (link == nullptr) return "";
  // One copy of the ring: it may move to a new epoch meanwhile.
  const hashring::RingConfig config = link->ring_config();
  std::shared_ptr<const hashring::Ring> ring = link->ring();
  std::string owner = config.members[ring->Owner(UserKey(user))].id;
  if (owner == link->node_id()) owner.clear();
  return owner;
}

absl::StatusOr<ApiClient*> ClusterRouter::Client(
    absl::flat_hash_map<std::string, std::unique_ptr<ApiClient>>* clients,
    const std::string& id, absl::Duration timeout) const {
  std::unique_ptr<ApiClient>& client = (*clients)[id];
  if (client == nullptr) {
    absl::StatusOr<std::unique_ptr<ApiClient>> c =
        ApiClient::Create(id, Protocol::kTcp, timeout,
                          /*explain_wrong_port=*/false, options_.peer_tls);
    if (!c.ok()) {
      clients->erase(id);
      return c.status();
    }
    (*c)->set_token(peer_token_);
    client = std::move(*c);
  }
  return client.get();
}

absl::StatusOr<ApiClient*> ClusterRouter::PeerClient(
    const std::string& id) const {
  absl::MutexLock lock(&peers_mu_);
  return Client(&peer_clients_, id, absl::Seconds(10));
}

void ClusterRouter::SetPeerToken(std::string token) {
  absl::MutexLock lock(&peers_mu_);
  for (auto& [id, client] : peer_clients_) client->set_token(token);
  for (auto& [id, client] : scatter_clients_) client->set_token(token);
  for (auto& [id, client] : suspect_clients_) client->set_token(token);
  peer_token_ = std::move(token);
}

std::vector<ClusterRouter::PeerAnswer> ClusterRouter::Scatter(
    Method method, const google::protobuf::Message& request,
    const google::protobuf::Message& prototype) const {
  std::vector<PeerAnswer> answers;
  const ClusterLink* link = this->link();
  if (link == nullptr) return answers;
  const hashring::RingConfig ring = link->ring_config();  // a copy
  const std::vector<std::string> unavailable = link->UnavailablePeers();
  std::vector<bool> suspect;
  for (const hashring::Member& m : ring.members) {
    if (m.id == link->node_id()) continue;
    PeerAnswer& a = answers.emplace_back();
    a.member = m.id;
    a.response.reset(prototype.New());
    suspect.push_back(std::find(unavailable.begin(), unavailable.end(), m.id) !=
                      unavailable.end());
  }
  std::vector<std::thread> calls;
  calls.reserve(answers.size());
  for (size_t i = 0; i < answers.size(); ++i) {
    calls.emplace_back(
        [this, method, &request, &a = answers[i], short_wait = suspect[i]] {
          absl::StatusOr<ApiClient*> client;
          {
            absl::MutexLock lock(&peers_mu_);
            client = short_wait ? Client(&suspect_clients_, a.member,
                                         options_.scatter_suspect_timeout)
                                : Client(&scatter_clients_, a.member,
                                         options_.scatter_timeout);
          }
          a.status = client.ok()
                         ? (*client)->Call(method, request, a.response.get())
                         : client.status();
        });
  }
  for (std::thread& t : calls) t.join();
  return answers;
}

void ClusterRouter::AddDocument(const IngestRecord& r,
                                api::IngestRequest* request) {
  api::Document* d = request->add_documents();
  d->set_id(r.doc_id);
  d->set_user(r.user);
  d->set_source(r.source);
  if (r.topics.size() == r.words.size() && !r.words.empty()) {
    // A hand-off's words as they are: the tokenizer may drop some.
    for (size_t i = 0; i < r.words.size(); ++i) {
      d->add_words(r.words[i]);
      d->add_topics(r.topics[i]);
    }
    return;
  }
  d->set_text(absl::StrJoin(r.words, " "));
}

absl::Status ClusterRouter::ForwardToOwners(std::vector<IngestRecord>* records,
                                            uint64_t* accepted) {
  absl::flat_hash_map<std::string, api::IngestRequest> by_owner;
  std::vector<IngestRecord> mine;
  for (IngestRecord& r : *records) {
    const std::string owner = r.user.empty() ? "" : UserOwner(r.user);
    if (owner.empty()) {
      mine.push_back(std::move(r));
      continue;
    }
    api::IngestRequest& req = by_owner[owner];
    req.set_local(true);
    AddDocument(r, &req);
  }
  *records = std::move(mine);
  for (const auto& [owner, req] : by_owner) {
    LATENTD_ASSIGN_OR_RETURN(ApiClient * client, PeerClient(owner));
    api::IngestResponse resp;
    absl::Status s = client->Call(Method::kIngest, req, &resp);
    if (!s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("forwarding ", req.documents_size(),
                                 " users' events to their owner ", owner, ": ",
                                 s.message()));
    }
    *accepted += resp.accepted();
    if (options_.forwarded != nullptr) {
      options_.forwarded->Add(req.documents_size());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<api::IngestEdgesResponse> ClusterRouter::ForwardEdges(
    const std::string& owner, const api::IngestEdgesRequest& request) const {
  LATENTD_ASSIGN_OR_RETURN(ApiClient * client, PeerClient(owner));
  api::IngestEdgesResponse resp;
  LATENTD_RETURN_IF_ERROR(client->Call(Method::kIngestEdges, request, &resp));
  return resp;
}

absl::StatusOr<api::GetUserProfileResponse> ClusterRouter::ForwardProfile(
    const std::string& owner, const api::GetUserProfileRequest& request) const {
  LATENTD_ASSIGN_OR_RETURN(ApiClient * client, PeerClient(owner));
  api::GetUserProfileRequest local = request;
  local.set_local(true);
  api::GetUserProfileResponse resp;
  absl::Status s = client->Call(Method::kGetUserProfile, local, &resp);
  if (!s.ok()) {
    return absl::Status(
        s.code(), absl::StrCat("user '", request.user(), "' lives on node ",
                               owner, ": ", s.message()));
  }
  return resp;
}

absl::StatusOr<std::shared_ptr<const hashring::Ring>>
ClusterRouter::ReplicaRing(const hashring::RingConfig& config) const {
  absl::MutexLock lock(&placement_mu_);
  if (placement_ == nullptr || placement_version_ != config.version) {
    hashring::RingConfig k = config;
    k.replication = std::min<uint32_t>(hashring::kMaxReplication,
                                       static_cast<uint32_t>(k.members.size()));
    LATENTD_ASSIGN_OR_RETURN(placement_, hashring::Ring::Build(k));
    placement_version_ = config.version;
  }
  return placement_;
}

void ClusterRouter::MarkFailed(std::string_view why) {
  {
    absl::MutexLock l(&failure_mu_);
    if (failure_.empty()) failure_ = std::string(why);
  }
  failed_ = true;
}

std::string ClusterRouter::failure() const {
  absl::MutexLock l(&failure_mu_);
  return failure_;
}

}  // namespace latentd::service
