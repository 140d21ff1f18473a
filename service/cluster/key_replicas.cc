#include "service/cluster/key_replicas.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace latentd {
namespace {

bool Contains(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

bool Lists(const hashring::RingConfig& config, const std::string& id) {
  for (const hashring::Member& m : config.members) {
    if (m.id == id) return true;
  }
  return false;
}

}  // namespace

KeyReplicas::KeyReplicas(const ClusterLinkOptions* options, std::string node_id,
                         sync::OwnerShard* owner, sync::ReplicaStore* copies,
                         PeerSet* peers)
    : options_(*options),
      node_id_(std::move(node_id)),
      owner_(owner),
      copies_(copies),
      peers_(peers) {}

absl::Status KeyReplicas::Start(const hashring::RingConfig& config) {
  if (options_.key_replicas <= 1) return absl::OkStatus();
  sync::OwnerReplicatorOptions ro;
  ro.node_id = node_id_;
  ro.log = options_.log;
  ro.ack_timeout = options_.call_timeout;
  replicator_ = std::make_unique<sync::OwnerReplicator>(
      ro, owner_,
      [this](const std::string& backup, const sync::ReplicaUpdate& u,
             std::function<void(absl::Status)> done) {
        Send(backup, u, std::move(done));
      });
  LATENTD_RETURN_IF_ERROR(SetBackups(config));
  Refill(config);
  return absl::OkStatus();
}

std::unique_ptr<sync::OwnerChannel> KeyReplicas::OwnChannel() {
  return replicator_ ? replicator_->MakeChannel()
                     : sync::MakeLocalChannel(owner_);
}

absl::Status KeyReplicas::SetBackups(const hashring::RingConfig& config,
                                     const std::vector<std::string>& lost) {
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

void KeyReplicas::Refill(const hashring::RingConfig& config) {
  if (!replicator_) return;
  replicator_->Refill([&config](const std::string& id) {
    for (const hashring::Member& m : config.members) {
      if (m.id == id) return true;
    }
    return false;
  });
}

void KeyReplicas::Send(const std::string& backup,
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

void KeyReplicas::TakeOver(const std::string& dead, uint64_t epoch,
                           const std::function<bool(sync::Key)>& owns) {
  if (copies_->State(dead) == sync::ReplicaStore::CopyState::kUnbased) {
    // Its refill (reset and snapshot) had not reached this node: what came
    // before it has no base and is not imported (sync/replica_store.h).
    options_.log(absl::StrCat(
        "ring epoch ", epoch, ": the copies of ", dead,
        "'s keys held here never got their base (its refill had not "
        "arrived): its own counts are out of the model until it returns"));
  }
  size_t keys = 0;
  for (const sync::KeyHandoff& h : copies_->TakeOver(
           dead, owns, epoch, node_id_, options_.handoff_chunk_keys)) {
    absl::Status s = ImportKeys(h);
    if (!s.ok()) {
      options_.log(absl::StrCat("taking over the copies of ", dead,
                                "'s keys failed: ", s.ToString()));
      continue;
    }
    keys += h.keys_size();
  }
  copies_->Drop(dead, [](sync::Key) { return true; });
  if (keys == 0) return;
  options_.info(absl::StrCat("ring epoch ", epoch, ": took over the copies of ",
                             keys, " keys of ", dead,
                             " held here (its counts stay in the model)"));
}

void KeyReplicas::SettleDeparted(const hashring::RingConfig& before,
                                 const hashring::RingConfig& next,
                                 const std::vector<std::string>& lost,
                                 bool failover) {
  for (const hashring::Member& m : before.members) {
    if (Lists(next, m.id)) continue;
    if (failover && replicator_ && Contains(lost, m.id)) {
      // Failed over with copies: its counts stay (its keys' new owners
      // took its part over) until it returns or is removed as lost.
      kept_down_.push_back(m.id);
      options_.log(absl::StrCat("ring epoch ", next.version, ": ", m.id,
                                " failed over; its counts stay in the "
                                "model until it returns or is lost"));
    } else if (Contains(lost, m.id)) {
      // Lost: its documents are gone, so are its counts.
      owner_->RetractSender(m.id);
      options_.info(absl::StrCat("ring epoch ", next.version, ": ", m.id,
                                 " lost; its counts taken out here"));
    } else {
      owner_->ForgetSender(m.id);  // its unseen changes would pile up
    }
  }
  for (const std::string& id : lost) {
    // A failed-over member now removed as lost (it was out of the ring
    // already): what it contributed leaves the model.
    auto kept = std::find(kept_down_.begin(), kept_down_.end(), id);
    if (kept == kept_down_.end() || Lists(before, id)) continue;
    kept_down_.erase(kept);
    owner_->RetractSender(id);
    options_.info(absl::StrCat("ring epoch ", next.version, ": ", id,
                               " lost; its counts taken out here"));
  }
  // (A failed-over member back in the ring: its new process's counts
  // replace the kept ones as it reaches each owner.)
  std::erase_if(kept_down_,
                [&next](const std::string& id) { return Lists(next, id); });
  absl::MutexLock l(&failed_over_mu_);
  if (failover) {
    for (const std::string& id : lost) failed_over_.push_back(id);
  } else {
    std::erase_if(failed_over_, [&lost](const std::string& id) {
      return Contains(lost, id);
    });
  }
  std::erase_if(failed_over_,
                [&next](const std::string& id) { return Lists(next, id); });
}

}  // namespace latentd
