// ClusterLink's replicated key state (cluster_link.h, ClusterLinkOptions::
// key_replicas; sync/owner_replicator.h): naming the backups by the ring,
// refills, the transport of replica updates and the take-over of a failed
// owner's copies.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "service/cluster/cluster_link.h"

namespace latentd {

absl::Status ClusterLink::SetReplicaBackups(
    const hashring::RingConfig& config, const std::vector<std::string>& lost) {
  if (!replicator_) return absl::OkStatus();
  hashring::RingConfig k = config;
  k.replication = std::min<uint32_t>(options_.key_replicas,
                                     static_cast<uint32_t>(k.members.size()));
  LATENTD_ASSIGN_OR_RETURN(std::shared_ptr<const hashring::Ring> ring,
                           hashring::Ring::Build(k));
  std::vector<std::string> ids;
  std::vector<std::string> others;
  for (const hashring::Member& m : config.members) {
    const bool is_lost =
        std::find(lost.begin(), lost.end(), m.id) != lost.end();
    ids.push_back(is_lost ? std::string() : m.id);
    if (m.id == node_id_ || is_lost) continue;
    LATENTD_RETURN_IF_ERROR(peers_->ClientFor(m).status());
    others.push_back(m.id);
  }
  auto backups = [ring, ids = std::move(ids), self = node_id_](sync::Key key) {
    std::vector<std::string> out;
    for (hashring::MemberIndex m : ring->Replicas(key)) {
      if (ids[m] != self && !ids[m].empty()) out.push_back(ids[m]);
    }
    return out;
  };
  replicator_->SetBackups(config.version, std::move(backups), std::move(others),
                          options_.key_replicas - 1);
  return absl::OkStatus();
}

void ClusterLink::RefillReplicas(const hashring::RingConfig& config) {
  if (!replicator_) return;
  replicator_->Refill([&config](const std::string& id) {
    for (const hashring::Member& m : config.members) {
      if (m.id == id) return true;
    }
    return false;
  });
}

void ClusterLink::SendReplicaUpdate(const std::string& backup,
                                    const sync::ReplicaUpdate& update,
                                    std::function<void(absl::Status)> done) {
  sync::Client* to = peers_->Find(backup);
  if (to == nullptr) {
    done(absl::UnavailableError(
        absl::StrCat("no connection to backup ", backup)));
    return;
  }
  to->Call(sync::MESSAGE_TYPE_REPLICA_UPDATE, update.SerializeAsString(),
           options_.call_timeout,
           [done = std::move(done)](absl::StatusOr<sync::Frame> reply) {
             done(reply.status());
           });
}

void ClusterLink::TakeOverReplicas(const std::string& dead, uint64_t epoch,
                                   const std::function<bool(sync::Key)>& owns) {
  size_t keys = 0;
  for (const sync::KeyHandoff& h : replicas_->TakeOver(
           dead, owns, epoch, node_id_, options_.handoff_chunk_keys)) {
    absl::Status s = owner_->ImportKeys(h);
    if (!s.ok()) {
      options_.log(absl::StrCat("taking over the copies of ", dead,
                                "'s keys failed: ", s.ToString()));
      continue;
    }
    keys += h.keys_size();
  }
  replicas_->Drop(dead, [](sync::Key) { return true; });
  if (keys == 0) return;
  options_.info(absl::StrCat("ring epoch ", epoch, ": took over the copies of ",
                             keys, " keys of ", dead,
                             " held here (its counts stay in the model)"));
}

}  // namespace latentd
