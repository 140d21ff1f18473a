// IngestPath's replicated ingestion (--replicas; docs/design.md,
// "Replicated ingestion"): primary-backup, the node that appends a
// document to its ingest log is its primary and acknowledges it only once
// its backups (the next distinct members of the ring for the document or
// its user) hold it fsynced in their replica logs; the copies of a node
// removed as lost are adopted by the nodes holding them.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "corpora/types.h"
#include "hashring/ring.h"
#include "service/api_client.h"
#include "service/handoff_source.h"
#include "service/ingest_path.h"
#include "service/internal/daemon_log.h"
#include "sync/control/cluster_admin.h"
#include "sync/control/membership.h"

namespace latentd::service {

using internal::Log;
using internal::LogWarning;

namespace {

// Documents per replica or adoption request (under the peers' limit on
// documents per Ingest, max_documents_per_ingest, 1000 by default).
constexpr size_t kChunk = 500;

// Where a record's copies go: its user's key (so that the user's backup is
// the node the ring makes the user's owner once the primary is gone, see
// ClusterRouter::UserKey), else a hash of the document.
sync::Key RecordKey(const IngestRecord& r) {
  if (!r.user.empty()) return HashWord(r.user) ^ 0x5bd1e9955bd1e995ULL;
  return HashWord(absl::StrCat(r.doc_id, "\n", absl::StrJoin(r.words, " ")));
}

// The node that handed `r` off to this one (service/handoff_source.h); ""
// if none.
std::string HandedOffBy(const IngestRecord& r) {
  std::optional<HandoffAttempt> a = ParseHandoffSource(r.source);
  return a.has_value() ? a->node : std::string();
}

}  // namespace

absl::Status IngestPath::Replicate(const std::vector<IngestRecord>& records) {
  const ClusterLink* link = router_->link();
  if (link == nullptr || replicas_ == nullptr) return absl::OkStatus();
  hashring::RingConfig config = link->ring_config();
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const hashring::Ring> ring,
                           router_->ReplicaRing(config));
  const std::string& self = link->node_id();
  const absl::flat_hash_set<std::string> excluded = link->not_backups();
  const size_t wanted = options_.replicas - 1;
  absl::flat_hash_map<std::string, std::vector<const IngestRecord*>> by_backup;
  for (const IngestRecord& r : records) {
    size_t copies = 0;
    const std::string from = HandedOffBy(r);
    for (hashring::MemberIndex m : ring->Replicas(RecordKey(r))) {
      const std::string& id = config.members[m].id;
      if (id == self || id == from || excluded.contains(id)) continue;
      if (copies == wanted) break;
      by_backup[id].push_back(&r);
      ++copies;
    }
    if (copies < wanted) m_.under_replicated->Add();
  }
  for (const auto& [backup, mine] : by_backup) {
    LATENTD_ASSIGN_OR_RETURN(ApiClient * client, router_->PeerClient(backup));
    for (size_t from = 0; from < mine.size(); from += kChunk) {
      api::IngestRequest req;
      req.set_local(true);
      req.set_replica_of(self);
      for (size_t i = from; i < std::min(mine.size(), from + kChunk); ++i) {
        ClusterRouter::AddDocument(*mine[i], &req);
      }
      api::IngestResponse resp;
      absl::Status s = client->Call(Method::kIngest, req, &resp);
      if (!s.ok()) {
        return absl::UnavailableError(absl::StrCat(
            "replicating ", req.documents_size(), " documents to their backup ",
            backup, " failed, nothing acknowledged (", s.message(), ")"));
      }
      m_.replicated->Add(req.documents_size());
    }
  }
  return absl::OkStatus();
}

void IngestPath::ReplicaLoop() {
  for (;;) {
    {
      absl::MutexLock lock(&pending_mu_);
      if (pending_mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                                       absl::Milliseconds(500))) {
        return;
      }
    }
    if (replicas_ != nullptr) {
      absl::Status s = AdoptLostOrigins();
      if (!s.ok()) {
        LogWarning(
            absl::StrCat("adopting a lost node's replica copies failed "
                         "(will retry): ",
                         s.message()));
      }
    }
    if (staged_ != nullptr) {
      absl::Status s = SettleHandoffs();
      if (!s.ok()) {
        LogWarning(absl::StrCat(
            "settling staged hand-offs failed (will retry): ", s.message()));
      }
    }
  }
}

absl::Status IngestPath::AdoptLostOrigins() {
  const ClusterLink* link = router_->link();
  if (link == nullptr || router_->left()) return absl::OkStatus();
  std::vector<std::string> origins = replicas_->Origins();
  if (origins.empty()) return absl::OkStatus();
  // Origins in the ring are alive; the others are down or gone: ask Redis.
  absl::flat_hash_set<std::string> in_ring;
  for (const hashring::Member& m : link->ring_config().members) {
    in_ring.insert(m.id);
  }
  std::erase_if(origins,
                [&](const std::string& o) { return in_ring.contains(o); });
  if (origins.empty()) return absl::OkStatus();
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<sync::RedisClient> redis,
                           sync::RedisClient::Connect(cluster_redis_url_));
  LATENTD_ASSIGN_OR_RETURN(sync::ClusterStatus status,
                           sync::ReadClusterStatus(redis.get(), cluster_name_));
  if (!status.ring.has_value()) return absl::OkStatus();
  absl::flat_hash_set<std::string> known;
  for (const sync::MemberStatus& m : status.members) known.insert(m.id);
  for (const std::string& origin : origins) {
    // Down (it may return) or leaving: wait.
    if (known.contains(origin)) continue;
    // Gone: how it left is the latest move's (each holder looks every
    // 500 ms while the origin is out of the ring, so it sees that move
    // unless another one followed within that time).
    const std::optional<sync::MoveRecord>& move = status.move;
    if (!move.has_value() || move->kind != sync::MoveKind::kRemove ||
        move->node != origin) {
      if (unknown_origins_.insert(origin).second) {
        LogWarning(absl::StrCat(
            "holding replica copies of ", origin,
            ", which left the cluster by a removal this node did not see; "
            "they are kept, neither adopted nor dropped"));
      }
      continue;
    }
    if (move->mode != sync::RemoveMode::kLost) {
      // Removed with hand-off or drop: its documents went to the others
      // with it, or out of the model by the operator's choice.
      LATENTD_RETURN_IF_ERROR(replicas_->Drop(origin));
      Log(absl::StrCat("dropped the replica copies of ", origin,
                       ", removed from the cluster (",
                       sync::RemoveModeName(move->mode), ")"));
      continue;
    }
    // Removed as lost: its copies become this node's documents. Each gets
    // a source, so that adopting again after a crash here drops what was
    // adopted already (here, or at a user's owner).
    LATENTD_ASSIGN_OR_RETURN(std::vector<IngestRecord> records,
                             replicas_->Read(origin));
    for (IngestRecord& r : records) {
      if (r.source.empty()) {
        r.source = absl::StrCat("replica:", origin, "/", r.sequence);
      }
      r.sequence = 0;
    }
    uint64_t adopted = 0;
    for (size_t from = 0; from < records.size(); from += kChunk) {
      std::vector<IngestRecord> chunk(
          std::make_move_iterator(records.begin() + from),
          std::make_move_iterator(records.begin() +
                                  std::min(records.size(), from + kChunk)));
      const size_t n = chunk.size();
      // (Past the staging of hand-offs: a copy was acknowledged by its
      // origin, so a handed-off one among them was committed.)
      LATENTD_RETURN_IF_ERROR(
          IngestHere(std::move(chunk), nullptr, /*route=*/true).status());
      adopted += n;
    }
    LATENTD_RETURN_IF_ERROR(replicas_->Drop(origin));
    m_.replicas_adopted->Add(adopted);
    Log(absl::StrCat("adopted ", adopted, " replica copies of ", origin,
                     ", removed from the cluster as lost"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<std::string>>> IngestPath::CopiedEvents(
    const std::string& user) const {
  std::vector<std::vector<std::string>> docs;
  const ClusterLink* link = router_->link();
  if (link == nullptr || replicas_ == nullptr) return docs;
  const std::vector<std::string> down = link->failed_over_members();
  absl::MutexLock l(&copies_mu_);
  absl::erase_if(copies_, [&down](const auto& e) {
    return std::find(down.begin(), down.end(), e.first) == down.end();
  });
  for (const std::string& origin : down) {
    auto it = copies_.find(origin);
    if (it == copies_.end()) {
      // (A failed-over origin's log no longer grows: index it once.)
      LATENTD_ASSIGN_OR_RETURN(std::vector<IngestRecord> records,
                               replicas_->Read(origin));
      it = copies_.try_emplace(origin).first;
      for (IngestRecord& r : records) {
        if (!r.user.empty()) {
          it->second[r.user].push_back(std::move(r.words));
        }
      }
    }
    auto u = it->second.find(user);
    if (u != it->second.end()) {
      docs.insert(docs.end(), u->second.begin(), u->second.end());
    }
  }
  return docs;
}

}  // namespace latentd::service
