// ClusterMember's hand-off, `latentctl cluster remove-node --handoff`: the
// leaving node ships its documents with their topics to the remaining
// members (HandOffDocuments), which stage them (IngestPath, durable and not
// counted); once all hold them it commits the hand-off in Redis and tells
// them, and they take the documents in and merge them keeping those
// topics. A failure before the commit rolls the removal back.
// Why this is exact: docs/design.md, "Growing and shrinking the cluster".
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "corpora/doc_batch.h"
#include "corpora/token_store.h"
#include "hashring/ring.h"
#include "service/api_client.h"
#include "service/cluster_member.h"
#include "service/handoff_source.h"

namespace latentd::service {
namespace {

// One Ingest call carries at most this many bytes of words (frames are at
// most 4 MiB).
constexpr size_t kHandoffRequestBytes = 1 << 20;

// Errors a retry cannot mend (the receiver refuses the documents).
bool Permanent(const absl::Status& s) {
  return absl::IsInvalidArgument(s) || absl::IsPermissionDenied(s) ||
         absl::IsUnauthenticated(s) || absl::IsFailedPrecondition(s);
}

}  // namespace

absl::Status ClusterMember::HandOffDocuments(Trainer* trainer,
                                             const Vocabulary& vocab,
                                             bool* committed) {
  *committed = false;
  // This attempt: the drain epoch (a retried removal is another one).
  const uint64_t attempt = link_->epoch();
  const std::string attempt_key =
      HandoffAttempt{link_->node_id(), attempt}.key();
  const absl::Time deadline = absl::Now() + link_->join_timeout();
  // The receivers: the ring without this node (the next epoch's).
  hashring::RingConfig config = link_->ring_config();
  std::erase_if(config.members, [&](const hashring::Member& m) {
    return m.id == link_->node_id();
  });
  if (config.members.empty()) {
    return absl::FailedPreconditionError(
        "hand-off: no other member to take this node's documents");
  }
  config.replication = std::min<uint32_t>(
      config.replication, static_cast<uint32_t>(config.members.size()));
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const hashring::Ring> ring,
                           hashring::Ring::Build(config));

  struct Receiver {
    api::IngestRequest request;
    size_t bytes = 0;
    uint64_t last_sequence = 0;  // its log's, once it took them in
    uint64_t documents = 0;      // staged there
  };
  std::vector<Receiver> receivers(config.members.size());
  auto send = [&](size_t m) -> absl::Status {
    Receiver& r = receivers[m];
    if (r.request.documents_size() == 0) return absl::OkStatus();
    const std::string& to = config.members[m].id;
    r.request.set_local(true);
    absl::Status s;
    for (;;) {
      absl::StatusOr<ApiClient*> client = router_->PeerClient(to);
      api::IngestResponse resp;
      s = client.ok() ? (*client)->Call(Method::kIngest, r.request, &resp)
                      : client.status();
      if (s.ok()) break;
      if (Permanent(s) || absl::Now() > deadline) {
        return absl::Status(
            s.code(),
            absl::StrCat("handing ", r.request.documents_size(),
                         " documents off to ", to, ": ", s.message()));
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
    r.documents += r.request.documents_size();
    r.request.Clear();
    r.bytes = 0;
    return absl::OkStatus();
  };

  // Every document of the store (its index in the store names it: the
  // source that makes a resend idempotent at the receiver).
  const size_t per_call = std::max<size_t>(
      1, std::min<size_t>(options_.max_documents_per_ingest, 1000));
  LATENTD_RETURN_IF_ERROR(ForEachDocument(
      trainer->store(), [&](const DocBatch& batch, size_t d) -> absl::Status {
        auto words = batch.doc_words(d);
        if (words.empty()) return absl::OkStatus();
        const std::string source =
            HandoffSource(link_->node_id(), attempt, batch.first_doc + d);
        const std::string& user = batch.users[d];
        const size_t m = ring->Owner(
            user.empty() ? HashWord(source) : ClusterRouter::UserKey(user));
        Receiver& r = receivers[m];
        api::Document* doc = r.request.add_documents();
        doc->set_id(batch.doc_ids[d]);
        doc->set_user(user);
        doc->set_source(source);
        auto topics = batch.doc_topics(d);
        for (size_t i = 0; i < words.size(); ++i) {
          const std::string& w = vocab.word(words[i]);
          doc->add_words(w);
          doc->add_topics(topics[i]);
          r.bytes += w.size() + 8;
        }
        if (static_cast<size_t>(r.request.documents_size()) >= per_call ||
            r.bytes >= kHandoffRequestBytes) {
          return send(m);
        }
        return absl::OkStatus();
      }));
  uint64_t shipped = 0;
  for (size_t m = 0; m < receivers.size(); ++m) {
    LATENTD_RETURN_IF_ERROR(send(m));
    shipped += receivers[m].documents;
  }
  log::Info("latentd", absl::StrCat("hand-off: ", shipped,
                                    " documents staged (durable) by ",
                                    receivers.size(), " members"));

  // The decision. (Redis away: the outcome may be unknown, so it is taken
  // as made; the node stays leaving and a restart resumes the removal.)
  for (;;) {
    absl::Status c = link_->CommitHandoff();
    if (c.ok()) break;
    if (!absl::IsUnavailable(c)) return c;
    *committed = true;
    if (absl::Now() > deadline) return c;
    absl::SleepFor(absl::Milliseconds(200));
  }
  *committed = true;
  log::Info("latentd", absl::StrCat("hand-off ", attempt_key, " committed"));
  // Each receiver takes what it staged in (one that is away does it on its
  // own, from Redis's word, when it is back).
  api::IngestRequest commit;
  commit.set_handoff_commit(attempt_key);
  for (size_t m = 0; m < receivers.size(); ++m) {
    if (receivers[m].documents == 0) continue;
    const std::string& to = config.members[m].id;
    for (;;) {
      absl::StatusOr<ApiClient*> client = router_->PeerClient(to);
      api::IngestResponse resp;
      absl::Status s = client.ok()
                           ? (*client)->Call(Method::kIngest, commit, &resp)
                           : client.status();
      if (s.ok()) {
        receivers[m].last_sequence = resp.last_sequence();
        break;
      }
      if (absl::Now() > deadline) {
        // Its share is staged there only, not yet copied to its backups:
        // this node keeps its counts until the receiver took it in
        // (Leave retries), so a receiver lost meanwhile loses nothing.
        return absl::UnavailableError(
            absl::StrCat(to,
                         " did not take in the documents staged for "
                         "hand-off ",
                         attempt_key, ": ", s.message()));
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
  }

  // Wait until each receiver has merged them (its counts then include
  // them), so that this node's retraction comes after; past the deadline
  // they are still durable there and merge later.
  for (size_t m = 0; m < receivers.size(); ++m) {
    const std::string& to = config.members[m].id;
    for (;;) {
      absl::StatusOr<ApiClient*> client = router_->PeerClient(to);
      api::StatusResponse st;
      if (client.ok() &&
          (*client)->Call(Method::kStatus, api::StatusRequest(), &st).ok() &&
          st.merged_sequence() >= receivers[m].last_sequence) {
        break;
      }
      if (absl::Now() > deadline) {
        log::Info("latentd",
                  absl::StrCat("hand-off: ", to,
                               " has not merged the documents yet; they "
                               "are durable there and merge later"));
        break;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  return absl::OkStatus();
}

}  // namespace latentd::service
