// KeyReplicas: a member's part in replicated key state (ClusterLinkOptions::
// key_replicas; sync/owner_replicator.h; docs/design.md, "Failure detection
// and failover"). With key_replicas > 1 it replicates this node's owner
// shard to the backups the ring names (an OwnerReplicator whose updates go
// out through the PeerSet) and, on a failover, imports the copies held here
// of a dead owner's keys. It also decides what stays of members that left
// the ring: a failed-over member's counts stay while copies back them
// (until it returns or is removed as lost), a lost member's are taken out,
// a member that left in order is forgotten.
//
// Thread-safety: Start, SetBackups, Refill, TakeOver and SettleDeparted
// run on the link's joining or ring-watch thread (one at a time);
// OwnChannel, stats, failed_over and Stop from any thread.
#ifndef LATENTD_SERVICE_CLUSTER_KEY_REPLICAS_H_
#define LATENTD_SERVICE_CLUSTER_KEY_REPLICAS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "hashring/ring_config.h"
#include "service/cluster/cluster_link_options.h"
#include "service/cluster/peer_set.h"
#include "sync/owner_replicator.h"
#include "sync/owner_shard.h"
#include "sync/replica_store.h"

namespace latentd {

class KeyReplicas {
 public:
  // Every pointer (not owned) outlives this object; `copies` holds the
  // copies of other owners' keys kept here.
  KeyReplicas(const ClusterLinkOptions* options, std::string node_id,
              sync::OwnerShard* owner, sync::ReplicaStore* copies,
              PeerSet* peers);
  ~KeyReplicas() { Stop(); }

  // With key_replicas > 1: starts replicating to `config`'s backups and
  // refills them (dropping what they kept of an earlier process).
  absl::Status Start(const hashring::RingConfig& config);
  bool enabled() const { return replicator_ != nullptr; }
  // This node's channel to its own shard: with copies, its own batches are
  // answered once the backups hold them.
  std::unique_ptr<sync::OwnerChannel> OwnChannel();

  // Names the backups of `config`'s ring (before the synchronizer re-routes
  // by it). A `lost` member is no backup even while the ring lists it.
  absl::Status SetBackups(const hashring::RingConfig& config,
                          const std::vector<std::string>& lost = {});
  // Sends the backups of `config` what they must hold of this node's keys.
  void Refill(const hashring::RingConfig& config);
  // Imports a key hand-off into the owner shard; with copies, also queues
  // the keys' whole parts to their backups (OwnerReplicator::ImportKeys).
  // Any thread, after Start.
  absl::Status ImportKeys(const sync::KeyHandoff& handoff) {
    return replicator_ ? replicator_->ImportKeys(handoff)
                       : owner_->ImportKeys(handoff);
  }
  // Failover (phase 1): imports the copies held here of `dead`'s keys that
  // this node owns at `epoch` (`owns`), and drops the rest.
  void TakeOver(const std::string& dead, uint64_t epoch,
                const std::function<bool(sync::Key)>& owns);
  // Once ring `next` is in effect: what stays in the owner shard of each
  // member of `before` that `next` lacks, and of each `lost` one
  // (failover: this epoch failed them over).
  void SettleDeparted(const hashring::RingConfig& before,
                      const hashring::RingConfig& next,
                      const std::vector<std::string>& lost, bool failover);

  // Members failed over and neither back nor removed as lost.
  std::vector<std::string> failed_over() const {
    absl::MutexLock l(&failed_over_mu_);
    return failed_over_;
  }
  sync::OwnerReplicatorStats stats() const {
    return replicator_ ? replicator_->stats() : sync::OwnerReplicatorStats{};
  }
  // Answers the own batches still awaiting their backups. Idempotent.
  void Stop() {
    if (replicator_) replicator_->Stop();
  }

 private:
  // One ReplicaUpdate to a backup.
  void Send(const std::string& backup, const sync::ReplicaUpdate& update,
            std::function<void(absl::Status)> done);

  const ClusterLinkOptions& options_;
  const std::string node_id_;
  sync::OwnerShard* const owner_;
  sync::ReplicaStore* const copies_;
  PeerSet* const peers_;
  std::unique_ptr<sync::OwnerReplicator> replicator_;  // set by Start
  // Failed-over members whose counts are kept until they return or are
  // removed as lost (ring-watch thread only), and the same list for readers.
  std::vector<std::string> kept_down_;
  mutable absl::Mutex failed_over_mu_;
  std::vector<std::string> failed_over_ ABSL_GUARDED_BY(failed_over_mu_);
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_KEY_REPLICAS_H_
